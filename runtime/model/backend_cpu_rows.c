/* backend_cpu_rows.c: what the CPU's op files do to one row (backend_cpu.h):
 * the RMS norm (the norm op, the Gated DeltaNet's gated norm), the LayerNorm
 * (DSA's indexer keys) and RoPE of one head (the rope op, the indexer's q
 * and k), each as ggml-cpu computes it. */
#include "runtime/model/backend_cpu.h"

#include <math.h>

/* a double sum of squares, one float scale */
void cpu_rms_row(float *out, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) {
        float v = x[i] * scale;
        out[i] = w ? v * w[i] : v; /* no weight: ggml_rms_norm alone */
    }
}

/* ggml_norm then ggml_mul and ggml_add: the mean and the variance as double
 * sums, one float scale 1 / sqrt(var + eps). */
void cpu_layer_norm_row(float *out, const float *x, const float *w, const float *b, int n, float eps)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)x[i];
    const float mean = (float)(sum / n);
    double ss = 0.0;
    for (int i = 0; i < n; i++) {
        const float v = x[i] - mean;
        out[i] = v;
        ss += (double)(v * v);
    }
    const float scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) {
        const float v = out[i] * scale;
        out[i] = (w ? v * w[i] : v) + (b ? b[i] : 0.0f);
    }
}

/* NORM rotates adjacent pairs (2i, 2i+1); NEOX pairs i with i + n_rot/2. */
void cpu_rope_head(float *v, const float *cs, int n_rot, rope_kind kind)
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
