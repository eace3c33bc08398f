/* expert_src.c: merged and per-expert routed-expert tensors (expert_src.h). */
#include "pack/expert_src.h"

#include <stdio.h>
#include <string.h>

#include "formats/ggml_types.h"

const char *const EXPERT_PART_KEYS[PACK_MAX_PARTS] = { "gate", "up", "gate_up", "down" };
const tensor_role EXPERT_PART_ROLES[PACK_MAX_PARTS] = { TN_FFN_GATE_EXPS, TN_FFN_UP_EXPS, TN_FFN_GATE_UP_EXPS,
                                                         TN_FFN_DOWN_EXPS };

/* A part's merged tensor (3-D) or one expert's split tensor (2-D, gate/up/down
 * only; tensor_names.h) -> layer and part, else -1. */
static int parse_part(const gguf_tensor *g, int *layer, int *expert)
{
    int l, e;
    const tensor_role r = tensor_role_of(g->name, &l, &e);
    if (r == TN_NONE || g->n_dims != (e < 0 ? 3 : 2)) return -1;
    for (int p = 0; p < PACK_MAX_PARTS; p++)
        if (r == EXPERT_PART_ROLES[p]) {
            *layer = l;
            *expert = e;
            return p;
        }
    return -1;
}

bool expert_src_is_part(const gguf_tensor *g)
{
    int l, e;
    return parse_part(g, &l, &e) >= 0;
}

int expert_src_max_layer(const source *s)
{
    int max = -1;
    for (int64_t i = 0; i < source_n_tensors(s); i++) {
        int l, e;
        if (parse_part(source_tensor_at(s, i), &l, &e) >= 0 && l > max) max = l;
    }
    return max;
}

static const gguf_tensor *split_tensor(const source *s, int layer, int part, int e)
{
    char name[96];
    const gguf_tensor *g = source_find(s, tensor_split_name(name, sizeof name, EXPERT_PART_ROLES[part], layer, e));
    return g && g->n_dims == 2 ? g : NULL;
}

int expert_src_find(const source *s, int layer, int part, expert_src *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->layer = layer;
    x->part = part;
    char name[96];
    const gguf_tensor *g = source_find(s, tensor_name(name, sizeof name, EXPERT_PART_ROLES[part], layer));
    if (g && g->n_dims == 3) {
        x->merged = g;
        x->n_expert = (int)g->ne[2];
        x->type = g->type;
        x->K = g->ne[0];
        x->N = g->ne[1];
        x->slice_bytes = ggml_row_bytes(g->type, x->K) * (size_t)x->N;
        return 1;
    }
    const gguf_tensor *first = split_tensor(s, layer, part, 0);
    if (!first) {
        /* a later expert without expert 0 is a broken set, not an absent part */
        for (int64_t i = 0; i < source_n_tensors(s); i++) {
            int l, e;
            const gguf_tensor *t = source_tensor_at(s, i);
            if (parse_part(t, &l, &e) == part && l == layer && e > 0) {
                snprintf(err, errlen, "%s: expert %d of a split expert set without expert 0", t->name, e);
                return -1;
            }
        }
        return 0;
    }
    x->type = first->type;
    x->K = first->ne[0];
    x->N = first->ne[1];
    x->slice_bytes = ggml_row_bytes(first->type, x->K) * (size_t)x->N;
    int n = 0;
    for (const gguf_tensor *t; (t = split_tensor(s, layer, part, n)); n++)
        if (t->type != x->type || t->ne[0] != x->K || t->ne[1] != x->N) {
            snprintf(err, errlen, "%s: %s [%lld, %lld] where expert 0 is %s [%lld, %lld]", t->name,
                     ggml_type_info(t->type) ? ggml_type_info(t->type)->name : "?", (long long)t->ne[0],
                     (long long)t->ne[1], ggml_type_info(x->type) ? ggml_type_info(x->type)->name : "?",
                     (long long)x->K, (long long)x->N);
            return -1;
        }
    /* every split tensor of this part must be one of 0..n-1 */
    for (int64_t i = 0; i < source_n_tensors(s); i++) {
        int l, e;
        const gguf_tensor *t = source_tensor_at(s, i);
        if (parse_part(t, &l, &e) == part && l == layer && e >= n) {
            snprintf(err, errlen, "%s: expert %d after a gap at expert %d", t->name, e, n);
            return -1;
        }
    }
    x->n_expert = n;
    return 1;
}

const uint8_t *expert_src_slice(const source *s, const expert_src *x, int e)
{
    if (x->merged) return x->merged->data + x->slice_bytes * (size_t)e;
    const gguf_tensor *t = split_tensor(s, x->layer, x->part, e);
    return t ? t->data : NULL;
}

void expert_src_release(const source *s, const expert_src *x)
{
    if (x->merged) { source_release(s, x->merged); return; }
    for (int e = 0; e < x->n_expert; e++) {
        const gguf_tensor *t = split_tensor(s, x->layer, x->part, e);
        if (t) source_release(s, t);
    }
}
