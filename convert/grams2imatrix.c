/* grams2imatrix.c: RADGRAM2 recording -> imatrix GGUF (see grams2imatrix.h).
 *
 * Sections: numbers, discovery and folding (load), entries (build), the GGUF
 * (emit), the run. Every refusal prints its line at the point the seed would,
 * so the earlier notes on stderr are the same too. */
#include "convert/grams2imatrix.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/fileio.h"
#include "formats/gguf.h"
#include "formats/radgram.h"

__extension__ typedef unsigned __int128 u128;

#define KOWN_ROWS_PER_K 4 /* libquant/lq_hess.h kOwnRowsPerK */
#define ALIGNMENT 32
#define GGML_F32 0
#define INT_SAT ((g2i_int)1 << 120)

/* ------------------------------------------------------------------ numbers */

void g2i_options_default(g2i_options *o)
{
    memset(o, 0, sizeof *o);
    o->chunk_size = 4096;
}

int g2i_parse_int(const char *s, g2i_int *out)
{
    while (isspace((unsigned char)*s)) s++;
    int neg = 0;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    g2i_int v = 0;
    int digits = 0, prev_digit = 0;
    for (; *s && !isspace((unsigned char)*s); ++s) {
        if (*s == '_' && prev_digit && isdigit((unsigned char)s[1])) { prev_digit = 0; continue; }
        if (!isdigit((unsigned char)*s)) return -1;
        if (v < INT_SAT) v = v * 10 + (*s - '0');
        digits++;
        prev_digit = 1;
    }
    while (isspace((unsigned char)*s)) s++;
    if (!digits || *s) return -1;
    *out = neg ? -v : v;
    return 0;
}

static char *u128_str(u128 v, char *buf)
{
    char tmp[48], *p = tmp + 47;
    *p = 0;
    do { *--p = (char)('0' + (int)(v % 10)); v /= 10; } while (v);
    memmove(buf, p, (size_t)(tmp + 48 - p));
    return buf;
}

char *g2i_int_str(g2i_int v, char *buf)
{
    if (v >= 0) return u128_str((u128)v, buf);
    buf[0] = '-';
    u128_str((u128)0 - (u128)v, buf + 1);
    return buf;
}

/* Python's float(int) then struct '<f': two roundings, reproduced as such. */
static float count_f32(u128 rows) { return (float)(double)rows; }

/* ------------------------------------------------------------------ state */

typedef struct expert_gram {
    uint64_t e;
    uint32_t k;
    uint64_t rows;
    float   *diag;
    char    *path;
} expert_gram;

typedef struct layer_grams {
    uint64_t     layer;
    int          has_pooled;
    uint32_t     k;          /* the pooled width */
    u128         rows;       /* pooled rows, summed over ranks */
    double      *diag;       /* pooled diagonal, summed in double as the seed does */
    char        *first_path; /* the first pooled file, for K_MISMATCH */
    expert_gram *ex;
    size_t       n_ex, cap_ex;
} layer_grams;

typedef struct entry {
    char     name[GGUF_NAME_MAX];
    uint32_t n_dims;
    int64_t  ne[2];
    float   *payload;  /* owned; NULL for an alias */
    size_t   n_floats;
    size_t   alias_of; /* entry index whose payload this one shares */
    int64_t  widx;     /* index in the gguf writer */
} entry;

typedef struct census {
    uint64_t inherited, experts, layers;
    u128     routing, rows;
} census;

typedef struct run {
    const g2i_options *o;
    FILE        *log;
    layer_grams *layers;
    size_t       n_layers, cap_layers;
    unsigned     rotated;
    entry       *entries;
    size_t       n_entries, cap_entries;
    size_t       n_written; /* tensor infos in the file: more than entries in llama style */
    census       c;
} run;

static int refuse(run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("REFUSED ", r->log);
    vfprintf(r->log, fmt, ap);
    fputc('\n', r->log);
    va_end(ap);
    return -1;
}

static void note(run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->log, fmt, ap);
    va_end(ap);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return -1;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *p = q;
    *cap = n;
    return 0;
}

static void run_free(run *r)
{
    for (size_t i = 0; i < r->n_layers; ++i) {
        layer_grams *L = &r->layers[i];
        for (size_t j = 0; j < L->n_ex; ++j) { free(L->ex[j].diag); free(L->ex[j].path); }
        free(L->ex);
        free(L->diag);
        free(L->first_path);
    }
    free(r->layers);
    for (size_t i = 0; i < r->n_entries; ++i) free(r->entries[i].payload);
    free(r->entries);
}

/* ------------------------------------------------------------------ load */

/* Reads ASCII digits into a u64; 0 if there are none, -1 past 64 bits. */
static int digits_u64(const char **s, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    int n = 0;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) n = -1000000;
        x = x * 10 + d;
        p++; n++;
    }
    *s = p;
    *v = x;
    return n < 0 ? -1 : n;
}

static int eat(const char **s, const char *lit)
{
    size_t n = strlen(lit);
    if (strncmp(*s, lit, n) != 0) return 0;
    *s += n;
    return 1;
}

/* Matches gram.r<rank>.blk.<L>.ffn_down_exps[.<e>].bin. Returns 0 when the name
 * is not ours, 1 pooled, 2 expert, -1 when a number overflows 64 bits. */
static int match_name(const char *s, uint64_t *layer, uint64_t *e)
{
    uint64_t rank;
    int a, b, c;
    if (!eat(&s, "gram.r") || !(a = digits_u64(&s, &rank))) return 0;
    if (!eat(&s, ".blk.") || !(b = digits_u64(&s, layer))) return 0;
    if (!eat(&s, ".ffn_down_exps.")) return 0;
    if (!strcmp(s, "bin")) return (a < 0 || b < 0) ? -1 : 1;
    if (!(c = digits_u64(&s, e)) || strcmp(s, ".bin") != 0) return 0;
    return (a < 0 || b < 0 || c < 0) ? -1 : 2;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static layer_grams *layer_get(run *r, uint64_t layer)
{
    for (size_t i = 0; i < r->n_layers; ++i)
        if (r->layers[i].layer == layer) return &r->layers[i];
    if (grow((void **)&r->layers, &r->cap_layers, r->n_layers + 1, sizeof *r->layers)) return NULL;
    layer_grams *L = &r->layers[r->n_layers++];
    L->layer = layer;
    return L;
}

static int add_pooled(run *r, layer_grams *L, const char *path, const char *name,
                      const radgram_header *h, const float *diag)
{
    if (!L->has_pooled) {
        L->has_pooled = 1;
        L->k = h->k;
        L->rows = h->rows;
        L->diag = malloc((size_t)h->k * sizeof *L->diag);
        L->first_path = strdup(path);
        if (!L->diag || !L->first_path) return refuse(r, "NOMEM %s: out of memory", path);
        for (uint32_t i = 0; i < h->k; ++i) L->diag[i] = diag[i];
    } else if (L->k != h->k) {
        return refuse(r, "K_MISMATCH layer %llu: pooled grams %s (k=%u) and %s (k=%u)"
                      " disagree about the width", (unsigned long long)L->layer,
                      L->first_path, L->k, path, h->k);
    } else {
        /* calib_sum: each rank summed the same stem over its own rows. */
        L->rows += h->rows;
        for (uint32_t i = 0; i < h->k; ++i) L->diag[i] += diag[i];
    }
    if (r->o->verbose)
        note(r, "pooled layer %llu: %s k=%u rows=%llu\n", (unsigned long long)L->layer, name,
             h->k, (unsigned long long)h->rows);
    return 0;
}

/* Takes ownership of diag. */
static int add_expert(run *r, layer_grams *L, uint64_t e, const char *path, const char *name,
                      const radgram_header *h, float *diag)
{
    for (size_t j = 0; j < L->n_ex; ++j) {
        expert_gram *own = &L->ex[j];
        if (own->e != e) continue;
        int same = own->rows == h->rows && own->k == h->k;
        for (uint32_t i = 0; same && i < h->k; ++i) same = own->diag[i] == diag[i];
        free(diag);
        if (!same)
            return refuse(r, "EXPERT_CONFLICT layer %llu expert %llu: %s (rows=%llu) and %s"
                          " (rows=%llu) record the same global expert with different numbers",
                          (unsigned long long)L->layer, (unsigned long long)e, own->path,
                          (unsigned long long)own->rows, path, (unsigned long long)h->rows);
        note(r, "note: layer %llu expert %llu recorded identically by rank %s and %s;"
             " folded once\n", (unsigned long long)L->layer, (unsigned long long)e,
             own->path, name);
        return 0;
    }
    if (grow((void **)&L->ex, &L->cap_ex, L->n_ex + 1, sizeof *L->ex)) {
        free(diag);
        return refuse(r, "NOMEM %s: out of memory", path);
    }
    expert_gram *x = &L->ex[L->n_ex++];
    x->e = e;
    x->k = h->k;
    x->rows = h->rows;
    x->diag = diag;
    x->path = strdup(path);
    if (!x->path) return refuse(r, "NOMEM %s: out of memory", path);
    if (r->o->verbose)
        note(r, "expert layer %llu r%u e%llu: rows=%llu\n", (unsigned long long)L->layer,
             h->rank, (unsigned long long)e, (unsigned long long)h->rows);
    return 0;
}

static int load_file(run *r, const char *dir, const char *name)
{
    uint64_t layer = 0, e = 0;
    int kind = match_name(name, &layer, &e);
    size_t dl = strlen(dir);
    char *path = malloc(dl + strlen(name) + 2);
    if (!path) return refuse(r, "NOMEM %s: out of memory", dir);
    sprintf(path, "%s%s%s", dir, (dl && dir[dl - 1] == '/') ? "" : "/", name);
    struct stat st;
    int rc = 0;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) goto done; /* not a file: not ours */
    if (kind < 0) {
        rc = refuse(r, "BAD_NAME %s: a layer or expert number does not fit 64 bits", path);
        goto done;
    }
    radgram_header h;
    float *diag = NULL;
    char err[1024];
    radgram_error ge = radgram_read(path, &h, &diag, err, sizeof err);
    if (ge) { rc = refuse(r, "%s %s", radgram_keyword(ge), err); goto done; }
    if (h.domain != 0) r->rotated++;
    layer_grams *L = layer_get(r, layer);
    if (!L) { free(diag); rc = refuse(r, "NOMEM %s: out of memory", path); goto done; }
    if (kind == 1) {
        rc = add_pooled(r, L, path, name, &h, diag);
        free(diag);
    } else {
        rc = add_expert(r, L, e, path, name, &h, diag);
    }
done:
    free(path);
    return rc;
}

static int load_dir(run *r, const char *d)
{
    struct stat st;
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
        return refuse(r, "NO_GRAMS %s: not a directory", d);
    DIR *dp = opendir(d);
    if (!dp) return refuse(r, "UNREADABLE %s: [Errno %d] %s: '%s'", d, errno, strerror(errno), d);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        uint64_t a, b;
        if (!match_name(de->d_name, &a, &b)) continue;
        if (grow((void **)&names, &cap, n + 1, sizeof *names) || !(names[n] = strdup(de->d_name))) {
            rc = refuse(r, "NOMEM %s: out of memory", d);
            break;
        }
        n++;
    }
    closedir(dp);
    /* strcmp order is Python's sorted() order for these ASCII names. */
    if (!rc && n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; !rc && i < n; ++i) rc = load_file(r, d, names[i]);
    for (size_t i = 0; i < n; ++i) free(names[i]);
    free(names);
    if (rc) return rc;
    if (r->n_layers == 0)
        return refuse(r, "NO_GRAMS %s: no RADGRAM2 gram.r<rank>.blk.<L>.ffn_down_exps"
                      "[.<expert>].bin files in the directory", d);
    return 0;
}

/* ------------------------------------------------------------------ build */

static entry *entry_add(run *r, const char *base, const char *suffix, uint32_t n_dims,
                        int64_t ne0, int64_t ne1, float *payload, size_t n_floats)
{
    if (grow((void **)&r->entries, &r->cap_entries, r->n_entries + 1, sizeof *r->entries)) {
        free(payload);
        refuse(r, "NOMEM %s: out of memory", base);
        return NULL;
    }
    entry *en = &r->entries[r->n_entries++];
    int w = snprintf(en->name, sizeof en->name, "%s%s", base, suffix);
    if (w < 0 || (size_t)w >= sizeof en->name) {
        free(payload);
        refuse(r, "BAD_NAME %s%s: longer than a GGUF tensor name may be", base, suffix);
        return NULL;
    }
    en->n_dims = n_dims;
    en->ne[0] = ne0;
    en->ne[1] = ne1;
    en->payload = payload;
    en->n_floats = n_floats;
    en->alias_of = r->n_entries - 1;
    return en;
}

/* The pooled diagonal as f32; a sum past f32's range is where the seed's
 * struct.pack crashes, so it is refused instead. */
static float *pooled_f32(run *r, const layer_grams *L)
{
    float *f = malloc((size_t)L->k * sizeof *f);
    if (!f) { refuse(r, "NOMEM layer %llu: out of memory", (unsigned long long)L->layer); return NULL; }
    for (uint32_t i = 0; i < L->k; ++i) {
        f[i] = (float)L->diag[i];
        if (!isfinite(f[i])) {
            free(f);
            refuse(r, "NONFINITE layer %llu: pooled diagonal element %u sums to %g, beyond f32",
                   (unsigned long long)L->layer, i, L->diag[i]);
            return NULL;
        }
    }
    return f;
}

static float *one_count(run *r, u128 rows)
{
    float *f = malloc(sizeof *f);
    if (!f) { refuse(r, "NOMEM: out of memory"); return NULL; }
    *f = count_f32(rows);
    return f;
}

static int cmp_layer(const void *a, const void *b)
{
    uint64_t x = ((const layer_grams *)a)->layer, y = ((const layer_grams *)b)->layer;
    return (x > y) - (x < y);
}

static int cmp_expert(const void *a, const void *b)
{
    uint64_t x = ((const expert_gram *)a)->e, y = ((const expert_gram *)b)->e;
    return (x > y) - (x < y);
}

static int build_moe(run *r, layer_grams *L, const char *dn)
{
    const g2i_options *o = r->o;
    uint32_t k = L->k;
    u128 floor = o->min_rows > 0 ? (u128)o->min_rows : (u128)KOWN_ROWS_PER_K * k;
    uint64_t max_e = L->ex[L->n_ex - 1].e, min_e = L->ex[0].e;
    if (max_e >= (uint64_t)INT64_MAX || max_e + 1 > (SIZE_MAX / sizeof(float)) / 2 / k)
        return refuse(r, "TOO_LARGE layer %llu: expert %llu would need a [%u, %llu] entry",
                      (unsigned long long)L->layer, (unsigned long long)max_e, k,
                      (unsigned long long)max_e + 1);
    size_t n_expert = (size_t)max_e + 1;
    float *sum2 = malloc(n_expert * k * sizeof *sum2);
    float *counts = malloc(n_expert * sizeof *counts);
    float *pooled = pooled_f32(r, L);
    if (!sum2 || !counts || !pooled) {
        free(sum2); free(counts);
        if (!pooled) return -1;
        free(pooled);
        return refuse(r, "TOO_LARGE layer %llu: out of memory for %zu experts of k=%u",
                      (unsigned long long)L->layer, n_expert, k);
    }
    size_t j = 0;
    for (size_t e = 0; e < n_expert; ++e) {
        const expert_gram *own = (j < L->n_ex && L->ex[j].e == e) ? &L->ex[j++] : NULL;
        const float *src = pooled;
        uint64_t rows = own ? own->rows : 0;
        if (own && (u128)own->rows >= floor) src = own->diag;
        else r->c.inherited++;
        memcpy(sum2 + e * k, src, (size_t)k * sizeof *sum2);
        counts[e] = count_f32(rows);
        r->c.experts++;
        r->c.routing += rows;
    }
    free(pooled);
    /* The slices now hold everything: drop the per-file diagonals so memory
     * stays one layer's worth, not the whole recording's. */
    for (size_t x = 0; x < L->n_ex; ++x) { free(L->ex[x].diag); L->ex[x].diag = NULL; }
    if (min_e != 0)
        note(r, "note: layer %llu has no gram for experts 0..%llu; those slices carry the"
             " pooled gram at count 0\n", (unsigned long long)L->layer,
             (unsigned long long)min_e - 1);
    char gu[GGUF_NAME_MAX];
    snprintf(gu, sizeof gu, "blk.%llu.ffn_gate_up_exps", (unsigned long long)L->layer);
    size_t first = r->n_entries;
    if (!entry_add(r, dn, ".in_sum2", 2, k, (int64_t)n_expert, sum2, n_expert * k)) { free(counts); return -1; }
    if (!entry_add(r, dn, ".counts", 2, 1, (int64_t)n_expert, counts, n_expert)) return -1;
    entry *a = entry_add(r, gu, ".in_sum2", 2, k, (int64_t)n_expert, NULL, 0);
    if (!a) return -1;
    a->alias_of = first;
    if (!(a = entry_add(r, gu, ".counts", 2, 1, (int64_t)n_expert, NULL, 0))) return -1;
    a->alias_of = first + 1;
    if (o->verbose) {
        char b1[48], b2[48];
        note(r, "layer %llu: k=%u n_expert=%zu pooled_rows=%s own-gram floor=%s\n",
             (unsigned long long)L->layer, k, n_expert, u128_str(L->rows, b1), u128_str(floor, b2));
    }
    return 0;
}

static int build_entries(run *r)
{
    qsort(r->layers, r->n_layers, sizeof *r->layers, cmp_layer);
    for (size_t li = 0; li < r->n_layers; ++li) {
        layer_grams *L = &r->layers[li];
        unsigned long long ln = (unsigned long long)L->layer;
        if (L->n_ex && !L->has_pooled)
            return refuse(r, "NO_POOLED layer %llu: %zu expert gram(s) but no pooled gram (an"
                          " expected gram.r<rank>.blk.%llu.ffn_down_exps.bin), so an expert"
                          " under the row threshold would have nothing to inherit",
                          ln, L->n_ex, ln);
        if (!L->has_pooled) continue;
        r->c.layers++;
        if (L->rows > r->c.rows) r->c.rows = L->rows;
        char dn[GGUF_NAME_MAX], inz[GGUF_NAME_MAX];
        snprintf(dn, sizeof dn, "blk.%llu.ffn_down_exps", ln);
        snprintf(inz, sizeof inz, "blk.%llu.ssm_inz", ln);
        /* One entry holds one width: an expert gram at another k would inherit,
         * or be inherited by, a diagonal of the wrong length. */
        if (L->n_ex) qsort(L->ex, L->n_ex, sizeof *L->ex, cmp_expert);
        for (size_t j = 0; j < L->n_ex; ++j)
            if (L->ex[j].k != L->k)
                return refuse(r, "K_MISMATCH layer %llu expert %llu: %s holds k=%u and this"
                              " layer's pooled gram is k=%u", ln, (unsigned long long)L->ex[j].e,
                              L->ex[j].path, L->ex[j].k, L->k);
        if (!L->n_ex) {
            /* No per-expert recording: the dense form, rather than identical
             * slices that would claim a per-expert measurement never taken. */
            float *p = pooled_f32(r, L), *c;
            if (!p || !entry_add(r, dn, ".in_sum2", 1, L->k, 1, p, L->k)) return -1;
            if (!(c = one_count(r, L->rows)) || !entry_add(r, dn, ".counts", 1, 1, 1, c, 1)) return -1;
            note(r, "note: layer %llu has no per-expert grams; %s is dense over the pooled gram\n",
                 ln, dn);
        } else if (build_moe(r, L, dn)) {
            return -1;
        }
        float *p = pooled_f32(r, L), *c;
        if (!p || !entry_add(r, inz, ".in_sum2", 1, L->k, 1, p, L->k)) return -1;
        if (!(c = one_count(r, L->rows)) || !entry_add(r, inz, ".counts", 1, 1, 1, c, 1)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ emit */

static int add_datasets(run *r, gguf_writer *w)
{
    const char *s = r->o->datasets ? r->o->datasets : "";
    char *copy = strdup(s);
    size_t n = 0;
    const char **v = malloc((strlen(s) / 2 + 2) * sizeof *v);
    int rc = -1;
    if (copy && v) {
        for (char *p = copy, *tok; (tok = strsep(&p, ",")) != NULL;)
            if (*tok) v[n++] = tok;
        rc = gguf_writer_add_arr_str(w, "imatrix.datasets", v, n);
    }
    free(v);
    free(copy);
    return rc;
}

/* The seed's layout: its KV order, payloads shared by key, no padding after
 * the last payload. */
static gguf_writer *writer_seed(run *r, uint32_t chunk_size, uint32_t chunk_count)
{
    gguf_writer *w = gguf_writer_new();
    if (!w) return NULL;
    r->n_written = r->n_entries;
    gguf_writer_set_alignment(w, ALIGNMENT, true);
    if (gguf_writer_add_u32(w, "imatrix.chunk_size", chunk_size) ||
        gguf_writer_add_u32(w, "imatrix.chunk_count", chunk_count) || add_datasets(r, w)) {
        gguf_writer_free(w);
        return NULL;
    }
    for (size_t i = 0; i < r->n_entries; ++i) {
        entry *en = &r->entries[i];
        en->widx = en->payload
            ? gguf_writer_add_tensor(w, en->name, GGML_F32, en->n_dims, en->ne, en->payload,
                                     en->n_floats * sizeof(float))
            : gguf_writer_add_tensor_alias(w, en->name, GGML_F32, en->n_dims, en->ne,
                                           r->entries[en->alias_of].widx);
        if (en->widx < 0) { gguf_writer_free(w); return NULL; }
    }
    return w;
}

typedef struct llama_item { char base[GGUF_NAME_MAX]; size_t sum, cnt; } llama_item;

static int cmp_item(const void *a, const void *b)
{
    return strcmp(((const llama_item *)a)->base, ((const llama_item *)b)->base);
}

/* What llama.cpp's imatrix writer writes: ".weight" names in name order,
 * general.type, its KV order, and one payload per tensor (ggml's reader wants
 * every offset to be the running padded sum, so nothing may be shared). */
static gguf_writer *writer_llama(run *r, uint32_t chunk_size, uint32_t chunk_count)
{
    size_t n = 0;
    llama_item *it = calloc(r->n_entries * 2 + 1, sizeof *it);
    gguf_writer *w = gguf_writer_new();
    if (!it || !w) goto fail;
    for (size_t i = 0; i + 1 < r->n_entries; i += 2) {
        const entry *s = &r->entries[i], *c = &r->entries[i + 1];
        size_t bl = strlen(s->name) - strlen(".in_sum2");
        size_t si = s->payload ? i : s->alias_of, ci = c->payload ? i + 1 : c->alias_of;
        const char *gate_up = strstr(s->name, ".ffn_gate_up_exps.");
        int copies = gate_up ? 3 : 1;
        for (int j = 0; j < copies; ++j) {
            const char *stem = j == 0 ? NULL : j == 1 ? "ffn_gate_exps" : "ffn_up_exps";
            int len = stem ? snprintf(it[n].base, GGUF_NAME_MAX, "%.*s%s.weight",
                                      (int)(gate_up + 1 - s->name), s->name, stem)
                           : snprintf(it[n].base, GGUF_NAME_MAX, "%.*s.weight", (int)bl, s->name);
            if (len < 0 || len + (int)strlen(".in_sum2") >= GGUF_NAME_MAX) goto fail;
            it[n].sum = si;
            it[n].cnt = ci;
            n++;
        }
    }
    qsort(it, n, sizeof *it, cmp_item);
    r->n_written = 2 * n;
    if (gguf_writer_add_str(w, "general.type", "imatrix") || add_datasets(r, w) ||
        gguf_writer_add_u32(w, "imatrix.chunk_count", chunk_count) ||
        gguf_writer_add_u32(w, "imatrix.chunk_size", chunk_size))
        goto fail;
    for (size_t i = 0; i < n; ++i) {
        const entry *s = &r->entries[it[i].sum], *c = &r->entries[it[i].cnt];
        const entry *sh = &r->entries[r->entries[it[i].sum].alias_of];
        char name[GGUF_NAME_MAX];
        snprintf(name, sizeof name, "%s.in_sum2", it[i].base);
        if (gguf_writer_add_tensor(w, name, GGML_F32, sh->n_dims, sh->ne, s->payload,
                                   s->n_floats * sizeof(float)) < 0)
            goto fail;
        snprintf(name, sizeof name, "%s.counts", it[i].base);
        if (gguf_writer_add_tensor(w, name, GGML_F32, c->n_dims, c->ne, c->payload,
                                   c->n_floats * sizeof(float)) < 0)
            goto fail;
    }
    free(it);
    return w;
fail:
    free(it);
    gguf_writer_free(w);
    return NULL;
}

/* Serialises, trims (seed style), and publishes atomically. Returns the size. */
static int write_out(run *r, gguf_writer *w, long long *nbytes)
{
    char err[1024];
    uint8_t *buf = NULL;
    size_t size = 0;
    if (gguf_writer_to_memory(w, &buf, &size, err, sizeof err))
        return refuse(r, "UNWRITABLE %s: %s", r->o->out, err);
    if (r->o->names == G2I_NAMES_SEED) {
        /* The seed stops after the last payload, with no trailing padding; read
         * the serialised file back to find where that is. */
        gguf_file *g = gguf_open_memory(buf, size, r->o->out, err, sizeof err);
        if (!g) { free(buf); return refuse(r, "INTERNAL %s", err); }
        uint64_t end = gguf_data_offset(g);
        for (int64_t i = 0; i < gguf_n_tensors(g); ++i) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            if (gguf_data_offset(g) + t->offset + t->size > end)
                end = gguf_data_offset(g) + t->offset + t->size;
        }
        gguf_close(g);
        if (end < size) size = (size_t)end;
    }
    atomic_out ao;
    int rc = -1;
    if (atomic_out_open(&ao, r->o->out, err, sizeof err) == 0) {
        if (fwrite(buf, 1, size, ao.fp) != size) {
            snprintf(err, sizeof err, "%s: write failed: %s", r->o->out, strerror(errno));
            atomic_out_abort(&ao);
        } else {
            rc = atomic_out_commit(&ao, err, sizeof err);
        }
    }
    free(buf);
    if (rc) return refuse(r, "UNWRITABLE %s", err);
    *nbytes = (long long)size;
    return 0;
}

/* ------------------------------------------------------------------ run */

int grams2imatrix_run(const g2i_options *o, FILE *log)
{
    run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.log = log;
    char b1[48], b2[48], b3[48], b4[48];
    int rc = 2;
    gguf_writer *w = NULL;
    if (path_exists(o->out)) {
        /* An imatrix that exists is moved by a human, never overwritten by a
         * re-run: a second convert must not destroy the one the first fed. */
        refuse(&r, "EXISTS %s: an imatrix is already there; move or delete it, or name"
               " another -o", o->out);
        goto out;
    }
    if (o->chunk_size <= 0) {
        refuse(&r, "BAD_CHUNK_SIZE --chunk-size %s is not positive", g2i_int_str(o->chunk_size, b1));
        goto out;
    }
    if (o->chunk_size > UINT32_MAX) {
        refuse(&r, "BAD_CHUNK_SIZE --chunk-size %s does not fit the u32 imatrix.chunk_size field",
               g2i_int_str(o->chunk_size, b1));
        goto out;
    }
    if (load_dir(&r, o->calib_dir) || build_entries(&r)) goto out;
    if (r.n_entries == 0) {
        refuse(&r, "NO_GRAMS %s: no layer holds a pooled gram to fold", o->calib_dir);
        goto out;
    }
    if (r.rotated)
        note(&r, "note: %u gram(s) recorded in a rotated domain: their diagonal is the rotated"
             " activation's second moment, not the model's own\n", r.rotated);
    u128 chunk_count = r.c.rows / (u128)o->chunk_size;
    if (chunk_count > UINT32_MAX) {
        /* chunk_count is a u32 in the reader's grammar. Getting here means a
         * chunk size meant for a far larger run, or rows read from the wrong
         * header offset (a u32 parse of the u64 is off by 2^32). */
        refuse(&r, "CHUNK_COUNT %s = %s rows // %s does not fit the u32 imatrix.chunk_count"
               " field; raise --chunk-size", u128_str(chunk_count, b1), u128_str(r.c.rows, b2),
               g2i_int_str(o->chunk_size, b3));
        goto out;
    }
    w = o->names == G2I_NAMES_LLAMA
        ? writer_llama(&r, (uint32_t)o->chunk_size, (uint32_t)chunk_count)
        : writer_seed(&r, (uint32_t)o->chunk_size, (uint32_t)chunk_count);
    if (!w) { refuse(&r, "INTERNAL %s: the GGUF writer refused an entry", o->out); goto out; }
    long long nbytes = 0;
    if (write_out(&r, w, &nbytes)) goto out;
    note(&r, "IMATRIX_OK entries=%zu layers=%llu experts=%llu inherited=%llu rows=%s routing=%s"
         " chunks=%s/%s bytes=%lld out=%s\n", r.n_written, (unsigned long long)r.c.layers,
         (unsigned long long)r.c.experts, (unsigned long long)r.c.inherited,
         u128_str(r.c.rows, b1), u128_str(r.c.routing, b2), u128_str(chunk_count, b3),
         g2i_int_str(o->chunk_size, b4), nbytes, o->out);
    rc = 0;
out:
    gguf_writer_free(w);
    run_free(&r);
    return rc;
}
