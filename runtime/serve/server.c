/* server.c: the daemon and the route table, the one file above the API
 * handlers (server_openai.c, server_anthropic.c, server_responses.c); the
 * replies they and it share are in server_reply.c.
 *
 * MHD runs one thread per connection, so a handler may block (waiting for a
 * slot, generating a non-streamed answer) and a streamed body is produced
 * by the connection's own thread as the client reads it (sse.c). */
#include "runtime/serve/server_internal.h"
#include "runtime/chat/json_mode.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum MHD_Result health(server *s, struct MHD_Connection *c, request *rq);
static enum MHD_Result root(server *s, struct MHD_Connection *c, request *rq);
static enum MHD_Result dashboard(server *s, struct MHD_Connection *c, request *rq);
static enum MHD_Result models(server *s, struct MHD_Connection *c, request *rq);
static enum MHD_Result metrics_page(server *s, struct MHD_Connection *c, request *rq);

/* One row per endpoint: the path is also the metrics label; a prefix row
 * takes every path under it. */
static const struct route {
    const char *method, *path;
    route_fn    fn;
    api_style   style;
    bool        needs_engine, public_, prefix;
} ROUTES[] = {
    { "GET", "/health", health, STYLE_OPENAI, false, true, false },
    /* the chat page; also clients' reachability check (Claude Code: HEAD /), 200 either way */
    { "GET", "/", root, STYLE_OPENAI, false, true, false },
    { "GET", "/dashboard", dashboard, STYLE_OPENAI, false, true, false },
    { "GET", "/static/", server_web_static, STYLE_OPENAI, false, true, true },
    { "GET", "/metrics", metrics_page, STYLE_OPENAI, false, false, false },
    { "GET", "/v1/models", models, STYLE_OPENAI, true, false, false },
    { "POST", "/v1/chat/completions", openai_chat, STYLE_OPENAI, true, false, false },
    { "POST", "/v1/completions", openai_completion, STYLE_OPENAI, true, false, false },
    { "POST", "/v1/responses", openai_responses, STYLE_OPENAI, true, false, false },
    { "POST", "/v1/messages", anthropic_messages, STYLE_ANTHROPIC, true, false, false },
    { "POST", "/v1/messages/count_tokens", anthropic_count_tokens, STYLE_ANTHROPIC, true, false, false },
};
#define N_ROUTES (sizeof ROUTES / sizeof ROUTES[0])

static enum MHD_Result health(server *s, struct MHD_Connection *c, request *rq)
{
    bool ok = atomic_load(&s->ready);
    return server_reply_json(c, rq, ok ? 200 : 503,
                             json_pack("{s:s}", "status", ok ? "ok" : "loading"));
}

static enum MHD_Result root(server *s, struct MHD_Connection *c, request *rq)
{
    return s->webui ? server_web_file(s, c, rq, "index.html") : health(s, c, rq);
}

static enum MHD_Result dashboard(server *s, struct MHD_Connection *c, request *rq)
{
    return server_web_file(s, c, rq, "dashboard.html");
}

static enum MHD_Result models(server *s, struct MHD_Connection *c, request *rq)
{
    json_int_t now = (json_int_t)time(NULL);
    /* Anthropic's SDK lists models in its own shape; it always sends this header */
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "anthropic-version"))
        return server_reply_json(c, rq, 200,
            json_pack("{s:[{s:s, s:s, s:s, s:s}], s:b, s:s, s:s}", "data", "type", "model", "id",
                      s->eng->name, "display_name", s->eng->name, "created_at",
                      "1970-01-01T00:00:00Z", "has_more", 0, "first_id", s->eng->name, "last_id",
                      s->eng->name));
    return server_reply_json(c, rq, 200,
        json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id",
                  s->eng->name, "object", "model", "created", now, "owned_by", "strata",
                  "context_length", s->n_ctx));
}

static enum MHD_Result metrics_page(server *s, struct MHD_Connection *c, request *rq)
{
    pthread_mutex_lock(&s->mu);
    int waiting = s->waiting, busy = s->busy;
    pthread_mutex_unlock(&s->mu);
    char *text = metrics_render(s->metrics, waiting, busy, s->parallel);
    if (text && s->eng && s->eng->device_metrics) {
        char extra[8192] = "";
        s->eng->device_metrics(s->eng->self, extra, sizeof extra);
        size_t a = strlen(text), b = strlen(extra);
        char *t2 = realloc(text, a + b + 1);
        if (!t2) free(text);
        else memcpy(t2 + a, extra, b + 1);
        text = t2;
    }
    if (!text) return server_reply_error(c, rq, 500, NULL, "out of memory");
    return server_reply_text(c, rq, 200, "text/plain; version=0.0.4", text, strlen(text));
}

static enum MHD_Result preflight(server *s, struct MHD_Connection *c, request *rq)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    server_add_cors(s, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta");
    MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    metrics_request(s->metrics, rq->endpoint, 204);
    enum MHD_Result ret = MHD_queue_response(c, 204, r);
    MHD_destroy_response(r);
    return ret;
}

static request *new_request(server *s, const char *url, const char *method)
{
    request *rq = calloc(1, sizeof *rq);
    if (!rq) return NULL;
    rq->srv = s;
    rq->endpoint = "other";
    rq->style = !strncmp(url, "/v1/messages", 12) ? STYLE_ANTHROPIC : STYLE_OPENAI;
    rq->url = url;
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (ROUTES[i].prefix ? strncmp(url, ROUTES[i].path, strlen(ROUTES[i].path)) : strcmp(url, ROUTES[i].path))
            continue;
        rq->endpoint = ROUTES[i].path;
        rq->fn = ROUTES[i].fn;
        /* HEAD is a GET whose body libmicrohttpd leaves out */
        rq->method_ok = !strcmp(method, ROUTES[i].method) || (!strcmp(method, "HEAD") && !strcmp(ROUTES[i].method, "GET"));
    }
    return rq;
}

static const struct route *route_of(const request *rq)
{
    for (size_t i = 0; i < N_ROUTES; i++)
        if (ROUTES[i].fn == rq->fn) return &ROUTES[i];
    return NULL;
}

static enum MHD_Result dispatch(server *s, struct MHD_Connection *c, request *rq, const char *method)
{
    const struct route *rt = route_of(rq);
    if (!strcmp(method, "OPTIONS") && s->cors_origin && rt) return preflight(s, c, rq);
    if (!rt) return server_reply_error(c, rq, 404, NULL, "no such endpoint");
    if (!rq->method_ok)
        return server_reply_error(c, rq, 405, NULL, "%s needs %s, not %s", rt->path, rt->method, method);
    if (!rt->public_ && !server_authorized(s, c))
        return server_reply_error(c, rq, 401, NULL,
                                  "missing or invalid API key (send Authorization: Bearer KEY or x-api-key: KEY)");
    if (rq->too_large)
        return server_reply_error(c, rq, 413, "body", "request body exceeds the limit of %zu bytes",
                                  s->max_body);
    if (rt->needs_engine && !atomic_load(&s->ready))
        return server_reply_error(c, rq, 503, NULL, "the model is still loading");
    return rt->fn(s, c, rq);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    server *s = cls;
    request *rq = *con_cls;
    (void)version;
    if (!rq) {
        rq = new_request(s, url, method);
        *con_cls = rq;
        return rq ? MHD_YES : MHD_NO;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (rq->too_large) return MHD_YES;
        /* Refusing while reading keeps a huge body from ever being held. */
        if (n > s->max_body - rq->len) {
            rq->too_large = true;
            free(rq->body);
            rq->body = NULL;
            rq->len = rq->cap = 0;
            return MHD_YES;
        }
        if (rq->len + n + 1 > rq->cap) {
            size_t cap = rq->cap ? rq->cap : 4096;
            while (cap < rq->len + n + 1) cap *= 2;
            char *b = realloc(rq->body, cap);
            if (!b) return MHD_NO;
            rq->body = b;
            rq->cap = cap;
        }
        memcpy(rq->body + rq->len, upload, n);
        rq->len += n;
        rq->body[rq->len] = 0;
        return MHD_YES;
    }
    rq->url = url; /* this call's (MHD hands the path to every call of a request) */
    return dispatch(s, c, rq, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls; (void)c; (void)toe;
    request *rq = *con_cls;
    if (!rq) return;
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

static char *dup_opt(const char *s) { return s ? strdup(s) : NULL; }

static void free_server(server *s)
{
    metrics_free(s->metrics);
    free(s->host);
    free(s->api_key);
    free(s->cors_origin);
    free(s->template_name);
    free(s->default_system);
    json_vocab_free(s->json_vocab);
    json_vocab_free(s->json_vocab_calls);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

server *server_start(const server_config *cfg, char *err, size_t errlen)
{
    server *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->host = strdup(cfg->host ? cfg->host : "127.0.0.1");
    s->api_key = cfg->api_key && *cfg->api_key ? strdup(cfg->api_key) : NULL;
    s->cors_origin = dup_opt(cfg->cors_origin);
    s->template_name = dup_opt(cfg->chat_template);
    s->parallel = cfg->parallel > 0 ? cfg->parallel : 1;
    s->queue = cfg->queue < 0 ? 0 : cfg->queue > 0 ? cfg->queue : 4 * s->parallel;
    s->n_ctx_cfg = cfg->n_ctx;
    s->strict_max_tokens = cfg->strict_max_tokens;
    s->webui = !cfg->no_webui;
    s->remote_images = cfg->allow_remote_images;
    s->draft_max = cfg->draft_max;
    s->draft_mtp = cfg->draft_mtp;
    s->max_body = cfg->max_body ? cfg->max_body : (size_t)1 << 20;
    s->metrics = metrics_new();
    if (!s->host || !s->metrics || (cfg->api_key && *cfg->api_key && !s->api_key) ||
        (cfg->cors_origin && !s->cors_origin) || (cfg->chat_template && !s->template_name)) {
        snprintf(err, errlen, "out of memory");
        free_server(s);
        return NULL;
    }
    if (s->template_name && chat_family_from_name(s->template_name) == CHAT_UNKNOWN) {
        snprintf(err, errlen, "--chat-template %s: unknown (strata serve --help lists the names)",
                 s->template_name);
        free_server(s);
        return NULL;
    }
    if (cfg->port < 0 || cfg->port > 65535) {
        snprintf(err, errlen, "--port %d: the port must be 0..65535", cfg->port);
        free_server(s);
        return NULL;
    }
    /* The host is resolved (a name such as localhost, an IPv4 or an IPv6
     * address); each address it names is tried in turn, so that localhost
     * listens whether the resolver lists ::1 or 127.0.0.1 first. */
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res = NULL;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", cfg->port);
    int gr = getaddrinfo(s->host, port_s, &hints, &res);
    if (gr != 0) {
        snprintf(err, errlen, "--host %s: cannot resolve it (%s)", s->host, gai_strerror(gr));
        free_server(s);
        return NULL;
    }
    for (const struct addrinfo *ai = res; ai && !s->daemon; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        unsigned int v6 = ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0;
        s->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                         MHD_USE_POLL | v6,
                                     0, NULL, NULL, on_request, s,
                                     MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)300,
                                     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)512,
                                     MHD_OPTION_END);
    }
    freeaddrinfo(res);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s port %d (in use, or not an address of this machine)",
                 s->host, cfg->port);
        free_server(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    return s;
}

int server_port(const server *s) { return s->port; }

const char *server_url(const server *s, char *buf, size_t n)
{
    /* an IPv6 literal takes brackets in a URL (RFC 3986), a name does not */
    bool brackets = strchr(s->host, ':') != NULL;
    snprintf(buf, n, "http://%s%s%s:%d", brackets ? "[" : "", s->host, brackets ? "]" : "", s->port);
    return buf;
}

const char *server_chat_summary(const server *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s; tool calls: %s", chat_family_name(s->family),
             chat_tools_name(s->tools));
    return buf;
}

int server_set_engine(server *s, engine *e, char *err, size_t errlen)
{
    if (atomic_load(&s->ready)) { snprintf(err, errlen, "the server already has a model"); return -1; }
    s->eng = e;
    s->n_ctx = s->n_ctx_cfg > 0 && s->n_ctx_cfg < e->n_ctx ? s->n_ctx_cfg : e->n_ctx;
    chat_setup cs;
    bool fell_back;
    chat_setup_detect(&cs, e->chat_template, s->template_name, &s->default_system, &fell_back);
    s->family = cs.family;
    s->tools = cs.tools;
    if (!s->template_name) {
        if (fell_back)
            fprintf(stderr, "strata serve: warning: %s; using chatml\n",
                    e->chat_template ? "the pack's chat template is not one we recognise"
                                     : "the pack has no chat template");
        if (chat_template_has_dynamic_system(e->chat_template))
            fprintf(stderr, "strata serve: warning: the pack's chat template builds a default system prompt at "
                            "render time (today's date); requests without a system message get none\n");
    }
    s->json_vocab = json_vocab_new(e); /* JSON mode's table; without it (out of memory) JSON mode answers 500 */
    /* a tool format's markers that the vocabulary holds as control tokens (their pieces empty) */
    const char *const *mark;
    size_t n_mark = chat_format_of_tools(s->tools)->calls == CHAT_CALLS_IN_TEXT
                        ? tool_format_markers(chat_tools_format(s->tools), &mark) : 0;
    s->n_kept = 0;
    for (size_t k = 0; k < n_mark && s->n_kept < sizeof s->kept / sizeof s->kept[0]; k++) {
        int32_t *ids = NULL;
        size_t n = 0;
        char piece[8];
        if (e->tokenize(e->self, mark[k], strlen(mark[k]), false, &ids, &n) == 0 && n == 1 &&
            e->piece(e->self, ids[0], piece, sizeof piece) == 0)
            s->kept[s->n_kept++] = (gen_kept){ ids[0], mark[k] };
        free(ids);
    }
    /* forced calls write those markers under a constraint: a table with their text (NULL: none kept) */
    if (s->n_kept) {
        int32_t ids[8];
        const char *texts[8];
        for (size_t k = 0; k < s->n_kept; k++) { ids[k] = s->kept[k].id; texts[k] = s->kept[k].text; }
        s->json_vocab_calls = json_vocab_new_marked(e, ids, texts, s->n_kept);
    }
    /* gpt-oss: its markers' ids, so that chat answers carry the final channel only */
    if (chat_format_of_family(s->family)->harmony) {
        static const char *const MARK[5] = { "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>" };
        int32_t id[5];
        for (int k = 0; k < 5; k++) {
            int32_t *ids = NULL;
            size_t n = 0;
            id[k] = e->tokenize(e->self, MARK[k], strlen(MARK[k]), false, &ids, &n) == 0 && n == 1 ? ids[0] : -1;
            free(ids);
        }
        s->harmony = (gen_harmony){ id[0], id[1], id[2], id[3], id[4] };
        s->has_harmony = id[0] >= 0 && id[1] >= 0 && id[2] >= 0 && id[3] >= 0;
        if (!s->has_harmony)
            fprintf(stderr, "strata serve: warning: a gpt-oss template without harmony's markers in the vocabulary; "
                            "answers carry every channel\n");
    }
    atomic_store(&s->ready, true);
    return 0;
}

void server_stop(server *s)
{
    if (!s) return;
    atomic_store(&s->stopping, true);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->daemon);
    free_server(s);
}
