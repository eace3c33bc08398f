/* pull_progress.h: what the user sees while one file downloads.
 *
 * Contract: on a terminal (PULL_PROGRESS_BAR) one line redrawn at most five
 * times a second: bar, percent, bytes, rate, ETA. Otherwise
 * (PULL_PROGRESS_LINES) a plain line at every 10% and at the end, so logs
 * stay short and greppable. Rate and ETA count only bytes moved in this
 * run, not what a resumed .part already held. No allocation. */
#ifndef STRATA_PULL_PROGRESS_H
#define STRATA_PULL_PROGRESS_H

#include <stdint.h>
#include <stdio.h>
#include "runtime/pull/pull.h"

typedef struct pull_progress {
    FILE *out;
    enum pull_progress_mode mode;
    const char *name;
    int64_t total;        /* -1 when the server stated no size */
    int64_t first;        /* bytes already present when this run began */
    double t0, last_draw;
    int last_decile;
    int drawn;            /* a bar line is on screen, unterminated */
} pull_progress;

void pull_progress_start(pull_progress *p, FILE *out, enum pull_progress_mode mode,
                         const char *name, int64_t total, int64_t have);
void pull_progress_update(pull_progress *p, int64_t have);
/* Ends the bar line (if any) so a message can follow on its own line. */
void pull_progress_break(pull_progress *p);
void pull_progress_done(pull_progress *p, int64_t have);

#endif
