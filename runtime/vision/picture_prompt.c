/* picture_prompt.c: see picture_prompt.h. */
#include "runtime/vision/picture_prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_markers(const char *s)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, PICTURE_MARKER)); p += strlen(PICTURE_MARKER)) n++;
    return n;
}

static picture_chunk *grow(picture_prompt *pp)
{
    picture_chunk *c = realloc(pp->c, (size_t)(pp->n + 1) * sizeof *c);
    if (!c) return NULL;
    pp->c = c;
    memset(&c[pp->n], 0, sizeof c[pp->n]);
    return &c[pp->n++];
}

/* The tokens of [s, s + len) (with BOS first when bos), appended to the
 * last chunk when it is text, else to a new one; nothing for no tokens. */
static int add_text(picture_prompt *pp, const tokenizer *t, const char *s, size_t len, bool bos, char *err,
                    size_t errlen)
{
    int32_t *ids = NULL;
    size_t n = 0;
    if (tokenizer_encode(t, s, len, bos, true, &ids, &n)) {
        snprintf(err, errlen, "the prompt could not be tokenized");
        return -1;
    }
    if (n == 0) { free(ids); return 0; }
    picture_chunk *c = pp->n > 0 && !pp->c[pp->n - 1].rows ? &pp->c[pp->n - 1] : grow(pp);
    int32_t *all = c ? realloc(c->ids, (c->n_ids + n) * sizeof *all) : NULL;
    if (!all) { free(ids); snprintf(err, errlen, "out of memory"); return -1; }
    memcpy(all + c->n_ids, ids, n * sizeof *ids);
    free(ids);
    c->ids = all;
    c->n_ids += n;
    pp->n_slots += n;
    return 0;
}

int picture_prompt_make(picture_prompt *pp, const vision_model *v, const tokenizer *t, const char *text,
                        bool add_special, const image_rgb *pics, int n_pics, char *err, size_t errlen)
{
    memset(pp, 0, sizeof *pp);
    const int found = count_markers(text);
    if (found != 0 && found != n_pics) {
        snprintf(err, errlen, "the prompt has %d %s markers for %d picture%s", found, PICTURE_MARKER, n_pics,
                 n_pics == 1 ? "" : "s");
        return -1;
    }
    const char *beg = vision_marker_begin(v), *end = vision_marker_end(v);
    const size_t ml = strlen(PICTURE_MARKER);
    /* BOS alone first (when the vocabulary adds one), then each piece on its own: the text, the
     * begin text, the picture, the end text, as mtmd tokenizes them */
    int rc = add_special ? add_text(pp, t, "", 0, true, err, errlen) : 0;
    const char *p = text;
    for (int pic = 0; rc == 0 && pic < n_pics; pic++) {
        const char *m = found ? strstr(p, PICTURE_MARKER) : p;
        rc = add_text(pp, t, p, (size_t)(m - p), false, err, errlen);
        if (rc == 0) rc = add_text(pp, t, beg, strlen(beg), false, err, errlen);
        picture_chunk *c = rc == 0 ? grow(pp) : NULL;
        if (rc == 0 && !c) { snprintf(err, errlen, "out of memory"); rc = -1; }
        if (rc) break;
        int n_rows = 0;
        char e2[256];
        if (vision_encode(v, &pics[pic], &c->rows, &n_rows, &c->nx, &c->ny, e2, sizeof e2)) {
            snprintf(err, errlen, "picture %d: %s", pic + 1, e2);
            rc = -1;
            break;
        }
        c->width = vision_width(v);
        pp->n_slots += (size_t)n_rows;
        rc = add_text(pp, t, end, strlen(end), false, err, errlen);
        p = found ? m + ml : p;
    }
    if (rc == 0) rc = add_text(pp, t, p, strlen(p), false, err, errlen);
    if (rc == 0 && (pp->n == 0 || pp->c[pp->n - 1].rows)) { /* a projector without an end text */
        snprintf(err, errlen, "the prompt ends with a picture (the model's answer needs text after it)");
        rc = -1;
    }
    if (rc) picture_prompt_free(pp);
    return rc;
}

int picture_prompt_eval(const picture_prompt *pp, int from, model *m, float *logits, char *err, size_t errlen)
{
    for (int i = from < 0 ? 0 : from; i < pp->n; i++) {
        const picture_chunk *c = &pp->c[i];
        const int rc = c->rows ? model_forward_image(m, c->rows, c->width, c->nx, c->ny, err, errlen)
                               : model_forward(m, c->ids, (int)c->n_ids, logits, false, err, errlen);
        if (rc) return -1;
    }
    return 0;
}

void picture_prompt_free(picture_prompt *pp)
{
    for (int i = 0; i < pp->n; i++) {
        free(pp->c[i].ids);
        free(pp->c[i].rows);
    }
    free(pp->c);
    memset(pp, 0, sizeof *pp);
}
