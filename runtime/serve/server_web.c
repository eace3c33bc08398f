/* server_web.c: the web pages (web_files.h): the chat page at /, the
 * dashboard at /dashboard, their scripts and style under /static/. They
 * are public (no API key is needed to load them; they ask for the key and
 * send it with each API call, as any client does) and allow nothing from
 * elsewhere: a Content-Security-Policy of this server's own scripts,
 * styles and API, no inline script, no frames, no forms posted away. */
#include "runtime/serve/server_internal.h"
#include "runtime/serve/web_files.h"

#include <string.h>

static const char CSP[] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                          "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/* a file's type by its ending */
static const struct { const char *ext, *type; } TYPES[] = {
    { ".html", "text/html; charset=utf-8" },
    { ".js", "text/javascript; charset=utf-8" },
    { ".css", "text/css; charset=utf-8" },
    { ".svg", "image/svg+xml" },
};

static const char *type_of(const char *name)
{
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++) {
        const size_t e = strlen(TYPES[i].ext);
        if (n > e && !strcmp(name + n - e, TYPES[i].ext)) return TYPES[i].type;
    }
    return "application/octet-stream";
}

enum MHD_Result server_web_file(server *s, struct MHD_Connection *c, request *rq, const char *name)
{
    if (!s->webui) return server_reply_error(c, rq, 404, NULL, "the web pages are off (strata serve --no-webui)");
    const web_file *f = NULL;
    for (int i = 0; i < N_WEB_FILES && !f; i++)
        if (!strcmp(WEB_FILES[i].name, name)) f = &WEB_FILES[i];
    if (!f) return server_reply_error(c, rq, 404, NULL, "no such page");
    struct MHD_Response *r = MHD_create_response_from_buffer(f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type_of(f->name));
    MHD_add_response_header(r, "Content-Security-Policy", CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    server_add_cors(s, r);
    metrics_request(s->metrics, rq->endpoint, 200);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result server_web_static(server *s, struct MHD_Connection *c, request *rq)
{
    const char *url = rq->url + strlen("/static/");
    /* the files' own names only: no folders, no dot files */
    if (!*url || strchr(url, '/') || url[0] == '.') return server_reply_error(c, rq, 404, NULL, "no such file");
    return server_web_file(s, c, rq, url);
}
