/* backend_cpu_gdn.c: the CPU backend's Gated DeltaNet layer (Qwen3-Next's
 * linear attention, backend.h's gdn op) and the sigmoid gate of its
 * attention layers' output (mul_sigmoid), as llama.cpp's qwen3next graph
 * computes them:
 *   q|k|v = wqkv h, z = ssm_z h, beta|alpha = ssm_ba h (per key head: its
 *   value heads' betas, then their alphas);
 *   q|k|v = silu(causal depthwise convolution of ssm_d_conv over time), the
 *   layer's state holding the previous inputs;
 *   q, k L2-normalised per key head, q scaled by 1/sqrt(state_size); value
 *   head h reads key head h / (value heads / key heads);
 *   decay = exp(softplus(alpha + dt_bias) * A), beta = sigmoid(beta);
 *   per value head, its state S (value x key): S = decay S;
 *   d = beta (v - S k); S += d k^T; o = S q;
 *   o = rmsnorm(o) * ssm_norm * silu(z) per head; out = ssm_out o.
 * The recurrence runs token by token in float (llama.cpp chunks a prompt in
 * 64s: the same sums in another order). */
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

int cpu_gdn(void *c, int l, int B, const float *h, float *out)
{
    model *m = c;
    const model_hparams *hp = &m->hp;
    const layer_weights *L = &m->bw->layers[l];
    const int S = hp->ssm_d_state, NK = hp->ssm_n_group, NV = hp->ssm_dt_rank, C = hparams_ssm_channels(hp);
    const int K = hp->ssm_d_conv, VD = hp->ssm_d_inner, rf = NV / NK, slot = m->gdn_slot[l];
    float *conv = m->gdn_conv + (size_t)slot * (size_t)(K - 1) * C;
    float *state = m->gdn_state + (size_t)slot * (size_t)NV * S * S;
    mm_mul(&m->mm, &L->wqkv, h, B, m->gdn_qkv);
    mm_mul(&m->mm, &L->ssm_z, h, B, m->gdn_z);
    mm_mul(&m->mm, &L->ssm_ba, h, B, m->gdn_ba);
    conv_rows(L->ssm_conv, conv, m->gdn_qkv, m->gdn_cv, B, C, K);
    const float qscale = 1.0f / sqrtf((float)S);
    for (int b = 0; b < B; b++) {
        float *cv = m->gdn_cv + (size_t)b * C;
        float *q = cv, *k = cv + (size_t)NK * S, *v = cv + (size_t)2 * NK * S;
        for (int g = 0; g < NK; g++) {
            l2norm(q + (size_t)g * S, S, hp->rms_eps);
            l2norm(k + (size_t)g * S, S, hp->rms_eps);
            for (int i = 0; i < S; i++) q[(size_t)g * S + i] *= qscale;
        }
        const float *ba = m->gdn_ba + (size_t)b * 2 * NV;
        float *o = m->gdn_o + (size_t)b * VD;
        for (int hv = 0; hv < NV; hv++) {
            const int g = hv / rf, r = hv % rf;
            const float beta = sigmoidf(ba[g * 2 * rf + r]);
            const float alpha = ba[g * 2 * rf + rf + r];
            const float decay = expf(softplusf(alpha + L->ssm_dt[hv]) * L->ssm_a[hv]);
            const float *qh = q + (size_t)g * S, *kh = k + (size_t)g * S, *vh = v + (size_t)hv * S;
            float *M = state + (size_t)hv * S * S, *oh = o + (size_t)hv * S;
            for (int j = 0; j < S; j++) {
                float *row = M + (size_t)j * S;
                float sk = 0.0f;
                for (int i = 0; i < S; i++) {
                    row[i] *= decay;
                    sk += row[i] * kh[i];
                }
                const float d = (vh[j] - sk) * beta;
                float so = 0.0f;
                for (int i = 0; i < S; i++) {
                    row[i] += kh[i] * d;
                    so += row[i] * qh[i];
                }
                oh[j] = so;
            }
            /* the gated norm */
            cpu_rms_row(oh, oh, L->ssm_norm, S, hp->rms_eps);
            const float *z = m->gdn_z + (size_t)b * VD + (size_t)hv * S;
            for (int j = 0; j < S; j++) oh[j] *= siluf(z[j]);
        }
    }
    mm_mul(&m->mm, &L->ssm_out, m->gdn_o, B, out);
    return 0;
}
