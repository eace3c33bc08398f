/* build_common.h: the pieces `iq3pack build` uses in both of its halves,
 * the dense tensors (build.c) and the routed experts (build_experts.c):
 * the progress line and which layers a pack leaves out. They sit beneath
 * both halves so that neither half calls into the other for them.
 *
 * Contract: build_progress_step() adds `bytes` to the done count and, when
 * the progress line is on, redraws it on stderr (a newline once all is
 * done); where stderr is no terminal (on == 2) it writes one line per tenth
 * done instead, with the time left, as `strata pull` does. build_first_dropped_layer() and build_tensor_dropped() agree on
 * the layers no half may write. No global state. */
#ifndef STRATA_BUILD_COMMON_H
#define STRATA_BUILD_COMMON_H

#include <signal.h>
#include <stdint.h>

#include "pack/source.h"

typedef struct build_progress {
    uint64_t total, done;
    double   t0;
    int      on;          /* 0 none, 1 a redrawn bar (a terminal), 2 a line every 10 % (a log) */
    int      last_decile; /* mode 2: the last tenth reported */
    const char *label;    /* mode 2: the line's prefix ("iq3pack build") */
} build_progress;
void build_progress_step(build_progress *p, uint64_t bytes, const char *what);
double build_now(void); /* seconds on the monotonic clock */

/* SIGINT and SIGTERM while a build writes its partial folder: after
 * build_catch_signals() the first one only sets a flag (a second one kills
 * as usual: SA_RESETHAND), which the write loops poll through
 * build_interrupted() between slices, so the build stops, removes the
 * folder and then build_release_signals() restores the old handlers and
 * re-raises the signal (the exit status says it was interrupted). The flag
 * is the one piece of state a signal handler may set. */
typedef struct build_signals { struct sigaction old_int, old_term; } build_signals;
void build_catch_signals(build_signals *bs);
int build_interrupted(void);
void build_release_signals(const build_signals *bs);

/* The first layer a pack leaves out: llama.cpp's next-token-prediction
 * layers (<arch>.nextn_predict_layers, the last blocks: GLM-4.5's MTP),
 * which only a draft (strata's --draft mtp) runs, with drop_nextn or where
 * the architecture's row (formats/arch_table.h) has no mtp. INT_MAX when
 * none is left out. */
int build_first_dropped_layer(const source *s, int drop_nextn);
/* "blk.N...." with N >= first. */
int build_tensor_dropped(const char *name, int first);

#endif
