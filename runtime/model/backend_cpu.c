/* backend_cpu.c: the CPU backend (backend.h): the graph's ops on the host,
 * with the kernels of runtime/kernels/ (every matrix product through mm_mul,
 * matmul.h). Float conventions follow ggml where it changes results: RMS sums
 * and softmax sums in double, products rounded before they are added. Its
 * capability row is everything the graph has; the MoE ops (routing, the
 * routed experts, the FFNs) are in backend_cpu_moe.c. */
#include "runtime/model/backend_cpu.h"

#include "runtime/model/expert_tier.h"

#include "runtime/kernels/ggml_order.h"
#include "runtime/util/prefetch.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static void rmsnorm_rows(float *out, const float *x, const float *w, int B, int n, float eps)
{
    for (int b = 0; b < B; b++) cpu_rms_row(out + (size_t)b * n, x + (size_t)b * n, w, n, eps);
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
    const bool mrope = hp->arch.mrope_sections;
    for (int b = 0; b < B; b++) {
        float *cs = m->rope_cs + (size_t)b * hp->n_rot;
        float theta = (float)(pos0 + b);
        /* interleaved M-RoPE (ggml's mrope cache): t, y, x and the fourth position (0) turn
         * together, and each pair takes the one its section names */
        float th[4] = { 0, 0, 0, 0 };
        if (mrope)
            for (int a = 0; a < 3; a++) th[a] = (float)m->mpos[3 * b + a];
        for (int i = 0; i < half; i++) {
            if (mrope) theta = th[m->mrope_axis[i]];
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
            for (int a = 0; mrope && a < 4; a++) th[a] *= theta_scale;
        }
    }
}

void model_rope_rows(model *m, float *v, int n_heads, int B, int pos0)
{
    rope_tables(m, B, pos0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < n_heads; h++)
            cpu_rope_head(v + ((size_t)b * n_heads + h) * m->hp.head_dim, m->rope_cs + (size_t)b * m->hp.n_rot,
                      m->hp.n_rot, m->hp.arch.rope);
}


/* Where KV head kvh of position pos sits in layer l's cache, in rows of
 * one head: a layer keeps its rows head by head (model_impl.h), a full
 * layer's row is the position itself (no division in attention's inner
 * loop), a sliding layer's ring wraps. Head by head, one head's positions
 * are one stream: with a position's heads side by side, a head's rows lay a
 * whole cache row apart, and decode at depth 2048 read them at 4-7 GB/s on
 * one thread against 11-15 one after another (a scratch probe of the f16
 * attention's K side, cold in DRAM). */
static size_t kv_head_index(const model *m, int layer, int kvh, int pos)
{
    const int rows = m->kv_rows[layer];
    return m->kv_off[layer] * (size_t)m->hp.n_head_kv + (size_t)kvh * (size_t)rows +
           (size_t)(pos < rows ? pos : pos % rows);
}

static void *k_head(const model *m, int layer, int kvh, int pos)
{
    return (char *)m->kcache + kv_head_index(m, layer, kvh, pos) * (size_t)m->hp.head_dim * m->kv_elt;
}

static void *v_head(const model *m, int layer, int kvh, int pos)
{
    return (char *)m->vcache + kv_head_index(m, layer, kvh, pos) * (size_t)m->hp.head_dim_v * m->kv_elt;
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

/* How far ahead of the positions it reads the f16 attention asks for the
 * cached rows: the weights streamed since the last token have pushed them
 * out of the caches, and the hardware prefetchers stop at each 4 KiB page
 * (the probe above: 23 ns a position without, 16.5 with). ATTN_ROWS
 * positions go to a kernel call at once. */
#define ATTN_AHEAD 16
#define ATTN_ROWS 8

typedef struct attn_job {
    model *m;
    int layer, B, pos0;
    int group; /* f16: query heads a task takes (they share a KV head); f32: 1 */
} attn_job;

/* The positions row b of the job sees: p_lo.. its own (the return), the
 * others masked. Llama 4's chunked layers see only their own chunk, gpt-oss's
 * sliding layers the last n_swa positions: the ones before are masked (-inf,
 * exact zeros after the softmax), as llama.cpp masks them, so the sums keep
 * their order. DSA's unpicked positions (*pick) are masked the same way. */
static int attn_window(const attn_job *j, int b, int *p_lo, const uint8_t **pick)
{
    const model *m = j->m;
    const int chunk = m->hp.attn_chunk, pos = j->pos0 + b;
    int lo = chunk > 0 && hparams_layer_rope(&m->hp, j->layer) ? pos / chunk * chunk : 0;
    if (hparams_layer_swa(&m->hp, j->layer) && pos - m->hp.n_swa + 1 > lo) lo = pos - m->hp.n_swa + 1;
    *p_lo = lo;
    *pick = m->dsa_on ? m->dsa_sel + (size_t)b * m->n_ctx : NULL;
    return pos + 1;
}

/* Query heads h0..h0 + G - 1 of row b (they share KV head kvh) over an f16
 * cache: each head's scores, softmax (the kernels' softmax_f32, as over an
 * f32 cache) and weighted sum are the steps one head alone would take
 * (dot_f16_heads and axpy_f16_heads give each head dot_f16's and
 * axpy_f16's bits), while each cached row is read and widened once for the
 * G heads. */
static void attn_task_f16(const attn_job *j, int b, int h0, int kvh, int thread)
{
    model *m = j->m;
    const int hd = m->hp.head_dim, hv = m->hp.head_dim_v, G = j->group;
    int p_lo;
    const uint8_t *pick;
    const int n_pos = attn_window(j, b, &p_lo, &pick);
    const size_t sst = (size_t)m->n_ctx + 8; /* head g's scores at sc + g * sst */
    float *sc = m->att_scores + (size_t)thread * m->att_stride;
    const float *q = m->q + (size_t)b * m->q_dim + (size_t)h0 * hd;
    float *out = m->att + (size_t)b * m->att_dim + (size_t)h0 * hv;
    const float scale = attn_scale(&m->hp);
    const float *sinks = m->w.layers[j->layer].sinks;
    const uint16_t *rows[ATTN_ROWS];
    int at[ATTN_ROWS], n = 0;
    float part[ATTN_HEADS * ATTN_ROWS];
    for (int g = 0; g < G; g++)
        for (int p = 0; p < p_lo; p++) sc[g * sst + p] = -INFINITY;
    for (int p = p_lo; p < n_pos; p++) {
        if (pick && !pick[p]) {
            for (int g = 0; g < G; g++) sc[g * sst + p] = -INFINITY;
        } else {
            if (p + ATTN_AHEAD < n_pos)
                prefetch_bytes(k_head(m, j->layer, kvh, p + ATTN_AHEAD), (size_t)hd * 2);
            rows[n] = k_head(m, j->layer, kvh, p);
            at[n++] = p;
        }
        if (n == ATTN_ROWS || (n && p + 1 == n_pos)) {
            m->k->dot_f16_heads(rows, n, q, G, hd, part, ATTN_ROWS);
            for (int g = 0; g < G; g++)
                for (int i = 0; i < n; i++) sc[g * sst + at[i]] = part[g * ATTN_ROWS + i] * scale;
            n = 0;
        }
    }
    /* each head's softmax as the f32 cache's (whole groups of 8, the
     * padding -inf: exact zeros) */
    const int n8 = (n_pos + 7) & ~7;
    for (int g = 0; g < G; g++) {
        float *s = sc + g * sst;
        for (int p = n_pos; p < n8; p++) s[p] = -INFINITY;
        m->k->softmax_f32(s, n8, s, sinks ? sinks[h0 + g] : -INFINITY);
    }
    memset(out, 0, (size_t)G * hv * sizeof *out);
    for (int p = p_lo; p < n_pos; p++) {
        if (!pick || pick[p]) {
            if (p + ATTN_AHEAD < n_pos)
                prefetch_bytes(v_head(m, j->layer, kvh, p + ATTN_AHEAD), (size_t)hv * 2);
            rows[n] = v_head(m, j->layer, kvh, p);
            for (int g = 0; g < G; g++) part[g * ATTN_ROWS + n] = sc[g * sst + p];
            n++;
        }
        if (n == ATTN_ROWS || (n && p + 1 == n_pos)) {
            m->k->axpy_f16_heads(out, G, part, ATTN_ROWS, rows, n, hv);
            n = 0;
        }
    }
}

/* One (row, query head) over an f32 cache (or, f16, one row's group of
 * heads: attn_task_f16): causal softmax(q·k / sqrt(d)) over the cache,
 * times v. Every step is ggml-cpu's (non-flash) attention on x86, bit for
 * bit: the scores by ggml_vec_dot_f32, scaled, softmax as
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
    const int per_row = nh / j->group, b = task / per_row, h = task % per_row * j->group;
    const int kvh = h / (nh / m->hp.n_head_kv);
    if (m->opt.kv == KV_F16) { attn_task_f16(j, b, h, kvh, thread); return; }
    int p_lo;
    const uint8_t *pick;
    const int n_pos = attn_window(j, b, &p_lo, &pick);
    const float *q = m->q + (size_t)b * m->q_dim + (size_t)h * hd;
    float *out = m->att + (size_t)b * m->att_dim + (size_t)h * hv;
    float *sc = m->att_scores + (size_t)thread * m->att_stride;
    const float scale = attn_scale(&m->hp);
    const float *sinks = m->w.layers[j->layer].sinks, sink = sinks ? sinks[h] : -INFINITY;
    for (int p = 0; p < p_lo; p++) sc[p] = -INFINITY;
    for (int p = p_lo; p < n_pos; p++) {
        if (pick && !pick[p]) { sc[p] = -INFINITY; continue; }
        const float *kr = k_head(m, j->layer, kvh, p);
        sc[p] = m->k->dot_f32(kr, q, hd) * scale;
    }
    const int n8 = (n_pos + 7) & ~7;
    for (int p = n_pos; p < n8; p++) sc[p] = -INFINITY;
    m->k->softmax_f32(sc, n8, sc, sink);
    const int lanes = j->B == 1 ? 32 : 8;
    float *acc = sc + m->n_ctx + 8; /* lanes x hv */
    memset(acc, 0, (size_t)lanes * hv * sizeof *acc);
    for (int p = p_lo; p < n_pos; p++) { /* the masked ones would add exact zeros */
        if (pick && !pick[p]) continue;
        const float *vr = v_head(m, j->layer, kvh, p);
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
    const int hd = hp->head_dim, hv = hp->head_dim_v;
    for (int b = 0; b < B; b++)
        for (int g = 0; g < hp->n_head_kv; g++) {
            const float *k = m->kx + (size_t)b * m->kv_dim + (size_t)g * hd;
            const float *v = m->vx + (size_t)b * m->kv_dim_v + (size_t)g * hv;
            void *kr = k_head(m, l, g, pos0 + b), *vr = v_head(m, l, g, pos0 + b);
            if (m->opt.kv == KV_F16) {
                m->k->f32_to_f16(k, kr, hd);
                m->k->f32_to_f16(v, vr, hv);
            } else {
                memcpy(kr, k, (size_t)hd * sizeof(float));
                memcpy(vr, v, (size_t)hv * sizeof(float));
            }
        }
    /* f16: the query heads that share a KV head, up to ATTN_HEADS, one task */
    int group = 1;
    if (m->opt.kv == KV_F16 && hp->n_head % hp->n_head_kv == 0) {
        const int per_kv = hp->n_head / hp->n_head_kv;
        for (group = per_kv < ATTN_HEADS ? per_kv : ATTN_HEADS; per_kv % group; group--) {}
    }
    attn_job j = { m, l, B, pos0, group };
    const int n_tasks = B * hp->n_head / group;
    /* A short context is cheaper on one thread than a pool wake-up. */
    if ((int64_t)B * hp->n_head * (pos0 + B) * hp->head_dim < 32 * 1024)
        for (int t = 0; t < n_tasks; t++) attn_task(&j, t, 0);
    else
        pool_run_then(m->pool, n_tasks, attn_task, &j, B == 1 ? mm_warm_next : NULL, (void *)next_o);
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

/* -------------------------------------------------------------------- ops */

/* The embedding rows, as the CPU decodes them (any form). */
void model_embed_rows(const model *m, const int32_t *tokens, int B, float *out)
{
    for (int b = 0; b < B; b++)
        m->k->row_f32[m->w.tok_embd.form](&m->w.tok_embd, tokens[b], out + (size_t)b * m->hp.n_embd);
}

static int cpu_begin(void *c, const int32_t *tokens, int B, int pos0)
{
    model *m = c;
    if (tokens) model_embed_rows(m, tokens, B, m->x); /* else the forward pass copies image rows in */
    rope_tables(m, B, pos0);
    if (m->opt.tier) tier_begin_token(m->opt.tier);
    return 0;
}

static int cpu_rmsnorm(void *c, const float *x, const float *w, float *out, int rows, int n)
{
    const model *m = c;
    rmsnorm_rows(out, x, w, rows, n, m->hp.rms_eps);
    return 0;
}

static int cpu_matmul(void *c, const weight *w, const float *x, int n, float *y)
{
    model *m = c;
    mm_mul(&m->mm, w, x, n, y);
    return 0;
}

static int cpu_matvecs(void *c, const mm_vec *v, int nv, const mm_next *next)
{
    model *m = c;
    mm_mulv_next(&m->mm, v, nv, next);
    return 0;
}

static int cpu_scale(void *c, float *x, size_t n, float s)
{
    (void)c;
    for (size_t i = 0; i < n; i++) x[i] *= s;
    return 0;
}

static int cpu_add(void *c, float *x, const float *y, size_t n)
{
    (void)c;
    for (size_t i = 0; i < n; i++) x[i] += y[i];
    return 0;
}

/* The angles of the ubatch's rows are rope_tables' (cpu_begin). */
static int cpu_rope(void *c, float *v, int B, size_t row_stride, int n_heads, size_t head_stride, int pos0)
{
    const model *m = c;
    (void)pos0;
    for (int b = 0; b < B; b++) {
        const float *cs = m->rope_cs + (size_t)b * m->hp.n_rot;
        for (int h = 0; h < n_heads; h++)
            cpu_rope_head(v + (size_t)b * row_stride + (size_t)h * head_stride, cs, m->hp.n_rot, m->hp.arch.rope);
    }
    return 0;
}

/* Llama 4's temperature on the no-RoPE layers: 1 below the first chunk */
static int cpu_attn_temp(void *c, float *q, int B, int pos0)
{
    const model *m = c;
    for (int b = 0; b < B; b++) {
        float *qb = q + (size_t)b * m->q_dim;
        const float fl = floorf(((float)(pos0 + b) + 1.0f) / (float)m->hp.attn_chunk);
        const float t = (float)(log((double)fl + 1.0) * (double)0.1f + 1.0);
        for (int i = 0; i < m->q_dim; i++) qb[i] *= t;
    }
    return 0;
}

static int cpu_attention(void *c, int l, int B, int pos0, const mm_next *next)
{
    attend(c, l, B, pos0, next);
    return 0;
}

static int cpu_copy_rows(void *c, float *dst, size_t dst_stride, const float *src, size_t src_stride, int rows, int n)
{
    (void)c;
    for (int r = 0; r < rows; r++)
        memcpy(dst + (size_t)r * dst_stride, src + (size_t)r * src_stride, (size_t)n * sizeof(float));
    return 0;
}

static int cpu_mla_per_head(void *c, int l, bool v, int B, const float *x, size_t x_stride, size_t x_step, int x_w,
                            float *y, size_t y_stride, size_t y_step)
{
    model *m = c;
    const int H = m->hp.n_head;
    per_head(m, (v ? m->mla_vb : m->mla_kb) + (size_t)l * H, H, B, x, x_stride, x_step, x_w, y, y_stride, y_step);
    return 0;
}

static int cpu_logits(void *c, const weight *w, const float *h, int rows, float *logits)
{
    model *m = c;
    mm_mul(&m->mm, w, h, rows, logits);
    return 0;
}

static const char *cpu_error(void *c)
{
    const model *m = c;
    return m->cpu_err;
}

/* The CPU runs everything the graph has. */
static const backend_caps cpu_caps = {
    .name = "CPU", .kv_f32 = true, .granite_scales = true, .routing = true, .mixed_layers = true, .mla = true,
    .qk_norm_after_rope = true, .qk_norm_optional = true, .llama4 = true, .sinks_swa = true, .rope_scaled = true, .mrope = true,
    .max_head_dim = 0, .gqa_uneven = true, .gated_delta_net = true, .dsa = true,
};

const backend_ops backend_cpu = {
    .caps = &cpu_caps,
    .begin = cpu_begin,
    .rmsnorm = cpu_rmsnorm,
    .matmul = cpu_matmul,
    .matvecs = cpu_matvecs,
    .add_bias = cpu_add_bias,
    .scale = cpu_scale,
    .add = cpu_add,
    .rope = cpu_rope,
    .attn_temp = cpu_attn_temp,
    .attention = cpu_attention,
    .ffn = cpu_ffn,
    .route = cpu_route,
    .moe = cpu_moe,
    .gate_add = cpu_gate_add,
    .copy_rows = cpu_copy_rows,
    .mla_per_head = cpu_mla_per_head,
    .gdn = cpu_gdn,
    .mul_sigmoid = cpu_mul_sigmoid,
    .indexer = cpu_indexer,
    .logits = cpu_logits,
    .sync = NULL,
    .error = cpu_error,
    .free = NULL,
};
