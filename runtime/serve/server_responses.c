/* server_responses.c: POST /v1/responses, OpenAI's Responses API in the
 * shapes the openai SDKs and Codex parse (Codex speaks nothing else).
 * Nothing is stored: every request carries its whole conversation, and
 * previous_response_id is refused (api_request.c).
 *
 * A response's output is, in order: a reasoning item (when the model
 * reasoned: its text as reasoning_text content, no summary), a message
 * item (output_text; left out when the answer is only tool calls), and one
 * function_call item per call. Streamed, each item is announced by
 * response.output_item.added and closed by response.output_item.done; text
 * parts by response.content_part.added / .done around their
 * response.reasoning_text.delta / response.output_text.delta events,
 * calls as one response.function_call_arguments.delta each; the stream
 * opens with response.created and response.in_progress and ends with
 * response.completed (or response.incomplete when max_output_tokens cut
 * it, response.failed on an error). Every event has a sequence_number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/serve/server_internal.h"
#include "runtime/serve/sse.h"
#include "runtime/chat/tool_calls.h"

typedef struct resp {
    server     *s;
    api_request r;
    prepared    p;
    gen        *g;
    bool        started, slot;
    char        id[64], rs_id[64], msg_id[64];
    json_int_t  created;
    tool_scan   ts;
    strbuf      reasoning, text; /* streamed so far (the done events repeat them whole) */
    int         rs_index, msg_index; /* output_index of the reasoning and message items; -1 before */
    bool        rs_closed;
    int         next_index;
    json_int_t  seq;
    json_t     *output;          /* the items done, for the final response object */
} resp;

static void event(resp *x, strbuf *out, const char *type, json_t *data)
{
    if (!data) return;
    json_object_set_new(data, "type", json_string(type));
    json_object_set_new(data, "sequence_number", json_integer(x->seq++));
    sse_event(out, type, data);
}

static json_t *usage(const resp *x)
{
    size_t c = gen_n_tokens(x->g);
    return json_pack("{s:I, s:{s:I}, s:I, s:{s:I}, s:I}", "input_tokens", (json_int_t)x->p.n_ids,
                     "input_tokens_details", "cached_tokens", (json_int_t)gen_n_cached(x->g), "output_tokens",
                     (json_int_t)c, "output_tokens_details", "reasoning_tokens", (json_int_t)0, "total_tokens",
                     (json_int_t)(x->p.n_ids + c));
}

/* The response object; status "in_progress" (no usage yet), "completed",
 * "incomplete" (max_output_tokens) or "failed". */
static json_t *response_json(resp *x, const char *status, bool final)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:s, s:n, s:n, s:O, s:b, s:s, s:f, s:f, s:n}", "id", x->id,
                          "object", "response", "created_at", x->created, "status", status, "model",
                          x->s->eng->name, "error", "incomplete_details", "output", x->output,
                          "parallel_tool_calls", 1, "tool_choice", "auto", "temperature", x->r.temperature,
                          "top_p", x->r.top_p, "previous_response_id");
    if (!o) return NULL;
    if (!strcmp(status, "incomplete"))
        json_object_set_new(o, "incomplete_details", json_pack("{s:s}", "reason", "max_output_tokens"));
    if (!strcmp(status, "failed"))
        json_object_set_new(o, "error", json_pack("{s:s, s:s}", "code", "server_error", "message", "generation failed"));
    json_object_set_new(o, "usage", final ? usage(x) : json_null());
    json_object_set_new(o, "max_output_tokens",
                        x->r.max_tokens ? json_integer(x->r.max_tokens) : json_null());
    json_object_set_new(o, "store", json_false());
    return o;
}

static json_t *reasoning_item(resp *x, const char *status)
{
    json_t *content = json_array();
    if (x->reasoning.len)
        json_array_append_new(content, json_pack("{s:s, s:s%}", "type", "reasoning_text", "text",
                                                 x->reasoning.data, x->reasoning.len));
    return json_pack("{s:s, s:s, s:s, s:[], s:o}", "type", "reasoning", "id", x->rs_id, "status", status,
                     "summary", "content", content);
}

static json_t *text_part(const char *d, size_t n)
{
    return json_pack("{s:s, s:s%, s:[], s:[]}", "type", "output_text", "text", d ? d : "", n, "annotations",
                     "logprobs");
}

static json_t *message_item(resp *x, const char *status, bool with_text)
{
    json_t *content = json_array();
    if (with_text) json_array_append_new(content, text_part(x->text.data, x->text.len));
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", "message", "id", x->msg_id, "status", status, "role",
                     "assistant", "content", content);
}

static json_t *call_item(resp *x, const tool_call *c, const char *status, bool with_args)
{
    char id[64], call_id[64];
    server_new_id(x->s, "fc_", id, sizeof id);
    server_new_call_id(x->s, "call_", call_id, sizeof call_id);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "function_call", "id", id, "call_id",
                     c->id ? c->id : call_id,
                     "name", c->name, "arguments", with_args ? c->arguments : "", "status", status);
}

static const char *final_status(gen_finish f, size_t n_calls)
{
    return !n_calls && f == GEN_LENGTH ? "incomplete" : "completed";
}

static void release(resp *x)
{
    server_gen_finish(x->s, x->g, x->p.n_ids);
    if (x->slot) server_slot_release(x->s);
    server_prepared_free(x->s, &x->p);
    api_request_free(&x->r);
    tool_scan_free(&x->ts);
    strbuf_free(&x->reasoning);
    strbuf_free(&x->text);
    json_decref(x->output);
    free(x);
}

/* streamed: the reasoning item ends when the first text, a call or the end comes */
static void close_reasoning(resp *x, strbuf *out)
{
    if (x->rs_index < 0 || x->rs_closed) return;
    x->rs_closed = true;
    event(x, out, "response.reasoning_text.done",
          json_pack("{s:s, s:i, s:i, s:s%}", "item_id", x->rs_id, "output_index", x->rs_index, "content_index", 0,
                    "text", x->reasoning.data ? x->reasoning.data : "", x->reasoning.len));
    event(x, out, "response.content_part.done",
          json_pack("{s:s, s:i, s:i, s:{s:s, s:s%}}", "item_id", x->rs_id, "output_index", x->rs_index,
                    "content_index", 0, "part", "type", "reasoning_text", "text",
                    x->reasoning.data ? x->reasoning.data : "", x->reasoning.len));
    json_t *item = reasoning_item(x, "completed");
    json_array_append(x->output, item);
    event(x, out, "response.output_item.done", json_pack("{s:i, s:o}", "output_index", x->rs_index, "item", item));
}

static void open_message(resp *x, strbuf *out)
{
    if (x->msg_index >= 0) return;
    close_reasoning(x, out);
    x->msg_index = x->next_index++;
    event(x, out, "response.output_item.added",
          json_pack("{s:i, s:o}", "output_index", x->msg_index, "item", message_item(x, "in_progress", false)));
    event(x, out, "response.content_part.added",
          json_pack("{s:s, s:i, s:i, s:o}", "item_id", x->msg_id, "output_index", x->msg_index, "content_index", 0,
                    "part", text_part("", 0)));
}

static void close_message(resp *x, strbuf *out)
{
    if (x->msg_index < 0) return;
    const char *d = x->text.data ? x->text.data : "";
    event(x, out, "response.output_text.done",
          json_pack("{s:s, s:i, s:i, s:s%, s:[]}", "item_id", x->msg_id, "output_index", x->msg_index,
                    "content_index", 0, "text", d, x->text.len, "logprobs"));
    event(x, out, "response.content_part.done",
          json_pack("{s:s, s:i, s:i, s:o}", "item_id", x->msg_id, "output_index", x->msg_index, "content_index", 0,
                    "part", text_part(d, x->text.len)));
    json_t *item = message_item(x, "completed", true);
    json_array_append(x->output, item);
    event(x, out, "response.output_item.done", json_pack("{s:i, s:o}", "output_index", x->msg_index, "item", item));
}

static bool produce(void *ctx, strbuf *out)
{
    resp *x = ctx;
    if (!x->started) {
        x->started = true;
        event(x, out, "response.created", json_pack("{s:o}", "response", response_json(x, "in_progress", false)));
        event(x, out, "response.in_progress", json_pack("{s:o}", "response", response_json(x, "in_progress", false)));
        return true;
    }
    const char *d, *r;
    size_t n, rn, ignored;
    gen_finish f = gen_next(x->g, &d, &n);
    gen_take_tokens(x->g, &ignored);
    r = gen_take_reasoning(x->g, &rn);
    if (rn > 0 && !x->rs_closed) {
        if (x->rs_index < 0) {
            x->rs_index = x->next_index++;
            event(x, out, "response.output_item.added",
                  json_pack("{s:i, s:o}", "output_index", x->rs_index, "item", reasoning_item(x, "in_progress")));
            event(x, out, "response.content_part.added",
                  json_pack("{s:s, s:i, s:i, s:{s:s, s:s}}", "item_id", x->rs_id, "output_index", x->rs_index,
                            "content_index", 0, "part", "type", "reasoning_text", "text", ""));
        }
        strbuf_add(&x->reasoning, r, rn);
        event(x, out, "response.reasoning_text.delta",
              json_pack("{s:s, s:i, s:i, s:s%}", "item_id", x->rs_id, "output_index", x->rs_index, "content_index", 0,
                        "delta", r, rn));
    }
    strbuf shown = { 0 };
    tool_call *calls = NULL;
    size_t n_calls = 0;
    const bool ended = f != GEN_RUNNING && f != GEN_ERROR && f != GEN_CANCELLED;
    server_content(x->s, &x->p, &x->ts, d, n, &shown);
    if (ended) n_calls = server_calls(x->s, &x->p, x->g, &x->ts, &shown, &calls);
    if (shown.len > 0) {
        open_message(x, out);
        strbuf_add(&x->text, shown.data, shown.len);
        event(x, out, "response.output_text.delta",
              json_pack("{s:s, s:i, s:i, s:s%, s:[]}", "item_id", x->msg_id, "output_index", x->msg_index,
                        "content_index", 0, "delta", shown.data, shown.len, "logprobs"));
    }
    strbuf_free(&shown);
    if (f == GEN_RUNNING) return true;
    if (f == GEN_ERROR || f == GEN_CANCELLED) {
        event(x, out, "response.failed", json_pack("{s:o}", "response", response_json(x, "failed", true)));
        return false;
    }
    close_reasoning(x, out);
    if (!n_calls) open_message(x, out); /* an empty answer is still a message */
    close_message(x, out);
    for (size_t i = 0; i < n_calls; i++) {
        const int index = x->next_index++;
        json_t *added = call_item(x, &calls[i], "in_progress", false);
        const char *item_id = json_string_value(json_object_get(added, "id"));
        json_t *done = json_deep_copy(added);
        json_object_set_new(done, "arguments", json_string(calls[i].arguments));
        json_object_set_new(done, "status", json_string("completed"));
        event(x, out, "response.output_item.added", json_pack("{s:i, s:O}", "output_index", index, "item", added));
        event(x, out, "response.function_call_arguments.delta",
              json_pack("{s:s, s:i, s:s}", "item_id", item_id, "output_index", index, "delta", calls[i].arguments));
        event(x, out, "response.function_call_arguments.done",
              json_pack("{s:s, s:i, s:s}", "item_id", item_id, "output_index", index, "arguments", calls[i].arguments));
        json_array_append(x->output, done);
        event(x, out, "response.output_item.done", json_pack("{s:i, s:o}", "output_index", index, "item", done));
        json_decref(added);
    }
    tool_calls_free(calls, n_calls);
    const char *status = final_status(f, n_calls);
    event(x, out, !strcmp(status, "completed") ? "response.completed" : "response.incomplete",
          json_pack("{s:o}", "response", response_json(x, status, true)));
    return false;
}

static void done(void *ctx) { release(ctx); }

enum MHD_Result openai_responses(server *s, struct MHD_Connection *c, request *rq)
{
    resp *x = calloc(1, sizeof *x);
    if (!x) return server_reply_error(c, rq, 500, NULL, "out of memory");
    x->s = s;
    x->rs_index = x->msg_index = -1;
    x->created = (json_int_t)time(NULL);
    x->output = json_array();
    server_new_id(s, "resp_", x->id, sizeof x->id);
    server_new_id(s, "rs_", x->rs_id, sizeof x->rs_id);
    server_new_id(s, "msg_", x->msg_id, sizeof x->msg_id);
    api_error e;
    if (!x->output ||
        api_request_parse(API_RESPONSES, rq->body ? rq->body : "", rq->len, server_max_tokens_limit(s), &x->r, &e) != 0 ||
        server_prepare(s, &x->r, &x->p, &e) != 0) {
        if (!x->output) e = (api_error){ .status = 500, .message = "out of memory" };
        release(x);
        return server_reply_error(c, rq, e.status, e.param, "%s", e.message);
    }
    int rc = server_slot_acquire(s);
    if (rc != 0) {
        release(x);
        return rc == -1 ? server_reply_error(c, rq, 429, NULL, "all slots are busy and the queue is full")
                        : server_reply_error(c, rq, 503, NULL, "the server is stopping");
    }
    x->slot = true;
    char err[256];
    x->g = server_gen_begin(s, &x->r, &x->p, err, sizeof err);
    if (!x->g) {
        release(x);
        return server_reply_error(c, rq, 500, NULL, "%s", err);
    }
    if (x->r.stream) return sse_reply(c, rq, x, produce, done);

    gen_finish f;
    do {
        const char *d, *r;
        size_t n, rn;
        f = gen_next(x->g, &d, &n);
        server_content(s, &x->p, &x->ts, d, n, &x->text);
        r = gen_take_reasoning(x->g, &rn);
        strbuf_add(&x->reasoning, r, rn);
    } while (f == GEN_RUNNING);
    if (f == GEN_ERROR || f == GEN_CANCELLED || x->text.oom || x->reasoning.oom) {
        release(x);
        return f == GEN_CANCELLED ? server_reply_error(c, rq, 503, NULL, "the server is stopping")
                                  : server_reply_error(c, rq, 500, NULL, "generation failed");
    }
    tool_call *calls = NULL;
    size_t n_calls = server_calls(s, &x->p, x->g, &x->ts, &x->text, &calls);
    if (x->reasoning.len) json_array_append_new(x->output, reasoning_item(x, "completed"));
    if (x->text.len || !n_calls) json_array_append_new(x->output, message_item(x, "completed", true));
    for (size_t i = 0; i < n_calls; i++) json_array_append_new(x->output, call_item(x, &calls[i], "completed", true));
    tool_calls_free(calls, n_calls);
    json_t *body = response_json(x, final_status(f, n_calls), true);
    release(x);
    return server_reply_json(c, rq, 200, body);
}
