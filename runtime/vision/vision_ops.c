/* vision_ops.c: see vision_impl.h. Written as llama.cpp 0.7.0's clip graphs
 * compute on the CPU, down to the steps that move numbers by more than
 * rounding: GELU through ggml's fp16 table (the value of
 * fp16(gelu(fp16(x))) on (-10, 10)), LayerNorm's two passes. */
#include "runtime/vision/vision_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fp16.h"
#include "formats/ggml_types.h"

const float *vt_tensor(loadctx *c, const char *name, int optional, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)
{
    const gguf_tensor *t = gguf_find_tensor(c->g, name);
    if (!t) {
        if (!optional) snprintf(c->err, c->errlen, "%s: tensor %s is missing", gguf_path(c->g), name);
        return NULL;
    }
    const int64_t want[4] = { ne0, ne1 ? ne1 : 1, ne2 ? ne2 : 1, ne3 ? ne3 : 1 };
    for (int d = 0; d < 4; d++)
        if (t->ne[d] != want[d]) {
            snprintf(c->err, c->errlen, "%s: %s has shape [%lld, %lld, %lld, %lld], the settings give [%lld, %lld, %lld, %lld]",
                     gguf_path(c->g), name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                     (long long)t->ne[3], (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
            return NULL;
        }
    float *f = c->v->n_owned < MAX_WEIGHTS ? malloc((size_t)t->n_elements * sizeof *f) : NULL;
    if (!f) {
        snprintf(c->err, c->errlen, "%s: out of memory for %s", gguf_path(c->g), name);
        return NULL;
    }
    c->v->owned[c->v->n_owned++] = f;
    c->v->weight_bytes += (size_t)t->n_elements * sizeof *f;
    if (ggml_dequantize(t->type, t->data, f, t->n_elements) != 0) {
        snprintf(c->err, c->errlen, "%s: %s is of a type with no decoder here", gguf_path(c->g), name);
        return NULL;
    }
    return f;
}

float *vt_owned(loadctx *c, size_t n)
{
    float *f = c->v->n_owned < MAX_WEIGHTS ? calloc(n ? n : 1, sizeof *f) : NULL;
    if (!f) {
        snprintf(c->err, c->errlen, "%s: out of memory", gguf_path(c->g));
        return NULL;
    }
    c->v->owned[c->v->n_owned++] = f;
    return f;
}

int vt_matrix(loadctx *c, const char *name, int optional, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
              vt_mat *out)
{
    out->f = NULL;
    out->h = NULL;
    const gguf_tensor *t = gguf_find_tensor(c->g, name);
    if (!t || t->type != GGML_TYPE_F16) {
        out->f = vt_tensor(c, name, optional, ne0, ne1, ne2, ne3);
        return out->f || (optional && !t) ? 0 : -1;
    }
    const int64_t want[4] = { ne0, ne1 ? ne1 : 1, ne2 ? ne2 : 1, ne3 ? ne3 : 1 };
    for (int d = 0; d < 4; d++)
        if (t->ne[d] != want[d]) { /* vt_tensor says what is wrong (and keeps nothing) */
            vt_tensor(c, name, optional, ne0, ne1, ne2, ne3);
            return -1;
        }
    uint16_t *h = c->v->n_owned < MAX_WEIGHTS ? malloc((size_t)t->n_elements * sizeof *h) : NULL;
    if (!h) {
        snprintf(c->err, c->errlen, "%s: out of memory for %s", gguf_path(c->g), name);
        return -1;
    }
    memcpy(h, t->data, (size_t)t->n_elements * sizeof *h);
    c->v->owned[c->v->n_owned++] = (float *)(void *)h;
    c->v->weight_bytes += (size_t)t->n_elements * sizeof *h;
    int last = 3; /* a row: everything but the last dimension that is not 1 */
    while (last > 0 && t->ne[last] == 1) last--;
    const int64_t cols = t->n_elements / t->ne[last];
    if (cols > c->v->wide_cols) c->v->wide_cols = cols;
    out->h = h;
    return 0;
}

int vt_stack(loadctx *c, const vt_mat *parts, int k, int64_t rows_each, int64_t cols, vt_mat *out)
{
    bool half = true;
    for (int i = 0; i < k; i++) half = half && parts[i].h;
    const size_t each = (size_t)(rows_each * cols);
    if (half) {
        uint16_t *h = c->v->n_owned < MAX_WEIGHTS ? malloc((size_t)k * each * sizeof *h) : NULL;
        if (!h) { snprintf(c->err, c->errlen, "%s: out of memory", gguf_path(c->g)); return -1; }
        c->v->owned[c->v->n_owned++] = (float *)(void *)h;
        for (int i = 0; i < k; i++) memcpy(h + i * each, parts[i].h, each * sizeof *h);
        c->v->weight_bytes += (size_t)k * each * sizeof *h;
        if (cols > c->v->wide_cols) c->v->wide_cols = cols;
        out->h = h;
        out->f = NULL;
        return 0;
    }
    float *f = vt_owned(c, (size_t)k * each);
    if (!f) return -1;
    for (int i = 0; i < k; i++)
        for (size_t j = 0; j < each; j++) f[i * each + j] = parts[i].h ? fp16_to_f32(parts[i].h[j]) : parts[i].f[j];
    c->v->weight_bytes += (size_t)k * each * sizeof *f;
    out->f = f;
    out->h = NULL;
    return 0;
}

int vt_key_u32(loadctx *c, const char *key, int *out, int optional)
{
    uint64_t v;
    if (gguf_get_uint(c->g, key, &v) != 0) {
        if (optional) return 0;
        snprintf(c->err, c->errlen, "%s: key %s is missing", gguf_path(c->g), key);
        return -1;
    }
    if (v < 1 || v > (1u << 20)) {
        snprintf(c->err, c->errlen, "%s: %s = %llu is out of range", gguf_path(c->g), key, (unsigned long long)v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int vt_key_f32_arr3(loadctx *c, const char *key, float out[3])
{
    const int64_t i = gguf_find_key(c->g, key);
    if (i < 0) return 0; /* mtmd's defaults stay */
    if (gguf_kv_type(c->g, i) != GGUF_TYPE_ARRAY || gguf_kv_arr_type(c->g, i) != GGUF_TYPE_FLOAT32 ||
        gguf_kv_arr_n(c->g, i) < 3) {
        snprintf(c->err, c->errlen, "%s: %s must be an array of at least 3 floats", gguf_path(c->g), key);
        return -1;
    }
    memcpy(out, gguf_kv_arr_data(c->g, i), 3 * sizeof *out);
    return 0;
}

static float gelu_f32(float x)
{
    const float a = 0.044715f, s = 0.79788456080286535587989211986876f;
    return 0.5f * x * (1.0f + tanhf(s * x * (1.0f + a * x * x)));
}

void vt_gelu_init(vision_model *v)
{
    for (int i = 0; i < 65536; i++) v->gelu[i] = f32_to_fp16(gelu_f32(fp16_to_f32((uint16_t)i)));
}

/* Y[t][o] = W[o] . X[t] + b[o] for every token t < n and o < n_out (W
 * rows of n_in, X and Y rows of n_in and n_out), on the pool: tasks of 64
 * output rows, each a register-blocked f32 GEMM (the kernel table's gemm8,
 * n_in a multiple of 8) or plain dots; a task's rows do not depend on the
 * thread count. */
typedef struct lin_job {
    const kernels *k;
    const vt_mat *w;
    const float *b, *x;
    float *y;
    int n_in, n_out, n;
    float *wide; /* fp16 rows: each thread's VT_LIN_ROWS x n_in floats (the model's scratch) */
} lin_job;

enum { LIN_ROWS = VT_LIN_ROWS };

static void lin_task(void *arg, int task, int thread)
{
    const lin_job *j = arg;
    const int r0 = task * LIN_ROWS, r1 = r0 + LIN_ROWS < j->n_out ? r0 + LIN_ROWS : j->n_out;
    const size_t cells = (size_t)(r1 - r0) * (size_t)j->n_in;
    float *wide = j->w->h ? j->wide + (size_t)thread * LIN_ROWS * j->n_in : NULL; /* fp16 rows: the f32 bits */
    for (size_t i = 0; wide && i < cells; i++) wide[i] = fp16_to_f32(j->w->h[(size_t)r0 * j->n_in + i]);
    const float *w = wide ? wide : j->w->f + (size_t)r0 * j->n_in;
    if (j->n_in % 8 == 0)
        j->k->gemm8_f32(w, j->n_in, r1 - r0, j->x, j->n_in, j->n, j->y + r0, j->n_out, j->n_in);
    else
        for (int t = 0; t < j->n; t++)
            for (int o = r0; o < r1; o++)
                j->y[(size_t)t * j->n_out + o] = j->k->dot_f32(w + (size_t)(o - r0) * j->n_in, j->x + (size_t)t * j->n_in, j->n_in);
    if (j->b)
        for (int t = 0; t < j->n; t++)
            for (int o = r0; o < r1; o++) j->y[(size_t)t * j->n_out + o] += j->b[o];
}

void vt_linear(const vision_model *v, const vt_mat *w, const float *b, const float *x, int n, int n_in, int n_out,
               float *y)
{
    lin_job j = { v->k, w, b, x, y, n_in, n_out, n, v->wide };
    pool_run(v->pool, (n_out + LIN_ROWS - 1) / LIN_ROWS, lin_task, &j);
}

void vt_layer_norm(const float *x, const float *w, const float *b, int n, float eps, float *y)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)x[i];
    const float mean = (float)sum / (float)n;
    double sum2 = 0.0;
    for (int i = 0; i < n; i++) {
        y[i] = x[i] - mean;
        sum2 += (double)(y[i] * y[i]);
    }
    const float variance = (float)(sum2 / n), scale = 1.0f / sqrtf(variance + eps);
    for (int i = 0; i < n; i++) y[i] = y[i] * scale * w[i] + b[i];
}

void vt_gelu(const vision_model *v, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (x[i] <= -10.0f) x[i] = 0.0f;
        else if (x[i] < 10.0f) x[i] = fp16_to_f32(v->gelu[f32_to_fp16(x[i])]);
    }
}

/* Attention over all n tokens for head h and queries [i0, i1): the task's
 * thread has n floats of scores in S + thread * n. */
typedef struct attn_job {
    const vision_model *v;
    const float *H; /* n rows of q | k | v, 3E each */
    float *A, *S;
    int n, qblocks;
} attn_job;

enum { ATTN_Q = 16 };

static void attn_task(void *arg, int task, int thread)
{
    const attn_job *j = arg;
    const vision_model *v = j->v;
    const int E = v->n_embd, dh = v->d_head, h = task / j->qblocks, i0 = task % j->qblocks * ATTN_Q;
    const int i1 = i0 + ATTN_Q < j->n ? i0 + ATTN_Q : j->n;
    const float kq_scale = 1.0f / sqrtf((float)dh);
    float *S = j->S + (size_t)thread * j->n;
    for (int i = i0; i < i1; i++) {
        const float *q = j->H + (size_t)i * 3 * E + h * dh;
        float mx = -INFINITY;
        for (int t = 0; t < j->n; t++) {
            S[t] = v->k->dot_f32(j->H + (size_t)t * 3 * E + E + h * dh, q, dh) * kq_scale;
            if (S[t] > mx) mx = S[t];
        }
        double sum = 0.0;
        for (int t = 0; t < j->n; t++) {
            S[t] = expf(S[t] - mx);
            sum += S[t];
        }
        const float inv = (float)(1.0 / sum);
        float *o = j->A + (size_t)i * E + h * dh;
        memset(o, 0, (size_t)dh * sizeof *o);
        for (int t = 0; t < j->n; t++) v->k->axpy_f32(o, S[t] * inv, j->H + (size_t)t * 3 * E + 2 * E + h * dh, dh);
    }
}

void vt_attention(const vision_model *v, const float *H, float *A, float *S, int n)
{
    const int qblocks = (n + ATTN_Q - 1) / ATTN_Q;
    attn_job aj = { v, H, A, S, n, qblocks };
    pool_run(v->pool, v->n_head * qblocks, attn_task, &aj);
}
