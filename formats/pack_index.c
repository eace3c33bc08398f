/* pack_index.c: index.txt -> pack_index (pack_index.h). One line at a
 * time through a bounded cursor; every number is parsed strictly (no sign
 * where none belongs, no trailing junk, no overflow). The writer is
 * pack_index_write.c. */
#include "formats/pack_index.h"

#include "formats/hadamard.h"
#include "formats/hparam_keys.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE   1024
#define MAX_FIELDS 32
#define MAX_ITEMS  (1 << 20)

typedef struct cur {
    const char *path;
    int line;
    char *err;
    size_t errlen;
    char buf[MAX_LINE + 1];
    char *f[MAX_FIELDS];
    int nf;
} cur;

static int bad(cur *c, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s:%d: ", c->path, c->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < c->errlen) vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int num(cur *c, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi || (*s == '+'))
        return bad(c, "'%s' is not a number in [%" PRId64 ", %" PRId64 "]", s, lo, hi);
    *out = v;
    return 0;
}

static int inum(cur *c, const char *s, int lo, int hi, int *out)
{
    int64_t v;
    if (num(c, s, lo, hi, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int name_copy(cur *c, char *dst, size_t n, const char *s)
{
    if (strlen(s) >= n) return bad(c, "name '%.40s...' is too long", s);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int grow(cur *c, void **arr, int *n, size_t size)
{
    if (*n >= MAX_ITEMS) return bad(c, "too many lines of this kind");
    if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
        void *p = realloc(*arr, (size_t)(*n ? 2 * *n : 1) * size);
        if (!p) return bad(c, "out of memory");
        *arr = p;
    }
    memset((char *)*arr + (size_t)*n * size, 0, size);
    (*n)++;
    return 0;
}

#define BIG ((int64_t)1 << 50)

/* The sums a row states about itself (docs/pack-format.md), so a corrupted
 * row is refused naming its tensor instead of loading shifted planes. */
static int row_sums(cur *c, const pi_tensor *t)
{
    int64_t elems = t->ne0 * t->rows, want_src, want_dst;
    if (t->native_type >= 0 || (t->kind == PI_VERBATIM && !t->code_bits)) {
        want_src = want_dst = t->src_bytes; /* natives are checked against their blocks by the loader */
        if (t->native_type < 0) want_src = want_dst = elems * 2;
    } else if (t->kind == PI_F32) {
        want_src = want_dst = elems * 4;
    } else if (t->kind == PI_BF16_IN_F32 || t->kind == PI_F16_IN_F32) {
        want_src = elems * 4;
        want_dst = elems * 2;
    } else {
        int64_t groups = t->group > 0 ? elems / t->group : -1;
        if (t->group <= 0 || t->ne0 % t->group || (t->code_bits != 2 && t->code_bits != 4 && t->code_bits != 8) ||
            t->codes_bytes != elems * t->code_bits / 8 || t->scales_bytes != groups * 4 ||
            t->offset_bytes != (t->has_offset ? groups * 4 : 0))
            return bad(c, "%s: index row planes (codes %" PRId64 ", scales %" PRId64 ", offsets %" PRId64
                       ") do not fit %" PRId64 " x %" PRId64 " at %d bits, group %d", t->name, t->codes_bytes,
                       t->scales_bytes, t->offset_bytes, t->ne0, t->rows, t->code_bits, t->group);
        want_dst = t->codes_bytes + t->scales_bytes + t->offset_bytes;
        want_src = t->codes_bytes + t->scales_bytes / (t->scales_fp16 ? 2 : 1) +
                   t->offset_bytes / (t->offsets_fp16 ? 2 : 1);
    }
    if (t->src_bytes != want_src || t->dst_bytes != want_dst)
        return bad(c, "%s: index row sizes do not add up: src %" PRId64 " dst %" PRId64 " where the shape and "
                   "widths give %" PRId64 " and %" PRId64, t->name, t->src_bytes, t->dst_bytes, want_src, want_dst);
    return 0;
}

static int row(cur *c, pack_index *x)
{
    if (c->nf != 1 + PI_NCOLS) return bad(c, "a tensor row has %d fields, not 19", c->nf);
    if (grow(c, (void **)&x->t, &x->n_t, sizeof *x->t)) return -1;
    pi_tensor *t = &x->t[x->n_t - 1];
    int64_t v[PI_NCOLS];
    for (int i = 0; i < PI_NCOLS; i++)
        if (num(c, c->f[i + 1], -BIG, BIG, &v[i])) return -1;
    if (name_copy(c, t->name, sizeof t->name, c->f[0])) return -1;
    t->file = (int)v[PI_C_FILE];
    t->kind = (int)v[PI_C_KIND];
    t->src_off = v[PI_C_SRC_OFF]; t->src_bytes = v[PI_C_SRC_BYTES];
    t->dst_off = v[PI_C_DST_OFF]; t->dst_bytes = v[PI_C_DST_BYTES];
    t->ne0 = v[PI_C_NE0]; t->ne1 = v[PI_C_NE1];
    t->code_bits = (int)v[PI_C_CODE_BITS]; t->code_bias = (int)v[PI_C_CODE_BIAS]; t->group = (int)v[PI_C_GROUP];
    t->codebook = (int)v[PI_C_CODEBOOK]; t->has_offset = (int)v[PI_C_HAS_OFFSET];
    t->codes_bytes = v[PI_C_CODES_BYTES]; t->scales_bytes = v[PI_C_SCALES_BYTES];
    t->offset_bytes = v[PI_C_OFFSET_BYTES];
    t->scales_fp16 = (int)v[PI_C_SCALES_FP16]; t->act_kind = (int)v[PI_C_ACT_KIND];
    t->native_type = -1;
    t->line = c->line;
    t->n_dims = t->ne1 ? 2 : 1;
    t->shape[0] = t->ne0; t->shape[1] = t->ne1 ? t->ne1 : 1;
    t->rows = t->ne1 ? t->ne1 : 1;
    if (t->file < 0 || t->file > 1) return bad(c, "%s: dense tensors live in dense.bin or embd.bin (file %d)", t->name, t->file);
    if (t->kind < 0 || t->kind > 3) return bad(c, "%s: unknown kind %d", t->name, t->kind);
    for (int i = PI_C_SRC_OFF; i < PI_NCOLS; i++)
        if (v[i] < 0 && i != PI_C_CODE_BIAS) return bad(c, "%s: a negative size or count", t->name);
    if (t->ne0 < 1) return bad(c, "%s: ne0 %" PRId64, t->name, t->ne0);
    return 0;
}

static pi_tensor *last_row(cur *c, pack_index *x, const char *name)
{
    if (!x->n_t || strcmp(x->t[x->n_t - 1].name, name)) {
        bad(c, "'%s' does not follow the row of tensor %s", c->f[0], name);
        return NULL;
    }
    return &x->t[x->n_t - 1];
}

static int expert(cur *c, pack_index *x)
{
    if (c->nf != 23) return bad(c, "@expert has %d fields, not 23", c->nf);
    if (!x->n_l) return bad(c, "@expert before any @expert_layer");
    if (grow(c, (void **)&x->e, &x->n_e, sizeof *x->e)) return -1;
    pi_expert *e = &x->e[x->n_e - 1];
    if (name_copy(c, e->name, sizeof e->name, c->f[1]) || inum(c, c->f[2], 0, 1 << 20, &e->layer) ||
        inum(c, c->f[3], 0, 3, &e->part) || num(c, c->f[4], 0, BIG, &e->blob_off) ||
        num(c, c->f[5], 0, BIG, &e->part_bytes) || name_copy(c, e->form, sizeof e->form, c->f[6]) ||
        num(c, c->f[7], 1, BIG, &e->ne0) || num(c, c->f[8], 1, BIG, &e->ne1) ||
        inum(c, c->f[9], 0, 8, &e->code_bits) || inum(c, c->f[10], -256, 256, &e->code_bias) ||
        inum(c, c->f[11], 0, 1 << 20, &e->group) || inum(c, c->f[12], 0, 1, &e->codebook) ||
        inum(c, c->f[13], 0, 1, &e->has_offset) || inum(c, c->f[14], 0, 1, &e->scales_fp16) ||
        inum(c, c->f[15], 0, 1, &e->offsets_fp16) || inum(c, c->f[16], -1, 1 << 10, &e->native_type) ||
        inum(c, c->f[17], 0, 1, &e->act_kind))
        return -1;
    int64_t sum = 0;
    for (int k = 0; k < 5; k++) {
        if (num(c, c->f[18 + k], 0, BIG, &e->plane[k])) return -1;
        sum += e->plane[k];
    }
    if (sum != e->part_bytes)
        return bad(c, "%s: expert planes add up to %" PRId64 " bytes, not the part's %" PRId64, e->name, sum,
                   e->part_bytes);
    if (e->layer != x->l[x->n_l - 1].layer) return bad(c, "%s: @expert of layer %d under @expert_layer %d", e->name,
                                                         e->layer, x->l[x->n_l - 1].layer);
    return 0;
}

static int ext(cur *c, pack_index *x)
{
    const char *k = c->f[0];
    if (!strcmp(k, "@shape")) {
        pi_tensor *t = c->nf >= 4 && c->nf <= 6 ? last_row(c, x, c->f[1]) : NULL;
        if (!t) return c->nf >= 4 && c->nf <= 6 ? -1 : bad(c, "@shape needs a name and 2 to 4 dimensions");
        t->n_dims = c->nf - 2;
        t->rows = 1;
        for (int i = 0; i < t->n_dims; i++) {
            if (num(c, c->f[2 + i], 1, BIG, &t->shape[i])) return -1;
            if (i) t->rows *= t->shape[i];
        }
        if (t->shape[0] != t->ne0 || t->shape[1] != t->ne1 || t->rows > BIG / t->ne0)
            return bad(c, "%s: @shape disagrees with its row", t->name);
        return 0;
    }
    if (!strcmp(k, "@offsets_fp16") || !strcmp(k, "@native")) {
        int is_native = k[1] == 'n';
        if (c->nf != (is_native ? 5 : 2)) return bad(c, "%s has %d fields", k, c->nf);
        pi_tensor *t = last_row(c, x, c->f[1]);
        if (!t) return -1;
        if (!is_native) t->offsets_fp16 = 1;
        else if (inum(c, c->f[2], 0, 1 << 10, &t->native_type)) return -1;
        return 0;
    }
    if (!strcmp(k, "@hparam")) {
        if (c->nf != 3) return bad(c, "@hparam needs a key and one value");
        if (grow(c, (void **)&x->h, &x->n_h, sizeof *x->h)) return -1;
        pi_hparam *h = &x->h[x->n_h - 1];
        return name_copy(c, h->key, sizeof h->key, c->f[1]) || name_copy(c, h->value, sizeof h->value, c->f[2]);
    }
    if (!strcmp(k, "@file")) {
        int f = -1;
        int64_t b, crc;
        for (int i = 0; c->nf == 4 && i < PACK_NFILES; i++) if (!strcmp(c->f[1], PACK_FILE_NAMES[i])) f = i;
        if (f < 0) return bad(c, "@file names no pack file");
        if (num(c, c->f[2], 0, BIG, &b) || num(c, c->f[3], 0, UINT32_MAX, &crc)) return -1;
        x->have_file[f] = 1;
        x->file_bytes[f] = (uint64_t)b;
        x->file_crc[f] = (uint32_t)crc;
        return 0;
    }
    if (!strcmp(k, "@expert_layer")) {
        if (c->nf != 7) return bad(c, "@expert_layer has %d fields, not 7", c->nf);
        if (grow(c, (void **)&x->l, &x->n_l, sizeof *x->l)) return -1;
        pi_layer *l = &x->l[x->n_l - 1];
        if (inum(c, c->f[1], 0, 1 << 20, &l->layer) || inum(c, c->f[2], 1, 1 << 16, &l->n_expert) ||
            num(c, c->f[3], 0, BIG, &l->base) || num(c, c->f[4], 1, BIG, &l->stride) ||
            num(c, c->f[5], 1, BIG, &l->blob_bytes) || inum(c, c->f[6], 1, 4, &l->n_parts))
            return -1;
        if (l->blob_bytes > l->stride) return bad(c, "layer %d: blob %" PRId64 " > stride %" PRId64, l->layer,
                                                   l->blob_bytes, l->stride);
        return 0;
    }
    if (!strcmp(k, "@expert")) return expert(c, x);
    if (!strcmp(k, "@vision")) {
        int64_t b, crc;
        if (c->nf != 6 || strcmp(c->f[1], PACK_VISION)) return bad(c, "@vision needs %s, bytes, crc32, a projector type and a count", PACK_VISION);
        if (x->have_vision) return bad(c, "a second @vision line");
        if (num(c, c->f[2], 1, BIG, &b) || num(c, c->f[3], 0, UINT32_MAX, &crc) ||
            name_copy(c, x->vision_projector, sizeof x->vision_projector, c->f[4]) ||
            inum(c, c->f[5], 1, 1 << 20, &x->vision_n_tensors))
            return -1;
        x->have_vision = 1;
        x->vision_bytes = (uint64_t)b;
        x->vision_crc = (uint32_t)crc;
        return 0;
    }
    if (!strcmp(k, "@vision_tensor")) {
        if (c->nf != 9) return bad(c, "@vision_tensor has %d fields, not 9", c->nf);
        if (!x->have_vision || x->n_vt >= x->vision_n_tensors)
            return bad(c, "@vision_tensor %.96s beyond what the @vision line announced", c->f[1]);
        if (grow(c, (void **)&x->vt, &x->n_vt, sizeof *x->vt)) return -1;
        pi_vtensor *t = &x->vt[x->n_vt - 1];
        if (name_copy(c, t->name, sizeof t->name, c->f[1]) || inum(c, c->f[2], 0, 1 << 10, &t->type) ||
            num(c, c->f[3], 0, BIG, &t->off) || num(c, c->f[4], 1, BIG, &t->bytes))
            return -1;
        for (int d = 0; d < 4; d++)
            if (num(c, c->f[5 + d], 1, BIG, &t->ne[d])) return -1;
        if (t->off + t->bytes > (int64_t)x->vision_bytes)
            return bad(c, "%s: overruns %s (%" PRIu64 " bytes)", t->name, PACK_VISION, x->vision_bytes);
        return 0;
    }
    if (!strcmp(k, "@expert_rotate")) {
        if (c->nf != 4 || strcmp(c->f[2], "hadamard"))
            return bad(c, "@expert_rotate needs a name, `hadamard` and a block width");
        pi_expert *e = x->n_e ? &x->e[x->n_e - 1] : NULL;
        if (!e || strcmp(e->name, c->f[1]))
            return bad(c, "@expert_rotate %.96s does not follow that tensor's @expert line", c->f[1]);
        if (num(c, c->f[3], 2, e->ne0, &e->rotate)) return -1;
        if (!hadamard_block_ok(e->ne0, e->rotate) || strcmp(e->form, "IQ3"))
            return bad(c, "%s: a Hadamard block of %" PRId64 " on a part of form %s, %" PRId64 " wide (it must be a "
                       "power of two dividing the width, on form IQ3)", e->name, e->rotate, e->form, e->ne0);
        return 0;
    }
    return bad(c, "unknown line kind '%.40s' (a newer packindex?): refusing to guess how it changes the bytes", k);
}

int pindex_parse(pack_index *x, const char *text, size_t len, const char *path, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    cur c = { .path = path, .err = err, .errlen = errlen };
    size_t pos = 0;
    int64_t n_rows = -1;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        c.line++;
        if (!nl) { bad(&c, "the last line has no newline (a truncated index?)"); goto fail; }
        if (n > MAX_LINE) { bad(&c, "line longer than %d bytes", MAX_LINE); goto fail; }
        memcpy(c.buf, text + pos, n);
        c.buf[n] = 0;
        pos += n + 1;
        if (memchr(c.buf, 0, n)) { bad(&c, "a NUL byte"); goto fail; }
        if (c.line == 1) {
            if (strncmp(c.buf, PINDEX_MAGIC, strlen(PINDEX_MAGIC))) { bad(&c, "not a strata pack index v3"); goto fail; }
            continue;
        }
        if (c.line == 2) {
            long long a, p, t;
            char tail;
            if (sscanf(c.buf, "# align %lld pool %lld tensors %lld%c", &a, &p, &t, &tail) != 3 || a < 1 || a > 65536 ||
                p < 0 || p > BIG || t < 0 || t > MAX_ITEMS) {
                bad(&c, "expected '# align A pool P tensors N'");
                goto fail;
            }
            x->align = a; x->pool = p; n_rows = t;
            continue;
        }
        if (c.buf[0] == '#') continue;
        c.nf = 0;
        for (char *s = c.buf, *tok; (tok = strsep(&s, " ")) != NULL;) {
            if (!*tok || c.nf == MAX_FIELDS) { bad(&c, "empty field or too many fields"); goto fail; }
            c.f[c.nf++] = tok;
        }
        if ((c.buf[0] == '@' ? ext(&c, x) : row(&c, x)) != 0) goto fail;
    }
    /* After the extension lines: @shape and @offsets_fp16 change the sums. */
    for (int i = 0; i < x->n_t; i++) {
        c.line = x->t[i].line;
        if (row_sums(&c, &x->t[i])) goto fail;
    }
    c.line = 0;
    if (n_rows < 0) { bad(&c, "no header (an empty or truncated index)"); goto fail; }
    if (n_rows != x->n_t) { bad(&c, "the header says %lld tensors, the index has %d rows", (long long)n_rows, x->n_t); goto fail; }
    if (x->n_vt != x->vision_n_tensors) {
        bad(&c, "@vision announced %d tensors, %d @vision_tensor lines follow", x->vision_n_tensors, x->n_vt);
        goto fail;
    }
    return 0;
fail:
    pindex_free(x);
    return -1;
}

const char *pindex_hparam(const pack_index *x, const char *key)
{
    for (int i = 0; i < x->n_h; i++)
        if (!strcmp(x->h[i].key, key)) return x->h[i].value;
    return NULL;
}

int pindex_hparam_num(void *ctx, const char *key, double *out)
{
    char base[160];
    int i;
    if (hparam_elem_split(key, base, sizeof base, &i)) {
        const char *v = pindex_hparam(ctx, base);
        if (!v) return -1;
        if (hparam_list_elem(v, i, out) != 0) *out = NAN;
        return 0;
    }
    const char *v = pindex_hparam(ctx, key);
    if (!v) return -1;
    char *end;
    const double d = strtod(v, &end);
    *out = (*end || end == v) ? NAN : d; /* hparams_load refuses a non-finite value */
    return 0;
}

void pindex_free(pack_index *x)
{
    free(x->t);
    free(x->e);
    free(x->l);
    free(x->h);
    free(x->vt);
    memset(x, 0, sizeof *x);
}
