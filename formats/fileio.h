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
#include <stdint.h>
#include <stdio.h>

typedef struct atomic_out {
    FILE *fp;
    char *path;
    char *tmp;
} atomic_out;

int  atomic_out_open(atomic_out *o, const char *path, char *err, size_t errlen);
int  atomic_out_commit(atomic_out *o, char *err, size_t errlen);
void atomic_out_abort(atomic_out *o);

/* An output directory, written whole or not at all: outdir_begin() refuses
 * an existing target, checks the free space of its parent against `need`
 * bytes and creates "<target>.partial.XXXXXX" beside it (same filesystem, so
 * the final rename is atomic; the caller frees the name). outdir_publish()
 * fsyncs it and renames it to the target WITHOUT replacing anything
 * (renameat2 RENAME_NOREPLACE; rename(2) alone would silently replace an
 * empty directory). outdir_discard() removes it and the plain files in it
 * (nothing else: it never recurses into what it did not make).
 * outdir_find_stale(): a partial directory of target left by a run that was
 * killed ("<target>.partial.*", a directory): its path and 1, else 0, for
 * the message that names it and the command that removes it. */
char *outdir_begin(const char *target, uint64_t need, char *err, size_t errlen);
int  outdir_publish(const char *tmp, const char *target, char *err, size_t errlen);
void outdir_discard(const char *tmp);
int  outdir_find_stale(const char *target, char *path, size_t n);

/* 1 if something (file, dir, dangling link) exists at path. */
int path_exists(const char *path);

/* Reads a whole file into a malloc'd buffer (+1 NUL byte, not counted). */
int read_file(const char *path, unsigned char **data, size_t *size, char *err, size_t errlen);

#endif
