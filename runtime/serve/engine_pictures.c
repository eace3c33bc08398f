/* engine_pictures.c: see engine_pictures.h. */
#include "runtime/serve/engine_pictures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct engine_pictures {
    picture_prompt pp;
    size_t *at; /* each chunk's first slot in the prompt */
};

/* FNV-1a over the size and the pixels. */
static uint64_t picture_hash(const image_rgb *im)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const int32_t wh[2] = { im->w, im->h };
    const uint8_t *b = (const uint8_t *)wh;
    for (size_t i = 0; i < sizeof wh; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    const size_t n = (size_t)im->w * (size_t)im->h * 3;
    for (size_t i = 0; i < n; i++) h = (h ^ im->rgb[i]) * 0x100000001b3ull;
    return h;
}

/* Row r of the picture with hash h: an id below 0 (bits of h mixed with r). */
static int32_t row_id(uint64_t h, int r)
{
    const uint64_t x = (h ^ ((uint64_t)r * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    return -1 - (int32_t)((x >> 33) & 0x3fffffff);
}

int ep_tokenize(vision_model *v, pthread_mutex_t *mu, const tokenizer *t, const char *text, size_t len,
                bool add_special, const image_rgb *pics, size_t n_pics, int32_t **ids, size_t *n_ids,
                engine_pictures **out, char *err, size_t errlen)
{
    *ids = NULL;
    *n_ids = 0;
    *out = NULL;
    engine_pictures *p = calloc(1, sizeof *p);
    char *s = malloc(len + 1);
    if (!p || !s || n_pics > 64) {
        snprintf(err, errlen, n_pics > 64 ? "more than 64 pictures" : "out of memory");
        free(p);
        free(s);
        return -1;
    }
    memcpy(s, text, len);
    s[len] = '\0';
    pthread_mutex_lock(mu);
    int rc = picture_prompt_make(&p->pp, v, t, s, add_special, pics, (int)n_pics, err, errlen);
    pthread_mutex_unlock(mu);
    free(s);
    p->at = rc == 0 ? malloc((size_t)p->pp.n * sizeof *p->at) : NULL;
    int32_t *d = rc == 0 ? malloc(p->pp.n_slots * sizeof *d) : NULL;
    if (rc == 0 && (!p->at || !d)) { snprintf(err, errlen, "out of memory"); rc = -1; }
    if (rc) {
        free(d);
        ep_free(p);
        return -1;
    }
    size_t k = 0;
    int pic = 0;
    for (int i = 0; i < p->pp.n; i++) {
        const picture_chunk *c = &p->pp.c[i];
        p->at[i] = k;
        if (!c->rows) {
            memcpy(d + k, c->ids, c->n_ids * sizeof *d);
            k += c->n_ids;
            continue;
        }
        const uint64_t h = picture_hash(&pics[pic++]);
        for (int r = 0; r < c->nx * c->ny; r++) d[k++] = row_id(h, r);
    }
    *ids = d;
    *n_ids = k;
    *out = p;
    return 0;
}

size_t ep_keep(const engine_pictures *p, size_t keep)
{
    for (int i = 0; p && i < p->pp.n; i++) {
        const picture_chunk *c = &p->pp.c[i];
        const size_t n = c->rows ? (size_t)c->nx * (size_t)c->ny : 0;
        if (c->rows && keep > p->at[i] && keep < p->at[i] + n) return p->at[i];
    }
    return keep;
}

int ep_eval(const engine_pictures *p, model *m, size_t from, float *logits, char *err, size_t errlen)
{
    for (int i = 0; i < p->pp.n; i++) {
        const picture_chunk *c = &p->pp.c[i];
        const size_t n = c->rows ? (size_t)c->nx * (size_t)c->ny : c->n_ids;
        if (p->at[i] + n <= from) continue; /* held already */
        int rc;
        if (c->rows) {
            rc = model_forward_image(m, c->rows, c->width, c->nx, c->ny, err, errlen);
        } else {
            const size_t skip = from > p->at[i] ? from - p->at[i] : 0;
            rc = model_forward(m, c->ids + skip, (int)(c->n_ids - skip), logits, false, err, errlen);
        }
        if (rc) return -1;
    }
    return 0;
}

void ep_free(engine_pictures *p)
{
    if (!p) return;
    picture_prompt_free(&p->pp);
    free(p->at);
    free(p);
}
