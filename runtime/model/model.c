/* model.c: building and freeing the model object: weight checks against the
 * hyperparameters (so the forward pass never checks a shape), the KV cache,
 * the ubatch buffers, the thread pool. The forward pass is in forward.c. */
#include "runtime/model/model_impl.h"

#include "runtime/model/expert_tier.h"

#include "formats/tensor_names.h"

#include "runtime/device/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

model_options model_default_options(void)
{
    model_options o = { .n_threads = 0, .n_ctx = 0, .n_batch = 64, .kv = KV_F16 };
    return o;
}

typedef struct checker {
    char *err;
    size_t errlen;
    int64_t max_cols;
    int tier;                /* the routed experts come through a tier: theirs are forms and shapes only */
} checker;

/* Checks presence and shape; name like "blk.3.attn_q" for the message. */
static int check_named(checker *c, weight *w, int64_t rows, int64_t cols, const char *name)
{
    if (weight_check(w, name, c->err, c->errlen) != 0) return -1;
    if (w->rows != rows || w->cols != cols) {
        snprintf(c->err, c->errlen, "%s: shape %lld x %lld, the hyperparameters say %lld x %lld", name,
                 (long long)w->rows, (long long)w->cols, (long long)rows, (long long)cols);
        return -1;
    }
    if (cols > c->max_cols) c->max_cols = cols;
    return 0;
}

static int check_w(checker *c, weight *w, int64_t rows, int64_t cols, tensor_role role, int layer)
{
    char name[96];
    return check_named(c, w, rows, cols, tensor_label(name, sizeof name, role, layer));
}

static int check_vec(checker *c, const float *v, tensor_role role, int layer)
{
    if (v) return 0;
    char name[96];
    snprintf(c->err, c->errlen, "%s: missing", tensor_label(name, sizeof name, role, layer));
    return -1;
}

/* MLA's attention weights (model.h): q through a low-rank pair or one
 * matrix, the compressed kv row and its rotated part, the per-head k_b and
 * v_b blocks, o from n_head x head_v_mla. */
static int check_mla(checker *c, const model_hparams *hp, layer_weights *L, int l)
{
    const int D = hp->n_embd, H = hp->n_head, qk = hp->head_k_mla, r = hp->n_lora_kv;
    if (weight_present(&L->wq_a) || hp->n_lora_q > 0) {
        if (check_w(c, &L->wq_a, hp->n_lora_q, D, TN_ATTN_Q_A, l) ||
            check_vec(c, L->q_a_norm, TN_ATTN_Q_A_NORM, l) ||
            check_w(c, &L->wq_b, H * qk, hp->n_lora_q, TN_ATTN_Q_B, l))
            return -1;
    } else if (check_w(c, &L->wq, H * qk, D, TN_ATTN_Q, l)) {
        return -1;
    }
    /* DSA: the indexer reads the q LoRA row */
    if (hp->arch.dsa && (!weight_present(&L->wq_a) ||
                         check_w(c, &L->idx_q_b, hp->n_idx_head * hp->idx_head_dim, hp->n_lora_q, TN_INDEXER_ATTN_Q_B, l) ||
                         check_w(c, &L->idx_k, hp->idx_head_dim, D, TN_INDEXER_ATTN_K, l) ||
                         check_w(c, &L->idx_proj, hp->n_idx_head, D, TN_INDEXER_PROJ, l) ||
                         check_vec(c, L->idx_k_norm, TN_INDEXER_K_NORM, l) ||
                         check_vec(c, L->idx_k_norm_b, TN_INDEXER_K_NORM_BIAS, l))) {
        if (!weight_present(&L->wq_a)) {
            char name[96];
            snprintf(c->err, c->errlen, "%s: missing (the lightning indexer reads the q LoRA row)",
                     tensor_label(name, sizeof name, TN_ATTN_Q_A, l));
        }
        return -1;
    }
    return check_w(c, &L->wkv_a, r + hp->n_rot, D, TN_ATTN_KV_A_MQA, l) ||
                   check_vec(c, L->kv_a_norm, TN_ATTN_KV_A_NORM, l) ||
                   check_w(c, &L->wk_b, H * r, qk - hp->n_rot, TN_ATTN_K_B, l) ||
                   check_w(c, &L->wv_b, H * hp->head_v_mla, r, TN_ATTN_V_B, l) ||
                   check_w(c, &L->wo, D, H * hp->head_v_mla, TN_ATTN_OUT, l)
               ? -1
               : 0;
}

/* A fused attn_qkv (Bailing) as wq, wk and wv: row views of its q_dim,
 * kv_dim and kv_dim rows (each product the fused one's rows, as llama.cpp
 * views its output). kf: 3 factors that outlive the views. */
static int split_qkv(checker *c, const model_hparams *hp, layer_weights *L, int l, kfactor *kf)
{
    const int D = hp->n_embd, qd = hp->n_head * hp->head_dim, kvd = hp->n_head_kv * hp->head_dim;
    if (weight_present(&L->wq) || weight_present(&L->wk) || weight_present(&L->wv)) {
        char lb[32];
        snprintf(c->err, c->errlen, "%s: both attn_qkv and separate q/k/v weights", tensor_layer_label(lb, sizeof lb, l));
        return -1;
    }
    if (check_w(c, &L->wqkv, qd + 2 * kvd, D, TN_ATTN_QKV, l)) return -1;
    weight_rows_view(&L->wqkv, 0, qd, &L->wq, &kf[0]);
    weight_rows_view(&L->wqkv, qd, kvd, &L->wk, &kf[1]);
    weight_rows_view(&L->wqkv, qd + kvd, kvd, &L->wv, &kf[2]);
    return 0;
}

static int check_layer(checker *c, const model_hparams *hp, layer_weights *L, int l)
{
    const int D = hp->n_embd, qd = hp->n_head * hp->head_dim, kvd = hp->n_head_kv * hp->head_dim;
    if (check_vec(c, L->attn_norm, TN_ATTN_NORM, l) || check_vec(c, L->ffn_norm, TN_FFN_NORM, l))
        return -1;
    const bool recurrent = hparams_layer_recurrent(hp, l);
    if (recurrent) {
        const int C = hparams_ssm_channels(hp);
        const bool apart = weight_present(&L->ssm_beta) || weight_present(&L->ssm_alpha);
        const bool fused = weight_present(&L->ssm_in);
        if ((fused ? check_w(c, &L->ssm_in, C + hp->ssm_d_inner, D, TN_SSM_IN, l)
                   : check_w(c, &L->wqkv, C, D, TN_ATTN_QKV, l) ||
                         check_w(c, &L->ssm_z, hp->ssm_d_inner, D, TN_ATTN_GATE, l)) ||
            (apart ? check_w(c, &L->ssm_beta, hp->ssm_dt_rank, D, TN_SSM_BETA, l) ||
                         check_w(c, &L->ssm_alpha, hp->ssm_dt_rank, D, TN_SSM_ALPHA, l)
                   : check_w(c, &L->ssm_ba, 2 * hp->ssm_dt_rank, D, TN_SSM_BA, l)) ||
            check_w(c, &L->ssm_out, D, hp->ssm_d_inner, TN_SSM_OUT, l) || check_vec(c, L->ssm_conv, TN_SSM_CONV1D, l) ||
            check_vec(c, L->ssm_dt, TN_SSM_DT, l) || check_vec(c, L->ssm_a, TN_SSM_A, l) ||
            check_vec(c, L->ssm_norm, TN_SSM_NORM, l))
            return -1;
    } else if (hp->arch.mla) {
        if (check_mla(c, hp, L, l)) return -1;
    } else if (check_w(c, &L->wq, hp->arch.attn_out_gate ? 2 * qd : qd, D, TN_ATTN_Q, l) ||
               check_w(c, &L->wk, kvd, D, TN_ATTN_K, l) ||
               check_w(c, &L->wv, kvd, D, TN_ATTN_V, l) || check_w(c, &L->wo, D, qd, TN_ATTN_OUT, l)) {
        return -1;
    }
    if (hp->arch.attn_bias && (check_vec(c, L->bq, TN_ATTN_Q_BIAS, l) ||
                               check_vec(c, L->bk, TN_ATTN_K_BIAS, l) ||
                               check_vec(c, L->bv, TN_ATTN_V_BIAS, l)))
        return -1;
    if (hp->arch.attn_sinks && (check_vec(c, L->sinks, TN_ATTN_SINKS, l) ||
                                check_vec(c, L->bo, TN_ATTN_OUT_BIAS, l)))
        return -1;
    /* optional norms come in pairs: both or neither */
    const bool need_qk = hp->arch.qk_norm != QK_NORM_NONE && !recurrent &&
                         (!hp->arch.qk_norm_optional || L->q_norm || L->k_norm);
    if (need_qk &&
        (check_vec(c, L->q_norm, TN_ATTN_Q_NORM, l) || check_vec(c, L->k_norm, TN_ATTN_K_NORM, l)))
        return -1;
    if (!hparams_layer_moe(hp, l))
        return check_w(c, &L->ffn_gate, hp->n_ff, D, TN_FFN_GATE, l) ||
               check_w(c, &L->ffn_up, hp->n_ff, D, TN_FFN_UP, l) ||
               check_w(c, &L->ffn_down, D, hp->n_ff, TN_FFN_DOWN, l) ? -1 : 0;
    if (check_w(c, &L->router, hp->n_expert, D, TN_FFN_GATE_INP, l)) return -1;
    if (hp->arch.oai_moe && (check_vec(c, L->router_b, TN_FFN_GATE_INP_BIAS, l) ||
                             check_vec(c, L->exp_gate_b, TN_FFN_GATE_EXPS_BIAS, l) ||
                             check_vec(c, L->exp_up_b, TN_FFN_UP_EXPS_BIAS, l) ||
                             check_vec(c, L->exp_down_b, TN_FFN_DOWN_EXPS_BIAS, l)))
        return -1;
    if (!L->exp_gate || !L->exp_up || !L->exp_down) {
        char lb[32];
        snprintf(c->err, c->errlen, "%s.ffn_*_exps: missing", tensor_layer_label(lb, sizeof lb, l));
        return -1;
    }
    char gate[96], up[96], down[96];
    tensor_label(gate, sizeof gate, TN_FFN_GATE_EXPS, l);
    tensor_label(up, sizeof up, TN_FFN_UP_EXPS, l);
    tensor_label(down, sizeof down, TN_FFN_DOWN_EXPS, l);
    /* Through a tier the routed experts' weights are their form and shape
     * (loader.h, lazy experts: planes checked at load, built on demand) */
    if (c->tier) {
        const weight *w0[3] = { &L->exp_gate[0], &L->exp_up[0], &L->exp_down[0] };
        const int64_t rows[3] = { hp->n_ff_exp, hp->n_ff_exp, D }, cols[3] = { D, D, hp->n_ff_exp };
        const char *nm[3] = { gate, up, down };
        for (int e = 0; e < hp->n_expert; e++)
            for (int k = 0; k < 3; k++) {
                const weight *w = w0[k] + e;
                if (!weight_present(w) || w->rows != rows[k] || w->cols != cols[k]) {
                    snprintf(c->err, c->errlen, "%s[%d]: shape %lld x %lld, the hyperparameters say %lld x %lld",
                             nm[k], e, (long long)w->rows, (long long)w->cols, (long long)rows[k],
                             (long long)cols[k]);
                    return -1;
                }
                if (cols[k] > c->max_cols) c->max_cols = cols[k];
            }
    }
    for (int e = 0; e < hp->n_expert && !c->tier; e++) {
        char f[128];
        snprintf(f, sizeof f, "%s[%d]", gate, e);
        if (check_named(c, &L->exp_gate[e], hp->n_ff_exp, D, f)) return -1;
        snprintf(f, sizeof f, "%s[%d]", up, e);
        if (check_named(c, &L->exp_up[e], hp->n_ff_exp, D, f)) return -1;
        snprintf(f, sizeof f, "%s[%d]", down, e);
        if (check_named(c, &L->exp_down[e], D, hp->n_ff_exp, f)) return -1;
    }
    if (weight_present(&L->sh_gate) || hp->n_ff_shexp > 0) {
        const int ff = hp->n_ff_shexp;
        if (check_w(c, &L->sh_gate, ff, D, TN_FFN_GATE_SHEXP, l) ||
            check_w(c, &L->sh_up, ff, D, TN_FFN_UP_SHEXP, l) ||
            check_w(c, &L->sh_down, D, ff, TN_FFN_DOWN_SHEXP, l))
            return -1;
        if (weight_present(&L->sh_router) && check_w(c, &L->sh_router, 1, D, TN_FFN_GATE_INP_SHEXP, l))
            return -1;
    }
    return 0;
}

/* A next-token-prediction block (layer l, after the run ones): the block
 * itself as any layer, and its entry and exit. */
static int check_mtp(checker *c, const model_hparams *hp, layer_weights *L, int l)
{
    const int D = hp->n_embd;
    const bool out_norm = hp->arch.mtp_out_norm;
    if (check_layer(c, hp, L, l) || check_w(c, &L->eh_proj, D, 2 * D, TN_NEXTN_EH_PROJ, l) ||
        check_vec(c, L->enorm, TN_NEXTN_ENORM, l) || check_vec(c, L->hnorm, TN_NEXTN_HNORM, l) ||
        check_vec(c, out_norm ? L->layer_out_norm : L->nextn_norm,
                  out_norm ? TN_LAYER_OUT_NORM : TN_NEXTN_SHARED_HEAD_NORM, l))
        return -1;
    if (weight_present(&L->nextn_embd) && check_w(c, &L->nextn_embd, hp->n_vocab, D, TN_NEXTN_EMBED_TOKENS, l))
        return -1;
    if (weight_present(&L->nextn_head) && check_w(c, &L->nextn_head, hp->n_vocab, D, TN_NEXTN_SHARED_HEAD_HEAD, l))
        return -1;
    return 0;
}

/* The model keeps its own copy of the weight descriptors (not the planes). */
static int copy_weights(model *m, const model_weights *src)
{
    const model_hparams *hp = &m->hp;
    m->w = *src;
    m->w.layers = calloc((size_t)(hp->n_layer + src->n_mtp), sizeof *m->w.layers);
    if (!m->w.layers) return -1;
    for (int l = 0; l < hp->n_layer + src->n_mtp; l++) {
        layer_weights *L = &m->w.layers[l];
        *L = src->layers[l];
        L->exp_gate = L->exp_up = L->exp_down = NULL;
        if (!hparams_layer_moe(hp, l) || !src->layers[l].exp_gate || !src->layers[l].exp_up || !src->layers[l].exp_down)
            continue;
        size_t n = (size_t)hp->n_expert;
        L->exp_gate = malloc(n * sizeof(weight));
        L->exp_up = malloc(n * sizeof(weight));
        L->exp_down = malloc(n * sizeof(weight));
        if (!L->exp_gate || !L->exp_up || !L->exp_down) return -1;
        memcpy(L->exp_gate, src->layers[l].exp_gate, n * sizeof(weight));
        memcpy(L->exp_up, src->layers[l].exp_up, n * sizeof(weight));
        memcpy(L->exp_down, src->layers[l].exp_down, n * sizeof(weight));
    }
    return 0;
}

static void *alloc_f(size_t n, int *fail)
{
    void *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *fail = 1;
    return p;
}

/* shared: the pool to run on (a draft model's), NULL: its own; mtp: a
 * draft model, whose layer 0 is a next-token-prediction block. */
static model *create(const model_hparams *hp, const model_weights *w, const model_options *opt, pool *shared,
                     bool mtp, char *err, size_t errlen)
{
    model *m = calloc(1, sizeof *m);
    if (!m) { snprintf(err, errlen, "out of memory"); return NULL; }
    m->hp = *hp;
    if (w->n_mtp < 0 || w->n_mtp > hp->n_nextn) {
        snprintf(err, errlen, "%d next-token-prediction blocks of %d", w->n_mtp, hp->n_nextn);
        free(m);
        return NULL;
    }
    m->opt = opt ? *opt : model_default_options();
    if (m->opt.n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        m->opt.n_threads = n > 0 ? (int)n : 1;
    }
    if (m->opt.n_batch <= 0) m->opt.n_batch = 64;
    m->n_ctx = m->opt.n_ctx > 0 ? m->opt.n_ctx : hp->n_ctx_train;
    if (hp->n_vocab == 0) m->hp.n_vocab = (int)w->tok_embd.rows;
    if (hp->n_expert > 256) {
        snprintf(err, errlen, "%d experts: at most 256 are supported", hp->n_expert);
        free(m);
        return NULL;
    }
    if (copy_weights(m, w) != 0) { snprintf(err, errlen, "out of memory"); model_free(m); return NULL; }

    checker c = { err, errlen, 0, opt && opt->tier != NULL };
    const model_hparams *h = &m->hp;
    if (check_w(&c, &m->w.tok_embd, h->n_vocab, h->n_embd, TN_TOKEN_EMBD, 0) ||
        check_vec(&c, m->w.output_norm, TN_OUTPUT_NORM, 0) ||
        (weight_present(&m->w.output) && check_w(&c, &m->w.output, h->n_vocab, h->n_embd, TN_OUTPUT, 0))) {
        model_free(m);
        return NULL;
    }
    m->qkv_kf = calloc(3 * (size_t)(h->n_layer + m->w.n_mtp), sizeof *m->qkv_kf);
    if (!m->qkv_kf) { snprintf(err, errlen, "out of memory"); model_free(m); return NULL; }
    /* the run layers, then the next-token-prediction blocks (a draft model's
     * one layer is one: its eh_proj, 2 n_embd wide, sizes the scratch) */
    for (int l = 0; l < h->n_layer + m->w.n_mtp; l++) {
        layer_weights *L = &m->w.layers[l];
        /* a draft model's block is its main model's checked layer, a fused qkv split there already */
        if (!mtp && weight_present(&L->wqkv) && !hparams_layer_recurrent(h, l) && split_qkv(&c, h, L, l, m->qkv_kf + 3 * l)) {
            model_free(m);
            return NULL;
        }
        if (mtp || l >= h->n_layer ? check_mtp(&c, h, L, l) : check_layer(&c, h, L, l)) { model_free(m); return NULL; }
    }
    if (m->w.rope_freqs && (!h->arch.rope_freqs || m->w.n_rope_freqs != h->n_rot / 2)) {
        if (!h->arch.rope_freqs)
            snprintf(err, errlen, "rope_freqs.weight: architecture %s does not use RoPE frequency factors",
                     h->arch.name);
        else
            snprintf(err, errlen, "rope_freqs.weight: %d factors, the %d RoPE dimensions need %d",
                     m->w.n_rope_freqs, h->n_rot, h->n_rot / 2);
        model_free(m);
        return NULL;
    }

    m->k = m->opt.kernels ? m->opt.kernels : kernels_get(1);
    m->own_pool = shared == NULL;
    m->pool = shared ? shared : pool_create(m->opt.n_threads);
    if (!m->pool) { snprintf(err, errlen, "cannot start %d threads", m->opt.n_threads); model_free(m); return NULL; }
    mm_blas_single_thread();

    m->q_dim = h->n_head * h->head_dim;
    m->kv_dim = h->n_head_kv * h->head_dim;
    m->att_dim = h->n_head * h->head_dim_v;
    m->kv_dim_v = h->n_head_kv * h->head_dim_v;
    m->kv_elt = m->opt.kv == KV_F32 ? 4 : 2;
    const size_t nb = (size_t)m->opt.n_batch, D = (size_t)h->n_embd, T = (size_t)m->opt.n_threads;
    size_t ff = (size_t)h->n_ff;
    if ((size_t)h->n_ff_exp > ff) ff = (size_t)h->n_ff_exp;
    if ((size_t)h->n_ff_shexp > ff) ff = (size_t)h->n_ff_shexp;
    const size_t E = (size_t)h->n_expert, K = (size_t)h->n_expert_used;
    const size_t nbk = nb > K ? nb : K; /* decode runs the K experts' rows side by side */
    int fail = 0;
    /* A sliding-window layer keeps its window plus a ubatch: a ubatch's rows are stored before its
     * first row attends, and must not overwrite what that row still sees. */
    m->kv_off = calloc((size_t)h->n_layer, sizeof *m->kv_off);
    m->kv_rows = calloc((size_t)h->n_layer, sizeof *m->kv_rows);
    size_t rows_total = 0;
    for (int l = 0; m->kv_off && m->kv_rows && l < h->n_layer; l++) {
        int rows = m->n_ctx;
        if (hparams_layer_swa(h, l) && (int64_t)h->n_swa + (int64_t)nb < (int64_t)m->n_ctx) {
            rows = h->n_swa + (int)nb;
            m->kv_ring = true;
        }
        m->kv_off[l] = rows_total;
        m->kv_rows[l] = rows;
        rows_total += (size_t)rows;
    }
    const size_t cache_rows = rows_total * m->kv_elt;
    m->kcache = calloc(1, cache_rows * (size_t)m->kv_dim);
    m->vcache = calloc(1, cache_rows * (size_t)m->kv_dim_v);
    if (!m->kcache || !m->vcache || !m->kv_off || !m->kv_rows) fail = 1;
    m->mm.k = m->k;
    m->mm.pool = m->pool;
    m->mm.scratch_stride = MM_TILE * c.max_cols;
    m->mm.scratch = alloc_f(T * (size_t)m->mm.scratch_stride, &fail);
    m->mm.qbuf_bytes = MM_QBUF_BYTES(nbk, c.max_cols);
    m->mm.qbuf = alloc_f(m->mm.qbuf_bytes / sizeof(float), &fail);
    m->x = alloc_f(nb * D, &fail);
    m->h = alloc_f(nb * D, &fail);
    m->o = alloc_f(nb * D, &fail);
    m->q = alloc_f(nb * (size_t)m->q_dim, &fail);
    m->att = alloc_f(nb * (size_t)m->att_dim, &fail);
    m->kx = alloc_f(nb * (size_t)m->kv_dim, &fail);
    m->vx = alloc_f(nb * (size_t)m->kv_dim_v, &fail);
    if (h->arch.mla) {
        const size_t H = (size_t)h->n_head, L = (size_t)h->n_layer, r = (size_t)h->n_lora_kv;
        m->mla_qa = alloc_f(nb * (size_t)h->n_lora_q, &fail);
        m->mla_q = alloc_f(nb * H * (size_t)h->head_k_mla, &fail);
        m->mla_kva = alloc_f(nb * (r + (size_t)h->n_rot), &fail);
        m->mla_o = alloc_f(nb * H * (size_t)h->head_v_mla, &fail);
        size_t wmax = r; /* the gathers: nope or r in, r or head_v_mla out */
        if ((size_t)h->head_k_mla > wmax) wmax = (size_t)h->head_k_mla;
        if ((size_t)h->head_v_mla > wmax) wmax = (size_t)h->head_v_mla;
        m->mla_in = alloc_f(nb * wmax, &fail);
        m->mla_out = alloc_f(nb * wmax, &fail);
        m->mla_kb = calloc(L * H, sizeof(weight));
        m->mla_vb = calloc(L * H, sizeof(weight));
        m->mla_kf = calloc(2 * L * H, sizeof(kfactor));
        if (!m->mla_kb || !m->mla_vb || !m->mla_kf) fail = 1;
        for (size_t l = 0; !fail && l < L; l++) {
            const layer_weights *LW = &m->w.layers[l];
            for (size_t hh = 0; hh < H; hh++) {
                weight_rows_view(&LW->wk_b, (int64_t)(hh * r), (int64_t)r, &m->mla_kb[l * H + hh],
                                 &m->mla_kf[2 * (l * H + hh)]);
                weight_rows_view(&LW->wv_b, (int64_t)(hh * (size_t)h->head_v_mla), h->head_v_mla,
                                 &m->mla_vb[l * H + hh], &m->mla_kf[2 * (l * H + hh) + 1]);
            }
        }
    }
    if (h->arch.gated_delta_net) {
        const size_t C = (size_t)hparams_ssm_channels(h), S = (size_t)h->ssm_d_state, NV = (size_t)h->ssm_dt_rank;
        int n_rec = 0;
        m->gdn_slot = calloc((size_t)h->n_layer + 1, sizeof *m->gdn_slot);
        for (int l = 0; m->gdn_slot && l < h->n_layer; l++) m->gdn_slot[l] = hparams_layer_recurrent(h, l) ? n_rec++ : -1;
        if (!m->gdn_slot) fail = 1;
        /* one block, so that a checkpoint is one copy */
        const size_t n_conv = (size_t)n_rec * (size_t)(h->ssm_d_conv - 1) * C;
        m->gdn_floats = n_conv + (size_t)n_rec * NV * S * S;
        m->gdn_conv = alloc_f(m->gdn_floats, &fail);
        m->gdn_state = m->gdn_conv ? m->gdn_conv + n_conv : NULL;
        m->gdn_ckpt = alloc_f(m->gdn_floats, &fail);
        m->gdn_bg = alloc_f(2 * nb * NV, &fail);
        m->gdn_ck = alloc_f((size_t)pool_size(m->pool) * GDN_CK_FLOATS(S), &fail);
        m->gdn_qkv = alloc_f(nb * C, &fail);
        m->gdn_in = alloc_f(nb * (C + (size_t)h->ssm_d_inner), &fail);
        m->gdn_cv = alloc_f(nb * C, &fail);
        m->gdn_z = alloc_f(nb * (size_t)h->ssm_d_inner, &fail);
        m->gdn_ba = alloc_f(nb * 2 * NV, &fail);
        m->gdn_o = alloc_f(nb * (size_t)h->ssm_d_inner, &fail);
    }
    if (h->arch.dsa) {
        const size_t NH = (size_t)h->n_idx_head, HD = (size_t)h->idx_head_dim, C = (size_t)m->n_ctx;
        m->dsa_kcache = calloc((size_t)h->n_layer * C * HD, m->kv_elt);
        m->dsa_k = alloc_f(nb * HD, &fail);
        m->dsa_q = alloc_f(nb * NH * HD, &fail);
        m->dsa_w = alloc_f(nb * NH, &fail);
        m->dsa_score = alloc_f(nb * C, &fail);
        m->dsa_sel = calloc(nb * C, 1);
        if (!m->dsa_kcache || !m->dsa_sel) fail = 1;
    }
    if (h->arch.attn_out_gate) {
        m->qg = alloc_f(nb * 2 * (size_t)m->q_dim, &fail);
        m->qgate = alloc_f(nb * (size_t)m->q_dim, &fail);
    }
    m->ffa = alloc_f(nbk * ff, &fail);
    m->ffb = alloc_f(nbk * ff, &fail);
    m->rope_cs = alloc_f(nb * (size_t)h->n_rot, &fail);
    if (h->arch.mrope_sections) {
        m->mpos = calloc(nb * 3, sizeof *m->mpos);
        m->pos_next = calloc((size_t)m->n_ctx, sizeof *m->pos_next);
        m->mrope_axis = malloc((size_t)(h->n_rot / 2 > 0 ? h->n_rot / 2 : 1));
        if (!m->mpos || !m->pos_next || !m->mrope_axis) fail = 1;
        for (int i = 0; !fail && i < h->n_rot / 2; i++) m->mrope_axis[i] = (uint8_t)hparams_mrope_axis(h, i);
    }
    m->att_stride = (size_t)m->n_ctx + 8 + 32 * (size_t)(h->head_dim > h->head_dim_v ? h->head_dim : h->head_dim_v);
    if (m->att_stride < ATTN_HEADS * ((size_t)m->n_ctx + 8)) m->att_stride = ATTN_HEADS * ((size_t)m->n_ctx + 8);
    m->att_scores = alloc_f(T * m->att_stride, &fail);
    if (E > 0) {
        m->rlog = alloc_f(nb * E, &fail);
        m->selw = alloc_f(nb * K, &fail);
        m->eo = alloc_f(nb * K * D, &fail);
        m->hg = alloc_f(nbk * D, &fail); /* decode: Llama 4's K weighted inputs */
        for (int l = 0; l < h->n_layer + w->n_mtp && !m->hrot && !fail; l++)
            if ((w->layers[l].exp_gate && w->layers[l].exp_gate[0].rotate) ||
                (w->layers[l].exp_up && w->layers[l].exp_up[0].rotate))
                m->hrot = alloc_f(nbk * D, &fail);
        m->gd = alloc_f(nb * D, &fail);
        m->sel = calloc(nb * K, sizeof(int));
        m->grp = calloc(nb * K, sizeof(int));
        if (!m->sel || !m->grp) fail = 1;
    } else {
        m->gd = alloc_f(nb * D, &fail);
    }
    /* the graph runs on the CPU until another backend is bound (backend.h) */
    m->ops = &backend_cpu;
    m->ctx = m;
    m->bw = &m->w;
    m->bufs = (backend_bufs){ .x = m->x, .h = m->h, .q = m->q, .kx = m->kx, .vx = m->vx, .att = m->att, .o = m->o,
                              .rlog = m->rlog, .gd = m->gd, .mla_qa = m->mla_qa, .mla_q = m->mla_q,
                              .mla_kva = m->mla_kva, .mla_o = m->mla_o, .qg = m->qg, .qgate = m->qgate };
    if (fail) {
        snprintf(err, errlen, "out of memory (KV cache %zu bytes for n_ctx %d)",
                 cache_rows * (size_t)(m->kv_dim + m->kv_dim_v), m->n_ctx);
        model_free(m);
        return NULL;
    }
    return m;
}

model *model_create(const model_hparams *hp, const model_weights *w, const model_options *opt, char *err,
                    size_t errlen)
{
    return create(hp, w, opt, NULL, false, err, errlen);
}

model *model_create_mtp(model *m, char *err, size_t errlen)
{
    const model_hparams *mh = &m->hp;
    const int l = mh->n_layer;
    if (mh->n_nextn < 1) {
        snprintf(err, errlen, "the model has no next-token-prediction block (nextn_predict_layers)");
        return NULL;
    }
    if (!mh->arch.mtp) {
        snprintf(err, errlen, "%s's next-token-prediction block is not one strata drafts with (GLM-4.5's, "
                 "DeepSeek V3's and Ling 2.0's are)", mh->arch.name);
        return NULL;
    }
    if (m->w.n_mtp < 1) {
        snprintf(err, errlen, "the pack has no next-token-prediction block (built with --no-nextn?)");
        return NULL;
    }
    if (mh->no_rope_step > 0 || (mh->n_swa > 0 && mh->arch.swa_pattern > 0) || mh->n_moe_layer_step > 1) {
        snprintf(err, errlen, "%s: a next-token-prediction block among layers of alternating kinds is not supported",
                 mh->arch.name);
        return NULL;
    }
    model_hparams hp = *mh;
    hp.n_layer = 1;
    hp.n_nextn = 0;
    hp.n_layer_dense_lead = hparams_layer_moe(mh, l) ? 0 : 1;
    const layer_weights *L = &m->w.layers[l];
    /* its own embedding and head when it has them, else the model's (tied or not) */
    model_weights w = m->w;
    w.layers = &m->w.layers[l];
    w.n_mtp = 0;
    if (weight_present(&L->nextn_embd)) w.tok_embd = L->nextn_embd;
    w.output = weight_present(&L->nextn_head) ? L->nextn_head
             : weight_present(&m->w.output)   ? m->w.output
                                              : m->w.tok_embd;
    w.output_norm = mh->arch.mtp_out_norm ? L->layer_out_norm : L->nextn_norm;
    model_options o = m->opt;
    o.tier = NULL; /* the block's experts are read in place (loader.h) */
    o.n_ctx = m->n_ctx;
    model *d = create(&hp, &w, &o, m->pool, true, err, errlen);
    if (!d) return NULL;
    d->mtp = true;
    d->mtp_cat = calloc((size_t)d->opt.n_batch * 2 * (size_t)hp.n_embd, sizeof(float));
    if (!d->mtp_cat) { snprintf(err, errlen, "out of memory"); model_free(d); return NULL; }
    return d;
}

/* The row sinks read the CPU backend's host buffers: refused elsewhere. */
static int cpu_sink(const model *m, bool set, const char *what, char *err, size_t errlen)
{
    if (set && m->ops != &backend_cpu) {
        snprintf(err, errlen, "%s runs with --device cpu only", what);
        return -1;
    }
    return 0;
}

int model_on_hidden(model *m, model_hidden_fn fn, void *ctx, char *err, size_t errlen)
{
    if (cpu_sink(m, fn, "drafting with the next-token-prediction block", err, errlen)) return -1;
    m->hidden_fn = fn;
    m->hidden_ctx = ctx;
    return 0;
}

int model_on_moe_input(model *m, model_moe_input_fn fn, void *ctx, char *err, size_t errlen)
{
    if (cpu_sink(m, fn, "recording the experts' inputs", err, errlen)) return -1;
    m->moe_in_fn = fn;
    m->moe_in_ctx = ctx;
    return 0;
}

int model_on_expert_hidden(model *m, model_expert_hidden_fn fn, void *ctx, char *err, size_t errlen)
{
    if (cpu_sink(m, fn, "recording the experts' inputs", err, errlen)) return -1;
    m->exp_hid_fn = fn;
    m->exp_hid_ctx = ctx;
    return 0;
}

int model_n_past(const model *m) { return m->n_past; }

void model_exact_rows(model *m, bool on) { m->mm.as_decode = on; }
int model_n_ctx(const model *m) { return m->n_ctx; }
const model_hparams *model_hp(const model *m) { return &m->hp; }
const char *model_kernels_name(const model *m) { return m->k->name; }
int model_n_threads(const model *m) { return m->opt.n_threads; }

void model_checkpoint(model *m)
{
    if (!m->gdn_slot) return;
    memcpy(m->gdn_ckpt, m->gdn_conv, m->gdn_floats * sizeof(float));
    m->gdn_ckpt_pos = m->n_past;
}

void model_rewind(model *m, int n_past)
{
    /* a sliding layer's ring holds n_batch positions more than its window: further back, what the
     * next position would see is gone, so the context starts over */
    if (m->kv_ring && n_past > 0 && m->n_past - n_past > m->opt.n_batch) n_past = 0;
    if (m->gdn_slot && n_past >= 0 && n_past < m->n_past) {
        /* a recurrent layer's state holds the last position only: back to the checkpoint, or to 0 */
        const bool ckpt = m->gdn_ckpt_pos > 0 && m->gdn_ckpt_pos <= n_past;
        if (ckpt) memcpy(m->gdn_conv, m->gdn_ckpt, m->gdn_floats * sizeof(float));
        else memset(m->gdn_conv, 0, m->gdn_floats * sizeof(float));
        if (!ckpt) m->gdn_ckpt_pos = 0;
        m->n_past = ckpt ? m->gdn_ckpt_pos : 0;
        return;
    }
    if (n_past >= 0 && n_past < m->n_past) m->n_past = n_past;
}

size_t model_active_bytes(const model *m)
{
    const model_hparams *h = &m->hp;
    size_t b = m->w.tok_embd.row_bytes; /* one embedding row per token */
    b += weight_read_bytes(weight_present(&m->w.output) ? &m->w.output : &m->w.tok_embd);
    for (int l = 0; l < h->n_layer; l++) {
        const layer_weights *L = &m->w.layers[l];
        b += weight_read_bytes(&L->wq) + weight_read_bytes(&L->wk) + weight_read_bytes(&L->wv) + weight_read_bytes(&L->wo);
        b += weight_read_bytes(&L->wq_a) + weight_read_bytes(&L->wq_b) + weight_read_bytes(&L->wkv_a) + weight_read_bytes(&L->wk_b) +
             weight_read_bytes(&L->wv_b); /* MLA's (absent elsewhere: 0) */
        if (!hparams_layer_moe(h, l)) {
            b += weight_read_bytes(&L->ffn_gate) + weight_read_bytes(&L->ffn_up) + weight_read_bytes(&L->ffn_down);
            continue;
        }
        size_t all = 0;
        for (int e = 0; e < h->n_expert; e++)
            all += m->opt.tier ? tier_expert_bytes(m->opt.tier, l)
                               : weight_read_bytes(&L->exp_gate[e]) + weight_read_bytes(&L->exp_up[e]) + weight_read_bytes(&L->exp_down[e]);
        b += weight_read_bytes(&L->router) + all / (size_t)h->n_expert * (size_t)h->n_expert_used;
        if (weight_present(&L->sh_gate))
            b += weight_read_bytes(&L->sh_gate) + weight_read_bytes(&L->sh_up) + weight_read_bytes(&L->sh_down);
    }
    return b;
}

int model_record_routing(model *m, char *err, size_t errlen)
{
    if (m->hp.n_expert == 0) {
        snprintf(err, errlen, "--record-routing: the model has no routed experts (a dense model)");
        return -1;
    }
    if (m->routing) return 0;
    ec_profile *p = calloc(1, sizeof *p);
    if (!p) { snprintf(err, errlen, "out of memory"); return -1; }
    if (ec_profile_init(p, m->hp.n_layer, m->hp.n_expert, m->hp.n_expert_used, err, errlen)) {
        free(p);
        return -1;
    }
    /* tokens are counted where the first routing happens: dense layers may lead (GLM-4.5, DeepSeek) */
    while (p->token_layer + 1 < m->hp.n_layer && !hparams_layer_moe(&m->hp, p->token_layer)) p->token_layer++;
    m->routing = p;
    return 0;
}

const ec_profile *model_routing(const model *m) { return m->routing; }

int model_record_trace(model *m, char *err, size_t errlen)
{
    if (m->hp.n_expert == 0) {
        snprintf(err, errlen, "the model has no routed experts (a dense model): no routing to trace");
        return -1;
    }
    if (m->trace) return 0;
    bool *routed = malloc((size_t)m->hp.n_layer * sizeof *routed);
    routing_trace *t = calloc(1, sizeof *t);
    if (!routed || !t) { free(routed); free(t); snprintf(err, errlen, "out of memory"); return -1; }
    for (int l = 0; l < m->hp.n_layer; l++) routed[l] = hparams_layer_moe(&m->hp, l);
    int rc = routing_trace_init(t, m->hp.n_layer, m->hp.n_expert, m->hp.n_expert_used, routed, err, errlen);
    free(routed);
    if (rc) { free(t); return -1; }
    m->trace = t;
    return 0;
}

const routing_trace *model_trace(const model *m) { return m->trace; }

void model_pause_routing(model *m, bool paused) { m->routing_paused = paused; }

void model_observe_routing(model *m, int layer, const int *sel)
{
    int32_t e[256];
    const int K = m->hp.n_expert_used;
    if (m->routing_paused) return;
    for (int j = 0; j < K && j < 256; j++) e[j] = (int32_t)sel[j];
    char err[160];
    /* the router's picks are always in range; a failure here is a bug (or,
     * for the trace, no memory left) */
    if (m->routing && ec_profile_observe(m->routing, layer, e, K, err, sizeof err) != 0) fprintf(stderr, "strata: %s\n", err);
    if (m->trace && routing_trace_observe(m->trace, layer, e, K, err, sizeof err) != 0) fprintf(stderr, "strata: %s\n", err);
}

void model_free(model *m)
{
    if (!m) return;
    if (m->ops && m->ops->free) m->ops->free(m->ctx);
    if (m->routing) { ec_profile_free(m->routing); free(m->routing); }
    if (m->trace) { routing_trace_free(m->trace); free(m->trace); }
    if (m->w.layers) {
        for (int l = 0; l < m->hp.n_layer + m->w.n_mtp; l++) {
            free(m->w.layers[l].exp_gate);
            free(m->w.layers[l].exp_up);
            free(m->w.layers[l].exp_down);
        }
        free(m->w.layers);
    }
    if (m->own_pool) pool_free(m->pool);
    free(m->mtp_cat);
    free(m->kcache); free(m->vcache); free(m->kv_off); free(m->kv_rows); free(m->mm.scratch); free(m->mm.qbuf);
    free(m->x); free(m->h); free(m->o); free(m->q); free(m->att); free(m->kx); free(m->vx);
    free(m->ffa); free(m->ffb); free(m->rope_cs); free(m->mpos); free(m->pos_next); free(m->mrope_axis); free(m->att_scores);
    free(m->mla_qa); free(m->mla_q); free(m->mla_kva); free(m->mla_o); free(m->mla_in); free(m->mla_out);
    free(m->mla_kb); free(m->mla_vb); free(m->mla_kf); free(m->qkv_kf);
    free(m->dsa_kcache); free(m->dsa_k); free(m->dsa_q); free(m->dsa_w); free(m->dsa_score); free(m->dsa_sel);
    free(m->rlog); free(m->selw); free(m->eo); free(m->hg); free(m->hrot); free(m->gd);
    free(m->gdn_slot); free(m->gdn_conv); free(m->gdn_ckpt); free(m->gdn_bg); free(m->gdn_ck); free(m->gdn_qkv); free(m->gdn_in); free(m->gdn_cv); free(m->gdn_z);
    free(m->gdn_ba); free(m->gdn_o); free(m->qg); free(m->qgate); free(m->sel); free(m->grp);
    free(m);
}
