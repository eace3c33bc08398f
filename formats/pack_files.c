/* pack_files.c: the pack's file names and the crc32 walk (pack_files.h). */
#include "formats/pack_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "formats/sha256.h"

const char *const PACK_FILE_NAMES[PACK_NFILES] = { "dense.bin", "embd.bin", "experts.bin", "tokenizer.gguf" };
const char PACK_MANIFEST[] = "manifest.json";
const char PACK_INDEX[] = "index.txt";
const char PACK_VISION[] = "vision.gguf";

char *pack_path(const char *dir, const char *leaf)
{
    const size_t n = strlen(dir) + strlen(leaf) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, leaf);
    return p;
}

int pack_file_crc32(const char *path, uint64_t *bytes, uint32_t *crc, char *err, size_t errlen)
{
    return pack_file_digest(path, bytes, crc, NULL, err, errlen);
}

int pack_file_digest(const char *path, uint64_t *bytes, uint32_t *crc, char sha256[65], char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    enum { BUF = 1 << 20 };
    unsigned char *buf = malloc(BUF);
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t n = 0;
    size_t got;
    sha256_ctx sh;
    sha256_init(&sh);
    while (buf && (got = fread(buf, 1, BUF, fp)) > 0) {
        c = crc32(c, buf, (uInt)got);
        if (sha256) sha256_update(&sh, buf, got);
        n += got;
    }
    if (sha256) {
        unsigned char dg[32];
        sha256_final(&sh, dg);
        sha256_hex(dg, sha256);
    }
    const int rc = (!buf || ferror(fp)) ? -1 : 0;
    if (rc) snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
    free(buf);
    fclose(fp);
    *bytes = n;
    *crc = (uint32_t)c;
    return rc;
}
