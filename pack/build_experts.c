/* build_experts.c: the routed experts -> experts.bin, one 4096-aligned blob
 * per (layer, expert) holding its gate, up (or fused gate_up) and down parts. */
#include "pack/build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert/transcode.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_types.h"
#include "formats/hadamard.h"
#include "formats/imatrix.h"
#include "formats/iq3.h"
#include "formats/radgram.h"

#include <sys/stat.h>
#include "formats/tensor_names.h"
#include "pack/expert_src.h"


/* The importance row for expert e of t, and which kind it is. */
static const float *importance_for(const imatrix *im, const pk_tensor *t, int e, int *kind)
{
    *kind = IMP_NONE;
    if (!im) return NULL;
    char key[80];
    tensor_label(key, sizeof key, EXPERT_PART_ROLES[t->part], t->layer);
    const imatrix_entry *en = imatrix_find(im, key);
    if (!en) return NULL;
    /* llama.cpp's .dat stores an expert tensor's columns expert after expert */
    if (en->n_expert == 1 && en->n_cols == t->ne[0] * t->n_expert) {
        *kind = IMP_EXPERT;
        return en->importance + (size_t)e * (size_t)t->ne[0];
    }
    if (en->n_cols != t->ne[0]) return NULL;
    if (en->n_expert == t->n_expert) { *kind = IMP_EXPERT; return en->importance + (size_t)e * (size_t)en->n_cols; }
    if (en->n_expert == 1) { *kind = IMP_LAYER; return en->importance; }
    return NULL;
}

static int check_importance(const imatrix *im, const pk_tensor *t, char *err, size_t errlen)
{
    if (!im) return 0;
    char key[80];
    tensor_label(key, sizeof key, EXPERT_PART_ROLES[t->part], t->layer);
    const imatrix_entry *en = imatrix_find(im, key);
    if (!en) return 0;
    if (en->n_expert == 1 && en->n_cols == t->ne[0] * t->n_expert) return 0;
    if (en->n_cols != t->ne[0] || (en->n_expert != 1 && en->n_expert != t->n_expert)) {
        snprintf(err, errlen, "imatrix entry %s is %lld wide for %lld experts but %s is %lld wide for %d: "
                 "it was recorded on another model", key, (long long)en->n_cols, (long long)en->n_expert,
                 t->name, (long long)t->ne[0], t->n_expert);
        return -1;
    }
    return 0;
}

int build_plan_experts(pack_layout *L, const source *s, const imatrix *im, int keep, int drop_nextn,
                       int64_t rotate, uint64_t *experts_bytes, char *err, size_t errlen)
{
    uint64_t pos = 0;
    const int dropped = build_first_dropped_layer(s, drop_nextn);
    int max_layer = expert_src_max_layer(s);
    /* a layer index past the model's blocks is a broken or hostile file, not a reason to plan millions of layers */
    const char *arch = gguf_get_str(source_meta(s), "general.architecture");
    char key[128];
    uint64_t blocks = 0;
    snprintf(key, sizeof key, "%s.block_count", arch ? arch : "");
    if (gguf_get_uint(source_meta(s), key, &blocks) != 0) blocks = 65536;
    if (max_layer >= 0 && (uint64_t)max_layer >= blocks) {
        char lb[32];
        snprintf(err, errlen, "%s: a routed-expert tensor in layer %d of a model with %llu blocks",
                 tensor_layer_label(lb, sizeof lb, max_layer), max_layer, (unsigned long long)blocks);
        return -1;
    }
    if (max_layer >= dropped) max_layer = dropped - 1; /* llama.cpp's next-token-prediction layers */
    L->layers = calloc((size_t)max_layer + 2, sizeof *L->layers);
    if (!L->layers) { snprintf(err, errlen, "out of memory"); return -1; }
    for (int layer = 0; layer <= max_layer; layer++) {
        pk_layer *y = &L->layers[L->n_layers];
        uint64_t off = 0;
        for (int kind = 0; kind < PACK_MAX_PARTS; kind++) {
            expert_src x;
            const int found = expert_src_find(s, layer, kind, &x, err, errlen);
            if (found < 0) return -1;
            if (!found) continue;
            pk_tensor *t = pack_layout_add(L);
            if (!t) { snprintf(err, errlen, "out of memory"); return -1; }
            /* one name for both layouts: the merged tensor's */
            tensor_name(t->name, sizeof t->name, EXPERT_PART_ROLES[kind], layer);
            t->file = PACK_EXPERTS;
            t->n_dims = 3;
            const int64_t K = x.K, N = x.N;
            t->ne[0] = K;
            t->ne[1] = N;
            t->ne[2] = x.n_expert;
            t->ne[3] = 1;
            t->elements = K * N * x.n_expert;
            t->src_type = x.type;
            t->layer = layer;
            t->part = kind;
            t->n_expert = x.n_expert;
            if (!keep && K % IQ3_QK == 0) {
                t->d.form = FORM_IQ3;
                t->how = x.type == GGML_TYPE_IQ3_XXS ? EXP_TRANSCODED : EXP_ENCODED;
            } else {
                if (transcode_form_for(x.type, &t->d) != 0) {
                    snprintf(err, errlen, "%s: type %s has no decoder; refused rather than approximated", t->name,
                             ggml_type_info(x.type) ? ggml_type_info(x.type)->name : "?");
                    return -1;
                }
                t->how = EXP_CANONICAL;
            }
            size_t b[PLANE_COUNT];
            if (planes_sizes(&t->d, K, N, b) != 0) {
                snprintf(err, errlen, "%s: form %s does not fit [%lld, %lld]", t->name, pack_form_name(t->d.form),
                         (long long)K, (long long)N);
                return -1;
            }
            uint64_t p = 0;
            for (int k = 0; k < PLANE_COUNT; k++) {
                if (!b[k]) continue;
                t->plane_off[k] = p;
                t->plane_bytes[k] = b[k];
                p += b[k]; /* contiguous, as the loader reads one span */
            }
            t->part_bytes = p;
            if (t->d.form == FORM_IQ3) {
                if (check_importance(im, t, err, errlen)) return -1;
                if (t->how == EXP_ENCODED) importance_for(im, t, 0, &t->importance);
            }
            /* rotation goes with encoding: an IQ3_XXS source moves losslessly, unrotated */
            if (rotate && t->how == EXP_ENCODED) {
                t->rotate = rotate > 0 ? rotate : hadamard_default_block(K);
                if (!hadamard_block_ok(K, t->rotate)) {
                    snprintf(err, errlen, "%s: --rotate hadamard:%lld does not divide its rows of %lld", t->name,
                             (long long)t->rotate, (long long)K);
                    return -1;
                }
            }
            if (y->n_parts && y->n_expert != t->n_expert) {
                snprintf(err, errlen, "%s: %d experts where layer %d's other parts have %d", t->name, t->n_expert,
                         layer, y->n_expert);
                return -1;
            }
            off = pk_align_up(off, PACK_ALIGN);
            y->part_tensor[y->n_parts] = L->n_tensors - 1;
            y->part_off[y->n_parts++] = off;
            y->n_expert = t->n_expert;
            off += p;
        }
        if (!y->n_parts) continue;
        y->layer = layer;
        y->blob_bytes = off;
        y->stride = pk_align_up(off, PACK_EXPERT_ALIGN);
        y->base = pk_align_up(pos, PACK_EXPERT_ALIGN);
        pos = y->base + y->stride * (uint64_t)y->n_expert;
        L->n_layers++;
    }
    *experts_bytes = pos;
    return 0;
}

/* ggml [fp16 d][64 idx][8 words] -> container [64 idx][8 words][fp16 2d].
 * Doubling an fp16 is exact (one exponent step, or a mantissa shift for a
 * subnormal) except at the top exponent, where it would overflow: -1 then. */
static int iq3xxs_to_container(const uint8_t *src, int64_t nblocks, uint8_t *dst)
{
    for (int64_t b = 0; b < nblocks; b++, src += 98, dst += 98) {
        uint16_t d;
        memcpy(&d, src, 2);
        const unsigned ex = (d >> 10) & 0x1F;
        uint16_t d2;
        if (ex == 0) d2 = (uint16_t)((d & 0x8000) | ((d & 0x3FF) << 1));
        else if (ex < 30) d2 = (uint16_t)(d + 0x400);
        else return -1;
        memcpy(dst, src + 2, 96);
        memcpy(dst + 96, &d2, 2);
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n, uint64_t off, char *err, size_t errlen)
{
    const uint8_t *p = buf;
    while (n) {
        const ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w <= 0) {
            snprintf(err, errlen, "%s: write failed: %s", PACK_FILE_NAMES[PACK_EXPERTS],
                     w < 0 ? strerror(errno) : "no progress");
            return -1;
        }
        p += w; n -= (size_t)w; off += (uint64_t)w;
    }
    return 0;
}

/* The gram file of expert e of t in dir (any rank's): 1 with path set, 0 when there is none. */
static int gram_path(const char *dir, const pk_tensor *t, int e, char *path, size_t n)
{
    const char *stem = EXPERT_PART_ROLES[t->part] == TN_FFN_DOWN_EXPS ? "ffn_down_input" : "ffn_down_exps";
    struct stat st;
    for (int rank = 0; rank < 1024; rank++) {
        snprintf(path, n, "%s/gram.r%d.blk.%d.%s.%d.bin", dir, rank, t->layer, stem, e);
        if (stat(path, &st) == 0) return 1;
    }
    return 0;
}

static int gram_width_ok(const char *path, const radgram_header *h, const pk_tensor *t, char *err, size_t errlen)
{
    if ((int64_t)h->k == t->ne[0]) return 0;
    snprintf(err, errlen, "%s: a gram %u wide, but %s takes %lld inputs: it was recorded on another model", path,
             h->k, t->name, (long long)t->ne[0]);
    return -1;
}

/* A gram recorded in the model's own basis (domain 0) serves any part (a
 * rotated part's is rotated here, exactly); one recorded in a Hadamard
 * basis serves only a part rotated by that block. */
static int gram_domain_ok(const char *path, const radgram_header *h, const pk_tensor *t, char *err, size_t errlen)
{
    if (h->domain == 0 || (int64_t)h->domain == t->rotate) return 0;
    if (t->rotate)
        snprintf(err, errlen, "%s: recorded with inputs rotated by Hadamard blocks of %u, but %s is built with blocks "
                 "of %lld: record again with `strata calibrate --rotate hadamard:%lld`, or build with that block",
                 path, h->domain, t->name, (long long)t->rotate, (long long)t->rotate);
    else
        snprintf(err, errlen, "%s: recorded with inputs rotated by Hadamard blocks of %u, but %s is built unrotated: "
                 "build with --rotate hadamard:%u, or record without --rotate", path, h->domain, t->name, h->domain);
    return -1;
}

int build_check_grams(const pack_layout *L, const char *dir, int l0, int l1, char *err, size_t errlen)
{
    for (int l = l0; l < l1 && l < L->n_layers; l++) {
        const pk_layer *y = &L->layers[l];
        for (int p = 0; p < y->n_parts; p++) {
            const pk_tensor *t = &L->tensors[y->part_tensor[p]];
            if (t->how != EXP_ENCODED) continue;
            for (int e = 0; e < y->n_expert; e++) {
                char path[4200];
                radgram_header h;
                float *diag = NULL;
                if (!gram_path(dir, t, e, path, sizeof path)) continue;
                if (radgram_read(path, &h, &diag, err, errlen)) return -1;
                free(diag);
                if (gram_width_ok(path, &h, t, err, errlen) || gram_domain_ok(path, &h, t, err, errlen)) return -1;
            }
        }
    }
    return 0;
}

/* GPTQ's factor for expert e of t from its gram in dir (any rank's file;
 * gate and up: the experts' input, ffn_down_exps.E; down: its own input,
 * ffn_down_input.E): 1 with *u set (malloc'd) and *diag its diagonal; 0
 * when the expert has no gram or too few rows (the imatrix path, counted);
 * -1 with err. A rotated part's factor is of its rotated inputs' gram. */
static int gptq_factor_for(const char *dir, const pk_tensor *t, int e, double **u, float **diag,
                           expert_counts *cnt, char *err, size_t errlen)
{
    char path[4200];
    if (!gram_path(dir, t, e, path, sizeof path)) { cnt->gptq_few++; return 0; }
    radgram_header h;
    float *g = NULL;
    char e2[600];
    if (radgram_read_matrix(path, &h, &g, e2, sizeof e2)) { snprintf(err, errlen, "%s", e2); return -1; }
    const int64_t k = t->ne[0];
    if (gram_width_ok(path, &h, t, err, errlen) || gram_domain_ok(path, &h, t, err, errlen)) {
        free(g);
        return -1;
    }
    if (h.rows < 4 * (uint64_t)k) { cnt->gptq_few++; free(g); return 0; }
    if (t->rotate && !h.domain) hadamard_gram(g, k, t->rotate); /* the rotated inputs' gram */
    *u = malloc((size_t)k * (size_t)k * sizeof **u);
    *diag = malloc((size_t)k * sizeof **diag);
    if (!*u || !*diag) { snprintf(err, errlen, "out of memory for GPTQ's %lld x %lld factor", (long long)k, (long long)k); free(g); return -1; }
    for (int64_t i = 0; i < k; i++) (*diag)[i] = g[i * k + i];
    const int rc = iq3_gptq_factor(g, k, 0.01, *u, e2, sizeof e2);
    free(g);
    if (rc) { snprintf(err, errlen, "%s: %s", path, e2); return -1; }
    cnt->gptq++;
    return 1;
}

/* One expert's part (src: its slice of the source) into buf (t->part_bytes). */
static int encode_part(const pk_tensor *t, const uint8_t *src, const imatrix *im, const char *grams, int e,
                       int threads, uint8_t *buf, float *tmp, expert_counts *cnt, char *err, size_t errlen)
{
    const int64_t K = t->ne[0], N = t->ne[1];
    if (t->how == EXP_CANONICAL) {
        uint8_t *plane[PLANE_COUNT] = { 0 };
        for (int k = 0; k < PLANE_COUNT; k++)
            if (t->plane_bytes[k]) plane[k] = buf + t->plane_off[k];
        if (transcode(&t->d, t->src_type, src, K, N, plane) != 0) {
            snprintf(err, errlen, "%s: transcode failed for expert %d", t->name, e);
            return -1;
        }
        return 0;
    }
    if (t->how == EXP_TRANSCODED && iq3xxs_to_container(src, N * K / IQ3_QK, buf) == 0) return 0;
    if (t->how == EXP_TRANSCODED) cnt->reencoded++;
    if (ggml_dequantize(t->src_type, src, tmp, N * K) != 0) {
        snprintf(err, errlen, "%s: type has no decoder", t->name);
        return -1;
    }
    int kind;
    iq3_encode_opts o = { .mode = IQ3_MODE_QUALITY, .n_threads = threads,
                          .importance = importance_for(im, t, e, &kind) };
    double *u = NULL;
    float *diag = NULL, *rot_imp = NULL;
    if (t->rotate) {
        /* the rows as stored (w R^T), and the importance of the rotated
         * inputs: from an imatrix (a diagonal Gram D) that is R D R^T's
         * diagonal, each block's mean */
        hadamard_rows(tmp, N, K, t->rotate);
        if (o.importance) {
            if (!(rot_imp = malloc((size_t)K * sizeof *rot_imp))) { snprintf(err, errlen, "out of memory"); return -1; }
            for (int64_t b0 = 0; b0 < K; b0 += t->rotate) {
                double sum = 0.0;
                for (int64_t i = b0; i < b0 + t->rotate; i++) sum += o.importance[i];
                for (int64_t i = b0; i < b0 + t->rotate; i++) rot_imp[i] = (float)(sum / (double)t->rotate);
            }
            o.importance = rot_imp;
        }
    }
    const int g = grams && t->how == EXP_ENCODED ? gptq_factor_for(grams, t, e, &u, &diag, cnt, err, errlen) : 0;
    if (g < 0) { free(rot_imp); return -1; }
    if (g) {
        o.gptq_u = u;
        /* the gram's diagonal is the imatrix's; a rotated part's is the exact one */
        if (!o.importance || t->rotate) o.importance = diag;
    }
    char e2[200];
    const int rc = iq3_encode(tmp, N, K, &o, buf, e2, sizeof e2);
    free(u);
    free(diag);
    free(rot_imp);
    if (rc != 0) {
        snprintf(err, errlen, "%s expert %d: %s", t->name, e, e2);
        return -1;
    }
    return 0;
}

int build_write_experts(const pack_layout *L, const source *s, const imatrix *im, const char *grams, int fd,
                        int threads, int l0, int l1, uint64_t off0, build_progress *pg, expert_counts *cnt,
                        char *err, size_t errlen)
{
    int rc = 0;
    for (int l = l0; l < l1 && l < L->n_layers && !rc; l++) {
        const pk_layer *y = &L->layers[l];
        for (int p = 0; p < y->n_parts && !rc; p++) {
            const pk_tensor *t = &L->tensors[y->part_tensor[p]];
            expert_src x;
            if (expert_src_find(s, t->layer, t->part, &x, err, errlen) != 1) return -1;
            const size_t n = (size_t)t->ne[0] * (size_t)t->ne[1];
            uint8_t *buf = calloc(1, t->part_bytes);
            float *tmp = malloc(n * sizeof(float));
            if (!buf || !tmp) { snprintf(err, errlen, "out of memory"); rc = -1; }
            for (int e = 0; e < y->n_expert && !rc; e++) {
                rc = encode_part(t, expert_src_slice(s, &x, e), im, grams, e, threads, buf, tmp, cnt, err, errlen);
                if (!rc) rc = write_all(fd, buf, t->part_bytes,
                                        y->base + (uint64_t)e * y->stride + y->part_off[p] - off0, err, errlen);
                build_progress_step(pg, x.slice_bytes, t->name);
                if (!rc && build_interrupted()) { snprintf(err, errlen, "interrupted"); rc = -1; }
            }
            free(buf);
            free(tmp);
            expert_src_release(s, &x);
        }
    }
    return rc;
}
