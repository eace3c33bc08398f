/* sse.c: see sse.h. */
#include "runtime/serve/sse.h"

#include <stdlib.h>
#include <string.h>

typedef struct sse_stream {
    strbuf         buf;
    size_t         off;
    bool           more;
    void          *ctx;
    sse_produce_fn produce;
    sse_done_fn    done;
} sse_stream;

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
    sse_stream *st = cls;
    (void)pos;
    while (st->off == st->buf.len && st->more) {
        st->buf.len = 0;
        st->off = 0;
        st->more = st->produce(st->ctx, &st->buf);
        if (st->buf.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (st->off == st->buf.len) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = st->buf.len - st->off;
    if (n > max) n = max;
    memcpy(out, st->buf.data + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void finish(void *cls)
{
    sse_stream *st = cls;
    st->done(st->ctx);
    strbuf_free(&st->buf);
    free(st);
}

enum MHD_Result sse_reply(struct MHD_Connection *c, request *rq, void *ctx, sse_produce_fn produce,
                          sse_done_fn done)
{
    sse_stream *st = calloc(1, sizeof *st);
    if (!st) { done(ctx); return server_reply_error(c, rq, 500, NULL, "out of memory"); }
    *st = (sse_stream){ .more = true, .ctx = ctx, .produce = produce, .done = done };
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, st, finish);
    if (!r) { finish(st); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    server_add_cors(rq->srv, r);
    metrics_request(rq->srv->metrics, rq->endpoint, 200);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r); /* MHD holds its own reference; finish runs when it lets go */
    return ret;
}

void sse_event(strbuf *b, const char *name, json_t *data)
{
    char *s = data ? json_dumps(data, JSON_COMPACT) : NULL;
    json_decref(data);
    if (!s) { b->oom = true; return; }
    if (name) strbuf_printf(b, "event: %s\n", name);
    strbuf_printf(b, "data: %s\n\n", s);
    free(s);
}
