/* backend_cpu_gdn.c: the CPU backend's Gated DeltaNet layer (Qwen3-Next's
 * linear attention, backend.h's gdn op) and the sigmoid gate of its
 * attention layers' output (mul_sigmoid), as llama.cpp's qwen3next graph
 * computes them:
 *   q|k|v = wqkv h, z = ssm_z h (the first GGUFs: one ssm_in, per key head
 *   [q | k | its value heads' v | their z], split here), beta|alpha = ssm_ba h (per key head: its
 *   value heads' betas, then their alphas; Qwen3.5: ssm_beta h, ssm_alpha h);
 *   q|k|v = silu(causal depthwise convolution of ssm_d_conv over time), the
 *   layer's state holding the previous inputs;
 *   q, k L2-normalised per key head, q scaled by 1/sqrt(state_size); value
 *   head h reads key head h / (value heads / key heads) (Qwen3.5: h mod key
 *   heads);
 *   decay = exp(softplus(alpha + dt_bias) * A), beta = sigmoid(beta);
 *   per value head, its state S (value x key): S = decay S;
 *   d = beta (v - S k); S += d k^T; o = S q;
 *   o = rmsnorm(o) * ssm_norm * silu(z) per head; out = ssm_out o.
 * A batch's rows go through the recurrence in chunks of GDN_CHUNK (its
 * chunked form, below; llama.cpp's chunks are 64 rows too), a single row
 * (decode) one step; the value heads run side by side on the model's pool,
 * each computed the same way whatever the thread count. */
#include "runtime/model/backend_cpu.h"

#include <math.h>
#include <string.h>

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static float siluf(float x) { return x / (1.0f + expf(-x)); }
static float softplusf(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); } /* ggml_softplus */

/* x / max(|x|, eps), as ggml_l2_norm */
static void l2norm(float *x, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float nrm = sqrtf((float)ss), scale = 1.0f / (nrm > eps ? nrm : eps);
    for (int i = 0; i < n; i++) x[i] *= scale;
}

int cpu_mul_sigmoid(void *c, float *x, const float *g, size_t n)
{
    (void)c;
    for (size_t i = 0; i < n; i++) x[i] *= sigmoidf(g[i]);
    return 0;
}

/* The causal convolution of B rows (C channels) with K taps, through the
 * layer's state (its last K - 1 rows), then silu; the state moves on. */
static void conv_rows(const float *w, float *state, const float *x, float *y, int B, int C, int K)
{
    for (int b = 0; b < B; b++) {
        const float *xb = x + (size_t)b * C;
        float *yb = y + (size_t)b * C;
        for (int c = 0; c < C; c++) {
            float s = 0.0f;
            for (int k = 0; k < K - 1; k++) s += state[(size_t)k * C + c] * w[(size_t)c * K + k];
            s += xb[c] * w[(size_t)c * K + K - 1];
            yb[c] = siluf(s);
        }
        /* the window slides by one row */
        if (K > 2) memmove(state, state + C, (size_t)(K - 2) * C * sizeof *state);
        if (K > 1) memcpy(state + (size_t)(K - 2) * C, xb, (size_t)C * sizeof *state);
    }
}

/* Row b's q, k (key head g) and v (value head hv) in the convolved rows. */
static const float *row_q(const model *m, int b, int g)
{
    return m->gdn_cv + (size_t)b * hparams_ssm_channels(&m->hp) + (size_t)g * m->hp.ssm_d_state;
}
static const float *row_k(const model *m, int b, int g)
{
    return row_q(m, b, g) + (size_t)m->hp.ssm_n_group * m->hp.ssm_d_state;
}
static const float *row_v(const model *m, int b, int hv)
{
    return row_q(m, b, 0) + (size_t)2 * m->hp.ssm_n_group * m->hp.ssm_d_state + (size_t)hv * m->hp.ssm_d_state;
}

/* One row through value head hv's state M ([value][key]): M = a M;
 * d = beta (v - M k); M += d k^T; o = M q. */
static void recur_one(model *m, float *M, int b, int hv, int g)
{
    const int S = m->hp.ssm_d_state, NV = m->hp.ssm_dt_rank;
    const float a = expf(m->gdn_bg[(size_t)m->opt.n_batch * NV + (size_t)b * NV + hv]);
    const float beta = m->gdn_bg[(size_t)b * NV + hv];
    const float *q = row_q(m, b, g), *k = row_k(m, b, g), *v = row_v(m, b, hv);
    float *o = m->gdn_o + (size_t)b * m->hp.ssm_d_inner + (size_t)hv * S;
    for (int j = 0; j < S; j++) {
        float *row = M + (size_t)j * S;
        float sk = 0.0f;
        for (int i = 0; i < S; i++) {
            row[i] *= a;
            sk += row[i] * k[i];
        }
        const float d = (v[j] - sk) * beta;
        float so = 0.0f;
        for (int i = 0; i < S; i++) {
            row[i] += k[i] * d;
            so += row[i] * q[i];
        }
        o[j] = so;
    }
}

/* n rows (b0..) through value head hv's state M at once, the chunked form
 * of the same recurrence (G_t the rows' cumulative log decay, d_t the
 * rows' updates, S0 the state before them):
 *   d_t = beta_t (v_t - e^G_t S0 k_t) - beta_t sum_{i<t} e^(G_t - G_i) (k_t . k_i) d_i
 *   o_t = e^G_t S0 q_t + sum_{i<=t} e^(G_t - G_i) (k_i . q_t) d_i
 *   S   = e^G_n S0 + sum_i e^(G_n - G_i) d_i k_i^T
 * the first a forward substitution over the rows, the rest products. */
static void chunk(model *m, float *M, int b0, int n, int hv, int g, float *ck)
{
    const int S = m->hp.ssm_d_state, NV = m->hp.ssm_dt_rank, VD = m->hp.ssm_d_inner;
    const float *beta = m->gdn_bg, *gl = m->gdn_bg + (size_t)m->opt.n_batch * NV;
    float *G = ck, *D = G + GDN_CHUNK, *s0 = D + (size_t)GDN_CHUNK * S;
    float acc = 0.0f;
    for (int t = 0; t < n; t++) G[t] = acc += gl[(size_t)(b0 + t) * NV + hv];
    for (int t = 0; t < n; t++) {
        const float *k = row_k(m, b0 + t, g), *q = row_q(m, b0 + t, g), *v = row_v(m, b0 + t, hv);
        const float bt = beta[(size_t)(b0 + t) * NV + hv], et = expf(G[t]);
        float *d = D + (size_t)t * S, *o = m->gdn_o + (size_t)(b0 + t) * VD + (size_t)hv * S;
        /* S0 k_t and S0 q_t */
        for (int j = 0; j < S; j++) {
            const float *row = M + (size_t)j * S;
            float sk = 0.0f, sq = 0.0f;
            for (int i = 0; i < S; i++) {
                sk += row[i] * k[i];
                sq += row[i] * q[i];
            }
            d[j] = bt * (v[j] - et * sk);
            s0[j] = et * sq;
        }
        for (int i = 0; i < t; i++) {
            const float *ki = row_k(m, b0 + i, g), *di = D + (size_t)i * S;
            float kk = 0.0f;
            for (int x = 0; x < S; x++) kk += k[x] * ki[x];
            const float c = bt * expf(G[t] - G[i]) * kk;
            for (int j = 0; j < S; j++) d[j] -= c * di[j];
        }
        for (int j = 0; j < S; j++) o[j] = s0[j];
        for (int i = 0; i <= t; i++) {
            const float *ki = row_k(m, b0 + i, g), *di = D + (size_t)i * S;
            float kq = 0.0f;
            for (int x = 0; x < S; x++) kq += ki[x] * q[x];
            const float c = expf(G[t] - G[i]) * kq;
            for (int j = 0; j < S; j++) o[j] += c * di[j];
        }
    }
    const float en = expf(G[n - 1]);
    for (int j = 0; j < S; j++) {
        float *row = M + (size_t)j * S;
        for (int x = 0; x < S; x++) row[x] *= en;
    }
    for (int i = 0; i < n; i++) {
        const float *ki = row_k(m, b0 + i, g), *di = D + (size_t)i * S;
        const float c = expf(G[n - 1] - G[i]);
        for (int j = 0; j < S; j++) {
            float *row = M + (size_t)j * S;
            const float dj = c * di[j];
            for (int x = 0; x < S; x++) row[x] += dj * ki[x];
        }
    }
}

typedef struct gdn_job {
    model *m;
    float *state;
    int B;
} gdn_job;

/* Value head hv's rows through its state, chunk after chunk (a pool task;
 * the chunk scratch is the thread's). */
static void gdn_head(void *arg, int hv, int thread)
{
    const gdn_job *j = arg;
    model *m = j->m;
    const model_hparams *hp = &m->hp;
    const int S = hp->ssm_d_state, NK = hp->ssm_n_group, rf = hp->ssm_dt_rank / NK;
    float *M = j->state + (size_t)hv * S * S;
    float *ck = m->gdn_ck + (size_t)thread * GDN_CK_FLOATS(S);
    const int g = hp->arch.gdn_tiled_heads ? hv % NK : hv / rf; /* the key head value head hv reads */
    for (int b0 = 0; b0 < j->B; b0 += GDN_CHUNK) {
        const int n = j->B - b0 < GDN_CHUNK ? j->B - b0 : GDN_CHUNK;
        if (n == 1) recur_one(m, M, b0, hv, g);
        else chunk(m, M, b0, n, hv, g, ck);
    }
}

int cpu_gdn(void *c, int l, int B, const float *h, float *out)
{
    model *m = c;
    const model_hparams *hp = &m->hp;
    const layer_weights *L = &m->bw->layers[l];
    const int S = hp->ssm_d_state, NK = hp->ssm_n_group, NV = hp->ssm_dt_rank, C = hparams_ssm_channels(hp);
    const int K = hp->ssm_d_conv, VD = hp->ssm_d_inner, rf = NV / NK, slot = m->gdn_slot[l];
    float *conv = m->gdn_conv + (size_t)slot * (size_t)(K - 1) * C;
    float *state = m->gdn_state + (size_t)slot * (size_t)NV * S * S;
    if (weight_present(&L->ssm_in)) {
        /* per key head [q | k | its value heads' v | their z] -> q of every head | k | v, and z */
        const int W = C + VD, vg = rf * S, gw = 2 * S + 2 * vg;
        mm_mul(&m->mm, &L->ssm_in, h, B, m->gdn_in);
        for (int b = 0; b < B; b++) {
            const float *in = m->gdn_in + (size_t)b * W;
            float *qkv = m->gdn_qkv + (size_t)b * C, *z = m->gdn_z + (size_t)b * VD;
            for (int g = 0; g < NK; g++) {
                const float *src = in + (size_t)g * gw;
                memcpy(qkv + (size_t)g * S, src, (size_t)S * sizeof *src);
                memcpy(qkv + (size_t)(NK + g) * S, src + S, (size_t)S * sizeof *src);
                memcpy(qkv + (size_t)2 * NK * S + (size_t)g * vg, src + 2 * S, (size_t)vg * sizeof *src);
                memcpy(z + (size_t)g * vg, src + 2 * S + vg, (size_t)vg * sizeof *src);
            }
        }
    } else {
        mm_mul(&m->mm, &L->wqkv, h, B, m->gdn_qkv);
        mm_mul(&m->mm, &L->ssm_z, h, B, m->gdn_z);
    }
    const bool apart = weight_present(&L->ssm_beta);
    if (apart) { /* Qwen3.5: B rows of betas, then B rows of alphas */
        mm_mul(&m->mm, &L->ssm_beta, h, B, m->gdn_ba);
        mm_mul(&m->mm, &L->ssm_alpha, h, B, m->gdn_ba + (size_t)B * NV);
    } else {
        mm_mul(&m->mm, &L->ssm_ba, h, B, m->gdn_ba);
    }
    conv_rows(L->ssm_conv, conv, m->gdn_qkv, m->gdn_cv, B, C, K);
    const float qscale = 1.0f / sqrtf((float)S);
    /* per row and value head: beta, then (n_batch rows on) the log decay */
    float *beta = m->gdn_bg, *gl = m->gdn_bg + (size_t)m->opt.n_batch * NV;
    for (int b = 0; b < B; b++) {
        float *cv = m->gdn_cv + (size_t)b * C;
        float *q = cv, *k = cv + (size_t)NK * S;
        for (int g = 0; g < NK; g++) {
            l2norm(q + (size_t)g * S, S, hp->rms_eps);
            l2norm(k + (size_t)g * S, S, hp->rms_eps);
            for (int i = 0; i < S; i++) q[(size_t)g * S + i] *= qscale;
        }
        /* Qwen3-Next's ssm_ba: per key head its value heads' betas, then their alphas */
        const float *ba = m->gdn_ba + (size_t)b * 2 * NV;
        for (int hv = 0; hv < NV; hv++) {
            const int g = hv / rf, r = hv % rf;
            const float bv = apart ? m->gdn_ba[(size_t)b * NV + hv] : ba[g * 2 * rf + r];
            const float av = apart ? m->gdn_ba[(size_t)(B + b) * NV + hv] : ba[g * 2 * rf + rf + r];
            beta[(size_t)b * NV + hv] = sigmoidf(bv);
            gl[(size_t)b * NV + hv] = softplusf(av + L->ssm_dt[hv]) * L->ssm_a[hv];
        }
    }
    /* the value heads side by side on the pool: each its own state and output columns */
    gdn_job job = { m, state, B };
    pool_run(m->pool, NV, gdn_head, &job);
    /* the gated norm */
    for (int b = 0; b < B; b++)
        for (int hv = 0; hv < NV; hv++) {
            float *oh = m->gdn_o + (size_t)b * VD + (size_t)hv * S;
            cpu_rms_row(oh, oh, L->ssm_norm, S, hp->rms_eps);
            const float *z = m->gdn_z + (size_t)b * VD + (size_t)hv * S;
            for (int j = 0; j < S; j++) oh[j] *= siluf(z[j]);
        }
    mm_mul(&m->mm, &L->ssm_out, m->gdn_o, B, out);
    return 0;
}
