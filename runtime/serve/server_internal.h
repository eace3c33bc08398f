/* server_internal.h: what the server's files share (routing in server.c,
 * replies and ids in server_reply.c, limits and auth in server_limits.c,
 * prompt and generation plumbing in server_gen.c, the API handlers in
 * server_openai.c / server_anthropic.c / server_responses.c, streaming in
 * sse.c). Not for use outside the server.
 *
 * Contract: a handler gets the request with its whole body, answers
 * through server_reply_*() or sse_reply(), which add CORS headers and
 * count the request in the metrics, and returns what MHD_queue_response()
 * returned. */
#ifndef STRATA_SERVER_INTERNAL_H
#define STRATA_SERVER_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/chat/api_request.h"
#include "runtime/chat/chat_request.h"
#include "runtime/chat/chat_template.h"
#include "runtime/serve/engine.h"
#include "runtime/serve/generate.h"
#include "runtime/serve/metrics.h"
#include "runtime/serve/server.h"
#include "runtime/chat/tool_calls.h"

typedef enum api_style { STYLE_OPENAI, STYLE_ANTHROPIC } api_style;

struct server {
    char              *host, *api_key, *cors_origin, *template_name;
    int                parallel, queue, n_ctx_cfg;
    size_t             max_body;
    bool               strict_max_tokens;
    bool               webui;      /* the chat page and dashboard (server_web.c) */
    bool               remote_images; /* --allow-remote-images (server_images.c) */
    int                draft_max;  /* server_config's: the default of requests that do not say */
    bool               draft_mtp;
    struct MHD_Daemon *daemon;
    int                port;
    metrics           *metrics;

    engine            *eng;        /* set once, before ready becomes true */
    atomic_bool        ready, stopping;
    int                n_ctx;
    chat_family        family;
    chat_tools         tools;      /* the template's tool-call format */
    char              *default_system;
    gen_harmony        harmony;    /* gpt-oss chats: only the final channel is answered */
    bool               has_harmony;
    gen_kept           kept[8];    /* the tool format's markers that are control tokens: kept in chat answers */
    struct json_vocab *json_vocab; /* every token's text, for JSON mode; NULL: out of memory at start */
    struct json_vocab *json_vocab_calls; /* the same with the kept markers' text (forced calls); NULL: none kept */
    size_t             n_kept;

    pthread_mutex_t    mu;         /* slots and queue */
    pthread_cond_t     cv;
    int                busy, waiting;
    atomic_ullong      next_id;
};

/* The largest max_tokens a request may name: the context length when
 * --strict-max-tokens refuses what it cannot hold; otherwise any (it is
 * cut to the room the prompt leaves, server_gen.c). */
static inline int server_max_tokens_limit(const server *s) { return s->strict_max_tokens ? s->n_ctx : 1 << 30; }


typedef struct request request;
typedef enum MHD_Result (*route_fn)(server *s, struct MHD_Connection *c, request *rq);

struct request {
    server     *srv;
    const char *endpoint; /* metrics label */
    const char *url;      /* the path asked for (a prefix route's handler reads the rest) */
    api_style   style;
    route_fn    fn;
    bool        method_ok;
    char       *body;
    size_t      len, cap;
    bool        too_large;
};

/* replies (server_reply.c) */
/* Answers TEXT (malloc'd; freed) as TYPE, counted in the metrics. */
enum MHD_Result server_reply_text(struct MHD_Connection *c, request *rq, int status,
                                  const char *type, char *text, size_t len);
enum MHD_Result server_reply_json(struct MHD_Connection *c, request *rq, int status, json_t *body);
enum MHD_Result server_reply_error(struct MHD_Connection *c, request *rq, int status,
                                   const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void server_add_cors(const server *s, struct MHD_Response *r);
/* "chatcmpl-…", "msg_…": unique within this server's life */
void server_new_id(server *s, const char *prefix, char *buf, size_t n);
/* A tool call's id: server_new_id's, or for a template that only takes ids
 * of 9 letters and digits back (Mistral v3's) one of those, no prefix. */
void server_new_call_id(server *s, const char *prefix, char *buf, size_t n);

/* limits (server_limits.c) */
bool server_authorized(const server *s, struct MHD_Connection *c);
/* 0: got a slot; -1: queue full; -2: stopping */
int server_slot_acquire(server *s);
void server_slot_release(server *s);

/* generation plumbing (server_gen.c) */
typedef struct prepared {
    int32_t  *ids;
    size_t    n_ids;
    int       max_tokens;
    gen_think think;    /* chats: <think> reasoning opened by the prompt, or maybe by the answer */
    bool      tools;    /* the prompt offers tools: the answer's tool calls are parsed out (tool_calls.h) */
    const char *const *tool_defs; /* the request's tools (it outlives this), to type Qwen3-Coder's values */
    size_t    n_tool_defs;
    char      call_prefix[320]; /* a forced call's opening, written at the prompt's end: the answer's start; "" */
    const char *call_suffix;    /* a named forced call held to its tool's schema: its close, taken as the answer's end */
    int       forced_tool;      /* that tool's index in the request's tools, or -1 */
    bool      forced_any;       /* an unnamed forced call ("required"): the answer opens with one of the tools'
                                 * names and holds to its schema (server_gen_begin), its close the answer's end;
                                 * in the tagged formats only the name is held (forced_name_only) */
    bool      forced_name_only;
    struct image_rgb *pics;         /* the request's pictures, decoded, in message order */
    size_t    n_pics;
    engine_pictures *pictures;      /* the engine's, for begin() (NULL: no pictures) */
} prepared;
/* The request's pictures decoded into p->pics and held to the limits, each
 * failure a 400 naming the part; then a 400 by name when the model takes
 * none, or a client's text holding the picture marker. With pictures,
 * *marked is a copy of the messages whose contents carry the marker where
 * each picture stood (server_free_marked). 0 when there are none
 * (server_images.c). */
int server_pictures(const server *s, const api_request *r, prepared *p, api_message **marked, api_error *e);
void server_free_marked(const api_request *r, api_message *msgs);
/* The prepared prompt's pictures and their engine state. */
void server_free_pictures(const server *s, prepared *p);
/* Everything server_prepare() made (the ids, the pictures). */
void server_prepared_free(const server *s, prepared *p);
/* Renders (chat) or takes (completion) the prompt, tokenizes it and checks
 * the context; on failure fills e (400 with the limit that was hit). */
int server_prepare(server *s, const api_request *r, prepared *p, api_error *e);
gen *server_gen_begin(server *s, const api_request *r, const prepared *p, char *err, size_t errlen);
/* The answer's text on its way out: through the tool-call scanner when the
 * request offered tools and the template writes calls into the text
 * (Qwen3); as it is otherwise (harmony keeps calls apart). Into out. */
void server_content(const server *s, const prepared *p, tool_scan *ts, const char *d, size_t n, strbuf *out);
/* At the end: the calls the answer made (0 without tools offered, or when
 * they do not parse), from the scanner (its held text goes to out) or from
 * harmony's function-call messages. */
size_t server_calls(const server *s, const prepared *p, gen *g, tool_scan *ts, strbuf *out, tool_call **calls);
/* Counts tokens in the metrics and ends the generation. */
void server_gen_finish(server *s, gen *g, size_t n_prompt);

/* handlers */
enum MHD_Result openai_chat(server *s, struct MHD_Connection *c, request *rq);
enum MHD_Result openai_completion(server *s, struct MHD_Connection *c, request *rq);
enum MHD_Result anthropic_messages(server *s, struct MHD_Connection *c, request *rq);
enum MHD_Result anthropic_count_tokens(server *s, struct MHD_Connection *c, request *rq);
enum MHD_Result openai_responses(server *s, struct MHD_Connection *c, request *rq);
/* server_web.c: a web file by name (404 when --no-webui), and /static/NAME */
enum MHD_Result server_web_file(server *s, struct MHD_Connection *c, request *rq, const char *name);
enum MHD_Result server_web_static(server *s, struct MHD_Connection *c, request *rq);

#endif
