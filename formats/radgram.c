/* radgram.c: RADGRAM2 header and diagonal reader (see radgram.h). */
#include "radgram.h"

#include "formats/fileio.h"
#include "formats/sha256.h"

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__extension__ typedef unsigned __int128 u128;

const char *radgram_keyword(radgram_error e)
{
    switch (e) {
    case RADGRAM_OK: return "OK";
    case RADGRAM_UNREADABLE: return "UNREADABLE";
    case RADGRAM_SHORT: return "SHORT";
    case RADGRAM_NOT_RADGRAM2: return "NOT_RADGRAM2";
    case RADGRAM_NONFINITE: return "NONFINITE";
    case RADGRAM_NOMEM: return "NOMEM";
    }
    return "UNKNOWN";
}

static uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const uint8_t *p)
{
    return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

static float rd_f32(const uint8_t *p)
{
    uint32_t u = rd_u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Python's repr() of a bytes object, so a bad magic reads as the seed prints it. */
static void bytes_repr(const uint8_t *b, size_t n, char *out, size_t outlen)
{
    int has_sq = memchr(b, '\'', n) != NULL, has_dq = memchr(b, '"', n) != NULL;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    size_t o = 0;
    char tmp[8];
#define PUT(s) do { for (const char *s_ = (s); *s_ && o + 1 < outlen; ++s_) out[o++] = *s_; } while (0)
    tmp[0] = 'b'; tmp[1] = q; tmp[2] = 0;
    PUT(tmp);
    for (size_t i = 0; i < n; ++i) {
        uint8_t c = b[i];
        if (c == (uint8_t)q || c == '\\') { tmp[0] = '\\'; tmp[1] = (char)c; tmp[2] = 0; }
        else if (c == '\t') strcpy(tmp, "\\t");
        else if (c == '\n') strcpy(tmp, "\\n");
        else if (c == '\r') strcpy(tmp, "\\r");
        else if (c < 0x20 || c >= 0x7f) snprintf(tmp, sizeof tmp, "\\x%02x", c);
        else { tmp[0] = (char)c; tmp[1] = 0; }
        PUT(tmp);
    }
    tmp[0] = q; tmp[1] = 0;
    PUT(tmp);
#undef PUT
    out[o] = 0;
}

/* Decimal text of a 128-bit value: 32 + 4*k*k overflows 64 bits for a hostile k,
 * and the message must still state the exact size the seed would state. */
static const char *u128_str(u128 v, char buf[48])
{
    char *p = buf + 47;
    *p = 0;
    do { *--p = (char)('0' + (int)(v % 10)); v /= 10; } while (v);
    return p;
}

radgram_error radgram_parse_header(const void *buf, size_t n, uint64_t file_size,
                                   const char *name, radgram_header *h,
                                   char *err, size_t errlen)
{
    const uint8_t *p = buf;
    memset(h, 0, sizeof *h);
    if (n < RADGRAM_HEADER_BYTES || file_size < RADGRAM_HEADER_BYTES) {
        snprintf(err, errlen, "%s: %llu bytes, under the %d-byte RADGRAM2 header", name,
                 (unsigned long long)file_size, RADGRAM_HEADER_BYTES);
        return RADGRAM_SHORT;
    }
    if (memcmp(p, RADGRAM_MAGIC, 8) != 0) {
        char r[64];
        bytes_repr(p, 8, r, sizeof r);
        snprintf(err, errlen, "%s: magic %s, expected b'RADGRAM2'", name, r);
        return RADGRAM_NOT_RADGRAM2;
    }
    h->k = rd_u32(p + 8);
    h->rank = rd_u32(p + 12);
    h->rows = rd_u64(p + 16);
    h->domain = rd_u32(p + 24);
    h->pad = rd_u32(p + 28);
    if (h->k == 0) {
        snprintf(err, errlen, "%s: header claims k=%u, which describes no matrix", name, h->k);
        return RADGRAM_SHORT;
    }
    u128 need = (u128)RADGRAM_HEADER_BYTES + (u128)4 * h->k * h->k;
    if ((u128)file_size != need) {
        char nb[48];
        snprintf(err, errlen, "%s: %llu bytes, expected %s (32 + k*k*4 for k=%u)", name,
                 (unsigned long long)file_size, u128_str(need, nb), h->k);
        return RADGRAM_SHORT;
    }
    return RADGRAM_OK;
}

/* Byte offset of diagonal element i; fits 64 bits once the size check passed. */
static uint64_t diag_offset(uint32_t k, uint32_t i)
{
    return RADGRAM_HEADER_BYTES + ((uint64_t)i * k + i) * 4u;
}

static radgram_error check_finite(const float *diag, uint32_t k, const char *name,
                                  char *err, size_t errlen)
{
    for (uint32_t i = 0; i < k; ++i) {
        if (!isfinite(diag[i])) {
            snprintf(err, errlen, "%s: diagonal element %u is %s; a non-finite second moment"
                     " is a corrupt recording", name, i,
                     isnan(diag[i]) ? "nan" : (diag[i] > 0 ? "inf" : "-inf"));
            return RADGRAM_NONFINITE;
        }
    }
    return RADGRAM_OK;
}

static float *alloc_diag(uint32_t k, const char *name, char *err, size_t errlen)
{
    float *d = malloc((size_t)k * sizeof *d);
    if (!d) snprintf(err, errlen, "%s: out of memory for a diagonal of %u floats", name, k);
    return d;
}

radgram_error radgram_parse_memory(const void *data, size_t size, const char *name,
                                   radgram_header *h, float **diag,
                                   char *err, size_t errlen)
{
    *diag = NULL;
    radgram_error e = radgram_parse_header(data, size, size, name, h, err, errlen);
    if (e) return e;
    float *d = alloc_diag(h->k, name, err, errlen);
    if (!d) return RADGRAM_NOMEM;
    const uint8_t *p = data;
    for (uint32_t i = 0; i < h->k; ++i) d[i] = rd_f32(p + diag_offset(h->k, i));
    e = check_finite(d, h->k, name, err, errlen);
    if (e) { free(d); return e; }
    *diag = d;
    return RADGRAM_OK;
}

/* Worded like Python's OSError, which the seed prints after the path. */
static radgram_error unreadable(const char *path, int errnum, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: [Errno %d] %s: '%s'", path, errnum, strerror(errnum), path);
    return RADGRAM_UNREADABLE;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) { errno = EIO; return -1; } /* shrank under us */
        p += r; n -= (size_t)r; off += (uint64_t)r;
    }
    return 0;
}

radgram_error radgram_read(const char *path, radgram_header *h, float **diag,
                           char *err, size_t errlen)
{
    *diag = NULL;
    memset(h, 0, sizeof *h);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return unreadable(path, errno, err, errlen);
    struct stat st;
    if (fstat(fd, &st) != 0) { int en = errno; close(fd); return unreadable(path, en, err, errlen); }
    uint64_t size = (uint64_t)st.st_size;
    radgram_error e;
    if (size <= RADGRAM_WHOLE_MAX) {
        /* A small gram costs one read; the diagonal is taken from the buffer. */
        uint8_t *buf = malloc(size ? size : 1);
        if (!buf) { close(fd); snprintf(err, errlen, "%s: out of memory", path); return RADGRAM_NOMEM; }
        if (pread_all(fd, buf, size, 0) != 0) {
            int en = errno; free(buf); close(fd); return unreadable(path, en, err, errlen);
        }
        close(fd);
        e = radgram_parse_memory(buf, size, path, h, diag, err, errlen);
        free(buf);
        return e;
    }
    uint8_t hdr[RADGRAM_HEADER_BYTES];
    if (pread_all(fd, hdr, sizeof hdr, 0) != 0) {
        int en = errno; close(fd); return unreadable(path, en, err, errlen);
    }
    e = radgram_parse_header(hdr, sizeof hdr, size, path, h, err, errlen);
    if (e) { close(fd); return e; }
    float *d = alloc_diag(h->k, path, err, errlen);
    if (!d) { close(fd); return RADGRAM_NOMEM; }
    for (uint32_t i = 0; i < h->k; ++i) {
        uint8_t b[4];
        if (pread_all(fd, b, 4, diag_offset(h->k, i)) != 0) {
            int en = errno; free(d); close(fd); return unreadable(path, en, err, errlen);
        }
        d[i] = rd_f32(b);
    }
    close(fd);
    e = check_finite(d, h->k, path, err, errlen);
    if (e) { free(d); return e; }
    *diag = d;
    return RADGRAM_OK;
}

radgram_error radgram_read_matrix(const char *path, radgram_header *h, float **m, char *err, size_t errlen)
{
    *m = NULL;
    unsigned char *data = NULL;
    size_t size = 0;
    char e2[512];
    if (read_file(path, &data, &size, e2, sizeof e2)) {
        snprintf(err, errlen, "%s", e2);
        return RADGRAM_UNREADABLE;
    }
    radgram_error e = radgram_parse_header(data, size, size, path, h, err, errlen);
    const size_t n = e ? 0 : (size_t)h->k * h->k;
    float *f = e ? NULL : malloc(n * sizeof *f);
    if (!e && !f) { snprintf(err, errlen, "%s: out of memory for a %u x %u gram", path, h->k, h->k); e = RADGRAM_NOMEM; }
    for (size_t i = 0; !e && i < n; i++) {
        f[i] = rd_f32(data + RADGRAM_HEADER_BYTES + 4 * i);
        if (!isfinite(f[i])) {
            snprintf(err, errlen, "%s: element (%zu, %zu) is %g", path, i / h->k, i % h->k, (double)f[i]);
            e = RADGRAM_NONFINITE;
        }
    }
    free(data);
    if (e) { free(f); return e; }
    *m = f;
    return RADGRAM_OK;
}

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

int radgram_write(const char *path, const radgram_header *h, const double *upper, char *err, size_t errlen)
{
    uint8_t head[RADGRAM_HEADER_BYTES] = { 0 };
    memcpy(head, RADGRAM_MAGIC, 8);
    put_u32(head + 8, h->k);
    put_u32(head + 12, h->rank);
    put_u32(head + 16, (uint32_t)h->rows);
    put_u32(head + 20, (uint32_t)(h->rows >> 32));
    put_u32(head + 24, h->domain);
    const size_t k = h->k;
    float *row = malloc(k * sizeof *row);
    atomic_out o;
    if (!row) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    if (atomic_out_open(&o, path, err, errlen)) { free(row); return -1; }
    int ok = fwrite(head, 1, sizeof head, o.fp) == sizeof head;
    for (size_t i = 0; ok && i < k; i++) {
        for (size_t j = 0; j < k; j++) row[j] = (float)(j >= i ? upper[i * k + j] : upper[j * k + i]);
        ok = fwrite(row, sizeof *row, k, o.fp) == k; /* f32 little-endian, as the reader takes it */
    }
    free(row);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        atomic_out_abort(&o);
        return -1;
    }
    return atomic_out_commit(&o, err, errlen);
}

static int cmp_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }
static int is_gram(const struct dirent *e) { return !strncmp(e->d_name, "gram.r", 6); }

int radgram_dir_id(const char *dir, char hex[65], char *err, size_t errlen)
{
    struct dirent **list = NULL;
    const int n = scandir(dir, &list, is_gram, cmp_name);
    if (n < 0) { snprintf(err, errlen, "%s: %s", dir, strerror(errno)); return -1; }
    sha256_ctx c;
    sha256_init(&c);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        unsigned char head[RADGRAM_HEADER_BYTES];
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        FILE *f = rc ? NULL : fopen(path, "rb");
        if (!rc && (!f || fread(head, 1, sizeof head, f) != sizeof head)) {
            snprintf(err, errlen, "%s: cannot read its header", path);
            rc = -1;
        }
        if (f) fclose(f);
        if (!rc) {
            sha256_update(&c, list[i]->d_name, strlen(list[i]->d_name) + 1);
            sha256_update(&c, head, sizeof head);
        }
        free(list[i]);
    }
    free(list);
    if (rc) return -1;
    unsigned char dg[32];
    sha256_final(&c, dg);
    sha256_hex(dg, hex);
    return 0;
}
