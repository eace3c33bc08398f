/* vision_qwen3vl.c: Qwen3-VL's tower (clip.projector_type qwen3vl_merger),
 * as llama.cpp 0.7.0's mtmd runs it: mtmd's smart resize and Pillow's
 * bicubic (preprocess.h), both patch kernels, the learned positions (resized
 * bilinearly with aligned corners off the native grid), the vision RoPE
 * (angles by repeated multiplication), the deepstack mergers and the final
 * merger. */
#include "runtime/vision/vision_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vision/preprocess.h"

int vq_load(loadctx *c)
{
    vision_model *v = c->v;
    char n[96];
    bool gelu = false;
    if (vt_key_u32(c, "clip.vision.embedding_length", &v->n_embd, 0) ||
        vt_key_u32(c, "clip.vision.attention.head_count", &v->n_head, 0) ||
        vt_key_u32(c, "clip.vision.feed_forward_length", &v->n_ff, 0) ||
        vt_key_u32(c, "clip.vision.block_count", &v->n_layer, 0) || vt_key_u32(c, "clip.vision.patch_size", &v->patch, 0) ||
        vt_key_u32(c, "clip.vision.spatial_merge_size", &v->merge, 1) ||
        vt_key_f32_arr3(c, "clip.vision.image_mean", v->mean) || vt_key_f32_arr3(c, "clip.vision.image_std", v->std))
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
    if (vt_matrix(c, "v.patch_embd.weight", 0, P, P, 3, E, &v->patch0) ||
        vt_matrix(c, "v.patch_embd.weight.1", 0, P, P, 3, E, &v->patch1) ||
        !(v->patch_b = vt_tensor(c, "v.patch_embd.bias", 0, E, 0, 0, 0)) ||
        !(v->pos = vt_tensor(c, "v.position_embd.weight", 0, E, pt->ne[1], 0, 0)) ||
        vt_matrix(c, "mm.0.weight", 0, E4, E4, 0, 0, &v->mm0_w) || !(v->mm0_b = vt_tensor(c, "mm.0.bias", 0, E4, 0, 0, 0)) ||
        vt_matrix(c, "mm.2.weight", 0, E4, D, 0, 0, &v->mm2_w) || !(v->mm2_b = vt_tensor(c, "mm.2.bias", 0, D, 0, 0, 0)))
        return -1;
    v->post_w = vt_tensor(c, "v.post_ln.weight", 1, E, 0, 0, 0);
    v->post_b = v->post_w ? vt_tensor(c, "v.post_ln.bias", 0, E, 0, 0, 0) : NULL;
    if (v->post_w && !v->post_b) return -1;
    if (gguf_find_tensor(c->g, "v.pre_ln.weight")) {
        snprintf(c->err, c->errlen, "%s: a qwen3vl tower with v.pre_ln is not supported", gguf_path(c->g));
        return -1;
    }
#define TM(field, fmt, ne0, ne1)                                                                           \
    do {                                                                                                   \
        snprintf(n, sizeof n, fmt, il);                                                                    \
        if (vt_matrix(c, n, 0, ne0, ne1, 0, 0, &l->field)) return -1;                                      \
    } while (0)
#define T(field, fmt, ne0, ne1)                                                                            \
    do {                                                                                                   \
        snprintf(n, sizeof n, fmt, il);                                                                    \
        if (!(l->field = vt_tensor(c, n, 0, ne0, ne1, 0, 0))) return -1;                                      \
    } while (0)
    for (int il = 0; il < v->n_layer; il++) {
        vlayer *l = &v->layers[il];
        T(ln1_w, "v.blk.%d.ln1.weight", E, 0);
        T(ln1_b, "v.blk.%d.ln1.bias", E, 0);
        TM(qkv_w, "v.blk.%d.attn_qkv.weight", E, 3 * E);
        T(qkv_b, "v.blk.%d.attn_qkv.bias", 3 * E, 0);
        TM(o_w, "v.blk.%d.attn_out.weight", E, E);
        T(o_b, "v.blk.%d.attn_out.bias", E, 0);
        T(ln2_w, "v.blk.%d.ln2.weight", E, 0);
        T(ln2_b, "v.blk.%d.ln2.bias", E, 0);
        TM(up_w, "v.blk.%d.ffn_up.weight", E, v->n_ff);
        T(up_b, "v.blk.%d.ffn_up.bias", v->n_ff, 0);
        TM(down_w, "v.blk.%d.ffn_down.weight", v->n_ff, E);
        T(down_b, "v.blk.%d.ffn_down.bias", E, 0);
        snprintf(n, sizeof n, "v.deepstack.%d.fc1.weight", il);
        if (!gguf_find_tensor(c->g, n)) continue;
        v->n_ds++;
        T(ds_norm_w, "v.deepstack.%d.norm.weight", E4, 0);
        T(ds_norm_b, "v.deepstack.%d.norm.bias", E4, 0);
        TM(ds_fc1_w, "v.deepstack.%d.fc1.weight", E4, E4);
        T(ds_fc1_b, "v.deepstack.%d.fc1.bias", E4, 0);
        TM(ds_fc2_w, "v.deepstack.%d.fc2.weight", E4, D);
        T(ds_fc2_b, "v.deepstack.%d.fc2.bias", D, 0);
    }
#undef T
#undef TM
    /* mtmd's limits for these towers: 8 to 4096 image tokens */
    const int64_t area = (int64_t)P * P * v->merge * v->merge;
    v->min_pixels = 8 * area;
    v->max_pixels = 4096 * area;
    vt_gelu_init(v);
    return 0;
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

int vq_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny,
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
    const int gw = tw / P, gh = th / P, n = gw * gh, nm = n / 4, width = v->out_dim * (1 + v->n_ds), T = pool_size(v->pool);
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
    vt_linear(v, &v->patch0, NULL, N, n, PP3, E, X);
    vt_linear(v, &v->patch1, NULL, N, n, PP3, E, A);
    for (int t = 0; t < n; t++) {
        position(v, gw, gh, tx[t], ty[t], B);
        for (int e = 0; e < E; e++) {
            float *x = X + (size_t)t * E + e;
            *x = (*x + A[(size_t)t * E + e]) + v->patch_b[e];
            *x += B[e];
        }
    }
    int ds = 0;
    for (int il = 0; il < v->n_layer; il++) {
        const vlayer *l = &v->layers[il];
        for (int t = 0; t < n; t++) vt_layer_norm(X + (size_t)t * E, l->ln1_w, l->ln1_b, E, v->eps, N + (size_t)t * E);
        vt_linear(v, &l->qkv_w, l->qkv_b, N, n, E, 3 * E, H);
        for (int t = 0; t < n; t++)
            for (int h = 0; h < v->n_head; h++) {
                rope_vision(H + (size_t)t * 3 * E + h * v->d_head, v->d_head, (float)ty[t], (float)tx[t]);
                rope_vision(H + (size_t)t * 3 * E + E + h * v->d_head, v->d_head, (float)ty[t], (float)tx[t]);
            }
        vt_attention(v, H, A, S, n);
        vt_linear(v, &l->o_w, l->o_b, A, n, E, E, B);
        for (size_t i = 0; i < (size_t)n * E; i++) X[i] = B[i] + X[i];
        for (int t = 0; t < n; t++) vt_layer_norm(X + (size_t)t * E, l->ln2_w, l->ln2_b, E, v->eps, N + (size_t)t * E);
        vt_linear(v, &l->up_w, l->up_b, N, n, E, F, U);
        vt_gelu(v, U, (size_t)n * F);
        vt_linear(v, &l->down_w, l->down_b, U, n, F, E, B);
        for (size_t i = 0; i < (size_t)n * E; i++) X[i] = X[i] + B[i];
        if (!l->ds_fc1_w.f && !l->ds_fc1_w.h) continue;
        ds++;
        for (int m = 0; m < nm; m++)
            vt_layer_norm(X + (size_t)m * E4, l->ds_norm_w, l->ds_norm_b, E4, v->eps, N + (size_t)m * E4);
        vt_linear(v, &l->ds_fc1_w, l->ds_fc1_b, N, nm, E4, E4, U);
        vt_gelu(v, U, (size_t)nm * E4);
        vt_linear(v, &l->ds_fc2_w, l->ds_fc2_b, U, nm, E4, D, Z);
        for (int m = 0; m < nm; m++) memcpy(Y + (size_t)m * width + (size_t)ds * D, Z + (size_t)m * D, (size_t)D * sizeof *Z);
    }
    if (v->post_w)
        for (int t = 0; t < n; t++) {
            vt_layer_norm(X + (size_t)t * E, v->post_w, v->post_b, E, v->eps, B);
            memcpy(X + (size_t)t * E, B, (size_t)E * sizeof *B);
        }
    vt_linear(v, &v->mm0_w, v->mm0_b, X, nm, E4, E4, U);
    vt_gelu(v, U, (size_t)nm * E4);
    vt_linear(v, &v->mm2_w, v->mm2_b, U, nm, E4, D, Z);
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
