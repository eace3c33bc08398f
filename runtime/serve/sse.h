/* sse.h: Server-Sent Events responses for streamed generations.
 *
 * MHD pulls the body from a reader callback; we let it pull events from a
 * producer that runs generation a little at a time, so tokens go out as
 * they are sampled and nothing is buffered beyond one step's events.
 *
 * Contract:
 *  - sse_reply() queues a 200 text/event-stream response. MHD then calls
 *    produce(ctx, out) whenever everything produced so far has been sent;
 *    produce appends one or more events and returns false after appending
 *    the last ones. done(ctx) is called exactly once when the response ends
 *    for any reason, including a client that went away mid-stream: that is
 *    where the slot is released. If sse_reply() fails, done(ctx) has
 *    already been called.
 *  - sse_event() appends "event: NAME\n" (when name is non-NULL) and
 *    "data: JSON\n\n"; it steals the reference to data. */
#ifndef STRATA_SSE_H
#define STRATA_SSE_H

#include <jansson.h>
#include <stdbool.h>

#include "runtime/serve/server_internal.h"
#include "runtime/util/strbuf.h"

typedef bool (*sse_produce_fn)(void *ctx, strbuf *out);
typedef void (*sse_done_fn)(void *ctx);

enum MHD_Result sse_reply(struct MHD_Connection *c, request *rq, void *ctx, sse_produce_fn produce,
                          sse_done_fn done);
void sse_event(strbuf *b, const char *name, json_t *data);

#endif
