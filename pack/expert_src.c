/* expert_src.c: merged and per-expert routed-expert tensors (expert_src.h). */
#include "pack/expert_src.h"

#include <stdio.h>
#include <string.h>

#include "formats/ggml_types.h"

const char *const EXPERT_PART_KEYS[PACK_MAX_PARTS] = { "gate", "up", "gate_up", "down" };

/* "blk.L.ffn_<part>_exps.weight" (3-D) or "blk.L.ffn_<part>.E.weight" (2-D,
 * gate/up/down only) -> layer and part, else -1. */
static int parse_part(const gguf_tensor *g, int *layer, int *expert)
{
    int l, e = -1, n = 0;
    char kind[16];
    if (sscanf(g->name, "blk.%d.ffn_%15[a-z_]%n", &l, kind, &n) != 2 || l < 0) return -1;
    const char *rest = g->name + n;
    const size_t kl = strlen(kind);
    if (g->n_dims == 3 && kl > 5 && !strcmp(kind + kl - 5, "_exps") && !strcmp(rest, ".weight")) {
        kind[kl - 5] = 0;
    } else if (g->n_dims == 2) {
        int m = 0;
        if (sscanf(rest, ".%d.weight%n", &e, &m) != 1 || e < 0 || rest[m] || !strcmp(kind, "gate_up")) return -1;
    } else {
        return -1;
    }
    for (int p = 0; p < PACK_MAX_PARTS; p++)
        if (!strcmp(kind, EXPERT_PART_KEYS[p])) {
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
    snprintf(name, sizeof name, "blk.%d.ffn_%s.%d.weight", layer, EXPERT_PART_KEYS[part], e);
    const gguf_tensor *g = source_find(s, name);
    return g && g->n_dims == 2 ? g : NULL;
}

int expert_src_find(const source *s, int layer, int part, expert_src *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->layer = layer;
    x->part = part;
    char name[96];
    snprintf(name, sizeof name, "blk.%d.ffn_%s_exps.weight", layer, EXPERT_PART_KEYS[part]);
    const gguf_tensor *g = source_find(s, name);
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
