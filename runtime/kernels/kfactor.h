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
 * dmin are stored as those fp16 values (ggml's blocks hold them so), in
 * planes, or with `records` as one record a super-block (weight.h:
 * kfactor; the layout the kernels read when w's codes are split: the
 * loader asks for it for the weights it splits); the bytes are the same.
 * kf->style is 4 (Q4_K: ggml sums the mins in four lanes), 5 (Q5_K: one
 * integer sum), 6 (Q6_K: no mins), 3 (Q3_K: no mins, 4-bit codes) or 2
 * (IQ4_XS: no mins, 4-bit codes into kf->cb), taken from the shape. No allocation, no global state. */
#ifndef STRATA_KFACTOR_H
#define STRATA_KFACTOR_H

#include "runtime/kernels/weight.h"

#include <stddef.h>
#include <stdint.h>

size_t kfactor_bytes(const weight *w);
int kfactor_build(const weight *w, void *mem, kfactor *kf, int records);

/* Split codes (weight.h: code_split, kq_split_sb_bytes). A Q5_K- or
 * Q6_K-shaped S-form holds one code of 5 or 6 bits per byte; decode reads
 * every byte, where ggml's blocks hold 176 or 210 bytes per 256 weights.
 * A 4-bit one (Q4_K, Q3_K, IQ4_XS shapes) holds element 2i in the low
 * nibble of byte i, so a kernel must widen and shift to get codes in
 * order; split, 64 of them are one load and a mask (or a shift and a mask).
 * kq_split_bits(w) is the split such a weight's shape can take (4: 4-bit
 * codes and style 4, 3 or 2; 5 or 6: 8-bit codes and that style), else 0
 * (and 0 once it is split); kq_split_rows() takes only a weight that has
 * its factors (w->kf). kq_split_rows(w, codes)
 * rewrites w's codes plane in place (`codes` is w->data, writable: memory
 * the caller owns), row after row, into split rows packed from its start,
 * and sets code_split and row_bytes; it returns 1, or 0 (w untouched) when
 * w cannot take a split or a code does not fit its bits. kq_unsplit()
 * writes the 256 codes of one split super-block `sb` to out; the results of
 * every kernel are the same bits either way. kq_sb_codes(w, row, i, buf)
 * is super-block i of the codes row at `row`: in place (its codes_bits
 * packing), or a split one's 256 codes, one a byte, written out to buf. */
int kq_split_bits(const weight *w);
int kq_split_rows(weight *w, uint8_t *codes);
void kq_unsplit(const uint8_t *sb, int split, uint8_t out[256]);
const uint8_t *kq_sb_codes(const weight *w, const uint8_t *row, int64_t i, uint8_t buf[256]);

#endif
