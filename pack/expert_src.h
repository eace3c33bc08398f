/* expert_src.h: where a routed expert's slice of one part (gate, up,
 * gate_up, down) lives in a source GGUF.
 *
 * Contract: a part is llama.cpp's merged [K, N, E] tensor
 * "blk.L.ffn_<part>_exps.weight", or, in GGUFs converted before April 2024
 * (Mixtral's first files, still widely downloaded), E tensors [K, N]
 * "blk.L.ffn_<part>.<e>.weight", which current llama.cpp no longer loads.
 * expert_src_find() returns 1 and fills x for either (the split set must
 * run 0..E-1 without a gap, one type and shape; a mismatch is -1 with one
 * line naming the tensor), 0 when the layer has no such part.
 * expert_src_slice() is expert e's bytes (ggml row layout, N rows of K);
 * expert_src_release() drops the pages of a consumed part. The pack always
 * names the part by its merged name (EXPERT_PART_ROLES; the names are
 * formats/tensor_names.c's). */
#ifndef STRATA_EXPERT_SRC_H
#define STRATA_EXPERT_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/pack_manifest.h"
#include "formats/tensor_names.h"
#include "pack/source.h"

extern const char *const EXPERT_PART_KEYS[PACK_MAX_PARTS]; /* gate, up, gate_up, down */
extern const tensor_role EXPERT_PART_ROLES[PACK_MAX_PARTS]; /* the merged tensor of each */

typedef struct expert_src {
    const gguf_tensor *merged;  /* NULL: one tensor per expert */
    int layer, part, n_expert, type;
    int64_t K, N;
    size_t slice_bytes;         /* one expert */
} expert_src;

int expert_src_find(const source *s, int layer, int part, expert_src *x, char *err, size_t errlen);
const uint8_t *expert_src_slice(const source *s, const expert_src *x, int e);
void expert_src_release(const source *s, const expert_src *x);

/* The highest layer with a routed-expert tensor of either layout, or -1. */
int expert_src_max_layer(const source *s);
/* True for a tensor that belongs to a routed-expert part (either layout). */
bool expert_src_is_part(const gguf_tensor *g);

#endif
