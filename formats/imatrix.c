/* imatrix.c: imatrix reader, GGUF and legacy .dat (see imatrix.h). */
#include "imatrix.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "gguf.h"

#define GGML_F32 0

/* The refusal of a file that is no importance matrix at all. */
static const char NOT_IMATRIX[] = "neither an imatrix GGUF nor a legacy imatrix.dat";

static imatrix *fail(imatrix *m, char *err, size_t errlen, const char *name, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, "%s: ", name);
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < errlen) vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    imatrix_free(m);
    return NULL;
}

void imatrix_free(imatrix *m)
{
    if (!m) return;
    for (int64_t i = 0; i < m->n_entries; ++i) {
        free(m->entries[i].name);
        free(m->entries[i].importance);
        free(m->entries[i].counts);
    }
    free(m->entries);
    for (size_t i = 0; i < m->n_datasets; ++i) free(m->datasets[i]);
    free(m->datasets);
    free(m);
}

/* A copy of name[0..n) without a trailing ".weight": both styles meet here. */
static char *base_name(const char *name, size_t n)
{
    static const char W[] = ".weight";
    if (n >= sizeof W - 1 && !memcmp(name + n - (sizeof W - 1), W, sizeof W - 1)) n -= sizeof W - 1;
    char *s = malloc(n + 1);
    if (s) { memcpy(s, name, n); s[n] = 0; }
    return s;
}

static int has_suffix(const char *s, const char *suf, size_t *stem)
{
    size_t n = strlen(s), m = strlen(suf);
    if (n < m || strcmp(s + n - m, suf) != 0) return 0;
    *stem = n - m;
    return 1;
}

static float rd_f32(const uint8_t *p)
{
    float f;
    memcpy(&f, p, sizeof f); /* little-endian host, as ggml itself assumes */
    return f;
}

const imatrix_entry *imatrix_find(const imatrix *m, const char *weight_name)
{
    char *q = base_name(weight_name, strlen(weight_name));
    if (!q) return NULL;
    const imatrix_entry *hit = NULL;
    for (int pass = 0; pass < 2 && !hit; ++pass) {
        if (pass == 1) {
            /* The seed folds gate and up into one entry: both read it. */
            const char *stems[] = { ".ffn_gate_exps", ".ffn_up_exps" };
            char *fused = NULL;
            for (int s = 0; s < 2 && !fused; ++s) {
                size_t st;
                if (!has_suffix(q, stems[s], &st)) continue;
                fused = malloc(st + sizeof ".ffn_gate_up_exps");
                if (fused) sprintf(fused, "%.*s.ffn_gate_up_exps", (int)st, q);
            }
            if (!fused) break;
            free(q);
            q = fused;
        }
        for (int64_t i = 0; i < m->n_entries && !hit; ++i)
            if (!strcmp(m->entries[i].name, q)) hit = &m->entries[i];
    }
    free(q);
    return hit;
}

static int name_taken(const imatrix *m, const char *name)
{
    for (int64_t i = 0; i < m->n_entries; ++i)
        if (!strcmp(m->entries[i].name, name)) return 1;
    return 0;
}

/* ------------------------------------------------------------------ GGUF */

static imatrix *load_gguf(gguf_file *g, const char *name, char *err, size_t errlen)
{
    imatrix *m = calloc(1, sizeof *m);
    int64_t nt = gguf_n_tensors(g);
    if (!m || !(m->entries = calloc((size_t)nt + 1, sizeof *m->entries)))
        return fail(m, err, errlen, name, "out of memory");
    m->format = IMATRIX_FORMAT_GGUF;
    uint64_t v;
    if (gguf_get_uint(g, "imatrix.chunk_size", &v) == 0) m->chunk_size = (uint32_t)v;
    if (gguf_get_uint(g, "imatrix.chunk_count", &v) == 0) m->chunk_count = (uint32_t)v;
    int64_t kd = gguf_find_key(g, "imatrix.datasets");
    if (kd >= 0 && gguf_kv_type(g, kd) == GGUF_TYPE_ARRAY && gguf_kv_arr_type(g, kd) == GGUF_TYPE_STRING) {
        uint64_t n = gguf_kv_arr_n(g, kd);
        if (!(m->datasets = calloc((size_t)n + 1, sizeof *m->datasets)))
            return fail(m, err, errlen, name, "out of memory");
        for (uint64_t j = 0; j < n; ++j) {
            if (!(m->datasets[j] = strdup(gguf_kv_arr_str(g, kd, j))))
                return fail(m, err, errlen, name, "out of memory");
            m->n_datasets++;
        }
    }
    for (int64_t i = 0; i < nt; ++i) {
        const gguf_tensor *s = gguf_tensor_at(g, i);
        size_t stem;
        if (has_suffix(s->name, ".counts", &stem)) {
            char want[GGUF_NAME_MAX + 16];
            snprintf(want, sizeof want, "%.*s.in_sum2", (int)stem, s->name);
            if (!gguf_find_tensor(g, want))
                return fail(m, err, errlen, name, "%s has counts but no %s", s->name, want);
            continue;
        }
        if (!has_suffix(s->name, ".in_sum2", &stem)) continue; /* not imatrix data */
        char cname[GGUF_NAME_MAX + 16];
        snprintf(cname, sizeof cname, "%.*s.counts", (int)stem, s->name);
        const gguf_tensor *c = gguf_find_tensor(g, cname);
        if (!c) return fail(m, err, errlen, name, "%s has sums but no %s", s->name, cname);
        if (s->type != GGML_F32 || c->type != GGML_F32)
            return fail(m, err, errlen, name, "%s: in_sum2 type %d, counts type %d; an imatrix holds"
                        " f32 only", s->name, s->type, c->type);
        if (s->n_dims > 2 || c->n_dims > 2)
            return fail(m, err, errlen, name, "%s: %u-D sums or %u-D counts; an imatrix entry is"
                        " [n] or [n, n_expert]", s->name, s->n_dims, c->n_dims);
        int64_t n_cols = s->ne[0], n_exp = s->ne[1];
        if (c->ne[0] != 1 || c->ne[1] != n_exp)
            return fail(m, err, errlen, name, "%s: counts [%lld, %lld] do not match sums [%lld, %lld]"
                        " (one count per expert)", s->name, (long long)c->ne[0],
                        (long long)c->ne[1], (long long)n_cols, (long long)n_exp);
        imatrix_entry *e = &m->entries[m->n_entries];
        e->name = base_name(s->name, stem);
        if (!e->name) return fail(m, err, errlen, name, "out of memory");
        if (name_taken(m, e->name)) {
            m->n_entries++; /* so the name is freed */
            return fail(m, err, errlen, name, "%s appears twice (with and without .weight?)", e->name);
        }
        m->n_entries++;
        e->n_cols = n_cols;
        e->n_expert = n_exp;
        e->importance = malloc((size_t)(n_cols * n_exp) * sizeof *e->importance);
        e->counts = malloc((size_t)n_exp * sizeof *e->counts);
        if (!e->importance || !e->counts) return fail(m, err, errlen, name, "out of memory");
        for (int64_t x = 0; x < n_exp; ++x) {
            float cnt = rd_f32(c->data + 4 * x);
            if (!isfinite(cnt) || cnt < 0)
                return fail(m, err, errlen, name, "%s: count %g for expert %lld is not a row count",
                            cname, cnt, (long long)x);
            e->counts[x] = cnt;
            for (int64_t j = 0; j < n_cols; ++j) {
                float sum = rd_f32(s->data + 4 * (x * n_cols + j));
                e->importance[x * n_cols + j] = cnt > 0 ? sum / cnt : 1.0f;
            }
        }
    }
    /* A GGUF with no imatrix key and no sums is a model (or another GGUF),
     * not an empty imatrix: building with it would silently weigh nothing. */
    if (m->n_entries == 0 && gguf_find_key(g, "imatrix.chunk_count") < 0 && kd < 0 &&
        gguf_find_key(g, "imatrix.chunk_size") < 0)
        return fail(m, err, errlen, name, "%s (a GGUF without imatrix.* keys or *.in_sum2 tensors)",
                    NOT_IMATRIX);
    return m;
}

/* ------------------------------------------------------------------ .dat */

typedef struct cursor { const uint8_t *p; size_t left; } cursor;

static int take_i32(cursor *c, int32_t *v)
{
    if (c->left < 4) return -1;
    memcpy(v, c->p, 4);
    c->p += 4; c->left -= 4;
    return 0;
}

static imatrix *load_dat(const uint8_t *data, size_t size, const char *name, char *err, size_t errlen)
{
    cursor c = { data, size };
    int32_t n = 0;
    imatrix *m = calloc(1, sizeof *m);
    if (!m) return fail(m, err, errlen, name, "out of memory");
    m->format = IMATRIX_FORMAT_DAT;
    /* The smallest entry is 13 bytes: a count can never promise more than that. */
    if (take_i32(&c, &n) || n < 0 || (size_t)n > c.left / 13)
        return fail(m, err, errlen, name, "%s (as a .dat, its entry count %d does not fit %zu bytes)",
                    NOT_IMATRIX, n, size);
    if (!(m->entries = calloc((size_t)n + 1, sizeof *m->entries)))
        return fail(m, err, errlen, name, "out of memory");
    for (int32_t i = 0; i < n; ++i) {
        int32_t len = 0, ncall = 0, nval = 0;
        /* the first name is the last place a file of another kind can be told apart */
        if (take_i32(&c, &len) || len <= 0 || (size_t)len > c.left)
            return i ? fail(m, err, errlen, name, "entry %d: name length %d runs past the file", i, len)
                     : fail(m, err, errlen, name, "%s (as a .dat, its first name length %d runs past"
                            " the file)", NOT_IMATRIX, len);
        if (memchr(c.p, 0, (size_t)len))
            return i ? fail(m, err, errlen, name, "entry %d: name holds a NUL byte", i)
                     : fail(m, err, errlen, name, "%s (as a .dat, its first name holds a NUL byte)",
                            NOT_IMATRIX);
        imatrix_entry *e = &m->entries[m->n_entries];
        e->name = base_name((const char *)c.p, (size_t)len);
        if (!e->name) return fail(m, err, errlen, name, "out of memory");
        m->n_entries++;
        c.p += len; c.left -= (size_t)len;
        if (take_i32(&c, &ncall) || take_i32(&c, &nval))
            return fail(m, err, errlen, name, "entry %s: truncated after the name", e->name);
        if (ncall < 0 || nval <= 0 || (size_t)nval > c.left / 4)
            return fail(m, err, errlen, name, "entry %s: ncall %d, nval %d do not fit the %zu bytes"
                        " left", e->name, ncall, nval, c.left);
        for (int64_t j = 0; j < m->n_entries - 1; ++j)
            if (!strcmp(m->entries[j].name, e->name))
                return fail(m, err, errlen, name, "%s appears twice", e->name);
        e->n_cols = nval;
        e->n_expert = 1;
        e->importance = malloc((size_t)nval * sizeof *e->importance);
        e->counts = malloc(sizeof *e->counts);
        if (!e->importance || !e->counts) return fail(m, err, errlen, name, "out of memory");
        e->counts[0] = (float)ncall;
        for (int32_t j = 0; j < nval; ++j) {
            float v = rd_f32(c.p + 4 * (size_t)j);
            e->importance[j] = ncall > 0 ? v / (float)ncall : 1.0f;
        }
        c.p += 4 * (size_t)nval; c.left -= 4 * (size_t)nval;
    }
    /* Optional tail (newer writers): last chunk and the dataset name. */
    int32_t last = 0, len = 0;
    if (c.left == 0) return m;
    if (take_i32(&c, &last) || last < 0)
        return fail(m, err, errlen, name, "truncated or negative last_chunk after the entries");
    m->chunk_count = (uint32_t)last;
    if (c.left == 0) return m;
    if (take_i32(&c, &len) || len < 0 || (size_t)len != c.left)
        return fail(m, err, errlen, name, "dataset name length %d does not match the %zu bytes left",
                    len, c.left);
    if (!(m->datasets = calloc(1, sizeof *m->datasets)) || !(m->datasets[0] = malloc((size_t)len + 1)))
        return fail(m, err, errlen, name, "out of memory");
    m->n_datasets = 1;
    memcpy(m->datasets[0], c.p, (size_t)len);
    m->datasets[0][len] = 0;
    return m;
}

/* ------------------------------------------------------------------ entry points */

imatrix *imatrix_load_memory(const void *data, size_t size, const char *name,
                             char *err, size_t errlen)
{
    if (size >= 4 && !memcmp(data, GGUF_MAGIC, 4)) {
        gguf_file *g = gguf_open_memory(data, size, name, err, errlen);
        if (!g) return NULL; /* err already says "<name>: ..." */
        imatrix *m = load_gguf(g, name, err, errlen);
        gguf_close(g);
        return m;
    }
    return load_dat(data, size, name, err, errlen);
}

imatrix *imatrix_load(const char *path, char *err, size_t errlen)
{
    unsigned char *buf = NULL;
    size_t size = 0;
    if (read_file(path, &buf, &size, err, errlen) != 0) return NULL;
    imatrix *m = imatrix_load_memory(buf, size, path, err, errlen);
    free(buf);
    return m;
}
