/* gguf.c: GGUF v2/v3 reader and writer (see gguf.h for the contract).
 *
 * The reader walks the header once through a bounded cursor; nothing is
 * allocated from a count until that count has been checked against the bytes
 * that are left, so the largest allocation a hostile file can cause is a small
 * multiple of its own size. Numbers are little-endian on disk and read with
 * memcpy: the mapping gives no alignment guarantee for header fields. */
#include "gguf.h"

#include "fileio.h"
#include "ggml_types.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ types */

static const struct { const char *name; size_t size; } type_rows[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8] = {"u8", 1},    [GGUF_TYPE_INT8] = {"i8", 1},
    [GGUF_TYPE_UINT16] = {"u16", 2},  [GGUF_TYPE_INT16] = {"i16", 2},
    [GGUF_TYPE_UINT32] = {"u32", 4},  [GGUF_TYPE_INT32] = {"i32", 4},
    [GGUF_TYPE_FLOAT32] = {"f32", 4}, [GGUF_TYPE_BOOL] = {"bool", 1},
    [GGUF_TYPE_STRING] = {"str", 0},  [GGUF_TYPE_ARRAY] = {"arr", 0},
    [GGUF_TYPE_UINT64] = {"u64", 8},  [GGUF_TYPE_INT64] = {"i64", 8},
    [GGUF_TYPE_FLOAT64] = {"f64", 8},
};

const char *gguf_type_name(gguf_type t)
{
    return ((unsigned)t < GGUF_TYPE_COUNT) ? type_rows[t].name : "?";
}

size_t gguf_type_size(gguf_type t)
{
    return ((unsigned)t < GGUF_TYPE_COUNT) ? type_rows[t].size : 0;
}

static bool is_int_type(gguf_type t)
{
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16:
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64:
        return true;
    default:
        return false;
    }
}

static bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

static uint64_t pad_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ------------------------------------------------------------- the arena */

/* Strings are copied into a few large chunks instead of one malloc each:
 * a vocabulary holds ~150k tokens and the reader should not be malloc-bound. */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    char bytes[];
} chunk;

static char *arena_strdup(chunk **head, const uint8_t *s, size_t n)
{
    chunk *c = *head;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = *head;
        c->used = 0;
        c->cap = cap;
        *head = c;
    }
    char *out = c->bytes + c->used;
    if (n) memcpy(out, s, n);
    out[n] = 0;
    c->used += n + 1;
    return out;
}

static void arena_free(chunk *c)
{
    while (c) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
}

/* ------------------------------------------------------------- the reader */

typedef struct gguf_kv {
    const char     *key;
    gguf_type       type;
    gguf_type       arr_type; /* GGUF_TYPE_COUNT unless type is ARRAY */
    uint64_t        arr_n;
    const uint8_t  *raw;      /* scalar bytes or numeric array data, in the mapping */
    const char     *str;      /* STRING value */
    const char    **strs;     /* ARRAY of STRING */
} gguf_kv;

struct gguf_file {
    char          *path;
    const uint8_t *base;
    size_t         size;
    bool           mapped;
    uint32_t       version;
    uint32_t       alignment;
    uint64_t       data_offset;
    int64_t        n_kv, n_tensors;
    gguf_kv       *kv;
    gguf_tensor   *tensors;
    gguf_kv      **kv_sorted;     /* by key, for lookups and the duplicate check */
    gguf_tensor  **t_sorted;      /* by name */
    chunk         *arena;
};

/* One bounded cursor for every read of the header. */
typedef struct cursor {
    const uint8_t *p;
    size_t size, pos;
    char *err;
    size_t errlen;
    const char *name;
} cursor;

static int fail(cursor *c, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s: ", c->name);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
        /* keys and names come from the file: a control byte in one must not
         * turn the one-line message into several (or into terminal escapes) */
        for (char *q = c->err + n; *q; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7f) *q = '?';
    }
    return -1;
}

static size_t remaining(const cursor *c) { return c->size - c->pos; }

static int need(cursor *c, uint64_t n, const char *what)
{
    if (n > remaining(c))
        return fail(c, "truncated: %s needs %llu bytes at offset %zu but only %zu remain",
                    what, (unsigned long long)n, c->pos, remaining(c));
    return 0;
}

static int rd(cursor *c, void *out, size_t n, const char *what)
{
    if (need(c, n, what)) return -1;
    memcpy(out, c->p + c->pos, n);
    c->pos += n;
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) { return rd(c, v, 4, what); }
static int rd_u64(cursor *c, uint64_t *v, const char *what) { return rd(c, v, 8, what); }

/* A GGUF string: u64 length then bytes. Returns a pointer into the buffer. */
static int rd_str(cursor *c, const uint8_t **s, uint64_t *len, const char *what)
{
    if (rd_u64(c, len, what)) return -1;
    if (*len > remaining(c))
        return fail(c, "truncated: %s claims a string of %llu bytes but only %zu remain",
                    what, (unsigned long long)*len, remaining(c));
    *s = c->p + c->pos;
    c->pos += (size_t)*len;
    return 0;
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp((*(gguf_kv *const *)a)->key, (*(gguf_kv *const *)b)->key);
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(gguf_tensor *const *)a)->name, (*(gguf_tensor *const *)b)->name);
}

static int cmp_tensor_extent(const void *a, const void *b)
{
    const gguf_tensor *x = *(gguf_tensor *const *)a, *y = *(gguf_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return 0;
}

static int read_kv(gguf_file *f, cursor *c, gguf_kv *kv, int64_t i)
{
    const uint8_t *s;
    uint64_t len;
    uint32_t type;
    if (rd_str(c, &s, &len, "key")) return -1;
    if (memchr(s, 0, (size_t)len))
        return fail(c, "key %lld contains a NUL byte", (long long)i);
    if (!(kv->key = arena_strdup(&f->arena, s, (size_t)len))) return fail(c, "out of memory");
    if (rd_u32(c, &type, "key type")) return -1;
    if (type >= GGUF_TYPE_COUNT)
        return fail(c, "key '%s' has unknown value type %u", kv->key, type);
    kv->type = (gguf_type)type;
    kv->arr_type = GGUF_TYPE_COUNT;

    if (type == GGUF_TYPE_STRING) {
        if (rd_str(c, &s, &len, kv->key)) return -1;
        if (!(kv->str = arena_strdup(&f->arena, s, (size_t)len))) return fail(c, "out of memory");
        return 0;
    }
    if (type != GGUF_TYPE_ARRAY) {
        if (need(c, type_rows[type].size, kv->key)) return -1;
        kv->raw = c->p + c->pos;
        c->pos += type_rows[type].size;
        return 0;
    }

    uint32_t et;
    uint64_t n;
    if (rd_u32(c, &et, "array element type") || rd_u64(c, &n, "array length")) return -1;
    if (et >= GGUF_TYPE_COUNT)
        return fail(c, "key '%s': array has unknown element type %u", kv->key, et);
    if (et == GGUF_TYPE_ARRAY)
        return fail(c, "key '%s': nested arrays are not supported", kv->key);
    kv->arr_type = (gguf_type)et;
    kv->arr_n = n;
    if (et != GGUF_TYPE_STRING) {
        size_t es = type_rows[et].size;
        if (n > remaining(c) / es)
            return fail(c, "truncated: key '%s' claims an array of %llu %s but only %zu bytes remain",
                        kv->key, (unsigned long long)n, type_rows[et].name, remaining(c));
        kv->raw = c->p + c->pos;
        c->pos += (size_t)n * es;
        return 0;
    }
    /* each string costs at least its 8-byte length: bound n before allocating */
    if (n > remaining(c) / 8)
        return fail(c, "truncated: key '%s' claims %llu strings but only %zu bytes remain",
                    kv->key, (unsigned long long)n, remaining(c));
    kv->strs = malloc((n ? (size_t)n : 1) * sizeof *kv->strs);
    if (!kv->strs) return fail(c, "out of memory");
    for (uint64_t j = 0; j < n; j++) {
        if (rd_str(c, &s, &len, kv->key)) return -1;
        if (!(kv->strs[j] = arena_strdup(&f->arena, s, (size_t)len))) return fail(c, "out of memory");
    }
    return 0;
}

static int read_tensor_info(gguf_file *f, cursor *c, gguf_tensor *t, int64_t i)
{
    const uint8_t *s;
    uint64_t len;
    if (rd_str(c, &s, &len, "tensor name")) return -1;
    if (len >= GGUF_NAME_MAX)
        return fail(c, "tensor %lld: name is %llu bytes; names must be shorter than %d bytes",
                    (long long)i, (unsigned long long)len, GGUF_NAME_MAX);
    if (memchr(s, 0, (size_t)len))
        return fail(c, "tensor %lld: name contains a NUL byte", (long long)i);
    if (!(t->name = arena_strdup(&f->arena, s, (size_t)len))) return fail(c, "out of memory");

    if (rd_u32(c, &t->n_dims, "n_dims")) return -1;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return fail(c, "tensor '%s': n_dims %u is outside 1..%d", t->name, t->n_dims, GGUF_MAX_DIMS);
    int64_t nel = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        uint64_t v = 1;
        if (d < t->n_dims && rd_u64(c, &v, "tensor dimension")) return -1;
        if (v < 1 || v > (uint64_t)INT64_MAX)
            return fail(c, "tensor '%s': dimension %u is %lld; every dimension must be >= 1",
                        t->name, d, (long long)v);
        t->ne[d] = (int64_t)v;
        if (nel > INT64_MAX / t->ne[d])
            return fail(c, "tensor '%s': element count overflows 64 bits", t->name);
        nel *= t->ne[d];
    }
    t->n_elements = nel;

    uint32_t type;
    if (rd_u32(c, &type, "tensor type")) return -1;
    const ggml_type_row *row = ggml_type_info((int)type);
    if (type > INT_MAX || !row)
        return fail(c, "tensor '%s': unknown or removed ggml type id %u", t->name, type);
    t->type = (int)type;
    if (t->ne[0] % row->blck != 0)
        return fail(c, "tensor '%s': ne0 %lld is not a multiple of the %s block size %lld",
                    t->name, (long long)t->ne[0], row->name, (long long)row->blck);
    /* bytes = (ne0/blck)*bytes_per_block * rows; every step checked */
    uint64_t blocks = (uint64_t)(t->ne[0] / row->blck);
    uint64_t rows = (uint64_t)(nel / t->ne[0]);
    if (blocks > UINT64_MAX / row->bytes || blocks * row->bytes > UINT64_MAX / rows)
        return fail(c, "tensor '%s': byte size overflows 64 bits", t->name);
    t->size = blocks * row->bytes * rows;

    if (rd_u64(c, &t->offset, "tensor offset")) return -1;
    if (t->offset % f->alignment != 0)
        return fail(c, "tensor '%s': offset %llu is not aligned to %u", t->name,
                    (unsigned long long)t->offset, f->alignment);
    return 0;
}

static int apply_alignment_key(gguf_file *f, cursor *c)
{
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    for (int64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        if (strcmp(kv->key, "general.alignment") != 0) continue;
        if (kv->type != GGUF_TYPE_UINT32)
            return fail(c, "general.alignment has type %s; it must be u32", gguf_type_name(kv->type));
        uint32_t a;
        memcpy(&a, kv->raw, 4);
        if (!is_pow2(a))
            return fail(c, "general.alignment %u is not a non-zero power of two", a);
        f->alignment = a;
    }
    return 0;
}

/* Data in the file, and no two payloads partly overlapping: sort by extent and
 * compare neighbours. Identical (offset, size) pairs are shared payloads. */
static int check_extents(gguf_file *f, cursor *c)
{
    uint64_t avail = f->size > f->data_offset ? f->size - f->data_offset : 0;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (t->offset > avail || t->size > avail - t->offset)
            return fail(c, "tensor '%s': data [%llu, +%llu) runs past the end of the file "
                        "(data section holds %llu bytes)", t->name, (unsigned long long)t->offset,
                        (unsigned long long)t->size, (unsigned long long)avail);
        t->data = f->base + f->data_offset + t->offset;
    }
    if (f->n_tensors < 2) return 0;
    gguf_tensor **by = malloc((size_t)f->n_tensors * sizeof *by);
    if (!by) return fail(c, "out of memory");
    for (int64_t i = 0; i < f->n_tensors; i++) by[i] = &f->tensors[i];
    qsort(by, (size_t)f->n_tensors, sizeof *by, cmp_tensor_extent);
    int rc = 0;
    for (int64_t i = 1; i < f->n_tensors && rc == 0; i++) {
        const gguf_tensor *a = by[i - 1], *b = by[i];
        if (a->offset == b->offset && a->size == b->size) continue;
        if (b->offset < a->offset + a->size)
            rc = fail(c, "tensors '%s' and '%s' partly overlap", a->name, b->name);
    }
    free(by);
    return rc;
}

static int build_indexes(gguf_file *f, cursor *c)
{
    f->kv_sorted = malloc((size_t)(f->n_kv ? f->n_kv : 1) * sizeof *f->kv_sorted);
    f->t_sorted = malloc((size_t)(f->n_tensors ? f->n_tensors : 1) * sizeof *f->t_sorted);
    if (!f->kv_sorted || !f->t_sorted) return fail(c, "out of memory");
    for (int64_t i = 0; i < f->n_kv; i++) f->kv_sorted[i] = &f->kv[i];
    for (int64_t i = 0; i < f->n_tensors; i++) f->t_sorted[i] = &f->tensors[i];
    qsort(f->kv_sorted, (size_t)f->n_kv, sizeof *f->kv_sorted, cmp_kv);
    qsort(f->t_sorted, (size_t)f->n_tensors, sizeof *f->t_sorted, cmp_tensor_name);
    for (int64_t i = 1; i < f->n_kv; i++)
        if (strcmp(f->kv_sorted[i - 1]->key, f->kv_sorted[i]->key) == 0)
            return fail(c, "duplicate key '%s'", f->kv_sorted[i]->key);
    for (int64_t i = 1; i < f->n_tensors; i++)
        if (strcmp(f->t_sorted[i - 1]->name, f->t_sorted[i]->name) == 0)
            return fail(c, "duplicate tensor name '%s'", f->t_sorted[i]->name);
    return 0;
}

/* Smallest possible encodings, used to bound counts before allocating:
 * a KV is an empty key (8) + type (4) + a one-byte value; a tensor info is an
 * empty name (8) + n_dims (4) + one dim (8) + type (4) + offset (8). */
#define MIN_KV_BYTES 13
#define MIN_TENSOR_BYTES 32

static int parse(gguf_file *f, cursor *c)
{
    char magic[4];
    uint64_t n_tensors, n_kv;
    if (rd(c, magic, 4, "magic")) return -1;
    if (memcmp(magic, GGUF_MAGIC, 4) != 0) return fail(c, "bad magic: not a GGUF file");
    if (rd_u32(c, &f->version, "version")) return -1;
    if (f->version != 2 && f->version != 3)
        return fail(c, "unsupported GGUF version %u (only 2 and 3 are read)", f->version);
    if (rd_u64(c, &n_tensors, "n_tensors") || rd_u64(c, &n_kv, "n_kv")) return -1;
    if (n_kv > remaining(c) / MIN_KV_BYTES)
        return fail(c, "absurd n_kv %llu: the file has only %zu bytes left",
                    (unsigned long long)n_kv, remaining(c));
    if (n_tensors > (remaining(c) - n_kv * MIN_KV_BYTES) / MIN_TENSOR_BYTES)
        return fail(c, "absurd n_tensors %llu: the file has only %zu bytes left",
                    (unsigned long long)n_tensors, remaining(c));
    f->n_kv = (int64_t)n_kv;
    f->n_tensors = (int64_t)n_tensors;
    f->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *f->kv);
    f->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors) return fail(c, "out of memory");

    for (int64_t i = 0; i < f->n_kv; i++) {
        if (read_kv(f, c, &f->kv[i], i)) return -1;
    }
    if (apply_alignment_key(f, c)) return -1;
    for (int64_t i = 0; i < f->n_tensors; i++)
        if (read_tensor_info(f, c, &f->tensors[i], i)) return -1;
    if (build_indexes(f, c)) return -1;
    /* The data section starts at the aligned end of the header. A file with no
     * tensors may end before that point (nothing lives there). */
    f->data_offset = pad_up(c->pos, f->alignment);
    return check_extents(f, c);
}

static gguf_file *open_buffer(const uint8_t *data, size_t size, bool mapped, const char *name,
                              char *err, size_t errlen)
{
    gguf_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(name))) {
        snprintf(err, errlen, "%s: out of memory", name);
        free(f);
        if (mapped) munmap((void *)data, size);
        return NULL;
    }
    f->base = data;
    f->size = size;
    f->mapped = mapped;
    cursor c = { data, size, 0, err, errlen, name };
    if (parse(f, &c) != 0) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

gguf_file *gguf_open_memory(const void *data, size_t size, const char *name,
                            char *err, size_t errlen)
{
    static const uint8_t empty[1];
    return open_buffer(data ? data : empty, data ? size : 0, false, name ? name : "(memory)",
                       err, errlen);
}

gguf_file *gguf_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if (st.st_size == 0) { /* mmap refuses length 0: let the parser call it truncated */
        close(fd);
        return gguf_open_memory(NULL, 0, path, err, errlen);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap failed: %s", path, strerror(e));
        return NULL;
    }
    return open_buffer(m, (size_t)st.st_size, true, path, err, errlen);
}

void gguf_close(gguf_file *f)
{
    if (!f) return;
    if (f->kv)
        for (int64_t i = 0; i < f->n_kv; i++) free(f->kv[i].strs);
    free(f->kv);
    free(f->tensors);
    free(f->kv_sorted);
    free(f->t_sorted);
    arena_free(f->arena);
    if (f->mapped) munmap((void *)f->base, f->size);
    free(f->path);
    free(f);
}

uint32_t gguf_version(const gguf_file *f) { return f->version; }
uint32_t gguf_alignment(const gguf_file *f) { return f->alignment; }
uint64_t gguf_data_offset(const gguf_file *f) { return f->data_offset; }
uint64_t gguf_file_size(const gguf_file *f) { return f->size; }
const char *gguf_path(const gguf_file *f) { return f->path; }
const uint8_t *gguf_base(const gguf_file *f) { return f->base; }
int64_t gguf_n_kv(const gguf_file *f) { return f->n_kv; }
int64_t gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }

static const gguf_kv *kv_at(const gguf_file *f, int64_t i)
{
    return (i >= 0 && i < f->n_kv) ? &f->kv[i] : NULL;
}

int64_t gguf_find_key(const gguf_file *f, const char *key)
{
    size_t lo = 0, hi = (size_t)f->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(f->kv_sorted[mid]->key, key);
        if (r == 0) return f->kv_sorted[mid] - f->kv;
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    return -1;
}

const char *gguf_kv_key(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    return kv ? kv->key : NULL;
}

gguf_type gguf_kv_type(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    return kv ? kv->type : GGUF_TYPE_COUNT;
}

gguf_type gguf_kv_arr_type(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    return kv ? kv->arr_type : GGUF_TYPE_COUNT;
}

uint64_t gguf_kv_arr_n(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    return (kv && kv->type == GGUF_TYPE_ARRAY) ? kv->arr_n : 0;
}

const void *gguf_kv_arr_data(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    return (kv && kv->type == GGUF_TYPE_ARRAY && kv->arr_type != GGUF_TYPE_STRING) ? kv->raw : NULL;
}

const char *gguf_kv_arr_str(const gguf_file *f, int64_t i, uint64_t j)
{
    const gguf_kv *kv = kv_at(f, i);
    if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING || j >= kv->arr_n)
        return NULL;
    return kv->strs[j];
}

/* Widen any integer scalar; *neg tells a negative signed value apart. */
static int kv_int(const gguf_kv *kv, uint64_t *mag, bool *neg)
{
    if (!kv || !is_int_type(kv->type)) return -1;
    int64_t s = 0;
    uint64_t u = 0;
    bool is_signed = true;
    switch (kv->type) {
    case GGUF_TYPE_UINT8:  { uint8_t v;  memcpy(&v, kv->raw, 1); u = v; is_signed = false; break; }
    case GGUF_TYPE_UINT16: { uint16_t v; memcpy(&v, kv->raw, 2); u = v; is_signed = false; break; }
    case GGUF_TYPE_UINT32: { uint32_t v; memcpy(&v, kv->raw, 4); u = v; is_signed = false; break; }
    case GGUF_TYPE_UINT64: { memcpy(&u, kv->raw, 8); is_signed = false; break; }
    case GGUF_TYPE_INT8:   { int8_t v;  memcpy(&v, kv->raw, 1); s = v; break; }
    case GGUF_TYPE_INT16:  { int16_t v; memcpy(&v, kv->raw, 2); s = v; break; }
    case GGUF_TYPE_INT32:  { int32_t v; memcpy(&v, kv->raw, 4); s = v; break; }
    default:               { memcpy(&s, kv->raw, 8); break; }
    }
    if (!is_signed) { *mag = u; *neg = false; return 0; }
    *neg = s < 0;
    *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    return 0;
}

int gguf_kv_u64(const gguf_file *f, int64_t i, uint64_t *out)
{
    uint64_t m;
    bool neg;
    if (kv_int(kv_at(f, i), &m, &neg) || neg) return -1;
    *out = m;
    return 0;
}

int gguf_kv_i64(const gguf_file *f, int64_t i, int64_t *out)
{
    uint64_t m;
    bool neg;
    if (kv_int(kv_at(f, i), &m, &neg)) return -1;
    if (!neg && m > (uint64_t)INT64_MAX) return -1;
    if (neg && m > (uint64_t)INT64_MAX + 1) return -1;
    *out = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    return 0;
}

int gguf_kv_f64(const gguf_file *f, int64_t i, double *out)
{
    const gguf_kv *kv = kv_at(f, i);
    if (!kv) return -1;
    if (kv->type == GGUF_TYPE_FLOAT32) {
        float v;
        memcpy(&v, kv->raw, 4);
        *out = v;
        return 0;
    }
    if (kv->type == GGUF_TYPE_FLOAT64) {
        memcpy(out, kv->raw, 8);
        return 0;
    }
    return -1;
}

const char *gguf_kv_str(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    return (kv && kv->type == GGUF_TYPE_STRING) ? kv->str : NULL;
}

const void *gguf_kv_raw(const gguf_file *f, int64_t i)
{
    const gguf_kv *kv = kv_at(f, i);
    if (!kv || kv->type == GGUF_TYPE_ARRAY) return NULL;
    return kv->type == GGUF_TYPE_STRING ? (const void *)kv->str : (const void *)kv->raw;
}

static int get_exact(const gguf_file *f, const char *key, gguf_type t, void *out)
{
    const gguf_kv *kv = kv_at(f, gguf_find_key(f, key));
    if (!kv || kv->type != t) return -1;
    memcpy(out, kv->raw, type_rows[t].size);
    return 0;
}

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out)
{
    return get_exact(f, key, GGUF_TYPE_UINT32, out);
}

int gguf_get_i32(const gguf_file *f, const char *key, int32_t *out)
{
    return get_exact(f, key, GGUF_TYPE_INT32, out);
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out)
{
    return get_exact(f, key, GGUF_TYPE_FLOAT32, out);
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out)
{
    uint8_t b;
    if (get_exact(f, key, GGUF_TYPE_BOOL, &b)) return -1;
    *out = b != 0;
    return 0;
}

int gguf_get_uint(const gguf_file *f, const char *key, uint64_t *out)
{
    return gguf_kv_u64(f, gguf_find_key(f, key), out);
}

int gguf_get_int(const gguf_file *f, const char *key, int64_t *out)
{
    return gguf_kv_i64(f, gguf_find_key(f, key), out);
}

int gguf_get_float(const gguf_file *f, const char *key, double *out)
{
    return gguf_kv_f64(f, gguf_find_key(f, key), out);
}

/* Each element copied out: the data may lie unaligned in the file. */
int64_t gguf_get_int_array(const gguf_file *g, const char *key, int64_t *out, size_t cap)
{
    const int64_t i = gguf_find_key(g, key);
    if (i < 0 || gguf_kv_type(g, i) != GGUF_TYPE_ARRAY) return -1;
    const gguf_type t = gguf_kv_arr_type(g, i);
    const unsigned char *d = gguf_kv_arr_data(g, i);
    const size_t w = t == GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT32 ? 4
                   : t == GGUF_TYPE_INT16 || t == GGUF_TYPE_UINT16 ? 2
                   : t == GGUF_TYPE_INT8 || t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_BOOL ? 1 : 0;
    if (!w || !d) return -1;
    const uint64_t n = gguf_kv_arr_n(g, i);
    const bool sign = t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT8;
    for (uint64_t k = 0; k < n && k < cap; k++) {
        uint32_t u = 0;
        memcpy(&u, d + k * w, w); /* little-endian: the low bytes first */
        const int shift = 32 - 8 * (int)w;
        out[k] = sign ? (int64_t)((int32_t)(u << shift) >> shift) : (int64_t)u;
    }
    return (int64_t)n;
}

const char *gguf_get_str(const gguf_file *f, const char *key)
{
    return gguf_kv_str(f, gguf_find_key(f, key));
}

const gguf_tensor *gguf_tensor_at(const gguf_file *f, int64_t i)
{
    return (i >= 0 && i < f->n_tensors) ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    size_t lo = 0, hi = (size_t)f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(f->t_sorted[mid]->name, name);
        if (r == 0) return f->t_sorted[mid];
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}
