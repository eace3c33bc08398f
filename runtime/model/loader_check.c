/* loader_check.c: `strata check`: every pack file's size and crc32 against
 * the index's @file lines (loader.h). The crc walk is formats/pack_files.h's
 * (each file read once in 1 MiB chunks: bounded memory for any pack). */
#include "runtime/model/loader.h"

#include "formats/fileio.h"
#include "formats/pack_files.h"
#include "formats/pack_index.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int loader_check(const char *dir, FILE *out, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, PACK_INDEX);
    unsigned char *text;
    size_t len;
    if (read_file(path, &text, &len, err, errlen)) return -1;
    pack_index x;
    int rc = pindex_parse(&x, (const char *)text, len, path, err, errlen);
    free(text);
    if (rc) return -1;
    for (int f = 0; f < PACK_NFILES && rc == 0; f++) {
        uint64_t bytes;
        uint32_t crc;
        snprintf(path, sizeof path, "%s/%s", dir, PACK_FILE_NAMES[f]);
        if (!x.have_file[f]) {
            snprintf(err, errlen, "%s/%s: no @file line for %s", dir, PACK_INDEX, PACK_FILE_NAMES[f]);
            rc = -1;
        } else if (pack_file_crc32(path, &bytes, &crc, err, errlen)) {
            rc = -1;
        } else if (bytes != x.file_bytes[f]) {
            snprintf(err, errlen, "%s: %llu bytes, the index says %llu", path, (unsigned long long)bytes,
                     (unsigned long long)x.file_bytes[f]);
            rc = -1;
        } else if (crc != x.file_crc[f]) {
            snprintf(err, errlen, "%s: crc32 %08x, the index says %08x (the file is corrupt)", path, crc, x.file_crc[f]);
            rc = -1;
        } else if (out) {
            fprintf(out, "ok  %-15s %14llu bytes  crc32 %08x\n", PACK_FILE_NAMES[f], (unsigned long long)bytes, crc);
        }
    }
    pindex_free(&x);
    return rc;
}
