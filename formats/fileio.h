/* fileio.h: the one way strata writes an output file.
 *
 * Contract: atomic_out_open() creates "<path>.tmp.<pid>" next to the target
 * (O_EXCL, so two writers never share it). atomic_out_commit() flushes,
 * fsyncs and publishes the file with link(2), which fails if the target
 * exists: an existing output is never overwritten, even in a race, and a
 * reader never sees a partial file. atomic_out_abort() removes the temporary.
 * Errors are one line "<path>: <what>" in err. */
#ifndef STRATA_FILEIO_H
#define STRATA_FILEIO_H

#include <stddef.h>
#include <stdio.h>

typedef struct atomic_out {
    FILE *fp;
    char *path;
    char *tmp;
} atomic_out;

int  atomic_out_open(atomic_out *o, const char *path, char *err, size_t errlen);
int  atomic_out_commit(atomic_out *o, char *err, size_t errlen);
void atomic_out_abort(atomic_out *o);

/* 1 if something (file, dir, dangling link) exists at path. */
int path_exists(const char *path);

/* Reads a whole file into a malloc'd buffer (+1 NUL byte, not counted). */
int read_file(const char *path, unsigned char **data, size_t *size, char *err, size_t errlen);

#endif
