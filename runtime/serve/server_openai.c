/* server_openai.c: POST /v1/chat/completions and /v1/completions, streamed
 * (SSE chunks ending in "data: [DONE]") or not, in the shapes the openai
 * SDKs parse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/serve/server_internal.h"
#include "runtime/serve/sse.h"
#include "runtime/chat/tool_calls.h"
#include "runtime/util/utf8.h"

typedef struct oai {
    server     *s;
    api_request r;
    prepared    p;
    gen        *g;
    bool        chat, started, slot;
    char        id[64];
    json_int_t  created;
    size_t      text_len; /* completions' text_offset */
    tool_scan   ts;       /* p.tools: the answer's tool calls are taken out of its text */
} oai;

static const char *finish_reason(gen_finish f, size_t n_calls)
{
    return n_calls ? "tool_calls" : f == GEN_LENGTH ? "length" : "stop";
}

/* [{"id", "type": "function", "function": {"name", "arguments"}}], with "index" when streamed */
static json_t *tool_calls_json(oai *o, const tool_call *c, size_t n, bool indexed)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        char id[64];
        server_new_call_id(o->s, "call_", id, sizeof id);
        json_t *t = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", c[i].id ? c[i].id : id, "type", "function",
                              "function", "name",
                              c[i].name, "arguments", c[i].arguments);
        if (t && indexed) json_object_set_new(t, "index", json_integer((json_int_t)i));
        json_array_append_new(a, t);
    }
    return a;
}

/* A token's text for JSON: a byte-fallback token alone is not valid UTF-8. */
static json_t *piece_json(const server *s, int32_t id, json_t **bytes)
{
    char buf[256];
    int n = s->eng->piece(s->eng->self, id, buf, sizeof buf);
    if (n < 0) n = 0;
    if ((size_t)n > sizeof buf) n = sizeof buf;
    if (bytes) {
        *bytes = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(*bytes, json_integer((unsigned char)buf[i]));
    }
    size_t len;
    char *clean = utf8_sanitize(buf, (size_t)n, &len);
    json_t *j = clean ? json_stringn(clean, len) : NULL;
    free(clean);
    return j;
}

/* Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...]} */
static json_t *chat_logprobs(oai *o, const gen_token *t, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *bytes, *tops = json_array();
        for (int j = 0; j < t[i].t.n_top && j < o->r.top_logprobs; j++) {
            json_t *tb, *tp = piece_json(o->s, t[i].t.top_id[j], &tb);
            json_array_append_new(tops, json_pack("{s:o, s:f, s:o}", "token", tp, "logprob",
                                                  (double)t[i].t.top_logprob[j], "bytes", tb));
        }
        json_t *tok = piece_json(o->s, t[i].t.id, &bytes);
        json_array_append_new(arr, json_pack("{s:o, s:f, s:o, s:o}", "token", tok, "logprob",
                                             (double)t[i].t.logprob, "bytes", bytes,
                                             "top_logprobs", tops));
    }
    return json_pack("{s:o}", "content", arr);
}

/* Completions: the legacy parallel arrays. */
static json_t *completion_logprobs(oai *o, const gen_token *t, size_t n)
{
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(toks, piece_json(o->s, t[i].t.id, NULL));
        json_array_append_new(lps, json_real(t[i].t.logprob));
        json_t *top = json_object();
        for (int j = 0; j < t[i].t.n_top && j < o->r.top_logprobs; j++) {
            json_t *p = piece_json(o->s, t[i].t.top_id[j], NULL);
            if (p && !json_object_get(top, json_string_value(p)))
                json_object_set_new(top, json_string_value(p), json_real(t[i].t.top_logprob[j]));
            json_decref(p);
        }
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)(o->text_len + t[i].offset)));
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}

static json_t *logprobs_of(oai *o)
{
    size_t n;
    const gen_token *t = gen_take_tokens(o->g, &n);
    if (!o->r.logprobs) return json_null();
    return o->chat ? chat_logprobs(o, t, n) : completion_logprobs(o, t, n);
}

static json_t *usage(const oai *o)
{
    size_t c = gen_n_tokens(o->g);
    return json_pack("{s:I, s:I, s:I, s:{s:I}}", "prompt_tokens", (json_int_t)o->p.n_ids,
                     "completion_tokens", (json_int_t)c, "total_tokens", (json_int_t)(o->p.n_ids + c),
                     "prompt_tokens_details", "cached_tokens", (json_int_t)gen_n_cached(o->g));
}

static void release(oai *o)
{
    server_gen_finish(o->s, o->g, o->p.n_ids);
    o->g = NULL;
    if (o->slot) server_slot_release(o->s);
    o->slot = false;
    server_prepared_free(o->s, &o->p);
    api_request_free(&o->r);
    tool_scan_free(&o->ts);
    free(o);
}

/* ---- streaming ---------------------------------------------------------- */

static json_t *chunk(oai *o, json_t *delta_or_text, json_t *finish, json_t *lp)
{
    json_t *choice = o->chat
        ? json_pack("{s:i, s:o, s:o, s:o}", "index", 0, "delta", delta_or_text, "logprobs", lp,
                    "finish_reason", finish)
        : json_pack("{s:i, s:o, s:o, s:o}", "index", 0, "text", delta_or_text, "logprobs", lp,
                    "finish_reason", finish);
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", o->id, "object",
                          o->chat ? "chat.completion.chunk" : "text_completion", "created",
                          o->created, "model", o->s->eng->name, "choices", choice);
    if (c && o->r.include_usage) json_object_set_new(c, "usage", json_null());
    return c;
}

static json_t *content(oai *o, const char *d, size_t n)
{
    json_t *t = json_stringn(d, n);
    return o->chat ? json_pack("{s:o}", "content", t) : t;
}

static bool produce(void *ctx, strbuf *out)
{
    oai *o = ctx;
    if (o->chat && !o->started) {
        o->started = true;
        sse_event(out, NULL, chunk(o, json_pack("{s:s, s:s}", "role", "assistant", "content", ""),
                                   json_null(), json_null()));
        return true;
    }
    const char *d;
    size_t n;
    gen_finish f = gen_next(o->g, &d, &n);
    size_t rn;
    const char *r = gen_take_reasoning(o->g, &rn); /* the reasoning (generate.h), ahead of the text */
    if (rn > 0 && o->chat)
        sse_event(out, NULL, chunk(o, json_pack("{s:s%}", "reasoning_content", r, rn), json_null(), json_null()));
    strbuf shown = { 0 };
    tool_call *calls = NULL;
    size_t n_calls = 0;
    if (o->p.tools) { /* the text before any tool call, as it becomes sure */
        server_content(o->s, &o->p, &o->ts, d, n, &shown);
        if (f != GEN_RUNNING && f != GEN_ERROR && f != GEN_CANCELLED)
            n_calls = server_calls(o->s, &o->p, o->g, &o->ts, &shown, &calls);
        d = shown.data;
        n = shown.len;
    }
    if (n > 0) sse_event(out, NULL, chunk(o, content(o, d, n), json_null(), logprobs_of(o)));
    strbuf_free(&shown);
    if (n_calls)
        sse_event(out, NULL, chunk(o, json_pack("{s:o}", "tool_calls", tool_calls_json(o, calls, n_calls, true)),
                                   json_null(), json_null()));
    tool_calls_free(calls, n_calls);
    if (f == GEN_RUNNING) return true;
    if (f == GEN_ERROR || f == GEN_CANCELLED) {
        sse_event(out, NULL, json_pack("{s:{s:s, s:s}}", "error", "message",
                                       f == GEN_ERROR ? "generation failed" : "the server is stopping",
                                       "type", "server_error"));
    } else {
        sse_event(out, NULL, chunk(o, o->chat ? json_object() : json_string(""),
                                   json_string(finish_reason(f, n_calls)), json_null()));
        if (o->r.include_usage)
            sse_event(out, NULL, json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", o->id, "object",
                                           o->chat ? "chat.completion.chunk" : "text_completion",
                                           "created", o->created, "model", o->s->eng->name,
                                           "choices", "usage", usage(o)));
    }
    strbuf_puts(out, "data: [DONE]\n\n");
    return false;
}

static void done(void *ctx) { release(ctx); }

/* ---- the handlers -------------------------------------------------------- */

static enum MHD_Result complete(server *s, struct MHD_Connection *c, request *rq, bool chat)
{
    oai *o = calloc(1, sizeof *o);
    if (!o) return server_reply_error(c, rq, 500, NULL, "out of memory");
    o->s = s;
    o->chat = chat;
    o->created = (json_int_t)time(NULL);
    server_new_id(s, chat ? "chatcmpl-" : "cmpl-", o->id, sizeof o->id);
    api_error e;
    if (api_request_parse(chat ? API_CHAT : API_COMPLETION, rq->body ? rq->body : "", rq->len,
                          server_max_tokens_limit(s), &o->r, &e) != 0 ||
        server_prepare(s, &o->r, &o->p, &e) != 0) {
        release(o);
        return server_reply_error(c, rq, e.status, e.param, "%s", e.message);
    }
    int rc = server_slot_acquire(s);
    if (rc != 0) {
        release(o);
        return rc == -1 ? server_reply_error(c, rq, 429, NULL, "all slots are busy and the queue is full")
                        : server_reply_error(c, rq, 503, NULL, "the server is stopping");
    }
    o->slot = true;
    char err[256];
    o->g = server_gen_begin(s, &o->r, &o->p, err, sizeof err);
    if (!o->g) {
        release(o);
        return server_reply_error(c, rq, 500, NULL, "%s", err);
    }
    if (o->r.stream) return sse_reply(c, rq, o, produce, done);

    strbuf text = { 0 }, reasoning = { 0 };
    json_t *lp = NULL;
    gen_finish f;
    do {
        const char *d, *r;
        size_t n, rn;
        f = gen_next(o->g, &d, &n);
        server_content(s, &o->p, &o->ts, d, n, &text);
        r = gen_take_reasoning(o->g, &rn);
        strbuf_add(&reasoning, r, rn);
        if (o->r.logprobs) {
            size_t nt;
            const gen_token *t = gen_take_tokens(o->g, &nt);
            json_t *part = chat ? chat_logprobs(o, t, nt) : completion_logprobs(o, t, nt);
            if (!lp) lp = part;
            else {
                /* merge the parts: every member is an array to extend */
                const char *k;
                json_t *v;
                json_object_foreach(part, k, v) json_array_extend(json_object_get(lp, k), v);
                json_decref(part);
            }
        }
    } while (f == GEN_RUNNING);
    if (f == GEN_ERROR || f == GEN_CANCELLED || text.oom || reasoning.oom) {
        strbuf_free(&text);
        strbuf_free(&reasoning);
        json_decref(lp);
        release(o);
        return f == GEN_CANCELLED ? server_reply_error(c, rq, 503, NULL, "the server is stopping")
                                  : server_reply_error(c, rq, 500, NULL, "generation failed");
    }
    tool_call *calls = NULL;
    size_t n_calls = server_calls(s, &o->p, o->g, &o->ts, &text, &calls);
    /* OpenAI's content is null beside tool calls when there is no text */
    json_t *t = n_calls && !text.len ? json_null() : json_stringn(text.data ? text.data : "", text.len);
    strbuf_free(&text);
    json_t *choice = chat
        ? json_pack("{s:i, s:{s:s, s:o}, s:o, s:s}", "index", 0, "message", "role", "assistant",
                    "content", t, "logprobs", lp ? lp : json_null(), "finish_reason", finish_reason(f, n_calls))
        : json_pack("{s:i, s:o, s:o, s:s}", "index", 0, "text", t, "logprobs",
                    lp ? lp : json_null(), "finish_reason", finish_reason(f, 0));
    if (n_calls)
        json_object_set_new(json_object_get(choice, "message"), "tool_calls",
                            tool_calls_json(o, calls, n_calls, false));
    tool_calls_free(calls, n_calls);
    if (chat && reasoning.len) /* the reasoning, under llama.cpp server's name */
        json_object_set_new(json_object_get(choice, "message"), "reasoning_content",
                            json_stringn(reasoning.data, reasoning.len));
    strbuf_free(&reasoning);
    json_t *body = json_pack("{s:s, s:s, s:I, s:s, s:[o], s:o}", "id", o->id, "object",
                             chat ? "chat.completion" : "text_completion", "created", o->created,
                             "model", s->eng->name, "choices", choice, "usage", usage(o));
    release(o);
    return server_reply_json(c, rq, 200, body);
}

enum MHD_Result openai_chat(server *s, struct MHD_Connection *c, request *rq)
{
    return complete(s, c, rq, true);
}

enum MHD_Result openai_completion(server *s, struct MHD_Connection *c, request *rq)
{
    return complete(s, c, rq, false);
}
