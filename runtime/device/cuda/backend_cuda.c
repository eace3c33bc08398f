/* backend_cuda.c: the CUDA backend (runtime/model/backend.h) and device.h in
 * bin/strata-cuda (linked instead of runtime/device/device_cpu_stub.c): the
 * graph's ops (runtime/model/forward.c) on the GPU through the scuda_* API
 * (cuda_backend.h), and its capability row: llama's attention with plain
 * RoPE, dense or softmax top-k MoE layers, an f16 KV cache, head_dim <= 256
 * (backend_check refuses the rest). Plain C11: no CUDA header, and of the
 * model only what backend.h shows.
 *
 *  - At attach, every dense weight and norm is uploaded to VRAM (a WF_GGML
 *    weight is refused: native ggml blocks are not decoded on the GPU), the
 *    KV cache (f16) and the ubatch buffers are allocated, and the routed
 *    experts are served by expert slots driven by expert_cache.c: N slots
 *    sized from free VRAM minus --vram-reserve, filled from --profile.
 *  - An expert's slot holds its three parts (gate, up, down), each part's
 *    planes (codes, scales, offsets, codebook) at 256-byte aligned offsets
 *    computed from the host weights, so a slot weight is the host weight with
 *    its pointers moved into the slot. Refills copy the planes from host
 *    memory on the copy stream (pageable memory: the experts.bin mapping and
 *    the loader's widened scales are not page-locked).
 *  - Ordering: before an access that may copy into a slot, the compute
 *    stream is drained (a queued kernel may still read the victim); before a
 *    slot is computed with, every copy started so far is waited for.
 *  - --miss cpu computes a missed expert with the CPU kernels (the host
 *    weights, model_expert_cpu) on the host copy of its rows; pcie copies
 *    it into a slot first; auto measures one of each at attach.
 *  - Activations of quantized weights are rounded as the CPU rounds them
 *    (Q8_0 / Q8_K, then q * d) before the product, so both see the same x.
 *  - The expert cache's "token" is one ubatch (one decode step).
 *  - STRATA_CUDA_SLOTS=N (environment) caps the slot count, for tests. */
#include "runtime/device/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/tensor_names.h"
#include "runtime/device/cuda/cuda_backend.h"
#include "runtime/kernels/kernels.h"
#include "runtime/model/backend.h"
#include "runtime/model/expert_tier.h"

bool device_cuda_built(void) { return true; }

/* What the backend reads of the host model (backend.h's accessors), under
 * the model's own field names. */
typedef struct host_model {
    model *model;
    model_hparams hp;
    model_weights w;
    model_options opt;
    int n_ctx, q_dim, kv_dim;
} host_model;

/* A layer's weights in VRAM: the host struct with device pointers (the
 * graph reads them; the routed experts stay NULL, served by the slots). */
typedef layer_weights dlayer;

/* Bytes of one KV cache element: f16 unless --kv-type f32. */
static size_t kv_elt(const host_model *m) { return m->opt.kv == KV_F32 ? sizeof(float) : sizeof(uint16_t); }

_Static_assert(sizeof(int) == sizeof(int32_t), "the routing is read back from int32_t into the graph's int");

struct device_model {
    scuda_ctx *c;
    void **mem;                 /* every device allocation but the slots */
    int n_mem, cap_mem;
    uint64_t dense_bytes;
    dlayer *L;
    weight output;              /* output, or the tied token embedding */
    const float *output_norm;
    model_weights w;            /* what the graph reads: L, output, output_norm */
    backend_bufs bufs;          /* the ubatch buffers the graph passes */
    int nb, max_cols;
    /* device activations of one ubatch */
    float *x, *h, *q, *kx, *vx, *att, *o, *ffa, *ffb, *xq, *rlog, *selw, *eo, *hg, *gd, *shg, *logits;
    float *hrot;                /* a rotated expert's gate/up input (nb x n_embd) */
    int32_t *sel, *idx;
    uint8_t *kc, *vc;           /* [n_layer][n_ctx][kv_dim] f16, or f32 (--kv-type f32) */
    /* host */
    int *h_sel;                 /* the routing, read back (int32_t on the device) */
    int32_t *h_idx;
    float *h_x, *h_hg, *h_gd;   /* embedding rows; an expert's rows in and out (--miss cpu) */
    int *h_cnt, *h_off;
    /* expert cache */
    expert_cache *ec;
    uint8_t *slots;
    int n_slots;
    size_t slot_bytes;
    ec_miss_mode miss;
    int copies_pending;
    int64_t n_experts;
    host_model hm;
    const host_model *m;        /* &hm: the host weights (slot sources, CPU misses) */
    /* a pack bigger than memory (m->opt.tier): the RAM tier is the slots'
     * source, VRAM <- RAM <- disk. proto: each layer's parts as the tier
     * builds them (form, shape, which planes), for laying out a slot
     * without its bytes; pend: the tier's experts held until the copies
     * out of them are done */
    weight *proto;              /* n_layer x 3 */
    tier_ref *pend;
    int n_pend, cap_pend;
    double bandwidth;
    char err[512];              /* the last op's failure (backend_ops.error) */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* ---------------------------------------------------------------- planes */

/* The host planes of a weight: codes/values, scales, offsets, codebook. */
static void planes(const weight *w, const void *src[4], size_t size[4])
{
    memset(size, 0, 4 * sizeof *size);
    src[0] = w->data;
    src[1] = w->scales;
    src[2] = w->offsets;
    src[3] = w->codebook;
    if (!weight_present(w)) return;
    if (w->form == WF_SCODE) {
        const size_t n = (size_t)w->rows * (size_t)w->cols, groups = n / (size_t)w->group;
        size[0] = n * (size_t)w->code_bits / 8;
        size[1] = groups * sizeof(float);
        size[2] = w->offsets ? groups * sizeof(float) : 0;
        size[3] = w->codebook ? 16 * sizeof(float) : 0;
    } else {
        size[0] = (size_t)w->rows * w->row_bytes;
    }
}

static weight with_planes(const weight *w, void *const dst[4])
{
    weight d = *w;
    d.data = dst[0];
    d.scales = (const float *)dst[1];
    d.offsets = w->offsets ? (const float *)dst[2] : NULL;
    d.codebook = w->codebook ? (const float *)dst[3] : NULL;
    return d;
}

/* An expert's three parts laid out in one slot: writes the slot weights
 * (pointers relative to base; base NULL gives offsets) and returns the bytes. */
static size_t slot_layout(const weight *const parts[3], uint8_t *base, weight out[3], const void *src[3][4],
                          size_t off[3][4], size_t size[3][4])
{
    size_t at = 0;
    for (int p = 0; p < 3; p++) {
        void *dst[4] = { NULL, NULL, NULL, NULL };
        planes(parts[p], src[p], size[p]);
        for (int k = 0; k < 4; k++) {
            off[p][k] = 0;
            if (!size[p][k]) continue;
            at = align256(at);
            off[p][k] = at;
            dst[k] = base + at;
            at += size[p][k];
        }
        if (out) out[p] = with_planes(parts[p], dst);
    }
    return align256(at);
}

/* The parts of expert e of layer l as laid out in a slot: the host
 * weights, or with a tier the layer's prototype (every expert of a layer
 * has the same forms and planes). Their bytes are not read. */
static void layout_parts(const struct device_model *d, int l, int e, const weight *parts[3])
{
    if (d->proto) {
        for (int p = 0; p < 3; p++) parts[p] = &d->proto[3 * l + p];
        return;
    }
    const layer_weights *L = &d->m->w.layers[l];
    parts[0] = &L->exp_gate[e];
    parts[1] = &L->exp_up[e];
    parts[2] = &L->exp_down[e];
}

/* Expert e of layer l with its bytes in host memory, to copy from: the
 * host weights, or the RAM tier's copy, read from disk if it must be, held
 * (*held 1, a ref into d->pend) until sync_copies. */
static int source_parts(struct device_model *d, int l, int e, const weight *parts[3], char *err, size_t errlen)
{
    expert_tier *t = d->m->opt.tier;
    if (!t) {
        layout_parts(d, l, e, parts);
        return 0;
    }
    if (d->n_pend == d->cap_pend) {
        const int cap = d->cap_pend ? 2 * d->cap_pend : 8;
        tier_ref *n = realloc(d->pend, (size_t)cap * sizeof *n);
        if (!n) { snprintf(err, errlen, "out of host memory"); return -1; }
        d->pend = n;
        d->cap_pend = cap;
    }
    tier_ref *r = &d->pend[d->n_pend++];
    if (tier_get(t, l, &e, 1, r, err, errlen) || tier_wait(t, r, &parts[0], &parts[1], &parts[2], err, errlen))
        return -1; /* r stays in pend: sync_copies puts it */
    return 0;
}

/* Waits for every host-to-VRAM copy, then lets the tier have its experts back. */
static int sync_copies(struct device_model *d, char *err, size_t errlen)
{
    const int rc = scuda_copy_sync(d->c, err, errlen);
    for (int i = 0; i < d->n_pend; i++) tier_put(d->m->opt.tier, &d->pend[i]);
    d->n_pend = 0;
    return rc;
}

/* Each layer's parts as the tier builds them, from one expert read at
 * start; the pointers become a marker (only presence is read: with_planes,
 * planes, weight_present; a NULL data would make the part absent and the
 * slot empty) save the codebook, the loader's. */
static int make_protos(struct device_model *d, char *err, size_t errlen)
{
    static const float present = 0.0f; /* "this plane is there" */
    const model_hparams *hp = &d->m->hp;
    expert_tier *t = d->m->opt.tier;
    d->proto = calloc((size_t)hp->n_layer * 3, sizeof *d->proto);
    if (!d->proto) { snprintf(err, errlen, "out of host memory"); return -1; }
    for (int l = 0; l < hp->n_layer; l++) {
        if (!hparams_layer_moe(hp, l)) continue;
        tier_ref r;
        const weight *p[3];
        int e = 0;
        if (tier_get(t, l, &e, 1, &r, err, errlen) || tier_wait(t, &r, &p[0], &p[1], &p[2], err, errlen)) {
            tier_put(t, &r);
            return -1;
        }
        for (int k = 0; k < 3; k++) {
            weight w = *p[k];
            w.data = w.data ? (const void *)&present : NULL;
            w.scales = w.scales ? &present : NULL;
            w.offsets = w.offsets ? &present : NULL;
            w.kf = NULL;
            d->proto[3 * l + k] = w;
        }
        tier_put(t, &r);
    }
    return 0;
}

/* --------------------------------------------------------------- uploads */

static int track(struct device_model *d, void *p, char *err, size_t errlen)
{
    if (d->n_mem == d->cap_mem) {
        int cap = d->cap_mem ? 2 * d->cap_mem : 64;
        void **n = realloc(d->mem, (size_t)cap * sizeof *n);
        if (!n) {
            scuda_dfree(d->c, p);
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        d->mem = n;
        d->cap_mem = cap;
    }
    d->mem[d->n_mem++] = p;
    return 0;
}

static int dalloc(struct device_model *d, void **p, size_t bytes, char *err, size_t errlen)
{
    if (scuda_alloc(d->c, p, bytes, err, errlen)) return -1;
    return track(d, *p, err, errlen);
}

static int up_bytes(struct device_model *d, const void *src, size_t bytes, void **dst, char *err, size_t errlen)
{
    *dst = NULL;
    if (!src || !bytes) return 0;
    if (dalloc(d, dst, bytes, err, errlen) || scuda_upload(d->c, *dst, src, bytes, err, errlen)) return -1;
    d->dense_bytes += bytes;
    return 0;
}

static int up_vec(struct device_model *d, const float *v, int n, const float **dst, char *err, size_t errlen)
{
    return up_bytes(d, v, (size_t)n * sizeof(float), (void **)dst, err, errlen);
}

static int refuse_named(const weight *w, const char *name, char *err, size_t errlen)
{
    if (weight_present(w) && w->rotate > SCUDA_HADAMARD_MAX) {
        snprintf(err, errlen, "%s: rotated by Hadamard blocks of %lld, over the GPU's %d; use --device cpu", name,
                 (long long)w->rotate, SCUDA_HADAMARD_MAX);
        return -1;
    }
    if (!weight_present(w) || w->form != WF_GGML) return 0;
    snprintf(err, errlen, "%s: native ggml blocks (WF_GGML) are not supported on the GPU; use --device cpu", name);
    return -1;
}

static int refuse_form(const weight *w, tensor_role role, int l, char *err, size_t errlen)
{
    char n[96];
    return refuse_named(w, tensor_label(n, sizeof n, role, l), err, errlen);
}

static int up_weight(struct device_model *d, const weight *w, weight *dw, tensor_role role, int l, char *err,
                     size_t errlen)
{
    memset(dw, 0, sizeof *dw);
    if (!weight_present(w)) return 0;
    if (refuse_form(w, role, l, err, errlen)) return -1;
    const void *src[4];
    size_t size[4];
    void *dst[4] = { NULL, NULL, NULL, NULL };
    planes(w, src, size);
    for (int k = 0; k < 4; k++)
        if (up_bytes(d, src[k], size[k], &dst[k], err, errlen)) return -1;
    *dw = with_planes(w, dst);
    return 0;
}

/* Every weight the GPU would decode, checked before anything is uploaded. */
static int check_forms(const host_model *m, char *err, size_t errlen)
{
    const weight *out = weight_present(&m->w.output) ? &m->w.output : &m->w.tok_embd;
    char tn[96], on[112];
    if (weight_present(&m->w.output)) tensor_label(on, sizeof on, TN_OUTPUT, 0);
    else snprintf(on, sizeof on, "%s (tied output)", tensor_label(tn, sizeof tn, TN_TOKEN_EMBD, 0));
    if (refuse_named(out, on, err, errlen)) return -1;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const layer_weights *L = &m->w.layers[l];
        if (refuse_form(&L->wq, TN_ATTN_Q, l, err, errlen) || refuse_form(&L->wk, TN_ATTN_K, l, err, errlen) ||
            refuse_form(&L->wv, TN_ATTN_V, l, err, errlen) ||
            refuse_form(&L->wo, TN_ATTN_OUT, l, err, errlen) ||
            refuse_form(&L->ffn_gate, TN_FFN_GATE, l, err, errlen) ||
            refuse_form(&L->ffn_up, TN_FFN_UP, l, err, errlen) ||
            refuse_form(&L->ffn_down, TN_FFN_DOWN, l, err, errlen) ||
            refuse_form(&L->router, TN_FFN_GATE_INP, l, err, errlen) ||
            refuse_form(&L->sh_gate, TN_FFN_GATE_SHEXP, l, err, errlen) ||
            refuse_form(&L->sh_up, TN_FFN_UP_SHEXP, l, err, errlen) ||
            refuse_form(&L->sh_down, TN_FFN_DOWN_SHEXP, l, err, errlen) ||
            refuse_form(&L->sh_router, TN_FFN_GATE_INP_SHEXP, l, err, errlen))
            return -1;
        for (int e = 0; e < m->hp.n_expert; e++)
            if (refuse_form(&L->exp_gate[e], TN_FFN_GATE_EXPS, l, err, errlen) ||
                refuse_form(&L->exp_up[e], TN_FFN_UP_EXPS, l, err, errlen) ||
                refuse_form(&L->exp_down[e], TN_FFN_DOWN_EXPS, l, err, errlen))
                return -1;
    }
    return 0;
}

static int upload_dense(struct device_model *d, const host_model *m, char *err, size_t errlen)
{
    const model_hparams *hp = &m->hp;
    if (hp->n_layer <= 0) { snprintf(err, errlen, "the model has no layers"); return -1; }
    d->L = calloc((size_t)hp->n_layer, sizeof *d->L);
    if (!d->L) { snprintf(err, errlen, "out of host memory"); return -1; }
    const int qd = m->q_dim, kvd = m->kv_dim, qn = hp->arch.qk_norm == QK_NORM_FULL;
    for (int l = 0; l < hp->n_layer; l++) {
        const layer_weights *L = &m->w.layers[l];
        dlayer *G = &d->L[l];
        if (up_weight(d, &L->wq, &G->wq, TN_ATTN_Q, l, err, errlen) ||
            up_weight(d, &L->wk, &G->wk, TN_ATTN_K, l, err, errlen) ||
            up_weight(d, &L->wv, &G->wv, TN_ATTN_V, l, err, errlen) ||
            up_weight(d, &L->wo, &G->wo, TN_ATTN_OUT, l, err, errlen) ||
            up_weight(d, &L->ffn_gate, &G->ffn_gate, TN_FFN_GATE, l, err, errlen) ||
            up_weight(d, &L->ffn_up, &G->ffn_up, TN_FFN_UP, l, err, errlen) ||
            up_weight(d, &L->ffn_down, &G->ffn_down, TN_FFN_DOWN, l, err, errlen) ||
            up_weight(d, &L->router, &G->router, TN_FFN_GATE_INP, l, err, errlen) ||
            up_weight(d, &L->sh_gate, &G->sh_gate, TN_FFN_GATE_SHEXP, l, err, errlen) ||
            up_weight(d, &L->sh_up, &G->sh_up, TN_FFN_UP_SHEXP, l, err, errlen) ||
            up_weight(d, &L->sh_down, &G->sh_down, TN_FFN_DOWN_SHEXP, l, err, errlen) ||
            up_weight(d, &L->sh_router, &G->sh_router, TN_FFN_GATE_INP_SHEXP, l, err, errlen) ||
            up_vec(d, L->attn_norm, hp->n_embd, &G->attn_norm, err, errlen) ||
            up_vec(d, L->ffn_norm, hp->n_embd, &G->ffn_norm, err, errlen))
            return -1;
        if (hp->arch.qk_norm != QK_NORM_NONE &&
            (up_vec(d, L->q_norm, qn ? qd : hp->head_dim, &G->q_norm, err, errlen) ||
             up_vec(d, L->k_norm, qn ? kvd : hp->head_dim, &G->k_norm, err, errlen)))
            return -1;
        if (hp->arch.attn_bias && (up_vec(d, L->bq, qd, &G->bq, err, errlen) || up_vec(d, L->bk, kvd, &G->bk, err, errlen) ||
                                   up_vec(d, L->bv, kvd, &G->bv, err, errlen)))
            return -1;
    }
    const weight *out = weight_present(&m->w.output) ? &m->w.output : &m->w.tok_embd;
    return up_weight(d, out, &d->output, TN_OUTPUT, 0, err, errlen) ||
                   up_vec(d, m->w.output_norm, hp->n_embd, &d->output_norm, err, errlen)
               ? -1
               : 0;
}

static int alloc_f(struct device_model *d, float **p, size_t n, char *err, size_t errlen)
{
    return dalloc(d, (void **)p, (n ? n : 1) * sizeof(float), err, errlen);
}

static int alloc_buffers(struct device_model *d, const host_model *m, char *err, size_t errlen)
{
    const model_hparams *hp = &m->hp;
    const size_t nb = (size_t)m->opt.n_batch, D = (size_t)hp->n_embd, E = (size_t)hp->n_expert,
                 K = (size_t)hp->n_expert_used;
    size_t ff = (size_t)hp->n_ff;
    if ((size_t)hp->n_ff_exp > ff) ff = (size_t)hp->n_ff_exp;
    if ((size_t)hp->n_ff_shexp > ff) ff = (size_t)hp->n_ff_shexp;
    size_t mc = D;
    if ((size_t)m->q_dim > mc) mc = (size_t)m->q_dim;
    if (ff > mc) mc = ff;
    d->nb = (int)nb;
    d->max_cols = (int)mc;
    const size_t kv = (size_t)hp->n_layer * (size_t)m->n_ctx * (size_t)m->kv_dim * kv_elt(m);
    if (alloc_f(d, &d->x, nb * D, err, errlen) || alloc_f(d, &d->h, nb * D, err, errlen) ||
        alloc_f(d, &d->q, nb * (size_t)m->q_dim, err, errlen) || alloc_f(d, &d->kx, nb * (size_t)m->kv_dim, err, errlen) ||
        alloc_f(d, &d->vx, nb * (size_t)m->kv_dim, err, errlen) || alloc_f(d, &d->att, nb * (size_t)m->q_dim, err, errlen) ||
        alloc_f(d, &d->o, nb * D, err, errlen) || alloc_f(d, &d->ffa, nb * ff, err, errlen) ||
        alloc_f(d, &d->ffb, nb * ff, err, errlen) || alloc_f(d, &d->xq, nb * mc, err, errlen) ||
        alloc_f(d, &d->gd, nb * D, err, errlen) || alloc_f(d, &d->shg, nb, err, errlen) ||
        alloc_f(d, &d->logits, nb * (size_t)hp->n_vocab, err, errlen) ||
        dalloc(d, (void **)&d->kc, kv, err, errlen) || dalloc(d, (void **)&d->vc, kv, err, errlen))
        return -1;
    if (E > 0 && (alloc_f(d, &d->rlog, nb * E, err, errlen) || alloc_f(d, &d->selw, nb * K, err, errlen) ||
                  alloc_f(d, &d->eo, nb * K * D, err, errlen) || alloc_f(d, &d->hg, nb * D, err, errlen) ||
                  alloc_f(d, &d->hrot, nb * D, err, errlen) ||
                  dalloc(d, (void **)&d->sel, nb * K * sizeof(int32_t), err, errlen) ||
                  dalloc(d, (void **)&d->idx, nb * K * sizeof(int32_t), err, errlen)))
        return -1;
    d->h_x = malloc(nb * D * sizeof(float));
    d->h_hg = malloc(nb * D * sizeof(float));
    d->h_gd = malloc(nb * D * sizeof(float));
    d->h_sel = malloc((nb * K + 1) * sizeof(int32_t));
    d->h_idx = malloc((nb * K + 1) * sizeof(int32_t));
    d->h_cnt = malloc((E + 1) * sizeof(int));
    d->h_off = malloc((E + 1) * sizeof(int));
    if (!d->h_x || !d->h_hg || !d->h_gd || !d->h_sel || !d->h_idx || !d->h_cnt || !d->h_off) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------- expert slots */

static int slot_dev_alloc(void *ctx, int n_slots, size_t slot_bytes, char *err, size_t errlen)
{
    struct device_model *d = ctx;
    void *p = NULL;
    if (scuda_alloc(d->c, &p, (size_t)n_slots * slot_bytes, err, errlen)) return -1;
    d->slots = p;
    d->n_slots = n_slots;
    return 0;
}

static int copy_expert(struct device_model *d, uint8_t *dst, int64_t expert, char *err, size_t errlen)
{
    const int E = d->m->hp.n_expert, l = (int)(expert / E), e = (int)(expert % E);
    const void *src[3][4];
    size_t off[3][4], size[3][4];
    const weight *parts[3];
    if (source_parts(d, l, e, parts, err, errlen)) return -1;
    if (slot_layout(parts, NULL, NULL, src, off, size) > d->slot_bytes) {
        snprintf(err, errlen, "CUDA expert slots: expert %d of layer %d is larger than a slot", e, l);
        return -1;
    }
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 4; k++)
            if (size[p][k] && scuda_copy_async(d->c, dst + off[p][k], src[p][k], size[p][k], err, errlen)) return -1;
    /* the tier's experts held for copies in flight: a few at a time, so a
     * profile's fill does not pin more of them than the tier has */
    return d->n_pend >= 4 ? sync_copies(d, err, errlen) : 0;
}

static int slot_dev_copy(void *ctx, int slot, int64_t expert, size_t bytes, char *err, size_t errlen)
{
    struct device_model *d = ctx;
    if (slot < 0 || slot >= d->n_slots || bytes > d->slot_bytes || expert < 0 || expert >= d->n_experts) {
        snprintf(err, errlen, "CUDA expert slots: expert %lld into slot %d of %d", (long long)expert, slot, d->n_slots);
        return -1;
    }
    return copy_expert(d, d->slots + (size_t)slot * d->slot_bytes, expert, err, errlen);
}

static int slot_dev_sync(void *ctx, char *err, size_t errlen)
{
    struct device_model *d = ctx;
    return sync_copies(d, err, errlen);
}

/* --miss auto: one expert (layer 0, expert 0) computed on the CPU for one
 * row, and copied host to VRAM, each timed once after a warm-up. */
static int measure_miss(struct device_model *d, const host_model *m, double *cpu_s, double *pcie_s, char *err, size_t errlen)
{
    float *row = calloc((size_t)m->hp.n_embd * 2, sizeof(float));
    if (!row) { snprintf(err, errlen, "out of host memory"); return -1; }
    for (int i = 0; i < m->hp.n_embd; i++) row[i] = (float)((i % 7) - 3) * 0.01f;
    model_expert_cpu(m->model, 0, 0, row, 1, row + m->hp.n_embd);
    double t0 = now_s();
    model_expert_cpu(m->model, 0, 0, row, 1, row + m->hp.n_embd);
    *cpu_s = now_s() - t0;
    free(row);
    void *tmp = NULL;
    if (scuda_alloc(d->c, &tmp, d->slot_bytes, err, errlen)) return -1;
    int rc = copy_expert(d, tmp, 0, err, errlen) || sync_copies(d, err, errlen);
    t0 = now_s();
    rc = rc || copy_expert(d, tmp, 0, err, errlen) || sync_copies(d, err, errlen);
    *pcie_s = now_s() - t0;
    scuda_dfree(d->c, tmp);
    return rc ? -1 : 0;
}

static int setup_experts(struct device_model *d, const host_model *m, const device_opts *o, char *err, size_t errlen)
{
    const model_hparams *hp = &m->hp;
    d->n_experts = (int64_t)hp->n_layer * hp->n_expert;
    const void *src[3][4];
    size_t off[3][4], size[3][4];
    if (m->opt.tier && make_protos(d, err, errlen)) return -1;
    d->slot_bytes = 256;
    for (int l = 0; l < hp->n_layer; l++)
        for (int e = 0; e < (d->proto ? 1 : hp->n_expert) && hparams_layer_moe(hp, l); e++) {
            const weight *parts[3];
            layout_parts(d, l, e, parts);
            size_t b = slot_layout(parts, NULL, NULL, src, off, size);
            if (b > d->slot_bytes) d->slot_bytes = b;
        }
    uint64_t free_b = 0, total_b = 0;
    if (scuda_mem_info(d->c, &free_b, &total_b, err, errlen)) return -1;
    int64_t n = ec_plan_slots(free_b, o->vram_reserve, d->slot_bytes, d->n_experts);
    /* STRATA_CUDA_SLOTS=N caps the slots (tests/cuda/device_check.sh forces misses with it) */
    const char *cap = getenv("STRATA_CUDA_SLOTS");
    if (cap && *cap) {
        char *end;
        long v = strtol(cap, &end, 10);
        if (*end || v < 0) {
            snprintf(err, errlen, "STRATA_CUDA_SLOTS=%s: not a slot count", cap);
            return -1;
        }
        if (v < n) n = v;
    }
    d->miss = o->miss;
    if (d->miss == EC_MISS_AUTO) {
        double cpu_s = 0, pcie_s = 0;
        if (measure_miss(d, m, &cpu_s, &pcie_s, err, errlen)) return -1;
        d->miss = ec_miss_resolve(EC_MISS_AUTO, cpu_s, pcie_s);
    }
    ec_config cfg = { .n_layer = hp->n_layer, .n_expert = hp->n_expert, .n_slots = (int)n,
                      .slot_bytes = d->slot_bytes, .decay = 0.99, .miss = d->miss };
    ec_device dev = { d, slot_dev_alloc, slot_dev_copy, slot_dev_sync };
    d->ec = ec_create(&cfg, dev, err, errlen);
    if (!d->ec) return -1;
    if (o->profile) {
        ec_profile p;
        if (ec_profile_load(&p, o->profile, err, errlen)) return -1;
        int rc = ec_profile_check(&p, hp->n_layer, hp->n_expert, hp->n_expert_used, o->profile, err, errlen) ||
                 ec_fill(d->ec, &p, err, errlen);
        ec_profile_free(&p);
        if (rc) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ ops */

#define TRY(x)                          \
    do {                                \
        if ((x) != 0) return -1;        \
    } while (0)
/* an op's failure goes to d->err (backend_ops.error) */
#define ERR d->err, sizeof d->err

/* Y = X . W^T with X rounded as the CPU rounds it for this weight. */
static int mm(struct device_model *d, const weight *w, const float *x, int n, float *y, char *err, size_t errlen)
{
    const int blk = w->act == WA_Q8_0 ? 32 : w->act == WA_Q8_K ? 256 : 0;
    if (blk && w->cols % blk == 0 && w->cols <= d->max_cols) {
        TRY(scuda_act_round(d->c, w->act, x, d->xq, n, w->cols, err, errlen));
        x = d->xq;
    }
    return scuda_matmul(d->c, w, x, y, n, err, errlen);
}

static int swiglu(struct device_model *d, const weight *g, const weight *u, const weight *dn, const float *x, int n,
                  float *out, char *err, size_t errlen)
{
    /* rotated experts (weight.h's rotate): a rotated gate or up reads x
     * rotated (d->hrot; the loader lets them share one block), a rotated
     * down its input rotated in place */
    const weight *rw = g->rotate ? g : u;
    const float *xr = x;
    if (rw->rotate) {
        TRY(scuda_copy_d2d(d->c, d->hrot, x, (size_t)n * (size_t)rw->cols * sizeof(float), err, errlen));
        TRY(scuda_hadamard(d->c, d->hrot, n, rw->cols, rw->rotate, err, errlen));
        xr = d->hrot;
    }
    TRY(mm(d, g, g->rotate ? xr : x, n, d->ffa, err, errlen));
    TRY(mm(d, u, u->rotate ? xr : x, n, d->ffb, err, errlen));
    TRY(scuda_swiglu(d->c, d->ffa, d->ffb, d->ffa, (int64_t)n * g->rows, err, errlen));
    if (dn->rotate) TRY(scuda_hadamard(d->c, d->ffa, n, dn->cols, dn->rotate, err, errlen));
    return mm(d, dn, d->ffa, n, out, err, errlen);
}

static int cu_begin(void *c, const int32_t *tokens, int B, int pos0)
{
    struct device_model *d = c;
    (void)pos0; /* the RoPE kernel computes its angles from pos0 itself */
    /* the embedding rows are looked up on the host (any form, WF_GGML too) */
    model_embed_rows(d->m->model, tokens, B, d->h_x);
    TRY(scuda_upload(d->c, d->x, d->h_x, (size_t)B * d->m->hp.n_embd * sizeof(float), ERR));
    if (d->ec) ec_begin_token(d->ec);
    return 0;
}

static int cu_rmsnorm(void *c, const float *x, const float *w, float *out, int rows, int n)
{
    struct device_model *d = c;
    return scuda_rmsnorm(d->c, x, w, out, rows, n, d->m->hp.rms_eps, ERR);
}

static int cu_matmul(void *c, const weight *w, const float *x, int n, float *y)
{
    struct device_model *d = c;
    return mm(d, w, x, n, y, ERR);
}

static int cu_matvecs(void *c, const mm_vec *v, int nv, const mm_next *next)
{
    struct device_model *d = c;
    (void)next;
    for (int i = 0; i < nv; i++) TRY(mm(d, v[i].w, v[i].x, 1, v[i].y, ERR));
    return 0;
}

static int cu_add_bias(void *c, float *y, const float *bias, int rows, int n)
{
    struct device_model *d = c;
    return bias ? scuda_add_bias(d->c, y, bias, rows, n, ERR) : 0;
}

static int cu_add(void *c, float *x, const float *y, size_t n)
{
    struct device_model *d = c;
    return scuda_axpy(d->c, 1.0f, y, x, (int64_t)n, ERR);
}

/* The kernel rotates packed heads only (MLA's strided ones: caps.mla is false). */
static int cu_rope(void *c, float *v, int B, size_t row_stride, int n_heads, size_t head_stride, int pos0)
{
    struct device_model *d = c;
    const model_hparams *hp = &d->m->hp;
    const size_t hd = (size_t)hp->head_dim;
    if (head_stride != hd || row_stride != (size_t)n_heads * hd) {
        snprintf(d->err, sizeof d->err, "CUDA RoPE: heads of %zu floats every %zu, rows every %zu (packed only)", hd,
                 head_stride, row_stride);
        return -1;
    }
    return scuda_rope(d->c, v, B, n_heads, hp->head_dim, hp->n_rot, pos0, hp->rope_base, hp->arch.rope == ROPE_NEOX,
                      ERR);
}

static int cu_attention(void *c, int l, int B, int pos0, const mm_next *next)
{
    struct device_model *d = c;
    const host_model *m = d->m;
    const model_hparams *hp = &m->hp;
    (void)next;
    const size_t lo = (size_t)l * (size_t)m->n_ctx * (size_t)m->kv_dim * kv_elt(m);
    const int f32 = m->opt.kv == KV_F32;
    TRY(scuda_kv_store(d->c, d->kx, d->vx, d->kc + lo, d->vc + lo, f32, B, m->kv_dim, pos0, ERR));
    return scuda_attention(d->c, d->q, d->kc + lo, d->vc + lo, f32, d->att, B, hp->n_head, hp->n_head_kv, hp->head_dim,
                           pos0, ERR);
}

static int cu_ffn(void *c, const weight *gate, const weight *up, const weight *down, const float *x, int B, float *out)
{
    struct device_model *d = c;
    return swiglu(d, gate, up, down, x, B, out, ERR);
}

/* The router's softmax top-k on the GPU; the picks read back for the host's
 * grouping (and the graph's --record-routing). */
static int cu_route(void *c, int l, int B, const int **sel)
{
    struct device_model *d = c;
    const int E = d->m->hp.n_expert, K = d->m->hp.n_expert_used;
    TRY(scuda_router_topk(d->c, d->rlog, B, E, K, d->m->hp.arch.norm_topk, d->sel, d->selw, ERR));
    TRY(scuda_download(d->c, d->h_sel, d->sel, (size_t)B * K * sizeof(int32_t), ERR));
    for (int i = 0; i < B * K; i++)
        if (d->h_sel[i] < 0 || d->h_sel[i] >= E) {
            snprintf(d->err, sizeof d->err, "CUDA router: expert %d of %d at layer %d", d->h_sel[i], E, l);
            return -1;
        }
    *sel = d->h_sel;
    return 0;
}

/* One routed expert over its n gathered rows (d->hg) into d->gd. */
static int run_expert(struct device_model *d, const host_model *m, int l, int e, int n, char *err, size_t errlen)
{
    const int D = m->hp.n_embd;
    const double t0 = now_s();
    ec_result r;
    /* a copy may overwrite a slot that queued kernels still read */
    if (ec_slot_of(d->ec, l, e) < 0) TRY(scuda_sync(d->c, err, errlen));
    TRY(ec_access(d->ec, l, e, &r, err, errlen));
    if (r.copied) d->copies_pending = 1;
    if (r.where == EC_MISS_ON_CPU) {
        TRY(scuda_download(d->c, d->h_hg, d->hg, (size_t)n * D * sizeof(float), err, errlen));
        model_expert_cpu(m->model, l, e, d->h_hg, n, d->h_gd);
        TRY(scuda_upload(d->c, d->gd, d->h_gd, (size_t)n * D * sizeof(float), err, errlen));
        ec_note_miss_seconds(d->ec, now_s() - t0);
        return 0;
    }
    if (d->copies_pending) {
        TRY(ec_sync(d->ec, err, errlen));
        d->copies_pending = 0;
    }
    if (r.where == EC_MISS_ON_GPU) ec_note_miss_seconds(d->ec, now_s() - t0);
    weight w[3];
    const void *src[3][4];
    size_t off[3][4], size[3][4];
    const weight *parts[3];
    layout_parts(d, l, e, parts);
    slot_layout(parts, d->slots + (size_t)r.slot * d->slot_bytes, w, src, off, size);
    return swiglu(d, &w[0], &w[1], &w[2], d->hg, n, d->gd, err, errlen);
}

/* The routed experts of layer l over the rows d->route picked: each expert
 * once over its gathered rows (from its slot, or on the CPU), scattered back
 * and combined in top-k order into o. */
static int cu_moe(void *c, int l, int B)
{
    struct device_model *d = c;
    const host_model *m = d->m;
    const int E = m->hp.n_expert, K = m->hp.n_expert_used, D = m->hp.n_embd;
    /* (row, slot) pairs grouped by expert, rows in order, as the CPU's */
    int at = 0;
    for (int e = 0; e < E; e++) {
        d->h_off[e] = at;
        for (int g = 0; g < B * K; g++)
            if (d->h_sel[g] == e) d->h_idx[at++] = g;
        d->h_cnt[e] = at - d->h_off[e];
    }
    TRY(scuda_upload(d->c, d->idx, d->h_idx, (size_t)at * sizeof(int32_t), ERR));
    for (int e = 0; e < E; e++) {
        const int n = d->h_cnt[e];
        if (n == 0) continue;
        const int32_t *idx = d->idx + d->h_off[e];
        TRY(scuda_gather_rows(d->c, d->h, idx, K, n, D, d->hg, ERR));
        TRY(run_expert(d, m, l, e, n, ERR));
        TRY(scuda_scatter_rows(d->c, d->gd, idx, n, D, d->eo, ERR));
    }
    return scuda_moe_combine(d->c, d->eo, d->selw, B, K, D, d->o, ERR);
}

static int cu_gate_add(void *c, const weight *router, const float *h, const float *y, int B, int n, float *o)
{
    struct device_model *d = c;
    const float *gate = NULL;
    if (weight_present(router)) {
        TRY(mm(d, router, h, B, d->shg, ERR));
        gate = d->shg;
    }
    return scuda_gate_add(d->c, y, gate, B, n, o, ERR);
}

static int cu_logits(void *c, const weight *w, const float *h, int rows, float *logits)
{
    struct device_model *d = c;
    TRY(mm(d, w, h, rows, d->logits, ERR));
    return scuda_download(d->c, logits, d->logits, (size_t)rows * (size_t)w->rows * sizeof(float), ERR);
}

static int cu_sync(void *c)
{
    struct device_model *d = c;
    return scuda_sync(d->c, ERR);
}

static const char *cu_error(void *c)
{
    const struct device_model *d = c;
    return d->err;
}

static void device_model_free(void *c);

/* The capability row: llama's attention with plain RoPE, an f16 cache,
 * dense or softmax top-k MoE layers (everything else false). */
static const backend_caps cuda_caps = { .name = "CUDA", .kv_f32 = true, .max_head_dim = 256 };

static const backend_ops backend_cuda = {
    .caps = &cuda_caps,
    .begin = cu_begin,
    .rmsnorm = cu_rmsnorm,
    .matmul = cu_matmul,
    .matvecs = cu_matvecs,
    .add_bias = cu_add_bias,
    .scale = NULL,         /* Granite's multipliers */
    .add = cu_add,
    .rope = cu_rope,
    .attn_temp = NULL,     /* Llama 4 */
    .attention = cu_attention,
    .ffn = cu_ffn,
    .route = cu_route,
    .moe = cu_moe,
    .gate_add = cu_gate_add,
    .copy_rows = NULL,     /* MLA */
    .mla_per_head = NULL,  /* MLA */
    .logits = cu_logits,
    .sync = cu_sync,
    .error = cu_error,
    .free = device_model_free,
};

/* ---------------------------------------------------------- attach, free */

static void device_model_free(void *c)
{
    struct device_model *d = c;
    if (!d) return;
    if (d->n_pend && d->c) { /* copies still in flight read the tier's experts */
        char e[256];
        (void)sync_copies(d, e, sizeof e);
    }
    free(d->pend);
    free(d->proto);
    ec_free(d->ec);
    if (d->slots) scuda_dfree(d->c, d->slots);
    for (int i = 0; i < d->n_mem; i++) scuda_dfree(d->c, d->mem[i]);
    free(d->mem);
    free(d->L);
    free(d->h_x);
    free(d->h_hg);
    free(d->h_gd);
    free(d->h_sel);
    free(d->h_idx);
    free(d->h_cnt);
    free(d->h_off);
    scuda_free(d->c);
    free(d);
}

static int build(struct device_model *d, model *model, const device_opts *o, char *err, size_t errlen)
{
    /* the GPU first: on a machine without one, that is what the user needs to hear,
     * whatever else this model would need */
    d->c = scuda_create(-1, 0, err, errlen);
    if (!d->c) return -1;
    if (backend_check(&cuda_caps, model, err, errlen)) return -1;
    const model_hparams *hp = model_hp(model);
    d->hm = (host_model){ .model = model, .hp = *hp, .w = *model_host_weights(model), .opt = *model_opts(model),
                          .n_ctx = model_n_ctx(model), .q_dim = hp->n_head * hp->head_dim,
                          .kv_dim = hp->n_head_kv * hp->head_dim };
    const host_model *m = &d->hm;
    if (check_forms(m, err, errlen)) return -1;
    d->m = m;
    if (upload_dense(d, m, err, errlen) || alloc_buffers(d, m, err, errlen)) return -1;
    if (m->hp.n_expert > 0 && setup_experts(d, m, o, err, errlen)) return -1;
    d->w = (model_weights){ .layers = d->L, .output = d->output, .output_norm = d->output_norm };
    d->bufs = (backend_bufs){ .x = d->x, .h = d->h, .q = d->q, .kx = d->kx, .vx = d->vx, .att = d->att, .o = d->o,
                              .rlog = d->rlog, .gd = d->gd };
    uint64_t free_b = 0, total_b = 0;
    if (scuda_mem_info(d->c, &free_b, &total_b, err, errlen)) return -1;
    size_t bw_bytes = (size_t)256 << 20;
    while (bw_bytes > ((size_t)1 << 20) && 2 * (uint64_t)bw_bytes > free_b / 2) bw_bytes /= 2;
    return scuda_measure_bandwidth(d->c, bw_bytes, &d->bandwidth, err, errlen);
}

int device_attach(model *m, const device_opts *o, char *note, size_t notelen, char *err, size_t errlen)
{
    if (notelen) note[0] = 0;
    device_opts def;
    if (!o) {
        device_opts_default(&def);
        def.kind = DEVICE_CPU;
        o = &def;
    }
    if (o->kind == DEVICE_CPU) return 0;
    if (!model_backend_ctx(m, &backend_cpu) || model_n_past(m)) {
        snprintf(err, errlen, "device_attach: the model is already attached or has evaluated tokens");
        return -1;
    }
    struct device_model *d = calloc(1, sizeof *d);
    char why[512] = "out of host memory";
    if (d && build(d, m, o, why, sizeof why) == 0 &&
        model_bind_backend(m, &backend_cuda, d, &d->w, &d->bufs, why, sizeof why) == 0)
        return 1;
    device_model_free(d);
    if (o->kind == DEVICE_CUDA) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    snprintf(note, notelen, "--device auto: %s; running on the CPU", why);
    return 0;
}

void device_get_stats(const model *m, device_stats *out)
{
    memset(out, 0, sizeof *out);
    out->miss = "";
    const struct device_model *d = model_backend_ctx(m, &backend_cuda);
    if (!d) return;
    out->on_gpu = 1;
    snprintf(out->name, sizeof out->name, "%s", scuda_device_name(d->c));
    out->dense_bytes = d->dense_bytes;
    out->bandwidth = d->bandwidth;
    out->n_experts = d->n_experts;
    if (!d->ec) return;
    out->n_slots = ec_n_slots(d->ec);
    out->miss = ec_miss_name(d->miss);
    out->cache = *ec_get_stats(d->ec);
    out->hit_rate = ec_hit_rate(d->ec);
}
