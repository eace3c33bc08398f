/* source.c: one GGUF or a gguf-split set as one source. */
#include "pack/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/sha256.h"

/* "...-00001-of-00003.gguf" -> prefix length and N, else 0. */
static int split_count(const char *path, size_t *prefix)
{
    const size_t n = strlen(path);
    const char *tail = "-00001-of-00000.gguf";
    const size_t tl = strlen(tail);
    if (n < tl) return 0;
    const char *p = path + n - tl;
    int count = 0;
    if (strncmp(p, "-00001-of-", 10) || strcmp(p + 15, ".gguf")) return 0;
    for (int i = 10; i < 15; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        count = count * 10 + (p[i] - '0');
    }
    *prefix = (size_t)(p - path);
    return count;
}

int source_open(source *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    size_t prefix = 0;
    int n = split_count(path, &prefix);
    if (n < 1) n = 1;
    s->parts = calloc((size_t)n, sizeof *s->parts);
    if (!s->parts) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char *p = strdup(path);
        if (!p) break;
        if (n > 1) snprintf(p + prefix, strlen(path) - prefix + 1, "-%05d-of-%05d.gguf", i + 1, n);
        s->parts[i] = gguf_open(p, err, errlen);
        free(p);
        if (!s->parts[i]) {
            source_close(s);
            return -1;
        }
        s->n_parts = i + 1;
        s->bytes += gguf_file_size(s->parts[i]);
    }
    if (s->n_parts != n) {
        snprintf(err, errlen, "%s: out of memory", path);
        source_close(s);
        return -1;
    }
    for (int64_t i = 0; i < source_n_tensors(s); i++) {
        const gguf_tensor *t = source_tensor_at(s, i);
        if (source_find(s, t->name) != t) {
            snprintf(err, errlen, "%s: tensor %s appears in two split parts", path, t->name);
            source_close(s);
            return -1;
        }
    }
    return 0;
}

void source_close(source *s)
{
    for (int i = 0; i < s->n_parts; i++) gguf_close(s->parts[i]);
    free(s->parts);
    memset(s, 0, sizeof *s);
}

const gguf_file *source_meta(const source *s) { return s->parts[0]; }

int64_t source_n_tensors(const source *s)
{
    int64_t n = 0;
    for (int i = 0; i < s->n_parts; i++) n += gguf_n_tensors(s->parts[i]);
    return n;
}

const gguf_tensor *source_tensor_at(const source *s, int64_t i)
{
    for (int p = 0; p < s->n_parts; p++) {
        const int64_t n = gguf_n_tensors(s->parts[p]);
        if (i < n) return gguf_tensor_at(s->parts[p], i);
        i -= n;
    }
    return NULL;
}

const gguf_tensor *source_find(const source *s, const char *name)
{
    for (int p = 0; p < s->n_parts; p++) {
        const gguf_tensor *t = gguf_find_tensor(s->parts[p], name);
        if (t) return t;
    }
    return NULL;
}

void source_release(const source *s, const gguf_tensor *t)
{
    const long page = sysconf(_SC_PAGESIZE);
    for (int p = 0; p < s->n_parts; p++) {
        const uint8_t *base = gguf_base(s->parts[p]);
        if (t->data < base || t->data >= base + gguf_file_size(s->parts[p])) continue;
        const uintptr_t lo = ((uintptr_t)t->data + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
        const uintptr_t hi = ((uintptr_t)t->data + t->size) / (uintptr_t)page * (uintptr_t)page;
        /* Only whole pages inside the tensor: neighbours may still be needed.
         * A file-backed mapping re-reads dropped pages, so this is safe. */
        if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
        return;
    }
}

int source_sha256(const source *s, char out[65])
{
    sha256_ctx c;
    sha256_init(&c);
    for (int p = 0; p < s->n_parts; p++) {
        const uint8_t *base = gguf_base(s->parts[p]);
        const uint64_t n = gguf_file_size(s->parts[p]);
        const uint64_t chunk = 64u << 20;
        for (uint64_t o = 0; o < n; o += chunk) {
            const uint64_t take = n - o < chunk ? n - o : chunk;
            sha256_update(&c, base + o, take);
            gguf_tensor fake = { .data = base + o, .size = take };
            source_release(s, &fake);
        }
    }
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, out);
    return 0;
}
