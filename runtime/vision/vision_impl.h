/* vision_impl.h: what the vision towers share (private to runtime/vision/):
 * the model object, the loading context, and the tower operations of
 * vision_ops.c (weights widened to f32, products on the tower's pool, ggml's
 * LayerNorm and fp16-table GELU, full attention). Each projector type is a
 * loader and an encoder in a file of its own (vision_qwen3vl.c,
 * vision_llama4.c), reached through the table in vision.c. */
#ifndef STRATA_VISION_IMPL_H
#define STRATA_VISION_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/pool.h"
#include "runtime/vision/vision.h"

#define MAX_LAYERS 128
#define VT_LIN_ROWS 64 /* a product's task: this many output rows */
#define MAX_WEIGHTS (16 + MAX_LAYERS * 20)

/* A matrix of the tower: f32, or fp16 rows (an F16 tensor kept as it is, half the memory) widened as
 * each product reads them, which gives the same bits. */
typedef struct vt_mat {
    const float *f;
    const uint16_t *h;
} vt_mat;

typedef struct vlayer {
    const float *ln1_w, *ln1_b, *qkv_b, *o_b, *ln2_w, *ln2_b, *up_b, *down_b;
    vt_mat qkv_w, o_w, up_w, down_w;
    const float *ds_norm_w, *ds_norm_b, *ds_fc1_b, *ds_fc2_b;
    vt_mat ds_fc1_w, ds_fc2_w; /* none: no deepstack */
} vlayer;

struct vision_model {
    char projector[48];
    int row;                /* its PROJECTORS row (vision.c) */
    int n_embd, n_head, d_head, n_ff, n_layer, patch, merge, pos_side, out_dim, n_ds;
    int image_size;         /* Llama 4: the side of a tile and of the overview */
    float eps, mean[3], std[3];
    int64_t min_pixels, max_pixels;
    vt_mat patch0, patch1, mm0_w, mm2_w;
    const float *patch_b, *pos, *post_w, *post_b, *mm0_b, *mm2_b;
    const float *cls, *pre_w, *pre_b; /* Llama 4 */
    vt_mat mlp1_w, mlp2_w, fc_w;
    size_t weight_bytes;    /* what the weights take as held (f32, or fp16 rows) */
    int64_t wide_cols;      /* the widest fp16 matrix's row (0: none) */
    float *wide;            /* scratch: pool threads x VT_LIN_ROWS x wide_cols floats, fp16 rows widened */
    int mlp_dim;            /* Llama 4: the adapter's width */
    vlayer layers[MAX_LAYERS];
    float *owned[MAX_WEIGHTS];
    int n_owned;
    uint16_t gelu[65536]; /* ggml's table: fp16(gelu(x)) for every fp16 x */
    const kernels *k;     /* the CPU's kernel table: the products */
    pool *pool;           /* the tower's threads */
};

typedef struct loadctx {
    vision_model *v;
    gguf_file *g;
    char *err;
    size_t errlen;
} loadctx;

/* Tensor `name` as f32 (owned by the model), checked to have the given
 * sizes (ne1..ne3 0: 1). Optional ones give NULL without an error when
 * absent. */
const float *vt_tensor(loadctx *c, const char *name, int optional, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
/* An f32 array of n floats the model owns (zeroed), or NULL with err. */
float *vt_owned(loadctx *c, size_t n);
/* Matrix `name` (vt_tensor's checks): an F16 tensor's rows kept as fp16, any other type widened to f32.
 * 0, or -1 with err (optional and absent: 0 with both NULL). */
int vt_matrix(loadctx *c, const char *name, int optional, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
              vt_mat *out);
/* n_rows rows of k matrices of cols columns each, one under the other as one matrix (the fp16 form when
 * all are fp16); -1 with err. */
int vt_stack(loadctx *c, const vt_mat *parts, int k, int64_t rows_each, int64_t cols, vt_mat *out);
int vt_key_u32(loadctx *c, const char *key, int *out, int optional);
int vt_key_f32_arr3(loadctx *c, const char *key, float out[3]);
/* ggml's fp16 GELU table (the tanh form) into v->gelu. */
void vt_gelu_init(vision_model *v);
/* Y[t][o] = W[o] . X[t] + b[o] for t < n, o < n_out (b NULL: none), on the pool; bits independent of
 * the thread count. */
void vt_linear(const vision_model *v, const vt_mat *w, const float *b, const float *x, int n, int n_in, int n_out,
               float *y);
/* ggml_norm (two passes, the sums in double), then * w + b. */
void vt_layer_norm(const float *x, const float *w, const float *b, int n, float eps, float *y);
void vt_gelu(const vision_model *v, float *x, size_t n);
/* Attention of every one of n tokens over all n: H holds n rows of q | k | v (3 n_embd each, heads of
 * d_head), A gets n rows of n_embd; S scratch of pool threads x n floats. Scale 1/sqrt(d_head). */
void vt_attention(const vision_model *v, const float *H, float *A, float *S, int n);

/* The towers (the table in vision.c). */
int vq_load(loadctx *c);
int vq_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny, char *err,
              size_t errlen);
int vl4_load(loadctx *c);
int vl4_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny, char *err,
               size_t errlen);

#endif
