/* loader_check.c: `strata check`: every pack file's size and crc32 (zlib)
 * against the index's @file lines (loader.h). Reads each file once in
 * 1 MiB chunks, so a pack of any size is checked in bounded memory. */
#include "runtime/model/loader.h"

#include "formats/fileio.h"
#include "runtime/model/loader_index.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

static int crc_file(const char *path, uint64_t *bytes, uint32_t *crc, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); return -1; }
    unsigned char *buf = malloc(1u << 20);
    uLong c = crc32(0L, Z_NULL, 0);
    size_t got;
    *bytes = 0;
    while (buf && (got = fread(buf, 1, 1u << 20, fp)) > 0) {
        c = crc32(c, buf, (uInt)got);
        *bytes += got;
    }
    int rc = (!buf || ferror(fp)) ? -1 : 0;
    if (rc) snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
    free(buf);
    fclose(fp);
    *crc = (uint32_t)c;
    return rc;
}

int loader_check(const char *dir, FILE *out, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/index.txt", dir);
    unsigned char *text;
    size_t len;
    if (read_file(path, &text, &len, err, errlen)) return -1;
    pack_index x;
    int rc = pindex_parse(&x, (const char *)text, len, path, err, errlen);
    free(text);
    if (rc) return -1;
    for (int f = 0; f < PI_NFILES && rc == 0; f++) {
        uint64_t bytes;
        uint32_t crc;
        snprintf(path, sizeof path, "%s/%s", dir, PI_FILE_NAMES[f]);
        if (!x.have_file[f]) {
            snprintf(err, errlen, "%s/index.txt: no @file line for %s", dir, PI_FILE_NAMES[f]);
            rc = -1;
        } else if (crc_file(path, &bytes, &crc, err, errlen)) {
            rc = -1;
        } else if (bytes != x.file_bytes[f]) {
            snprintf(err, errlen, "%s: %llu bytes, the index says %llu", path, (unsigned long long)bytes,
                     (unsigned long long)x.file_bytes[f]);
            rc = -1;
        } else if (crc != x.file_crc[f]) {
            snprintf(err, errlen, "%s: crc32 %08x, the index says %08x (the file is corrupt)", path, crc, x.file_crc[f]);
            rc = -1;
        } else if (out) {
            fprintf(out, "ok  %-15s %14llu bytes  crc32 %08x\n", PI_FILE_NAMES[f], (unsigned long long)bytes, crc);
        }
    }
    pindex_free(&x);
    return rc;
}
