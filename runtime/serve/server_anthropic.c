/* server_anthropic.c: POST /v1/messages and /v1/messages/count_tokens in
 * the shapes @anthropic-ai/sdk parses: errors as {"type":"error",...},
 * streams as the named event sequence message_start, content_block_start,
 * ping, content_block_delta..., content_block_stop, message_delta,
 * message_stop. The anthropic-version header and ?beta=true are accepted
 * and need nothing from us. With thinking enabled the model's reasoning
 * (generate.h: gpt-oss's analysis channel, <think> text) is a thinking
 * block first, index 0, the text block after it at index 1, opened when
 * the first text comes (or at the end). Tool calls the model makes (when
 * the request offers tools) follow as tool_use blocks, their input streamed
 * as one input_json_delta each, and stop_reason is "tool_use". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/serve/server_internal.h"
#include "runtime/serve/sse.h"
#include "runtime/chat/tool_calls.h"

typedef struct ant {
    server     *s;
    api_request r;
    prepared    p;
    gen        *g;
    bool        started, slot;
    bool        text_open;   /* thinking: the text block has been started (the thinking one closed) */
    char        id[64];
    tool_scan   ts;
} ant;

/* {"type": "tool_use", "id", "name", "input"}; input {} when streamed (it follows as a delta) */
static json_t *tool_use_block(ant *a, const tool_call *c, bool streamed)
{
    char id[64];
    server_new_call_id(a->s, "toolu_", id, sizeof id);
    json_t *in = streamed ? json_object() : json_loads(c->arguments, 0, NULL);
    return json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", c->id ? c->id : id, "name", c->name, "input",
                     in ? in : json_object());
}

static void block_start(strbuf *out, int index, json_t *block)
{
    sse_event(out, "content_block_start",
              json_pack("{s:s, s:i, s:o}", "type", "content_block_start", "index", index, "content_block", block));
}

static void block_stop(strbuf *out, int index)
{
    sse_event(out, "content_block_stop", json_pack("{s:s, s:i}", "type", "content_block_stop", "index", index));
}

/* thinking: ends the thinking block and starts the text one, once */
static void open_text(ant *a, strbuf *out)
{
    if (!a->r.thinking || a->text_open) return;
    a->text_open = true;
    block_stop(out, 0);
    block_start(out, 1, json_pack("{s:s, s:s}", "type", "text", "text", ""));
}

static const char *stop_reason(gen_finish f, size_t n_calls)
{
    return n_calls ? "tool_use" : f == GEN_LENGTH ? "max_tokens" : f == GEN_STOP ? "stop_sequence" : "end_turn";
}

static json_t *stop_sequence(const ant *a, gen_finish f)
{
    int k = gen_stop_index(a->g);
    return f == GEN_STOP && k >= 0 ? json_string(a->r.stops[k]) : json_null();
}

/* Anthropic's usage: input_tokens are the prompt tokens evaluated, the
 * ones a context's KV cache already held are cache_read_input_tokens (their
 * sum is count_tokens' input_tokens); nothing is written to a cache by
 * request, so cache_creation_input_tokens is 0. */
static json_t *usage(const ant *a, size_t output)
{
    size_t cached = gen_n_cached(a->g);
    return json_pack("{s:I, s:I, s:I, s:I}", "input_tokens", (json_int_t)(a->p.n_ids - cached),
                     "cache_creation_input_tokens", (json_int_t)0, "cache_read_input_tokens", (json_int_t)cached,
                     "output_tokens", (json_int_t)output);
}

static void release(ant *a)
{
    server_gen_finish(a->s, a->g, a->p.n_ids);
    if (a->slot) server_slot_release(a->s);
    server_prepared_free(a->s, &a->p);
    api_request_free(&a->r);
    tool_scan_free(&a->ts);
    free(a);
}

static bool produce(void *ctx, strbuf *out)
{
    ant *a = ctx;
    if (!a->started) {
        a->started = true;
        sse_event(out, "message_start",
                  json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:[], s:n, s:n, s:o}}", "type",
                            "message_start", "message", "id", a->id, "type", "message", "role",
                            "assistant", "model", a->s->eng->name, "content", "stop_reason",
                            "stop_sequence", "usage", usage(a, 0)));
        block_start(out, 0, a->r.thinking ? json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", "",
                                                      "signature", "")
                                          : json_pack("{s:s, s:s}", "type", "text", "text", ""));
        sse_event(out, "ping", json_pack("{s:s}", "type", "ping"));
        return true;
    }
    const char *d, *r;
    size_t n, rn;
    gen_finish f = gen_next(a->g, &d, &n);
    size_t ignored;
    gen_take_tokens(a->g, &ignored);
    r = gen_take_reasoning(a->g, &rn);
    if (rn > 0 && a->r.thinking && !a->text_open)
        sse_event(out, "content_block_delta",
                  json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type", "content_block_delta", "index", 0,
                            "delta", "type", "thinking_delta", "thinking", r, rn));
    strbuf shown = { 0 };
    tool_call *calls = NULL;
    size_t n_calls = 0;
    bool ended = f != GEN_RUNNING && f != GEN_ERROR && f != GEN_CANCELLED;
    if (a->p.tools) { /* the text before any tool call, as it becomes sure */
        server_content(a->s, &a->p, &a->ts, d, n, &shown);
        if (ended) n_calls = server_calls(a->s, &a->p, a->g, &a->ts, &shown, &calls);
        d = shown.data;
        n = shown.len;
    }
    int text_index = a->r.thinking ? 1 : 0;
    if (n > 0) {
        open_text(a, out);
        sse_event(out, "content_block_delta",
                  json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type", "content_block_delta", "index",
                            text_index, "delta", "type", "text_delta", "text", d, n));
    }
    strbuf_free(&shown);
    if (f == GEN_RUNNING) return true;
    if (f == GEN_ERROR || f == GEN_CANCELLED) {
        sse_event(out, "error", json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type",
                                          f == GEN_ERROR ? "api_error" : "overloaded_error", "message",
                                          f == GEN_ERROR ? "generation failed" : "the server is stopping"));
        return false;
    }
    open_text(a, out);
    block_stop(out, text_index);
    for (size_t i = 0; i < n_calls; i++) {
        int index = text_index + 1 + (int)i;
        block_start(out, index, tool_use_block(a, &calls[i], true));
        sse_event(out, "content_block_delta",
                  json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", index, "delta",
                            "type", "input_json_delta", "partial_json", calls[i].arguments));
        block_stop(out, index);
    }
    tool_calls_free(calls, n_calls);
    sse_event(out, "message_delta",
              json_pack("{s:s, s:{s:s, s:o}, s:{s:I}}", "type", "message_delta", "delta",
                        "stop_reason", stop_reason(f, n_calls), "stop_sequence", stop_sequence(a, f), "usage",
                        "output_tokens", (json_int_t)gen_n_tokens(a->g)));
    sse_event(out, "message_stop", json_pack("{s:s}", "type", "message_stop"));
    return false;
}

static void done(void *ctx) { release(ctx); }

static ant *parse(server *s, request *rq, api_kind kind, api_error *e)
{
    ant *a = calloc(1, sizeof *a);
    if (!a) {
        *e = (api_error){ .status = 500, .message = "out of memory" };
        return NULL;
    }
    a->s = s;
    server_new_id(s, "msg_", a->id, sizeof a->id);
    if (api_request_parse(kind, rq->body ? rq->body : "", rq->len, server_max_tokens_limit(s), &a->r, e) != 0 ||
        server_prepare(s, &a->r, &a->p, e) != 0) {
        release(a);
        return NULL;
    }
    return a;
}

enum MHD_Result anthropic_messages(server *s, struct MHD_Connection *c, request *rq)
{
    api_error e;
    ant *a = parse(s, rq, API_MESSAGES, &e);
    if (!a) return server_reply_error(c, rq, e.status, e.param, "%s", e.message);
    int rc = server_slot_acquire(s);
    if (rc != 0) {
        release(a);
        return rc == -1 ? server_reply_error(c, rq, 429, NULL, "all slots are busy and the queue is full")
                        : server_reply_error(c, rq, 503, NULL, "the server is stopping");
    }
    a->slot = true;
    char err[256];
    a->g = server_gen_begin(s, &a->r, &a->p, err, sizeof err);
    if (!a->g) {
        release(a);
        return server_reply_error(c, rq, 500, NULL, "%s", err);
    }
    if (a->r.stream) return sse_reply(c, rq, a, produce, done);

    strbuf text = { 0 }, thinking = { 0 };
    gen_finish f;
    do {
        const char *d, *r;
        size_t n, rn;
        f = gen_next(a->g, &d, &n);
        server_content(s, &a->p, &a->ts, d, n, &text);
        r = gen_take_reasoning(a->g, &rn);
        strbuf_add(&thinking, r, rn);
    } while (f == GEN_RUNNING);
    if (f == GEN_ERROR || f == GEN_CANCELLED || text.oom || thinking.oom) {
        strbuf_free(&text);
        strbuf_free(&thinking);
        release(a);
        return f == GEN_CANCELLED ? server_reply_error(c, rq, 503, NULL, "the server is stopping")
                                  : server_reply_error(c, rq, 500, NULL, "generation failed");
    }
    tool_call *calls = NULL;
    size_t n_calls = server_calls(s, &a->p, a->g, &a->ts, &text, &calls);
    json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s%}], s:s, s:o, s:o}",
                             "id", a->id, "type", "message", "role", "assistant", "model",
                             s->eng->name, "content", "type", "text", "text",
                             text.data ? text.data : "", text.len, "stop_reason", stop_reason(f, n_calls),
                             "stop_sequence", stop_sequence(a, f), "usage", usage(a, gen_n_tokens(a->g)));
    if (body && n_calls) { /* the calls after the text; no empty text block before them */
        json_t *content = json_object_get(body, "content");
        if (!text.len) json_array_clear(content);
        for (size_t i = 0; i < n_calls; i++) json_array_append_new(content, tool_use_block(a, &calls[i], false));
    }
    tool_calls_free(calls, n_calls);
    if (body && a->r.thinking) /* the reasoning first, as a thinking block (no signature: not Anthropic's) */
        json_array_insert_new(json_object_get(body, "content"), 0,
                              json_pack("{s:s, s:s%, s:s}", "type", "thinking", "thinking",
                                        thinking.data ? thinking.data : "", thinking.len, "signature", ""));
    strbuf_free(&text);
    strbuf_free(&thinking);
    release(a);
    return server_reply_json(c, rq, 200, body);
}

enum MHD_Result anthropic_count_tokens(server *s, struct MHD_Connection *c, request *rq)
{
    api_error e;
    ant *a = parse(s, rq, API_COUNT_TOKENS, &e);
    if (!a) return server_reply_error(c, rq, e.status, e.param, "%s", e.message);
    json_t *body = json_pack("{s:I}", "input_tokens", (json_int_t)a->p.n_ids);
    release(a);
    return server_reply_json(c, rq, 200, body);
}
