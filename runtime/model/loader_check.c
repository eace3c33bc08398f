/* loader_check.c: `strata check`: every pack file's size and crc32 against
 * the index's @file lines (loader.h); and loader_precheck(), the same walk
 * with sizes only (nothing read), for `strata serve`. The crc walk is
 * formats/pack_files.h's (1 MiB chunks: bounded memory for any pack). */
#include "runtime/model/loader.h"

#include "formats/fileio.h"
#include "formats/hparam_keys.h"
#include "formats/pack_files.h"
#include "formats/pack_index.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* DIR/index.txt read and parsed into x (pindex_free() it after). */
static int read_index(const char *dir, pack_index *x, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, PACK_INDEX);
    unsigned char *text;
    size_t len;
    if (read_file(path, &text, &len, err, errlen)) return -1;
    int rc = pindex_parse(x, (const char *)text, len, path, err, errlen);
    free(text);
    return rc ? -1 : 0;
}

/* One file against what the index says: its size, and its crc32 too when
 * crc is set (read once in 1 MiB chunks); without crc only stat() is asked. */
static int check_one(const char *dir, const char *leaf, uint64_t want_bytes, uint32_t want_crc, bool crc, FILE *out,
                     char *err, size_t errlen)
{
    char path[4096];
    uint64_t bytes;
    uint32_t c = 0;
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, leaf);
    if (crc) {
        if (pack_file_crc32(path, &bytes, &c, err, errlen)) return -1;
    } else {
        if (stat(path, &st) != 0) {
            snprintf(err, errlen, "%s: %s", path, errno == ENOENT ? "missing" : strerror(errno));
            return -1;
        }
        bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    }
    if (bytes != want_bytes) {
        snprintf(err, errlen, "%s: %llu bytes, the index says %llu", path, (unsigned long long)bytes,
                 (unsigned long long)want_bytes);
        return -1;
    }
    if (crc && c != want_crc) {
        snprintf(err, errlen, "%s: crc32 %08x, the index says %08x (the file is corrupt)", path, c, want_crc);
        return -1;
    }
    if (out) fprintf(out, "ok  %-15s %14llu bytes  crc32 %08x\n", leaf, (unsigned long long)bytes, c);
    return 0;
}

/* Every file the index names (its @file lines, and the @vision line's
 * projector when the pack has one) through check_one. */
static int check_files(const char *dir, const pack_index *x, bool crc, FILE *out, char *err, size_t errlen)
{
    for (int f = 0; f < PACK_NFILES; f++) {
        if (!x->have_file[f]) {
            snprintf(err, errlen, "%s/%s: no @file line for %s", dir, PACK_INDEX, PACK_FILE_NAMES[f]);
            return -1;
        }
        if (check_one(dir, PACK_FILE_NAMES[f], x->file_bytes[f], x->file_crc[f], crc, out, err, errlen)) return -1;
    }
    if (x->have_vision && check_one(dir, PACK_VISION, x->vision_bytes, x->vision_crc, crc, out, err, errlen)) return -1;
    return 0;
}

int loader_check(const char *dir, FILE *out, char *err, size_t errlen)
{
    pack_index x;
    if (read_index(dir, &x, err, errlen)) return -1;
    int rc = check_files(dir, &x, true, out, err, errlen);
    pindex_free(&x);
    return rc;
}

/* Sizes by stat(), never a byte read: `strata serve` runs this before it
 * listens, and a pack of hundreds of GB must pass it in milliseconds. */
int loader_precheck(const char *dir, long *n_ctx_train, char *err, size_t errlen)
{
    pack_index x;
    if (read_index(dir, &x, err, errlen)) return -1;
    int rc = check_files(dir, &x, false, NULL, err, errlen);
    if (rc == 0 && n_ctx_train) {
        *n_ctx_train = 0;
        const char *arch = pindex_hparam(&x, "general.architecture");
        char key[160];
        snprintf(key, sizeof key, "%s.%s", arch ? arch : "", HPARAM_KEYS[HPK_CONTEXT].key);
        const char *v = arch ? pindex_hparam(&x, key) : NULL;
        if (v) *n_ctx_train = strtol(v, NULL, 10);
    }
    pindex_free(&x);
    return rc;
}
