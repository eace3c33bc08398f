/* diag_vecdot_io.h: the file reading and writing of the two programs of
 * tests/diag/diag_vecdot_llamacpp.sh (diag_vecdot_ggml.c, built against
 * llama.cpp, and diag_vecdot_strata.c, against strata): a whole file of
 * `want` bytes read, or the program (named `prog` in the message) exits 1;
 * n floats written, 0 or -1 with the message printed. */
#ifndef STRATA_DIAG_VECDOT_IO_H
#define STRATA_DIAG_VECDOT_IO_H

#include <stdio.h>
#include <stdlib.h>

static void *vd_slurp(const char *prog, const char *path, size_t want)
{
    FILE *f = fopen(path, "rb");
    void *p = malloc(want);
    if (!f || !p || fread(p, 1, want, f) != want) {
        fprintf(stderr, "%s: cannot read %zu bytes of %s\n", prog, want, path);
        exit(1);
    }
    fclose(f);
    return p;
}

static int vd_write(const char *prog, const char *path, const float *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, sizeof(float), n, f) != n || fclose(f)) {
        fprintf(stderr, "%s: cannot write %s\n", prog, path);
        return -1;
    }
    return 0;
}

#endif
