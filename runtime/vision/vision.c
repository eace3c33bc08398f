/* vision.c: see vision.h. The projector's settings come from the keys
 * llama.cpp's mtmd reads; the tower is written step by step as llama.cpp
 * 0.7.0's graph runs it on the CPU, including the steps that change the
 * numbers by more than rounding: GELU through ggml's fp16 table (the value
 * of fp16(gelu(fp16(x))) on (-10, 10)), LayerNorm's two passes, the vision
 * RoPE's angles built by repeated multiplication, the position table's
 * bilinear, align-corners resize. Weights are widened to f32 once. */
#include "runtime/vision/vision.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/pool.h"
#include "runtime/vision/preprocess.h"

#define MAX_LAYERS 128
#define MAX_WEIGHTS (16 + MAX_LAYERS * 20)

typedef struct vlayer {
    const float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *o_w, *o_b, *ln2_w, *ln2_b, *up_w, *up_b, *down_w, *down_b;
    const float *ds_norm_w, *ds_norm_b, *ds_fc1_w, *ds_fc1_b, *ds_fc2_w, *ds_fc2_b; /* NULL: no deepstack */
} vlayer;

struct vision_model {
    char projector[48];
    int row;                /* its PROJECTORS row */
    int n_embd, n_head, d_head, n_ff, n_layer, patch, merge, pos_side, out_dim, n_ds;
    float eps, mean[3], std[3];
    int64_t min_pixels, max_pixels;
    const float *patch0, *patch1, *patch_b, *pos, *post_w, *post_b, *mm0_w, *mm0_b, *mm2_w, *mm2_b;
    vlayer layers[MAX_LAYERS];
    float *owned[MAX_WEIGHTS];
    int n_owned;
    uint16_t gelu[65536]; /* ggml's table: fp16(gelu(x)) for every fp16 x */
    const kernels *k;     /* the CPU's kernel table: the products */
    pool *pool;           /* the tower's threads */
};

/* ---------------------------------------------------------------- loading */

typedef struct loadctx {
    vision_model *v;
    gguf_file *g;
    char *err;
    size_t errlen;
} loadctx;

/* Tensor `name` as f32, checked to have the given sizes (ne1..ne3 0: 1).
 * Optional ones give NULL without an error when absent. */
static const float *tensor(loadctx *c, const char *name, int optional, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)
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
    if (ggml_dequantize(t->type, t->data, f, t->n_elements) != 0) {
        snprintf(c->err, c->errlen, "%s: %s is of a type with no decoder here", gguf_path(c->g), name);
        return NULL;
    }
    return f;
}

static int key_u32(loadctx *c, const char *key, int *out, int optional)
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

static int key_f32_arr3(loadctx *c, const char *key, float out[3])
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

static int load_qwen3vl(loadctx *c)
{
    vision_model *v = c->v;
    char n[96];
    bool gelu = false;
    if (key_u32(c, "clip.vision.embedding_length", &v->n_embd, 0) ||
        key_u32(c, "clip.vision.attention.head_count", &v->n_head, 0) ||
        key_u32(c, "clip.vision.feed_forward_length", &v->n_ff, 0) ||
        key_u32(c, "clip.vision.block_count", &v->n_layer, 0) || key_u32(c, "clip.vision.patch_size", &v->patch, 0) ||
        key_u32(c, "clip.vision.spatial_merge_size", &v->merge, 1) ||
        key_f32_arr3(c, "clip.vision.image_mean", v->mean) || key_f32_arr3(c, "clip.vision.image_std", v->std))
        return -1;
    if (gguf_get_f32(c->g, "clip.vision.attention.layer_norm_epsilon", &v->eps) != 0) {
        snprintf(c->err, c->errlen, "%s: key clip.vision.attention.layer_norm_epsilon is missing", gguf_path(c->g));
        return -1;
    }
    if (gguf_get_bool(c->g, "clip.use_gelu", &gelu) != 0 || !gelu) {
        snprintf(c->err, c->errlen, "%s: a qwen3vl tower with another activation than GELU (clip.use_gelu) is not "
                 "supported", gguf_path(c->g));
        return -1;
    }
    const int E = v->n_embd;
    if (E % v->n_head || (E / v->n_head) % 4 || v->merge != 2 || v->n_layer > MAX_LAYERS) {
        snprintf(c->err, c->errlen, "%s: a qwen3vl tower needs a head width that is a multiple of 4, a merge of 2 and "
                 "at most %d layers", gguf_path(c->g), MAX_LAYERS);
        return -1;
    }
    v->d_head = E / v->n_head;
    const int P = v->patch, E4 = 4 * E;
    const gguf_tensor *pt = gguf_find_tensor(c->g, "v.position_embd.weight");
    const gguf_tensor *m2 = gguf_find_tensor(c->g, "mm.2.bias");
    if (!pt || !m2) {
        snprintf(c->err, c->errlen, "%s: tensor %s is missing", gguf_path(c->g), pt ? "mm.2.bias" : "v.position_embd.weight");
        return -1;
    }
    v->pos_side = (int)sqrt((double)pt->ne[1]);
    v->out_dim = (int)m2->ne[0];
    if ((int64_t)v->pos_side * v->pos_side != pt->ne[1]) {
        snprintf(c->err, c->errlen, "%s: v.position_embd.weight has %lld rows, not a square grid", gguf_path(c->g),
                 (long long)pt->ne[1]);
        return -1;
    }
    const int D = v->out_dim;
    if (!(v->patch0 = tensor(c, "v.patch_embd.weight", 0, P, P, 3, E)) ||
        !(v->patch1 = tensor(c, "v.patch_embd.weight.1", 0, P, P, 3, E)) ||
        !(v->patch_b = tensor(c, "v.patch_embd.bias", 0, E, 0, 0, 0)) ||
        !(v->pos = tensor(c, "v.position_embd.weight", 0, E, pt->ne[1], 0, 0)) ||
        !(v->mm0_w = tensor(c, "mm.0.weight", 0, E4, E4, 0, 0)) || !(v->mm0_b = tensor(c, "mm.0.bias", 0, E4, 0, 0, 0)) ||
        !(v->mm2_w = tensor(c, "mm.2.weight", 0, E4, D, 0, 0)) || !(v->mm2_b = tensor(c, "mm.2.bias", 0, D, 0, 0, 0)))
        return -1;
    v->post_w = tensor(c, "v.post_ln.weight", 1, E, 0, 0, 0);
    v->post_b = v->post_w ? tensor(c, "v.post_ln.bias", 0, E, 0, 0, 0) : NULL;
    if (v->post_w && !v->post_b) return -1;
    if (gguf_find_tensor(c->g, "v.pre_ln.weight")) {
        snprintf(c->err, c->errlen, "%s: a qwen3vl tower with v.pre_ln is not supported", gguf_path(c->g));
        return -1;
    }
#define T(field, fmt, ne0, ne1)                                                                            \
    do {                                                                                                   \
        snprintf(n, sizeof n, fmt, il);                                                                    \
        if (!(l->field = tensor(c, n, 0, ne0, ne1, 0, 0))) return -1;                                      \
    } while (0)
    for (int il = 0; il < v->n_layer; il++) {
        vlayer *l = &v->layers[il];
        T(ln1_w, "v.blk.%d.ln1.weight", E, 0);
        T(ln1_b, "v.blk.%d.ln1.bias", E, 0);
        T(qkv_w, "v.blk.%d.attn_qkv.weight", E, 3 * E);
        T(qkv_b, "v.blk.%d.attn_qkv.bias", 3 * E, 0);
        T(o_w, "v.blk.%d.attn_out.weight", E, E);
        T(o_b, "v.blk.%d.attn_out.bias", E, 0);
        T(ln2_w, "v.blk.%d.ln2.weight", E, 0);
        T(ln2_b, "v.blk.%d.ln2.bias", E, 0);
        T(up_w, "v.blk.%d.ffn_up.weight", E, v->n_ff);
        T(up_b, "v.blk.%d.ffn_up.bias", v->n_ff, 0);
        T(down_w, "v.blk.%d.ffn_down.weight", v->n_ff, E);
        T(down_b, "v.blk.%d.ffn_down.bias", E, 0);
        snprintf(n, sizeof n, "v.deepstack.%d.fc1.weight", il);
        if (!gguf_find_tensor(c->g, n)) continue;
        v->n_ds++;
        T(ds_norm_w, "v.deepstack.%d.norm.weight", E4, 0);
        T(ds_norm_b, "v.deepstack.%d.norm.bias", E4, 0);
        T(ds_fc1_w, "v.deepstack.%d.fc1.weight", E4, E4);
        T(ds_fc1_b, "v.deepstack.%d.fc1.bias", E4, 0);
        T(ds_fc2_w, "v.deepstack.%d.fc2.weight", E4, D);
        T(ds_fc2_b, "v.deepstack.%d.fc2.bias", D, 0);
    }
#undef T
    /* mtmd's limits for these towers: 8 to 4096 image tokens */
    const int64_t area = (int64_t)P * P * v->merge * v->merge;
    v->min_pixels = 8 * area;
    v->max_pixels = 4096 * area;
    for (int i = 0; i < 65536; i++) v->gelu[i] = f32_to_fp16(gelu_f32(fp16_to_f32((uint16_t)i)));
    return 0;
}

/* One row per projector type: its clip.projector_type, its loader, and the
 * text mtmd puts before and after a picture's rows (the only one so far; a
 * second type is a row and a file). */
static const struct { const char *name; int (*load)(loadctx *); const char *begin, *end; } PROJECTORS[] = {
    { "qwen3vl_merger", load_qwen3vl, "<|vision_start|>", "<|vision_end|>" },
};

vision_model *vision_open(const char *path, int n_threads, char *err, size_t errlen)
{
    gguf_file *g = gguf_open(path, err, errlen);
    if (!g) return NULL;
    const char *proj = gguf_get_str(g, "clip.projector_type");
    int row = -1;
    for (size_t i = 0; proj && i < sizeof PROJECTORS / sizeof PROJECTORS[0]; i++)
        if (!strcmp(proj, PROJECTORS[i].name)) row = (int)i;
    vision_model *v = row >= 0 ? calloc(1, sizeof *v) : NULL;
    if (row < 0) snprintf(err, errlen, "%s: vision projector '%s' is not supported (supported: qwen3vl_merger)", path,
                          proj ? proj : "none");
    else if (!v) snprintf(err, errlen, "%s: out of memory", path);
    if (v) {
        const float mean[3] = { 0.48145466f, 0.4578275f, 0.40821073f }, sd[3] = { 0.26862954f, 0.26130258f, 0.27577711f };
        memcpy(v->mean, mean, sizeof mean); /* mtmd's defaults (OpenAI CLIP's) when the file has none */
        memcpy(v->std, sd, sizeof sd);
        snprintf(v->projector, sizeof v->projector, "%s", proj);
        v->row = row;
        v->k = kernels_get(1);
        v->pool = pool_create(n_threads < 1 ? 1 : n_threads);
        loadctx c = { v, g, err, errlen };
        if (!v->pool) snprintf(err, errlen, "%s: cannot start %d threads", path, n_threads);
        if (!v->pool || PROJECTORS[row].load(&c) != 0) {
            vision_close(v);
            v = NULL;
        }
    }
    gguf_close(g);
    return v;
}

void vision_close(vision_model *v)
{
    if (!v) return;
    for (int i = 0; i < v->n_owned; i++) free(v->owned[i]);
    if (v->pool) pool_free(v->pool);
    free(v);
}

const char *vision_projector(const vision_model *v) { return v->projector; }
const char *vision_marker_begin(const vision_model *v) { return PROJECTORS[v->row].begin; }
const char *vision_marker_end(const vision_model *v) { return PROJECTORS[v->row].end; }
int vision_width(const vision_model *v) { return v->out_dim * (1 + v->n_ds); }

/* ---------------------------------------------------------------- the tower */

/* Y[t][o] = W[o] . X[t] + b[o] for every token t < n and o < n_out (W
 * rows of n_in, X and Y rows of n_in and n_out), on the pool: tasks of 64
 * output rows, each a register-blocked f32 GEMM (the kernel table's gemm8,
 * n_in a multiple of 8) or plain dots; a task's rows do not depend on the
 * thread count. */
typedef struct lin_job {
    const kernels *k;
    const float *w, *b, *x;
    float *y;
    int n_in, n_out, n;
} lin_job;

enum { LIN_ROWS = 64 };

static void lin_task(void *arg, int task, int thread)
{
    (void)thread;
    const lin_job *j = arg;
    const int r0 = task * LIN_ROWS, r1 = r0 + LIN_ROWS < j->n_out ? r0 + LIN_ROWS : j->n_out;
    if (j->n_in % 8 == 0)
        j->k->gemm8_f32(j->w + (size_t)r0 * j->n_in, j->n_in, r1 - r0, j->x, j->n_in, j->n, j->y + r0, j->n_out, j->n_in);
    else
        for (int t = 0; t < j->n; t++)
            for (int o = r0; o < r1; o++)
                j->y[(size_t)t * j->n_out + o] = j->k->dot_f32(j->w + (size_t)o * j->n_in, j->x + (size_t)t * j->n_in, j->n_in);
    if (j->b)
        for (int t = 0; t < j->n; t++)
            for (int o = r0; o < r1; o++) j->y[(size_t)t * j->n_out + o] += j->b[o];
}

static void linear(const vision_model *v, const float *w, const float *b, const float *x, int n, int n_in, int n_out,
                   float *y)
{
    lin_job j = { v->k, w, b, x, y, n_in, n_out, n };
    pool_run(v->pool, (n_out + LIN_ROWS - 1) / LIN_ROWS, lin_task, &j);
}

/* ggml_norm (two passes, the sums in double), then * w + b. */
static void layer_norm(const float *x, const float *w, const float *b, int n, float eps, float *y)
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

static void gelu(const vision_model *v, float *x, int n)
{
    for (int i = 0; i < n; i++) {
        if (x[i] <= -10.0f) x[i] = 0.0f;
        else if (x[i] < 10.0f) x[i] = fp16_to_f32(v->gelu[f32_to_fp16(x[i])]);
    }
}

/* The vision RoPE of one head of width d at grid position (py, px): pairs
 * (j, j + d/2); angles py * ts^j for j < d/4, px * ts^(j - d/4) above,
 * ts = 10000^(-4/d), each built by repeated multiplication. */
static void rope_vision(float *h, int d, float py, float px)
{
    const float ts = powf(10000.0f, -2.0f / (float)(d / 2));
    float ty = py, tx = px;
    for (int j = 0; j < d / 2; j++) {
        if (j == d / 4) tx = px;
        const float th = j < d / 4 ? ty : tx, cs = cosf(th), sn = sinf(th);
        const float x0 = h[j], x1 = h[j + d / 2];
        h[j] = x0 * cs - x1 * sn;
        h[j + d / 2] = x0 * sn + x1 * cs;
        ty *= ts;
        tx *= ts;
    }
}

/* The learned position of grid cell (x, y) of a gw x gh grid: the table's
 * own row on its native grid, else the table resized bilinearly with
 * aligned corners, as ggml_interpolate does. */
static void position(const vision_model *v, int gw, int gh, int x, int y, float *out)
{
    const int E = v->n_embd, s = v->pos_side;
    if (gw == s && gh == s) {
        memcpy(out, v->pos + ((size_t)y * s + x) * E, (size_t)E * sizeof *out);
        return;
    }
    const float sf0 = gw > 1 && s > 1 ? (float)(gw - 1) / (float)(s - 1) : (float)gw / (float)s;
    const float sf1 = gh > 1 && s > 1 ? (float)(gh - 1) / (float)(s - 1) : (float)gh / (float)s;
    const float fx = (float)x / sf0, fy = (float)y / sf1;
    int x0 = (int)floorf(fx), y0 = (int)floorf(fy), x1 = x0 + 1, y1 = y0 + 1;
    x0 = x0 < 0 ? 0 : x0 > s - 1 ? s - 1 : x0;
    x1 = x1 < 0 ? 0 : x1 > s - 1 ? s - 1 : x1;
    y0 = y0 < 0 ? 0 : y0 > s - 1 ? s - 1 : y0;
    y1 = y1 < 0 ? 0 : y1 > s - 1 ? s - 1 : y1;
    float dx = fx - (float)x0, dy = fy - (float)y0;
    dx = dx < 0 ? 0 : dx > 1 ? 1 : dx;
    dy = dy < 0 ? 0 : dy > 1 ? 1 : dy;
    const float *a = v->pos + ((size_t)y0 * s + x0) * E, *b = v->pos + ((size_t)y0 * s + x1) * E;
    const float *c = v->pos + ((size_t)y1 * s + x0) * E, *d = v->pos + ((size_t)y1 * s + x1) * E;
    for (int e = 0; e < E; e++)
        out[e] = a[e] * (1 - dx) * (1 - dy) + b[e] * dx * (1 - dy) + c[e] * (1 - dx) * dy + d[e] * dx * dy;
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

int vision_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny,
                  char *err, size_t errlen)
{
    const int P = v->patch, E = v->n_embd, E4 = 4 * E, D = v->out_dim, F = v->n_ff, PP3 = 3 * P * P;
    int tw, th;
    vp_target_size(img->w, img->h, P * v->merge, v->min_pixels, v->max_pixels, &tw, &th);
    image_rgb r = { 0 };
    if (tw <= 0 || th <= 0 || vp_resize_pad(img, tw, th, &r) != 0) {
        snprintf(err, errlen, "the picture (%d x %d) cannot be made %d x %d: out of memory", img->w, img->h, tw, th);
        return -1;
    }
    const int gw = tw / P, gh = th / P, n = gw * gh, nm = n / 4, width = vision_width(v), T = pool_size(v->pool);
    const int wide = F > E4 ? F : E4, cols = PP3 > wide ? PP3 : wide;
    float *pix = malloc((size_t)3 * tw * th * sizeof *pix), *X = malloc((size_t)n * E * sizeof *X);
    float *H = malloc((size_t)n * 3 * E * sizeof *H), *A = malloc((size_t)n * E * sizeof *A);
    float *N = malloc((size_t)n * cols * sizeof *N), *U = malloc((size_t)n * cols * sizeof *U);
    float *B = malloc((size_t)n * E * sizeof *B), *S = malloc((size_t)T * n * sizeof *S);
    float *Y = malloc((size_t)nm * width * sizeof *Y), *Z = malloc((size_t)nm * D * sizeof *Z);
    int *ty = malloc((size_t)n * sizeof *ty), *tx = malloc((size_t)n * sizeof *tx);
    int rc = -1;
    if (!pix || !X || !H || !A || !N || !U || !B || !S || !Y || !Z || !ty || !tx) {
        snprintf(err, errlen, "out of memory for a %d x %d picture", tw, th);
        goto out;
    }
    vp_normalize(&r, v->mean, v->std, pix);
    /* patches in the merger's order: 2 x 2 blocks row by row, (0,0) (0,1) (1,0) (1,1) inside; each one's
     * pixels as (channel, row, column), the kernels' order */
    const size_t plane = (size_t)tw * th;
    for (int t = 0; t < n; t++) {
        const int blk = t / 4, by = blk / (gw / 2), bx = blk % (gw / 2);
        ty[t] = by * 2 + (t % 4) / 2;
        tx[t] = bx * 2 + t % 2;
        float *col = N + (size_t)t * PP3;
        for (int c = 0; c < 3; c++)
            for (int ky = 0; ky < P; ky++)
                memcpy(col + (c * P + ky) * P, pix + c * plane + (size_t)(ty[t] * P + ky) * tw + (size_t)tx[t] * P,
                       (size_t)P * sizeof *col);
    }
    linear(v, v->patch0, NULL, N, n, PP3, E, X);
    linear(v, v->patch1, NULL, N, n, PP3, E, A);
    for (int t = 0; t < n; t++) {
        position(v, gw, gh, tx[t], ty[t], B);
        for (int e = 0; e < E; e++) {
            float *x = X + (size_t)t * E + e;
            *x = (*x + A[(size_t)t * E + e]) + v->patch_b[e];
            *x += B[e];
        }
    }
    const int qblocks = (n + ATTN_Q - 1) / ATTN_Q;
    int ds = 0;
    for (int il = 0; il < v->n_layer; il++) {
        const vlayer *l = &v->layers[il];
        for (int t = 0; t < n; t++) layer_norm(X + (size_t)t * E, l->ln1_w, l->ln1_b, E, v->eps, N + (size_t)t * E);
        linear(v, l->qkv_w, l->qkv_b, N, n, E, 3 * E, H);
        for (int t = 0; t < n; t++)
            for (int h = 0; h < v->n_head; h++) {
                rope_vision(H + (size_t)t * 3 * E + h * v->d_head, v->d_head, (float)ty[t], (float)tx[t]);
                rope_vision(H + (size_t)t * 3 * E + E + h * v->d_head, v->d_head, (float)ty[t], (float)tx[t]);
            }
        attn_job aj = { v, H, A, S, n, qblocks };
        pool_run(v->pool, v->n_head * qblocks, attn_task, &aj);
        linear(v, l->o_w, l->o_b, A, n, E, E, B);
        for (size_t i = 0; i < (size_t)n * E; i++) X[i] = B[i] + X[i];
        for (int t = 0; t < n; t++) layer_norm(X + (size_t)t * E, l->ln2_w, l->ln2_b, E, v->eps, N + (size_t)t * E);
        linear(v, l->up_w, l->up_b, N, n, E, F, U);
        gelu(v, U, n * F);
        linear(v, l->down_w, l->down_b, U, n, F, E, B);
        for (size_t i = 0; i < (size_t)n * E; i++) X[i] = X[i] + B[i];
        if (!l->ds_fc1_w) continue;
        ds++;
        for (int m = 0; m < nm; m++)
            layer_norm(X + (size_t)m * E4, l->ds_norm_w, l->ds_norm_b, E4, v->eps, N + (size_t)m * E4);
        linear(v, l->ds_fc1_w, l->ds_fc1_b, N, nm, E4, E4, U);
        gelu(v, U, nm * E4);
        linear(v, l->ds_fc2_w, l->ds_fc2_b, U, nm, E4, D, Z);
        for (int m = 0; m < nm; m++) memcpy(Y + (size_t)m * width + (size_t)ds * D, Z + (size_t)m * D, (size_t)D * sizeof *Z);
    }
    if (v->post_w)
        for (int t = 0; t < n; t++) {
            layer_norm(X + (size_t)t * E, v->post_w, v->post_b, E, v->eps, B);
            memcpy(X + (size_t)t * E, B, (size_t)E * sizeof *B);
        }
    linear(v, v->mm0_w, v->mm0_b, X, nm, E4, E4, U);
    gelu(v, U, nm * E4);
    linear(v, v->mm2_w, v->mm2_b, U, nm, E4, D, Z);
    for (int m = 0; m < nm; m++) memcpy(Y + (size_t)m * width, Z + (size_t)m * D, (size_t)D * sizeof *Z);
    *out = Y;
    Y = NULL;
    *n_tokens = nm;
    *nx = gw / 2;
    *ny = gh / 2;
    rc = 0;
out:
    free(r.rgb); free(pix); free(X); free(H); free(A); free(N); free(U); free(B); free(S); free(Y); free(Z);
    free(ty); free(tx);
    return rc;
}
