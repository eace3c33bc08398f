/* kfactor.h: the super-block factors of a K-quant held in S-form.
 *
 * A Q4_K or Q5_K tensor in the pack's planar form keeps, per group of 32,
 * scale = d * sc and offset = -dmin * m (f32, exact) with d, dmin fp16 per
 * 256 elements and sc, m 6-bit integers; a Q6_K tensor, per group of 16,
 * scale = d * sc with sc a signed 8-bit integer. ggml multiplies in that factored
 * order (integer sums x sc, then one float multiply by d per super-block),
 * so reproducing its float results needs d and sc apart again.
 *
 * Contract. kfactor_bytes(w) is the memory kfactor_build() needs for w, or 0
 * when w is not K-shaped (S-form, 4- or 8-bit codes, bias 0, offsets, group
 * 32, Q8_K activations, cols % 256 == 0). kfactor_build() fills `mem` and
 * *kf and returns 1 when every super-block factors exactly (d and dmin fp16
 * values whose integer multiples, 0..63 or -128..127, give every scale and
 * offset bit for bit, the largest such integers taken);
 * otherwise it returns 0 and the weight keeps its per-group kernel. d and
 * dmin are stored as those fp16 values (ggml's blocks hold them so).
 * kf->style is 4 (Q4_K: ggml sums the mins in four lanes), 5 (Q5_K: one
 * integer sum) or 6 (Q6_K: no mins), taken from the shape. No allocation, no global state. */
#ifndef STRATA_KFACTOR_H
#define STRATA_KFACTOR_H

#include "runtime/kernels/weight.h"

#include <stddef.h>

size_t kfactor_bytes(const weight *w);
int kfactor_build(const weight *w, void *mem, kfactor *kf);

#endif
