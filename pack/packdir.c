/* packdir.c: a pack directory's checksums and manifest (packdir.h). */
#include "pack/packdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fileio.h"
#include "formats/pack_files.h"
#include "formats/pack_manifest.h"

int packdir_checksums(pack_layout *L, const char *dir, int check, char *err, size_t errlen)
{
    for (int f = 0; f < PACK_NFILES; f++) {
        char *p = pack_path(dir, PACK_FILE_NAMES[f]);
        uint64_t bytes = 0;
        const int crc_rc = p ? pack_file_crc32(p, &bytes, &L->files[f].crc32, err, errlen) : -1;
        free(p);
        if (crc_rc) return -1;
        if (check && f != PACK_TOKENIZER && bytes != L->files[f].bytes) {
            snprintf(err, errlen, "%s: %llu bytes written, %llu planned", PACK_FILE_NAMES[f],
                     (unsigned long long)bytes, (unsigned long long)L->files[f].bytes);
            return -1;
        }
        L->files[f].bytes = bytes;
    }
    return 0;
}

int packdir_write_manifest(const pack_layout *L, const char *dir, char *err, size_t errlen)
{
    char *js = pack_layout_to_json(L);
    char *mp = pack_path(dir, PACK_MANIFEST);
    atomic_out ao;
    int mrc = (js && mp) ? atomic_out_open(&ao, mp, err, errlen) : -1;
    if (!js || !mp) snprintf(err, errlen, "out of memory");
    if (mrc == 0) {
        if (fputs(js, ao.fp) < 0 || fputc('\n', ao.fp) < 0) {
            atomic_out_abort(&ao);
            snprintf(err, errlen, "%s: write failed", PACK_MANIFEST);
            mrc = -1;
        } else {
            mrc = atomic_out_commit(&ao, err, errlen);
        }
    }
    free(js);
    free(mp);
    return mrc;
}
