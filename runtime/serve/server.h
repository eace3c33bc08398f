/* server.h: the HTTP server behind `strata serve` (libmicrohttpd + jansson):
 * OpenAI- and Anthropic-compatible endpoints over an engine (engine.h).
 * docs/server.md lists the API surface.
 *
 * Contract:
 *  - server_start() resolves host (a name such as localhost, an IPv4 or an
 *    IPv6 address), binds the first of its addresses that accepts the port
 *    (port 0 picks a free one; server_port() says which, server_url() gives
 *    "http://HOST:PORT", an IPv6 literal in brackets) and serves at once; until server_set_engine() gives it a
 *    model, /health answers 503 and the API endpoints 503, so a load
 *    balancer can wait for the pack to load.
 *  - The server keeps pointers to the engine, never owns it: the caller
 *    frees the engine after server_stop().
 *  - All state lives in the server object; several servers may run in one
 *    process (the tests do).
 *  - server_stop() cancels generations in progress at their next token,
 *    waits for every connection thread and frees everything.
 *  - Errors are one line in err; server_set_engine() writes a warning line
 *    to stderr when the chat template is not recognised (chatml is used). */
#ifndef STRATA_SERVER_H
#define STRATA_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/serve/engine.h"

typedef struct server_config {
    const char *host;          /* NULL: 127.0.0.1; a name or an IPv4/IPv6 address */
    int         port;          /* 0: any free port */
    const char *api_key;       /* NULL: no authentication */
    int         parallel;      /* generation slots; 0: 1 */
    int         queue;         /* requests that may wait for a slot; 0: 4 * parallel, -1: none */
    int         n_ctx;         /* 0: the engine's; otherwise min(this, engine's) */
    const char *chat_template; /* a family name that overrides the pack's template, or NULL */
    const char *cors_origin;   /* NULL: no CORS headers */
    size_t      max_body;      /* 0: 1 MiB */
    bool        strict_max_tokens; /* refuse (400) a max_tokens the context cannot hold; false:
                                    * the answer ends where the context does (finish "length") */
    int         draft_max;     /* speculative decoding for requests that do not say ("draft"): guesses at
                                * most a step, 0: none */
    bool        draft_mtp;     /* and those guesses from the next-token-prediction block, not n-grams */
    bool        no_webui;      /* no chat page at / (it answers as /health) and no /dashboard */
    bool        allow_remote_images; /* fetch pictures requests name by http(s) URL (libcurl initialised by
                                      * the caller); false: refused */
} server_config;

typedef struct server server;

server *server_start(const server_config *cfg, char *err, size_t errlen);
int server_port(const server *s);
const char *server_url(const server *s, char *buf, size_t n);
int server_set_engine(server *s, engine *e, char *err, size_t errlen);
/* After server_set_engine: the chat layout in words ("chatml; tool calls:
 * qwen3" or "...; tool calls: none"), for the start-up line. */
const char *server_chat_summary(const server *s, char *buf, size_t n);
void server_stop(server *s);

#endif
