/* vision.c: see vision.h. The projector types' table: each row's loader
 * and encoder live in a file of their own (vision_impl.h); the
 * projector's settings come from the keys llama.cpp's mtmd reads. */
#include "runtime/vision/vision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vision/vision_impl.h"

/* One row per projector type: its clip.projector_type, its loader and
 * encoder, and the text mtmd puts before and after a picture's rows. */
static const struct {
    const char *name;
    int (*load)(loadctx *);
    int (*encode)(const vision_model *, const image_rgb *, float **, int *, int *, int *, char *, size_t);
    const char *begin, *end;
} PROJECTORS[] = {
    { "qwen3vl_merger", vq_load, vq_encode, "<|vision_start|>", "<|vision_end|>" },
    { "llama4", vl4_load, vl4_encode, "<|image_start|>", "<|image_end|>" },
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
    if (row < 0) { /* the list is the table's, so it cannot go stale */
        int n = snprintf(err, errlen, "%s: vision projector '%s' is not supported (supported:", path, proj ? proj : "none");
        for (size_t i = 0; i < sizeof PROJECTORS / sizeof PROJECTORS[0] && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "", PROJECTORS[i].name);
        if (n > 0 && (size_t)n < errlen) snprintf(err + n, errlen - (size_t)n, ")");
    } else if (!v) {
        snprintf(err, errlen, "%s: out of memory", path);
    }
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
        } else if (v->wide_cols &&
                   !(v->wide = malloc((size_t)pool_size(v->pool) * VT_LIN_ROWS * (size_t)v->wide_cols * sizeof(float)))) {
            snprintf(err, errlen, "%s: out of memory", path);
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
    free(v->wide);
    if (v->pool) pool_free(v->pool);
    free(v);
}

const char *vision_projector(const vision_model *v) { return v->projector; }
const char *vision_marker_begin(const vision_model *v) { return PROJECTORS[v->row].begin; }
const char *vision_marker_end(const vision_model *v) { return PROJECTORS[v->row].end; }
int vision_width(const vision_model *v) { return v->out_dim * (1 + v->n_ds); }
size_t vision_weight_bytes(const vision_model *v) { return v->weight_bytes; }

int vision_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny,
                  char *err, size_t errlen)
{
    return PROJECTORS[v->row].encode(v, img, out, n_tokens, nx, ny, err, errlen);
}
