/* build_common.h: the pieces `iq3pack build` uses in both of its halves,
 * the dense tensors (build.c) and the routed experts (build_experts.c):
 * the progress line and which layers a pack leaves out. They sit beneath
 * both halves so that neither half calls into the other for them.
 *
 * Contract: build_progress_step() adds `bytes` to the done count and, when
 * the progress line is on, redraws it on stderr (a newline once all is
 * done). build_first_dropped_layer() and build_tensor_dropped() agree on
 * the layers no half may write. No global state. */
#ifndef STRATA_BUILD_COMMON_H
#define STRATA_BUILD_COMMON_H

#include <stdint.h>

#include "pack/source.h"

typedef struct build_progress {
    uint64_t total, done;
    double   t0;
    int      on;
} build_progress;
void build_progress_step(build_progress *p, uint64_t bytes, const char *what);
double build_now(void); /* seconds on the monotonic clock */

/* The first layer a pack leaves out: llama.cpp's next-token-prediction
 * layers (<arch>.nextn_predict_layers, the last blocks: GLM-4.5's MTP) are
 * never run by the runtime, so they cost no disk. INT_MAX when none. */
int build_first_dropped_layer(const source *s);
/* "blk.N...." with N >= first. */
int build_tensor_dropped(const char *name, int first);

#endif
