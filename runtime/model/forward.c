/* forward.c: the decoder's forward pass, one function per block type, read
 * top to bottom like the paper: embed -> per layer (attention block, then a
 * dense FFN block or a MoE block) -> final norm -> logits. Every matrix
 * product goes through mm_mul (matmul.h); everything here works on a ubatch
 * of B rows at consecutive positions. Float conventions follow ggml where it
 * changes results: RMS sums and softmax sums in double, products rounded
 * before they are added. */
#include "runtime/model/model_impl.h"

#include "runtime/device/device.h"
#include "runtime/kernels/ggml_order.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) {
        float v = x[i] * scale;
        out[i] = w ? v * w[i] : v; /* no weight: ggml_rms_norm alone */
    }
}

static void rmsnorm_rows(float *out, const float *x, const float *w, int B, int n, float eps)
{
    for (int b = 0; b < B; b++) rmsnorm(out + (size_t)b * n, x + (size_t)b * n, w, n, eps);
}

/* a = silu(a) * b over `rows` rows of ff, each row as ggml_vec_swiglu_f32
 * does it (kernels.h: its expf on whole groups of 8, libm's on the tail). */
static void swiglu_rows(const model *m, float *a, const float *b, int64_t rows, int64_t ff)
{
    for (int64_t r = 0; r < rows; r++) m->k->swiglu_f32(a + r * ff, b + r * ff, ff);
}

static void add_bias(float *y, const float *bias, int B, int n)
{
    if (!bias) return;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++) y[(size_t)b * n + i] += bias[i];
}

/* Granite's residual multiplier on a block's output (ggml_scale: one
 * product each), then the residual add. */
static void add_residual(const model *m, float *x, float *y, size_t n)
{
    const float s = m->hp.residual_scale;
    if (s != 0.0f)
        for (size_t i = 0; i < n; i++) y[i] *= s;
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* YaRN's correction range, as ggml_rope_yarn_corr_dims computes it: the
 * pair index where a rotation completes `beta` turns over n_ctx_orig. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float beta, float base)
{
    return n_dims * logf(n_ctx_orig / (beta * 2 * (float)M_PI)) / (2 * logf(base));
}

/* theta_i = pos * base^(-2i/n_rot) the way ggml-cpu's rope cache makes it
 * (float: theta starts at pos and is multiplied by powf(base, -2/n_rot)
 * once per pair, cosf/sinf of each), so angles carry ggml's rounding.
 * Scaling (model.h) follows ggml's rope_yarn step by step; its two sums
 * are the FMAs ggml-cpu's contracted build makes of them. Unscaled, every
 * extra step is a multiply or divide by exactly 1. */
static void rope_tables(model *m, int B, int pos0)
{
    const model_hparams *hp = &m->hp;
    const int half = hp->n_rot / 2;
    const float theta_scale = powf(hp->rope_base, -2.0f / (float)hp->n_rot);
    const float fs = hp->rope_freq_scale, ext = hp->yarn_ext_factor;
    const float *ff = m->w.rope_freqs;
    float lo = floorf(yarn_corr_dim(hp->n_rot, hp->n_ctx_orig, hp->yarn_beta_fast, hp->rope_base));
    float hi = ceilf(yarn_corr_dim(hp->n_rot, hp->n_ctx_orig, hp->yarn_beta_slow, hp->rope_base));
    lo = lo > 0 ? lo : 0;
    hi = hi < (float)(hp->n_rot - 1) ? hi : (float)(hp->n_rot - 1);
    const float span = hi - lo > 0.001f ? hi - lo : 0.001f;
    /* MLA: llama.cpp's deepseek2 graph hands RoPE 1 / (1 + 0.1 ln(1/freq_scale)) instead of the
     * attention factor, which it puts into the q·k scale (attn_scale) */
    float mscale = hp->arch.mla ? 1.0f / (1.0f + 0.1f * logf(1.0f / fs)) : hp->rope_attn_factor;
    if (ext != 0.0f) mscale *= fmaf(0.1f, logf(1.0f / fs), 1.0f);
    for (int b = 0; b < B; b++) {
        float *cs = m->rope_cs + (size_t)b * hp->n_rot;
        float theta = (float)(pos0 + b);
        for (int i = 0; i < half; i++) {
            const float t_extrap = ff ? theta / ff[i] : theta, t_interp = fs * t_extrap;
            float t = t_interp;
            if (ext != 0.0f) {
                float y = ((float)i - lo) / span;
                y = y < 0 ? 0 : y > 1 ? 1 : y;
                const float mix = (1 - y) * ext;
                t = fmaf(t_interp, 1 - mix, t_extrap * mix);
            }
            cs[i] = cosf(t) * mscale;
            cs[half + i] = sinf(t) * mscale;
            theta *= theta_scale;
        }
    }
}

/* NORM rotates adjacent pairs (2i, 2i+1); NEOX pairs i with i + n_rot/2. */
static void rope_head(float *v, const float *cs, int n_rot, rope_kind kind)
{
    const int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        const int i0 = kind == ROPE_NEOX ? i : 2 * i, i1 = kind == ROPE_NEOX ? i + half : 2 * i + 1;
        const float c = cs[i], s = cs[half + i], a = v[i0], b = v[i1];
        /* ggml-cpu is built with floating-point contraction: its
         * x0*cos - x1*sin and x0*sin + x1*cos become these two FMAs */
        v[i0] = fmaf(a, c, -(b * s));
        v[i1] = fmaf(a, s, b * c);
    }
}

void model_rope_rows(model *m, float *v, int n_heads, int B, int pos0)
{
    rope_tables(m, B, pos0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < n_heads; h++)
            rope_head(v + ((size_t)b * n_heads + h) * m->hp.head_dim, m->rope_cs + (size_t)b * m->hp.n_rot,
                      m->hp.n_rot, m->hp.arch.facts->rope);
}

static void qk_norm(const model *m, float *v, int n_heads, const float *w, int B)
{
    const int hd = m->hp.head_dim, width = n_heads * hd;
    for (int b = 0; b < B; b++) {
        float *row = v + (size_t)b * width;
        if (m->hp.arch.qk_norm == QK_NORM_FULL) rmsnorm(row, row, w, width, m->hp.rms_eps);
        else
            for (int h = 0; h < n_heads; h++) rmsnorm(row + h * hd, row + h * hd, w, hd, m->hp.rms_eps);
    }
}

/* A position's cache row: a full layer's is the position itself (no
 * division in attention's inner loop), a sliding layer's ring wraps. */
static size_t kv_index(const model *m, int layer, int pos)
{
    const int rows = m->kv_rows[layer];
    return m->kv_off[layer] + (size_t)(pos < rows ? pos : pos % rows);
}

static void *k_row(const model *m, int layer, int pos)
{
    return (char *)m->kcache + kv_index(m, layer, pos) * m->kv_dim * m->kv_elt;
}

static void *v_row(const model *m, int layer, int pos)
{
    return (char *)m->vcache + kv_index(m, layer, pos) * m->kv_dim_v * m->kv_elt;
}

/* The factor on q·k: Granite's attention.scale when given; MLA's
 * mscale^2 / sqrt(q/k head width before absorption), mscale = attn_factor
 * (1 + yarn_log_multiplier ln(1/freq_scale)) as llama.cpp's deepseek2 graph
 * pre-scales it; else 1/sqrt(head_dim). */
static float attn_scale(const model_hparams *hp)
{
    if (hp->attn_scale != 0.0f) return hp->attn_scale;
    if (hp->arch.mla) {
        const float ms = hp->rope_attn_factor * (1.0f + hp->yarn_log_mul * logf(1.0f / hp->rope_freq_scale));
        return ms * ms / sqrtf((float)hp->head_k_mla);
    }
    return 1.0f / sqrtf((float)hp->head_dim);
}

/* -------------------------------------------------------------- attention */

typedef struct attn_job {
    model *m;
    int layer, B, pos0;
} attn_job;

/* One (row, query head): causal softmax(q·k / sqrt(d)) over the cache, times
 * v. With an f32 cache every step is ggml-cpu's (non-flash) attention on
 * x86, bit for bit: the scores by ggml_vec_dot_f32, scaled, softmax as
 * ggml_soft_max_ext (ggml's expf over whole groups of 8 positions, masked
 * ones counting as exact zeros), and the weighted sum of v with position p
 * in float lane p % 32, ggml_vec_dot_f32's fold at the end, when one row is
 * computed (decode), or in lane p % 8 and a horizontal sum, llamafile's
 * tinyBLAS, when a batch is (prefill). */
static void attn_task(void *arg, int task, int thread)
{
    attn_job *j = arg;
    model *m = j->m;
    const int hd = m->hp.head_dim, hv = m->hp.head_dim_v, nh = m->hp.n_head;
    const int b = task / nh, h = task % nh, kvh = h / (nh / m->hp.n_head_kv);
    const int n_pos = j->pos0 + b + 1;
    const float *q = m->q + (size_t)b * m->q_dim + (size_t)h * hd;
    float *out = m->att + (size_t)b * m->att_dim + (size_t)h * hv;
    float *sc = m->att_scores + (size_t)thread * m->att_stride;
    const float scale = attn_scale(&m->hp);
    const bool f16 = m->opt.kv == KV_F16;
    /* Llama 4's chunked layers see only their own chunk: the positions
     * before it are masked (-inf, exact zeros after the softmax), as
     * llama.cpp masks them, so the sums keep their order */
    const int chunk = m->hp.attn_chunk, pos = j->pos0 + b;
    int p_lo = chunk > 0 && hparams_layer_rope(&m->hp, j->layer) ? pos / chunk * chunk : 0;
    /* gpt-oss's sliding layers: the last n_swa positions, the older ones masked the same way */
    if (hparams_layer_swa(&m->hp, j->layer) && pos - m->hp.n_swa + 1 > p_lo) p_lo = pos - m->hp.n_swa + 1;
    const float *sinks = m->w.layers[j->layer].sinks, sink = sinks ? sinks[h] : -INFINITY;

    for (int p = 0; p < p_lo; p++) sc[p] = -INFINITY;
    for (int p = p_lo; p < n_pos; p++) {
        const void *kr = (const char *)k_row(m, j->layer, p) + (size_t)kvh * hd * m->kv_elt;
        float s = f16 ? m->k->dot_f16(kr, q, hd) : m->k->dot_f32(kr, q, hd);
        sc[p] = s * scale;
    }
    if (f16) {
        float mx = sink;
        for (int p = 0; p < n_pos; p++) mx = sc[p] > mx ? sc[p] : mx;
        double sum = 0.0;
        for (int p = 0; p < n_pos; p++) { sc[p] = expf(sc[p] - mx); sum += sc[p]; }
        if (sinks) sum += expf(sink - mx);
        const float inv = (float)(1.0 / sum);
        memset(out, 0, (size_t)hv * sizeof *out);
        for (int p = p_lo; p < n_pos; p++) {
            const void *vr = (const char *)v_row(m, j->layer, p) + (size_t)kvh * hv * m->kv_elt;
            m->k->axpy_f16(out, sc[p] * inv, vr, hv);
        }
        return;
    }
    const int n8 = (n_pos + 7) & ~7;
    for (int p = n_pos; p < n8; p++) sc[p] = -INFINITY;
    m->k->softmax_f32(sc, n8, sc, sink);
    const int lanes = j->B == 1 ? 32 : 8;
    float *acc = sc + m->n_ctx + 8; /* lanes x hv */
    memset(acc, 0, (size_t)lanes * hv * sizeof *acc);
    for (int p = p_lo; p < n_pos; p++) { /* the masked ones would add exact zeros */
        const float *vr = (const float *)v_row(m, j->layer, p) + (size_t)kvh * hv;
        m->k->axpy_f32(acc + (size_t)(p % lanes) * hv, sc[p], vr, hv); /* fused: one rounding per element */
    }
    for (int d = 0; d < hv; d++) {
        float l[32];
        for (int k = 0; k < lanes; k++) l[k] = acc[(size_t)k * hv + d];
        out[d] = lanes == 8 ? ggml_order_hsum8(l) : ggml_order_fold32(l);
    }
}

/* Stores the ubatch's k and v rows (m->kx, m->vx) in layer l's cache, then
 * runs every (row, head) of attention into m->att. */
static void attend(model *m, int l, int B, int pos0, const mm_next *next_o)
{
    const model_hparams *hp = &m->hp;
    for (int b = 0; b < B; b++) {
        void *kr = k_row(m, l, pos0 + b), *vr = v_row(m, l, pos0 + b);
        if (m->opt.kv == KV_F16) {
            m->k->f32_to_f16(m->kx + (size_t)b * m->kv_dim, kr, m->kv_dim);
            m->k->f32_to_f16(m->vx + (size_t)b * m->kv_dim_v, vr, m->kv_dim_v);
        } else {
            memcpy(kr, m->kx + (size_t)b * m->kv_dim, (size_t)m->kv_dim * sizeof(float));
            memcpy(vr, m->vx + (size_t)b * m->kv_dim_v, (size_t)m->kv_dim_v * sizeof(float));
        }
    }
    attn_job j = { m, l, B, pos0 };
    /* A short context is cheaper on one thread than a pool wake-up. */
    if ((int64_t)B * hp->n_head * (pos0 + B) * hp->head_dim < 32 * 1024)
        for (int t = 0; t < B * hp->n_head; t++) attn_task(&j, t, 0);
    else
        pool_run_then(m->pool, B * hp->n_head, attn_task, &j, B == 1 ? mm_warm_next : NULL, (void *)next_o);
}

/* y_h = W_h x_h for every head h of B rows: x_h at x + b * x_stride + h * x_step (x_w wide), y_h
 * written at y + b * y_stride + h * y_step (rows of W_h wide). Decode takes the heads as one
 * mat-vec job; a batch gathers each head's rows into m->mla_in. */
static void per_head(model *m, const weight *W, int H, int B, const float *x, size_t x_stride, size_t x_step,
                     int x_w, float *y, size_t y_stride, size_t y_step)
{
    if (B == 1) {
        for (int h0 = 0; h0 < H; h0 += MM_VEC_MAX) {
            mm_vec v[MM_VEC_MAX];
            const int n = H - h0 < MM_VEC_MAX ? H - h0 : MM_VEC_MAX;
            for (int i = 0; i < n; i++)
                v[i] = (mm_vec){ &W[h0 + i], x + (size_t)(h0 + i) * x_step, y + (size_t)(h0 + i) * y_step };
            mm_mulv(&m->mm, v, n);
        }
        return;
    }
    for (int h = 0; h < H; h++) {
        const int rows = (int)W[h].rows;
        for (int b = 0; b < B; b++)
            memcpy(m->mla_in + (size_t)b * x_w, x + (size_t)b * x_stride + (size_t)h * x_step,
                   (size_t)x_w * sizeof(float));
        mm_mul(&m->mm, &W[h], m->mla_in, B, m->mla_out);
        for (int b = 0; b < B; b++)
            memcpy(y + (size_t)b * y_stride + (size_t)h * y_step, m->mla_out + (size_t)b * rows,
                   (size_t)rows * sizeof(float));
    }
}

/* MLA (arch_info.mla), as llama.cpp's deepseek2 graph with absorbed
 * weights: each head's query is [k_b q_nope | rope(q_pe)], the one KV head
 * [norm(compressed) | rope(k_pe)] with the normed compressed row as V, and
 * each head's attention output goes back through v_b before o. */
static void mla_attention_block(model *m, int l, int B, int pos0)
{
    const layer_weights *L = &m->w.layers[l];
    const model_hparams *hp = &m->hp;
    const int H = hp->n_head, r = hp->n_lora_kv, rot = hp->n_rot, qk = hp->head_k_mla, nope = qk - rot;
    const int vd = hp->head_v_mla, kva_w = r + rot;
    rmsnorm_rows(m->h, m->x, L->attn_norm, B, hp->n_embd, hp->rms_eps);
    const bool lora = weight_present(&L->wq_a);
    if (B == 1) { /* decode: both products of h as one pool job */
        const mm_vec v[2] = { { lora ? &L->wq_a : &L->wq, m->h, lora ? m->mla_qa : m->mla_q },
                              { &L->wkv_a, m->h, m->mla_kva } };
        mm_mulv(&m->mm, v, 2);
    } else {
        mm_mul(&m->mm, lora ? &L->wq_a : &L->wq, m->h, B, lora ? m->mla_qa : m->mla_q);
        mm_mul(&m->mm, &L->wkv_a, m->h, B, m->mla_kva);
    }
    if (lora) {
        rmsnorm_rows(m->mla_qa, m->mla_qa, L->q_a_norm, B, hp->n_lora_q, hp->rms_eps);
        mm_mul(&m->mm, &L->wq_b, m->mla_qa, B, m->mla_q);
    }
    for (int b = 0; b < B; b++) {
        const float *cs = m->rope_cs + (size_t)b * rot;
        float *qb = m->mla_q + (size_t)b * H * qk, *kva = m->mla_kva + (size_t)b * kva_w;
        for (int h = 0; h < H; h++) rope_head(qb + (size_t)h * qk + nope, cs, rot, hp->arch.facts->rope);
        rope_head(kva + r, cs, rot, hp->arch.facts->rope);
        rmsnorm(kva, kva, L->kv_a_norm, r, hp->rms_eps);
        memcpy(m->kx + (size_t)b * m->kv_dim, kva, (size_t)kva_w * sizeof(float));
        memcpy(m->vx + (size_t)b * m->kv_dim_v, kva, (size_t)r * sizeof(float));
        float *qa = m->q + (size_t)b * m->q_dim;
        for (int h = 0; h < H; h++)
            memcpy(qa + (size_t)h * kva_w + r, qb + (size_t)h * qk + nope, (size_t)rot * sizeof(float));
    }
    /* the absorbed queries: q_nope through each head's k_b block */
    per_head(m, m->mla_kb + (size_t)l * H, H, B, m->mla_q, (size_t)H * qk, (size_t)qk, nope, m->q,
             (size_t)m->q_dim, (size_t)kva_w);
    const mm_next next_o = { 0, { NULL } };
    attend(m, l, B, pos0, &next_o);
    per_head(m, m->mla_vb + (size_t)l * H, H, B, m->att, (size_t)m->att_dim, (size_t)r, r, m->mla_o,
             (size_t)H * vd, (size_t)vd);
    mm_mul(&m->mm, &L->wo, m->mla_o, B, m->o);
    add_residual(m, m->x, m->o, (size_t)B * hp->n_embd);
}

static void attention_block(model *m, int l, int B, int pos0)
{
    const layer_weights *L = &m->w.layers[l];
    const model_hparams *hp = &m->hp;
    rmsnorm_rows(m->h, m->x, L->attn_norm, B, hp->n_embd, hp->rms_eps);
    /* Decode: the o projection comes next (after attention), so threads
     * that finish early warm their first rows of it (mm_next). */
    const mm_next next_o = { 1, { &L->wo } };
    if (B == 1) { /* decode: q, k and v as one pool job */
        const mm_vec v[3] = { { &L->wq, m->h, m->q }, { &L->wk, m->h, m->kx }, { &L->wv, m->h, m->vx } };
        mm_mulv_next(&m->mm, v, 3, &next_o);
    } else {
        mm_mul(&m->mm, &L->wq, m->h, B, m->q);
        mm_mul(&m->mm, &L->wk, m->h, B, m->kx);
        mm_mul(&m->mm, &L->wv, m->h, B, m->vx);
    }
    add_bias(m->q, L->bq, B, m->q_dim);
    add_bias(m->kx, L->bk, B, m->kv_dim);
    add_bias(m->vx, L->bv, B, m->kv_dim);
    const bool qk_normed = hp->arch.qk_norm != QK_NORM_NONE && L->q_norm;
    if (qk_normed && !hp->arch.qk_norm_after_rope) {
        qk_norm(m, m->q, hp->n_head, L->q_norm, B);
        qk_norm(m, m->kx, hp->n_head_kv, L->k_norm, B);
    }
    const bool rope = hparams_layer_rope(hp, l);
    /* Llama4TextL2Norm: per head, no weight, after RoPE (not with 128 experts: Maverick) */
    const bool l2 = rope && hp->arch.l2_qk_norm && hp->n_expert != 128;
    for (int b = 0; b < B; b++) {
        const float *cs = m->rope_cs + (size_t)b * hp->n_rot;
        float *qb = m->q + (size_t)b * m->q_dim, *kb = m->kx + (size_t)b * m->kv_dim;
        if (rope) {
            for (int h = 0; h < hp->n_head; h++) rope_head(qb + h * hp->head_dim, cs, hp->n_rot, hp->arch.facts->rope);
            for (int h = 0; h < hp->n_head_kv; h++) rope_head(kb + h * hp->head_dim, cs, hp->n_rot, hp->arch.facts->rope);
        } else if (hp->attn_chunk > 0) {
            /* Llama 4's temperature on the no-RoPE layers: 1 below the first chunk */
            const float fl = floorf(((float)(pos0 + b) + 1.0f) / (float)hp->attn_chunk);
            const float t = (float)(log((double)fl + 1.0) * (double)0.1f + 1.0);
            for (int i = 0; i < m->q_dim; i++) qb[i] *= t;
        }
        if (qk_normed && hp->arch.qk_norm_after_rope) {
            qk_norm(m, qb, hp->n_head, L->q_norm, 1);
            qk_norm(m, kb, hp->n_head_kv, L->k_norm, 1);
        }
        if (l2) {
            const int hd = hp->head_dim;
            for (int h = 0; h < hp->n_head; h++) rmsnorm(qb + h * hd, qb + h * hd, NULL, hd, hp->rms_eps);
            for (int h = 0; h < hp->n_head_kv; h++) rmsnorm(kb + h * hd, kb + h * hd, NULL, hd, hp->rms_eps);
        }
    }
    attend(m, l, B, pos0, &next_o);
    if (B == 1) {
        /* The FFN's first mat-vec job after o: the router, or gate and up. */
        mm_next next = { 1, { &L->router } };
        if (!hparams_layer_moe(hp, l)) next = (mm_next){ 2, { &L->ffn_gate, &L->ffn_up } };
        const mm_vec v = { &L->wo, m->att, m->o };
        mm_mulv_next(&m->mm, &v, 1, &next);
    } else {
        mm_mul(&m->mm, &L->wo, m->att, B, m->o);
    }
    add_bias(m->o, L->bo, B, hp->n_embd);
    add_residual(m, m->x, m->o, (size_t)B * hp->n_embd);
}

/* -------------------------------------------------------------------- FFN */

/* out = down(silu(gate(h)) * up(h)) for B rows of h: a dense or shared
 * FFN, its f32 batch products summed as llama.cpp's mul_mat does (a routed
 * expert's: expert_ffn). */
static void swiglu(model *m, const weight *gate, const weight *up, const weight *down, const float *h,
                   int B, float *out)
{
    const int64_t ff = gate->rows;
    mm_mul2(&m->mm, gate, up, h, B, m->ffa, m->ffb);
    swiglu_rows(m, m->ffa, m->ffb, B, ff);
    mm_mul(&m->mm, down, m->ffa, B, out);
}

/* gpt-oss's GLU (arch.oai_moe) over `rows` rows of ff, as ggml's
 * swiglu_oai: x = min(a, 7), y = clamp(b, -7, 7), a = x sigmoid(1.702 x)
 * (y + 1), with std::min's and std::clamp's comparisons (NaN passes) and
 * libm's expf. */
static void oai_glu_rows(float *a, const float *b, int64_t rows, int64_t ff)
{
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < rows * ff; i++) {
        const float x = limit < a[i] ? limit : a[i];
        const float y = b[i] < -limit ? -limit : limit < b[i] ? limit : b[i];
        const float g = x / (1.0f + expf(alpha * (-x)));
        a[i] = g * (y + 1.0f);
    }
}

/* A routed expert's GLU: SwiGLU, or gpt-oss's */
static void expert_glu_rows(const model *m, float *a, const float *b, int64_t rows, int64_t ff)
{
    if (m->hp.arch.oai_moe) oai_glu_rows(a, b, rows, ff);
    else swiglu_rows(m, a, b, rows, ff);
}

/* Expert e's bias row of one part (n_expert x n rows), added to `rows` rows of y (gpt-oss). */
static void add_expert_bias(float *y, const float *bias, int e, int rows, int64_t n)
{
    if (bias) add_bias(y, bias + (size_t)e * (size_t)n, rows, (int)n);
}

/* Routed expert e over B rows of h: the FFN of swiglu(), its f32 batch
 * products summed row by row (mm_ctx.rowwise) as llama.cpp's mul_mat_id
 * does, plus gpt-oss's bias rows after each product and its own GLU. */
static void expert_ffn(model *m, const layer_weights *L, int e, const float *h, int B, float *out)
{
    const int64_t ff = L->exp_gate[e].rows, D = L->exp_down[e].rows;
    m->mm.rowwise = 1;
    mm_mul2(&m->mm, &L->exp_gate[e], &L->exp_up[e], h, B, m->ffa, m->ffb);
    add_expert_bias(m->ffa, L->exp_gate_b, e, B, ff);
    add_expert_bias(m->ffb, L->exp_up_b, e, B, ff);
    expert_glu_rows(m, m->ffa, m->ffb, B, ff);
    mm_mul(&m->mm, &L->exp_down[e], m->ffa, B, out);
    add_expert_bias(out, L->exp_down_b, e, B, D);
    m->mm.rowwise = 0;
}

void model_expert_cpu(model *m, int layer, int expert, const float *x, int n, float *out)
{
    expert_ffn(m, &m->w.layers[layer], expert, x, n, out);
}

static void ffn_block(model *m, int l, int B)
{
    const layer_weights *L = &m->w.layers[l];
    rmsnorm_rows(m->h, m->x, L->ffn_norm, B, m->hp.n_embd, m->hp.rms_eps);
    swiglu(m, &L->ffn_gate, &L->ffn_up, &L->ffn_down, m->h, B, m->o);
    add_residual(m, m->x, m->o, (size_t)B * m->hp.n_embd);
}

/* -------------------------------------------------------------------- MoE */

/* Softmax (ggml's, runtime/kernels/ggml_order.h) or sigmoid over the router
 * logits, the top-k by probability plus the layer's selection bias if any
 * (ties: lower index first, as a stable sort gives), the weights the
 * unbiased probabilities, optionally renormalised as llama.cpp does (a
 * double sum, clamped, then a float division) and scaled. gpt-oss's
 * SOFTMAX_WEIGHT selects by the logits themselves and takes the softmax
 * of the K chosen as their weights. */
static void route(const model *m, const float *bias, const float *logits, int *sel, float *w)
{
    const int E = m->hp.n_expert, K = m->hp.n_expert_used;
    float p[256], biased[256];
    if (m->hp.gating == GATING_SIGMOID)
        for (int e = 0; e < E; e++) p[e] = 1.0f / (1.0f + expf(-logits[e]));
    else if (m->hp.gating == GATING_SOFTMAX_WEIGHT)
        memcpy(p, logits, (size_t)E * sizeof *p);
    else
        m->k->softmax_f32(logits, E, p, -INFINITY);
    const float *by = p;
    if (bias || m->hp.n_group) {
        for (int e = 0; e < E; e++) biased[e] = bias ? p[e] + bias[e] : p[e];
        by = biased;
    }
    if (m->hp.n_group) {
        /* llama.cpp's build_moe_ffn: a group scores the sum of its two best selection scores; the
         * n_group_used best groups stay, the other experts are masked out (-inf) */
        const int G = m->hp.n_group, per = E / G;
        float score[256];
        bool keep[256] = { false };
        for (int g = 0; g < G; g++) {
            float a = -INFINITY, b = -INFINITY;
            for (int e = g * per; e < (g + 1) * per; e++) {
                if (biased[e] > a) { b = a; a = biased[e]; }
                else if (biased[e] > b) b = biased[e];
            }
            score[g] = per > 1 ? a + b : a;
        }
        for (int j = 0; j < m->hp.n_group_used; j++) {
            int best = -1;
            for (int g = 0; g < G; g++)
                if (!keep[g] && (best < 0 || score[g] > score[best])) best = g;
            keep[best] = true;
        }
        for (int e = 0; e < E; e++)
            if (!keep[e / per]) biased[e] = -INFINITY;
    }
    for (int j = 0; j < K; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int i = 0; i < j; i++) taken |= sel[i] == e;
            if (!taken && (best < 0 || by[e] > by[best])) best = e;
        }
        sel[j] = best;
        w[j] = p[best];
    }
    if (m->hp.gating == GATING_SOFTMAX_WEIGHT) m->k->softmax_f32(w, K, w, -INFINITY);
    if (m->hp.arch.norm_topk) { /* ggml_sum_rows (a double sum), clamp, divide */
        double sd = 0.0;
        for (int j = 0; j < K; j++) sd += (double)w[j];
        float s = (float)sd;
        if (s < 6.103515625e-5f) s = 6.103515625e-5f; /* llama.cpp's clamp: no division by ~0 */
        for (int j = 0; j < K; j++) w[j] /= s;
    }
    if (m->hp.arch.scale_w && m->hp.expert_weights_scale != 0.0f)
        for (int j = 0; j < K; j++) w[j] *= m->hp.expert_weights_scale;
}

static void moe_block(model *m, int l, int B)
{
    const layer_weights *L = &m->w.layers[l];
    const int E = m->hp.n_expert, K = m->hp.n_expert_used, D = m->hp.n_embd;
    rmsnorm_rows(m->h, m->x, L->ffn_norm, B, D, m->hp.rms_eps);
    mm_mul(&m->mm, &L->router, m->h, B, m->rlog);
    add_bias(m->rlog, L->router_b, B, E);
    for (int b = 0; b < B; b++) route(m, L->exp_probs_b, m->rlog + (size_t)b * E, m->sel + b * K, m->selw + b * K);
    if (m->routing)
        for (int b = 0; b < B; b++) model_observe_routing(m, l, m->sel + b * K);
    /* Llama 4: the weight scales each expert's input (a float product, as
     * ggml_mul), and the outputs are summed unweighted */
    const bool wb = m->hp.arch.weight_before_ffn;

    if (B == 1 && 2 * K <= MM_VEC_MAX) {
        /* Decode: the gates and ups of the K chosen experts as one pool job,
         * then their downs as one (expert j's hidden row in ffa/ffb + j*ff,
         * its output straight into eo + j*D): the same kernel calls as the
         * loop below, two barriers instead of 2K. */
        const int64_t ff = L->exp_gate[0].rows;
        mm_vec v[MM_VEC_MAX];
        for (int j = 0; j < K; j++) {
            const int e = m->sel[j];
            const float *in = m->h;
            if (wb) {
                float *row = m->hg + (size_t)j * D;
                for (int i = 0; i < D; i++) row[i] = m->h[i] * m->selw[j];
                in = row;
            }
            v[2 * j] = (mm_vec){ &L->exp_gate[e], in, m->ffa + j * ff };
            v[2 * j + 1] = (mm_vec){ &L->exp_up[e], in, m->ffb + j * ff };
        }
        mm_next next = { K, { NULL } };
        for (int j = 0; j < K; j++) next.w[j] = &L->exp_down[m->sel[j]];
        mm_mulv_next(&m->mm, v, 2 * K, &next);
        for (int j = 0; j < K; j++) {
            add_expert_bias(m->ffa + j * ff, L->exp_gate_b, m->sel[j], 1, ff);
            add_expert_bias(m->ffb + j * ff, L->exp_up_b, m->sel[j], 1, ff);
        }
        expert_glu_rows(m, m->ffa, m->ffb, K, ff);
        for (int j = 0; j < K; j++) v[j] = (mm_vec){ &L->exp_down[m->sel[j]], m->ffa + j * ff, m->eo + (size_t)j * D };
        /* Then the next layer's q, k and v (a shared expert comes first). */
        next.n = 0;
        if (l + 1 < m->hp.n_layer && !weight_present(&L->sh_gate)) {
            const layer_weights *N = &m->w.layers[l + 1];
            next = (mm_next){ 3, { &N->wq, &N->wk, &N->wv } };
        }
        mm_mulv_next(&m->mm, v, K, &next);
        for (int j = 0; j < K; j++) add_expert_bias(m->eo + (size_t)j * D, L->exp_down_b, m->sel[j], 1, D);
    } else {
    /* Each expert runs once over every row routed to it (a gathered batch). */
    for (int e = 0; e < E; e++) {
        int n = 0;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < K; j++)
                if (m->sel[b * K + j] == e) {
                    m->grp[n] = b * K + j;
                    float *row = m->hg + (size_t)n * D;
                    memcpy(row, m->h + (size_t)b * D, (size_t)D * sizeof(float));
                    if (wb)
                        for (int i = 0; i < D; i++) row[i] *= m->selw[b * K + j];
                    n++;
                }
        if (n == 0) continue;
        expert_ffn(m, L, e, m->hg, n, m->gd);
        for (int i = 0; i < n; i++)
            memcpy(m->eo + (size_t)m->grp[i] * D, m->gd + (size_t)i * D, (size_t)D * sizeof(float));
    }
    }
    if (wb)
        for (int i = 0; i < B * K; i++) m->selw[i] = 1.0f; /* 1 * y is y: the plain sum */
    /* Weighted sum in top-k order, each product rounded before the add. */
    for (int b = 0; b < B; b++) {
        float *out = m->o + (size_t)b * D;
        for (int i = 0; i < D; i++) out[i] = 0.0f;
        for (int j = 0; j < K; j++) {
            const float wj = m->selw[b * K + j], *eo = m->eo + (size_t)(b * K + j) * D;
            for (int i = 0; i < D; i++) {
                float t = wj * eo[i];
                out[i] += t;
            }
        }
    }
    if (weight_present(&L->sh_gate)) {
        swiglu(m, &L->sh_gate, &L->sh_up, &L->sh_down, m->h, B, m->gd);
        for (int b = 0; b < B; b++) {
            float g = 1.0f;
            if (weight_present(&L->sh_router)) {
                mm_mul(&m->mm, &L->sh_router, m->h + (size_t)b * D, 1, &g);
                /* llama.cpp's sigmoid here is silu(g) / g, rounded twice */
                const float silu = g / (1.0f + expf(-g));
                g = silu / g;
            }
            for (int i = 0; i < D; i++) {
                float t = g * m->gd[(size_t)b * D + i];
                m->o[(size_t)b * D + i] += t;
            }
        }
    }
    add_residual(m, m->x, m->o, (size_t)B * D);
}

/* ---------------------------------------------------------------- forward */

enum want { WANT_NONE, WANT_LAST, WANT_ALL };

static void forward_ubatch(model *m, const int32_t *tokens, int B, float *logits, enum want want)
{
    const model_hparams *hp = &m->hp;
    const int pos0 = m->n_past;
    for (int b = 0; b < B; b++)
        m->k->row_f32[m->w.tok_embd.form](&m->w.tok_embd, tokens[b], m->x + (size_t)b * hp->n_embd);
    if (hp->embd_scale != 0.0f)
        for (size_t i = 0; i < (size_t)B * hp->n_embd; i++) m->x[i] *= hp->embd_scale;
    rope_tables(m, B, pos0);
    for (int l = 0; l < hp->n_layer; l++) {
        if (hp->arch.mla) mla_attention_block(m, l, B, pos0);
        else attention_block(m, l, B, pos0);
        if (hparams_layer_moe(hp, l)) moe_block(m, l, B);
        else ffn_block(m, l, B);
    }
    const weight *out = weight_present(&m->w.output) ? &m->w.output : &m->w.tok_embd;
    if (want == WANT_ALL) {
        rmsnorm_rows(m->h, m->x, m->w.output_norm, B, hp->n_embd, hp->rms_eps);
        mm_mul(&m->mm, out, m->h, B, logits);
    } else if (want == WANT_LAST) {
        rmsnorm(m->h, m->x + (size_t)(B - 1) * hp->n_embd, m->w.output_norm, hp->n_embd, hp->rms_eps);
        mm_mul(&m->mm, out, m->h, 1, logits);
    }
    if (hp->logit_scale != 0.0f && want != WANT_NONE) {
        const float s = 1.0f / hp->logit_scale; /* llama.cpp scales by the float reciprocal */
        const size_t n = (want == WANT_ALL ? (size_t)B : 1) * (size_t)hp->n_vocab;
        for (size_t i = 0; i < n; i++) logits[i] *= s;
    }
    m->n_past += B;
}

int model_forward(model *m, const int32_t *tokens, int n, float *logits, bool all_logits, char *err,
                  size_t errlen)
{
    if (n < 1) { snprintf(err, errlen, "forward: no tokens"); return -1; }
    if (n > m->n_ctx - m->n_past) {
        snprintf(err, errlen, "context overflow: %d cached + %d new tokens > n_ctx %d", m->n_past, n,
                 m->n_ctx);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab) {
            snprintf(err, errlen, "token %d at index %d is outside the vocabulary (%d)", tokens[i], i,
                     m->hp.n_vocab);
            return -1;
        }
    if (m->dev) return device_forward(m->dev, m, tokens, n, logits, all_logits, err, errlen);
    for (int i = 0; i < n; i += m->opt.n_batch) {
        int B = n - i < m->opt.n_batch ? n - i : m->opt.n_batch;
        /* Without all_logits only the last ubatch's last row is computed. */
        enum want w = all_logits ? WANT_ALL : (i + B == n ? WANT_LAST : WANT_NONE);
        forward_ubatch(m, tokens + i, B, all_logits ? logits + (size_t)i * m->hp.n_vocab : logits, w);
    }
    return 0;
}
