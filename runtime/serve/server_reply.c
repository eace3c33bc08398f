/* server_reply.c: the replies and ids every handler uses (server_internal.h):
 * JSON bodies and each API's error shape, the CORS headers, the metrics
 * count of every answer. Beneath the handlers and the dispatcher
 * (server.c), so that neither has to reach back into the other. */
#include "runtime/serve/server_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void server_add_cors(const server *s, struct MHD_Response *r)
{
    if (!s->cors_origin) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", s->cors_origin);
    MHD_add_response_header(r, "Vary", "Origin");
}

enum MHD_Result server_reply_text(struct MHD_Connection *c, request *rq, int status,
                                  const char *type, char *text, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(text); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    server_add_cors(rq->srv, r);
    if (status == 429) MHD_add_response_header(r, "Retry-After", "1");
    metrics_request(rq->srv->metrics, rq->endpoint, status);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result server_reply_json(struct MHD_Connection *c, request *rq, int status, json_t *body)
{
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!s) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
        return server_reply_text(c, rq, 500, "application/json", strdup(oom), sizeof oom - 1);
    }
    return server_reply_text(c, rq, status, "application/json", s, strlen(s));
}

/* The error types each API documents for each status. */
static const char *error_type(api_style st, int status)
{
    if (st == STYLE_ANTHROPIC) {
        switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 404: case 405: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 503: return "overloaded_error";
        default: return "api_error";
        }
    }
    switch (status) {
    case 401: return "authentication_error";
    case 404: case 405: return "not_found_error";
    case 429: return "rate_limit_error";
    case 500: case 503: return "server_error";
    default: return "invalid_request_error";
    }
}

enum MHD_Result server_reply_error(struct MHD_Connection *c, request *rq, int status,
                                   const char *param, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *body;
    if (rq->style == STYLE_ANTHROPIC)
        body = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type",
                         error_type(rq->style, status), "message", msg);
    else
        body = json_pack("{s:{s:s, s:s, s:s*, s:n}}", "error", "message", msg, "type",
                         error_type(rq->style, status), "param", param, "code");
    return server_reply_json(c, rq, status, body);
}

void server_new_id(server *s, const char *prefix, char *buf, size_t n)
{
    unsigned long long k = atomic_fetch_add(&s->next_id, 1);
    snprintf(buf, n, "%s%08llx%08llx", prefix, (unsigned long long)time(NULL), k);
}

void server_new_call_id(server *s, const char *prefix, char *buf, size_t n)
{
    const size_t len = tool_call_id_len(chat_tools_format(s->tools)); /* the template's rule, or 0: ours */
    if (!len) {
        server_new_id(s, prefix, buf, n);
        return;
    }
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    /* splitmix64 of the time and the counter: distinct inputs spread over 62^9 values */
    unsigned long long x = ((unsigned long long)time(NULL) << 24) ^ atomic_fetch_add(&s->next_id, 1);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    char id[16];
    size_t i = 0;
    for (; i < len && i < sizeof id - 1; i++, x /= 62) id[i] = digits[x % 62];
    id[i] = 0;
    snprintf(buf, n, "%s", id);
}
