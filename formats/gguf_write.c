/* gguf_write.c: the GGUF writer (see gguf.h for the contract).
 *
 * Each KV is encoded to its final bytes when it is added, so serialising is a
 * concatenation and a bad value is refused at the call that made it. Tensor
 * offsets are assigned only at serialisation: payloads go at the running
 * padded sum, the one layout ggml's reader accepts, and the trailing padding
 * of the last payload is written too (ggml reads the padded size). The first
 * refused call is remembered and makes serialisation fail with its message,
 * so a caller that ignores a return value still cannot write a file that
 * silently lacks a key or a tensor. */
#include "gguf.h"

#include "fileio.h"
#include "ggml_types.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->oom) return;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) { b->oom = true; return; }
            cap *= 2;
        }
        uint8_t *np = realloc(b->p, cap);
        if (!np) { b->oom = true; return; }
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u32(wbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(wbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(wbuf *b, const char *s)
{
    size_t n = strlen(s);
    put_u64(b, n);
    put(b, s, n);
}

typedef struct wkv {
    char    *key;
    uint8_t *enc; /* the whole encoded KV: key, type, value */
    size_t   len;
} wkv;

typedef struct wtensor {
    char    *name;
    int      type;
    uint32_t n_dims;
    int64_t  ne[GGUF_MAX_DIMS];
    uint8_t *data;     /* NULL for an alias */
    uint64_t size;
    int64_t  alias_of; /* -1, or the index of the tensor that owns the payload */
} wtensor;

struct gguf_writer {
    uint32_t version, alignment;
    wkv     *kv;
    int64_t  n_kv, cap_kv;
    wtensor *t;
    int64_t  n_t, cap_t;
    char     first_error[256];
};

static int refuse(gguf_writer *w, const char *fmt, ...)
{
    if (w && !w->first_error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->first_error, sizeof w->first_error, fmt, ap);
        va_end(ap);
    }
    return -1;
}

gguf_writer *gguf_writer_new(void)
{
    gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->version = 3;
    w->alignment = GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].enc);
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->kv);
    free(w->t);
    free(w);
}

void gguf_writer_set_version(gguf_writer *w, uint32_t version)
{
    if (version != 2 && version != 3) {
        refuse(w, "GGUF version %u cannot be written (only 2 and 3)", version);
        return;
    }
    w->version = version;
}

static int64_t find_kv(const gguf_writer *w, const char *key)
{
    for (int64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0) return i;
    return -1;
}

/* Takes ownership of the encoding; replaces an existing key only when asked. */
static int push_kv(gguf_writer *w, const char *key, wbuf *b, bool replace)
{
    int64_t at = find_kv(w, key);
    if (b->oom) {
        free(b->p);
        return refuse(w, "key '%s': out of memory", key);
    }
    if (at >= 0) {
        if (!replace) {
            free(b->p);
            return refuse(w, "duplicate key '%s'", key);
        }
        free(w->kv[at].enc);
        w->kv[at].enc = b->p;
        w->kv[at].len = b->len;
        return 0;
    }
    if (w->n_kv == w->cap_kv) {
        int64_t cap = w->cap_kv ? w->cap_kv * 2 : 16;
        wkv *n = realloc(w->kv, (size_t)cap * sizeof *n);
        if (!n) { free(b->p); return refuse(w, "key '%s': out of memory", key); }
        w->kv = n;
        w->cap_kv = cap;
    }
    char *k = strdup(key);
    if (!k) { free(b->p); return refuse(w, "key '%s': out of memory", key); }
    w->kv[w->n_kv++] = (wkv){ k, b->p, b->len };
    return 0;
}

static void put_alignment_kv(wbuf *b, uint32_t a)
{
    put_str(b, "general.alignment");
    put_u32(b, GGUF_TYPE_UINT32);
    put_u32(b, a);
}

void gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment, bool force_key)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        refuse(w, "alignment %u is not a non-zero power of two", alignment);
        return;
    }
    w->alignment = alignment;
    /* an existing key always follows the value, or the file would lie */
    if (alignment == GGUF_DEFAULT_ALIGNMENT && !force_key && find_kv(w, "general.alignment") < 0)
        return;
    wbuf b = {0};
    put_alignment_kv(&b, alignment);
    push_kv(w, "general.alignment", &b, true);
}

static int check_key(gguf_writer *w, const char *key)
{
    if (!key) return refuse(w, "NULL key");
    return 0;
}

int gguf_writer_add_kv(gguf_writer *w, const char *key, gguf_type type, const void *val)
{
    if (check_key(w, key)) return -1;
    if ((unsigned)type >= GGUF_TYPE_COUNT || type == GGUF_TYPE_ARRAY)
        return refuse(w, "key '%s': type %d is not a scalar type", key, (int)type);
    if (!val) return refuse(w, "key '%s': NULL value", key);
    if (strcmp(key, "general.alignment") == 0) {
        /* the key decides the layout, so it must be one the reader accepts */
        uint32_t a;
        if (type != GGUF_TYPE_UINT32)
            return refuse(w, "general.alignment must be u32, not %s", gguf_type_name(type));
        memcpy(&a, val, 4);
        if (find_kv(w, key) >= 0) return refuse(w, "duplicate key '%s'", key);
        gguf_writer_set_alignment(w, a, true);
        return w->first_error[0] ? -1 : 0;
    }
    wbuf b = {0};
    put_str(&b, key);
    put_u32(&b, (uint32_t)type);
    if (type == GGUF_TYPE_STRING) put_str(&b, (const char *)val);
    else put(&b, val, gguf_type_size(type));
    return push_kv(w, key, &b, false);
}

int gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v)
{
    return gguf_writer_add_kv(w, key, GGUF_TYPE_UINT32, &v);
}

int gguf_writer_add_str(gguf_writer *w, const char *key, const char *v)
{
    return gguf_writer_add_kv(w, key, GGUF_TYPE_STRING, v);
}

int gguf_writer_add_arr(gguf_writer *w, const char *key, gguf_type elem, const void *data, uint64_t n)
{
    if (check_key(w, key)) return -1;
    if ((unsigned)elem >= GGUF_TYPE_COUNT || elem == GGUF_TYPE_ARRAY || elem == GGUF_TYPE_STRING)
        return refuse(w, "key '%s': element type %d is not numeric (strings: gguf_writer_add_arr_str)",
                      key, (int)elem);
    size_t es = gguf_type_size(elem);
    if (n > SIZE_MAX / es) return refuse(w, "key '%s': array too large", key);
    if (n && !data) return refuse(w, "key '%s': NULL array data", key);
    if (strcmp(key, "general.alignment") == 0)
        return refuse(w, "general.alignment must be u32, not an array");
    wbuf b = {0};
    put_str(&b, key);
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, (uint32_t)elem);
    put_u64(&b, n);
    put(&b, data, (size_t)n * es);
    return push_kv(w, key, &b, false);
}

int gguf_writer_add_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n)
{
    if (check_key(w, key)) return -1;
    if (n && !v) return refuse(w, "key '%s': NULL array", key);
    if (strcmp(key, "general.alignment") == 0)
        return refuse(w, "general.alignment must be u32, not an array");
    wbuf b = {0};
    put_str(&b, key);
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, GGUF_TYPE_STRING);
    put_u64(&b, n);
    for (uint64_t j = 0; j < n; j++) {
        if (!v[j]) {
            free(b.p);
            return refuse(w, "key '%s': string %llu is NULL", key, (unsigned long long)j);
        }
        put_str(&b, v[j]);
    }
    return push_kv(w, key, &b, false);
}

int gguf_writer_copy_kv(gguf_writer *w, const gguf_file *f, int64_t i)
{
    const char *key = gguf_kv_key(f, i);
    const gguf_type ty = gguf_kv_type(f, i);
    if (ty != GGUF_TYPE_ARRAY) return gguf_writer_add_kv(w, key, ty, gguf_kv_raw(f, i)); /* copied bytewise */
    const gguf_type et = gguf_kv_arr_type(f, i);
    const uint64_t n = gguf_kv_arr_n(f, i);
    if (et != GGUF_TYPE_STRING) return gguf_writer_add_arr(w, key, et, gguf_kv_arr_data(f, i), n);
    const char **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return refuse(w, "key '%s': out of memory", key);
    for (uint64_t j = 0; j < n; j++) v[j] = gguf_kv_arr_str(f, i, j);
    const int rc = gguf_writer_add_arr_str(w, key, v, n);
    free(v);
    return rc;
}

/* Validates a tensor description the way the reader will, and gives its
 * byte size. */
static int tensor_bytes(gguf_writer *w, const char *name, int type, uint32_t n_dims,
                        const int64_t *ne, uint64_t *size)
{
    if (!name) return refuse(w, "NULL tensor name");
    size_t nl = strlen(name);
    if (nl >= GGUF_NAME_MAX)
        return refuse(w, "tensor '%s': name is %zu bytes; names must be shorter than %d",
                                name, nl, GGUF_NAME_MAX);
    for (int64_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return refuse(w, "duplicate tensor name '%s'", name);
    const ggml_type_row *row = ggml_type_info(type);
    if (!row) return refuse(w, "tensor '%s': unknown ggml type id %d", name, type);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS || !ne)
        return refuse(w, "tensor '%s': n_dims %u is outside 1..%d", name, n_dims,
                                GGUF_MAX_DIMS);
    int64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] < 1)
            return refuse(w, "tensor '%s': dimension %u is %lld", name, d,
                                    (long long)ne[d]);
        if (nel > INT64_MAX / ne[d])
            return refuse(w, "tensor '%s': element count overflows", name);
        nel *= ne[d];
    }
    if (ne[0] % row->blck != 0)
        return refuse(w, "tensor '%s': ne0 %lld is not a multiple of the %s block size %lld",
                                name, (long long)ne[0], row->name, (long long)row->blck);
    uint64_t blocks = (uint64_t)(ne[0] / row->blck), rows = (uint64_t)(nel / ne[0]);
    if (blocks > UINT64_MAX / row->bytes || blocks * row->bytes > UINT64_MAX / rows)
        return refuse(w, "tensor '%s': byte size overflows", name);
    *size = blocks * row->bytes * rows;
    return 0;
}

static int64_t push_tensor(gguf_writer *w, wtensor *t)
{
    if (w->n_t == w->cap_t) {
        int64_t cap = w->cap_t ? w->cap_t * 2 : 16;
        wtensor *n = realloc(w->t, (size_t)cap * sizeof *n);
        if (!n) return refuse(w, "tensor '%s': out of memory", t->name);
        w->t = n;
        w->cap_t = cap;
    }
    w->t[w->n_t] = *t;
    return w->n_t++;
}

static int64_t add_tensor(gguf_writer *w, const char *name, int type, uint32_t n_dims,
                          const int64_t *ne, const void *data, size_t nbytes, int64_t of)
{
    uint64_t size = 0;
    if (tensor_bytes(w, name, type, n_dims, ne, &size)) return -1;
    wtensor t = { .type = type, .n_dims = n_dims, .size = size, .alias_of = -1 };
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    if (of >= 0) {
        if (of >= w->n_t) return refuse(w, "tensor '%s': alias of unknown tensor %lld", name, (long long)of);
        while (w->t[of].alias_of >= 0) of = w->t[of].alias_of;
        if (w->t[of].size != size)
            return refuse(w, "tensor '%s': %llu bytes cannot share the %llu-byte payload of '%s'",
                          name, (unsigned long long)size, (unsigned long long)w->t[of].size,
                          w->t[of].name);
        t.alias_of = of;
    } else {
        if (nbytes != size)
            return refuse(w, "tensor '%s': %zu bytes of data given, its shape and type need %llu",
                          name, nbytes, (unsigned long long)size);
        if (!data) return refuse(w, "tensor '%s': NULL data", name);
        if (!(t.data = malloc(nbytes))) return refuse(w, "tensor '%s': out of memory", name);
        memcpy(t.data, data, nbytes);
    }
    if (!(t.name = strdup(name))) {
        free(t.data);
        return refuse(w, "tensor '%s': out of memory", name);
    }
    int64_t i = push_tensor(w, &t);
    if (i < 0) {
        free(t.name);
        free(t.data);
    }
    return i;
}

int64_t gguf_writer_add_tensor(gguf_writer *w, const char *name, int type, uint32_t n_dims,
                               const int64_t *ne, const void *data, size_t nbytes)
{
    return add_tensor(w, name, type, n_dims, ne, data, nbytes, -1);
}

int64_t gguf_writer_add_tensor_alias(gguf_writer *w, const char *name, int type, uint32_t n_dims,
                                     const int64_t *ne, int64_t of)
{
    if (of < 0) return refuse(w, "tensor '%s': alias of unknown tensor %lld", name ? name : "?",
                              (long long)of);
    return add_tensor(w, name, type, n_dims, ne, NULL, 0, of);
}

static void put_zeros(wbuf *b, uint64_t n)
{
    static const uint8_t z[64];
    while (n) {
        size_t k = n < sizeof z ? (size_t)n : sizeof z;
        put(b, z, k);
        n -= k;
    }
}

int gguf_writer_to_memory(const gguf_writer *w, uint8_t **out, size_t *size, char *err, size_t errlen)
{
    *out = NULL;
    *size = 0;
    if (w->first_error[0]) {
        snprintf(err, errlen, "gguf writer: %s", w->first_error);
        return -1;
    }
    uint64_t *offs = malloc((size_t)(w->n_t ? w->n_t : 1) * sizeof *offs);
    if (!offs) {
        snprintf(err, errlen, "gguf writer: out of memory");
        return -1;
    }
    uint64_t run = 0;
    for (int64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (t->alias_of >= 0) {
            offs[i] = offs[t->alias_of];
            continue;
        }
        offs[i] = run;
        run += (t->size + w->alignment - 1) / w->alignment * w->alignment;
    }
    wbuf b = {0};
    put(&b, GGUF_MAGIC, 4);
    put_u32(&b, w->version);
    put_u64(&b, (uint64_t)w->n_t);
    put_u64(&b, (uint64_t)w->n_kv);
    for (int64_t i = 0; i < w->n_kv; i++) put(&b, w->kv[i].enc, w->kv[i].len);
    for (int64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(&b, t->name);
        put_u32(&b, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put_u64(&b, (uint64_t)t->ne[d]);
        put_u32(&b, (uint32_t)t->type);
        put_u64(&b, offs[i]);
    }
    put_zeros(&b, (w->alignment - b.len % w->alignment) % w->alignment);
    for (int64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (t->alias_of >= 0) continue;
        put(&b, t->data, (size_t)t->size);
        put_zeros(&b, (w->alignment - t->size % w->alignment) % w->alignment);
    }
    free(offs);
    if (b.oom) {
        free(b.p);
        snprintf(err, errlen, "gguf writer: out of memory");
        return -1;
    }
    *out = b.p;
    *size = b.len;
    return 0;
}

int gguf_writer_write(const gguf_writer *w, const char *path, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t n;
    if (gguf_writer_to_memory(w, &buf, &n, err, errlen)) {
        /* name the file the caller asked for, as every error here does */
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "%s: %s", path, inner + (strncmp(inner, "gguf writer: ", 13) ? 0 : 13));
        return -1;
    }
    atomic_out o;
    if (atomic_out_open(&o, path, err, errlen)) {
        free(buf);
        return -1;
    }
    if (fwrite(buf, 1, n, o.fp) != n) {
        snprintf(err, errlen, "%s: write failed", path);
        free(buf);
        atomic_out_abort(&o);
        return -1;
    }
    free(buf);
    return atomic_out_commit(&o, err, errlen);
}
