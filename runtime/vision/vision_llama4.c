/* vision_llama4.c: Llama 4's tower (clip.projector_type llama4), as
 * llama.cpp 0.7.0's mtmd runs it. A picture no larger than a tile
 * (clip.vision.image_size) is one slice, stretched to the tile; a larger one
 * becomes the tiles of the best of 8 grids (up to 3 x 3 tiles, llama.cpp's
 * select_best_resolution in float), the picture fitted into the grid by
 * Pillow's bicubic and centred on black, then the overview (the picture
 * stretched to one tile) last. Each slice: patches by a linear unfold (no
 * bias), the class token appended last, learned positions, LayerNorm,
 * layers with separate q, k, v, a 2-D RoPE (the first half of each head
 * turned by the patch's column + 1, the second by its row + 1, adjacent
 * pairs; the class token at 0), attention over the slice, GELU MLP; the
 * class token dropped, pixel shuffle by clip.vision.projector.scale_factor
 * in llama.cpp's order (merged tokens column by column), two GELU layers
 * and the projector, no biases. A slice gives (side / patch / s)^2 rows of
 * the text model's width; all slices' rows in that order. */
#include "runtime/vision/vision_impl.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vision/preprocess.h"

int vl4_load(loadctx *c)
{
    vision_model *v = c->v;
    char n[96];
    bool gelu = false;
    v->merge = 1;
    if (vt_key_u32(c, "clip.vision.embedding_length", &v->n_embd, 0) ||
        vt_key_u32(c, "clip.vision.attention.head_count", &v->n_head, 0) ||
        vt_key_u32(c, "clip.vision.feed_forward_length", &v->n_ff, 0) ||
        vt_key_u32(c, "clip.vision.block_count", &v->n_layer, 0) || vt_key_u32(c, "clip.vision.patch_size", &v->patch, 0) ||
        vt_key_u32(c, "clip.vision.image_size", &v->image_size, 0) ||
        vt_key_u32(c, "clip.vision.projector.scale_factor", &v->merge, 1) ||
        vt_key_f32_arr3(c, "clip.vision.image_mean", v->mean) || vt_key_f32_arr3(c, "clip.vision.image_std", v->std))
        return -1;
    if (gguf_get_f32(c->g, "clip.vision.attention.layer_norm_epsilon", &v->eps) != 0) {
        snprintf(c->err, c->errlen, "%s: key clip.vision.attention.layer_norm_epsilon is missing", gguf_path(c->g));
        return -1;
    }
    if (gguf_get_bool(c->g, "clip.use_gelu", &gelu) != 0 || !gelu) {
        snprintf(c->err, c->errlen, "%s: a llama4 tower with another activation than GELU (clip.use_gelu) is not "
                 "supported", gguf_path(c->g));
        return -1;
    }
    const int E = v->n_embd, P = v->patch, S = v->image_size, G = S / P, s = v->merge;
    if (E % v->n_head || (E / v->n_head) % 4 || S % P || G % s || v->n_layer > MAX_LAYERS || S > 8192) {
        snprintf(c->err, c->errlen, "%s: a llama4 tower needs a head width that is a multiple of 4, a tile side that "
                 "is a multiple of the patch, a patch grid that is a multiple of the scale factor and at most %d "
                 "layers", gguf_path(c->g), MAX_LAYERS);
        return -1;
    }
    v->d_head = E / v->n_head;
    const gguf_tensor *fc = gguf_find_tensor(c->g, "mm.model.fc.weight");
    const gguf_tensor *m1 = gguf_find_tensor(c->g, "mm.model.mlp.1.weight");
    if (!fc || !m1) {
        snprintf(c->err, c->errlen, "%s: tensor %s is missing", gguf_path(c->g), fc ? "mm.model.mlp.1.weight" : "mm.model.fc.weight");
        return -1;
    }
    v->mlp_dim = (int)m1->ne[1];
    v->out_dim = (int)fc->ne[1];
    const int Np = G * G, M = v->mlp_dim;
    if (vt_matrix(c, "v.patch_embd.weight", 0, 3 * P * P, E, 0, 0, &v->patch0) ||
        !(v->cls = vt_tensor(c, "v.class_embd", 0, E, 0, 0, 0)) ||
        !(v->pos = vt_tensor(c, "v.position_embd.weight", 0, E, Np + 1, 0, 0)) ||
        vt_matrix(c, "mm.model.mlp.1.weight", 0, (int64_t)E * s * s, M, 0, 0, &v->mlp1_w) ||
        vt_matrix(c, "mm.model.mlp.2.weight", 0, M, M, 0, 0, &v->mlp2_w) ||
        vt_matrix(c, "mm.model.fc.weight", 0, M, v->out_dim, 0, 0, &v->fc_w))
        return -1;
    v->pre_w = vt_tensor(c, "v.pre_ln.weight", 1, E, 0, 0, 0);
    v->pre_b = v->pre_w ? vt_tensor(c, "v.pre_ln.bias", 0, E, 0, 0, 0) : NULL;
    v->post_w = vt_tensor(c, "v.post_ln.weight", 1, E, 0, 0, 0);
    v->post_b = v->post_w ? vt_tensor(c, "v.post_ln.bias", 0, E, 0, 0, 0) : NULL;
    if ((v->pre_w && !v->pre_b) || (v->post_w && !v->post_b)) return -1;
#define TM(field, fmt, ne0, ne1)                                                                           \
    do {                                                                                                   \
        snprintf(n, sizeof n, fmt, il);                                                                    \
        if (vt_matrix(c, n, 0, ne0, ne1, 0, 0, &l->field)) return -1;                                      \
    } while (0)
#define T(field, fmt, ne0, ne1)                                                                            \
    do {                                                                                                   \
        snprintf(n, sizeof n, fmt, il);                                                                    \
        if (!(l->field = vt_tensor(c, n, 0, ne0, ne1, 0, 0))) return -1;                                   \
    } while (0)
    for (int il = 0; il < v->n_layer; il++) {
        vlayer *l = &v->layers[il];
        T(ln1_w, "v.blk.%d.ln1.weight", E, 0);
        T(ln1_b, "v.blk.%d.ln1.bias", E, 0);
        TM(o_w, "v.blk.%d.attn_out.weight", E, E);
        T(o_b, "v.blk.%d.attn_out.bias", E, 0);
        T(ln2_w, "v.blk.%d.ln2.weight", E, 0);
        T(ln2_b, "v.blk.%d.ln2.bias", E, 0);
        TM(up_w, "v.blk.%d.ffn_up.weight", E, v->n_ff);
        T(up_b, "v.blk.%d.ffn_up.bias", v->n_ff, 0);
        TM(down_w, "v.blk.%d.ffn_down.weight", v->n_ff, E);
        T(down_b, "v.blk.%d.ffn_down.bias", E, 0);
        /* q, k and v as one product: their rows one after the other, their biases likewise */
        vt_mat qkv[3];
        float *b = vt_owned(c, (size_t)3 * E);
        if (!b) return -1;
        static const char *const QKV[3] = { "q", "k", "v" };
        for (int k = 0; k < 3; k++) {
            char wn[64], bn[64];
            snprintf(wn, sizeof wn, "v.blk.%d.attn_%s.weight", il, QKV[k]);
            snprintf(bn, sizeof bn, "v.blk.%d.attn_%s.bias", il, QKV[k]);
            const float *tb = vt_tensor(c, bn, 0, E, 0, 0, 0);
            if (vt_matrix(c, wn, 0, E, E, 0, 0, &qkv[k]) || !tb) return -1;
            memcpy(b + (size_t)k * E, tb, (size_t)E * sizeof *b);
        }
        if (vt_stack(c, qkv, 3, E, E, &l->qkv_w)) return -1;
        l->qkv_b = b;
    }
#undef T
#undef TM
    vt_gelu_init(v);
    return 0;
}

/* llama.cpp's select_best_resolution over its 8 grids (columns x rows of
 * tiles, (1,1) left out, in its order), in float as it computes. */
static void best_grid(int w, int h, int S, int *cw, int *ch)
{
    long max_eff = 0, min_waste = LONG_MAX;
    *cw = *ch = S;
    for (int x = 1; x <= 3; x++)
        for (int y = 1; y <= 3; y++) {
            if (x == 1 && y == 1) continue;
            const int W = x * S, H = y * S;
            const float sw = (float)W / (float)w, sh = (float)H / (float)h, sc = sw < sh ? sw : sh;
            const long tw = (long)((float)w * sc), th = (long)((float)h * sc);
            const long eff = tw * th < (long)w * h ? tw * th : (long)w * h, waste = (long)W * H - eff;
            if (eff > max_eff || (eff == max_eff && waste < min_waste)) {
                *cw = W;
                *ch = H;
                max_eff = eff;
                min_waste = waste;
            }
        }
}

/* The 2-D RoPE of one head of width d at patch (col px, row py): adjacent pairs, the first d/2 dims by
 * px, the second by py, angles pos * ts^i built by repeated multiplication, ts = 10000^(-2/(d/2)). */
static void rope2d(float *h, int d, float px, float py)
{
    const float ts = powf(10000.0f, -2.0f / (float)(d / 2));
    for (int half = 0; half < 2; half++) {
        float th = half ? py : px;
        float *x = h + half * (d / 2);
        for (int i = 0; i < d / 4; i++) {
            const float cs = cosf(th), sn = sinf(th), x0 = x[2 * i], x1 = x[2 * i + 1];
            x[2 * i] = x0 * cs - x1 * sn;
            x[2 * i + 1] = x0 * sn + x1 * cs;
            th *= ts;
        }
    }
}

/* One S x S slice (planar normalised pixels) into Mt rows of out_dim at out. */
static int slice(const vision_model *v, const float *pix, float *out)
{
    const int P = v->patch, E = v->n_embd, S = v->image_size, G = S / P, Np = G * G, n = Np + 1, s = v->merge;
    const int F = v->n_ff, PP3 = 3 * P * P, Gm = G / s, Mt = Gm * Gm, M = v->mlp_dim, T = pool_size(v->pool);
    const int wide = F > PP3 ? F : PP3, cols = wide > E * s * s ? wide : E * s * s;
    float *X = malloc((size_t)n * E * sizeof *X), *H = malloc((size_t)n * 3 * E * sizeof *H);
    float *A = malloc((size_t)n * E * sizeof *A), *N = malloc((size_t)n * cols * sizeof *N);
    float *U = malloc((size_t)n * cols * sizeof *U), *B = malloc((size_t)n * E * sizeof *B);
    float *Sc = malloc((size_t)T * n * sizeof *Sc), *Z = malloc((size_t)Mt * M * sizeof *Z);
    int rc = -1;
    if (!X || !H || !A || !N || !U || !B || !Sc || !Z) goto out;
    /* the unfold: patch (oy, ox) in raster order, each as (channel, row, column) */
    for (int t = 0; t < Np; t++) {
        const int oy = t / G, ox = t % G;
        float *col = N + (size_t)t * PP3;
        for (int c = 0; c < 3; c++)
            for (int ky = 0; ky < P; ky++)
                memcpy(col + (c * P + ky) * P, pix + (size_t)c * S * S + (size_t)(oy * P + ky) * S + (size_t)ox * P,
                       (size_t)P * sizeof *col);
    }
    vt_linear(v, &v->patch0, NULL, N, Np, PP3, E, X);
    memcpy(X + (size_t)Np * E, v->cls, (size_t)E * sizeof *X); /* the class token last */
    for (size_t i = 0; i < (size_t)n * E; i++) X[i] += v->pos[i];
    if (v->pre_w)
        for (int t = 0; t < n; t++) {
            vt_layer_norm(X + (size_t)t * E, v->pre_w, v->pre_b, E, v->eps, B);
            memcpy(X + (size_t)t * E, B, (size_t)E * sizeof *B);
        }
    for (int il = 0; il < v->n_layer; il++) {
        const vlayer *l = &v->layers[il];
        for (int t = 0; t < n; t++) vt_layer_norm(X + (size_t)t * E, l->ln1_w, l->ln1_b, E, v->eps, N + (size_t)t * E);
        vt_linear(v, &l->qkv_w, l->qkv_b, N, n, E, 3 * E, H);
        for (int t = 0; t < Np; t++) /* the class token at position 0: not turned */
            for (int h = 0; h < v->n_head; h++) {
                const float px = (float)(t % G + 1), py = (float)(t / G + 1);
                rope2d(H + (size_t)t * 3 * E + h * v->d_head, v->d_head, px, py);
                rope2d(H + (size_t)t * 3 * E + E + h * v->d_head, v->d_head, px, py);
            }
        vt_attention(v, H, A, Sc, n);
        vt_linear(v, &l->o_w, l->o_b, A, n, E, E, B);
        for (size_t i = 0; i < (size_t)n * E; i++) X[i] = B[i] + X[i];
        for (int t = 0; t < n; t++) vt_layer_norm(X + (size_t)t * E, l->ln2_w, l->ln2_b, E, v->eps, N + (size_t)t * E);
        vt_linear(v, &l->up_w, l->up_b, N, n, E, F, U);
        vt_gelu(v, U, (size_t)n * F);
        vt_linear(v, &l->down_w, l->down_b, U, n, F, E, B);
        for (size_t i = 0; i < (size_t)n * E; i++) X[i] = X[i] + B[i];
    }
    if (v->post_w)
        for (int t = 0; t < n; t++) {
            vt_layer_norm(X + (size_t)t * E, v->post_w, v->post_b, E, v->eps, B);
            memcpy(X + (size_t)t * E, B, (size_t)E * sizeof *B);
        }
    /* pixel shuffle, llama.cpp's order: merged token t takes column t / Gm, row t % Gm of the merged
     * grid; feature j = c + E (dx + s dy) of patch (row * s + dy, column * s + dx) */
    const int W = E * s * s;
    for (int t = 0; t < Mt; t++) {
        const int xq = t / Gm, yq = t % Gm;
        for (int dy = 0; dy < s; dy++)
            for (int dx = 0; dx < s; dx++)
                memcpy(N + (size_t)t * W + (size_t)E * (dx + s * dy),
                       X + ((size_t)(yq * s + dy) * G + (size_t)(xq * s + dx)) * E, (size_t)E * sizeof *X);
    }
    vt_linear(v, &v->mlp1_w, NULL, N, Mt, W, M, Z);
    vt_gelu(v, Z, (size_t)Mt * M);
    vt_linear(v, &v->mlp2_w, NULL, Z, Mt, M, M, U);
    vt_gelu(v, U, (size_t)Mt * M);
    vt_linear(v, &v->fc_w, NULL, U, Mt, M, v->out_dim, out);
    rc = 0;
out:
    free(X); free(H); free(A); free(N); free(U); free(B); free(Sc); free(Z);
    return rc;
}

int vl4_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny, char *err,
               size_t errlen)
{
    const int S = v->image_size, G = S / v->patch, Gm = G / v->merge, Mt = Gm * Gm, D = v->out_dim;
    int cw = 0, ch = 0, tiles = 0;
    image_rgb grid = { 0 }, ov = { 0 }, tile = { 0 };
    if (img->w > S || img->h > S) { /* tiles, then the overview */
        best_grid(img->w, img->h, S, &cw, &ch);
        tiles = (cw / S) * (ch / S);
        if (vp_resize_pad(img, cw, ch, &grid) != 0) goto oom;
    }
    if (vp_resize(img, S, S, &ov) != 0) goto oom;
    const int n_slices = tiles + 1;
    float *Y = malloc((size_t)n_slices * Mt * D * sizeof *Y), *pix = malloc((size_t)3 * S * S * sizeof *pix);
    tile.w = tile.h = S;
    tile.rgb = tiles ? malloc((size_t)S * S * 3) : NULL;
    if (!Y || !pix || (tiles && !tile.rgb)) { free(Y); free(pix); goto oom; }
    int rc = 0;
    for (int k = 0; k < n_slices && rc == 0; k++) {
        const image_rgb *src = &ov;
        if (k < tiles) { /* row by row */
            const int ty = k / (cw / S), tx = k % (cw / S);
            for (int y = 0; y < S; y++)
                memcpy(tile.rgb + (size_t)y * S * 3, grid.rgb + ((size_t)(ty * S + y) * cw + (size_t)tx * S) * 3,
                       (size_t)S * 3);
            src = &tile;
        }
        vp_normalize(src, v->mean, v->std, pix);
        rc = slice(v, pix, Y + (size_t)k * Mt * D);
    }
    free(pix);
    free(grid.rgb);
    free(ov.rgb);
    free(tile.rgb);
    if (rc) {
        free(Y);
        snprintf(err, errlen, "out of memory for a %d x %d picture", img->w, img->h);
        return -1;
    }
    *out = Y;
    *n_tokens = n_slices * Mt;
    *nx = n_slices * Mt; /* one row of plain positions */
    *ny = 1;
    return 0;
oom:
    free(grid.rgb);
    free(ov.rgb);
    snprintf(err, errlen, "out of memory for a %d x %d picture", img->w, img->h);
    return -1;
}
