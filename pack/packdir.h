/* packdir.h: the filesystem side of writing a pack directory.
 *
 * Contract: packdir_begin() refuses an existing target, checks the free space
 * of its parent against `need` bytes and creates "<target>.partial.XXXXXX"
 * beside it (same filesystem, so the final rename is atomic). packdir_publish()
 * fsyncs and renames it to the target WITHOUT replacing anything (renameat2
 * RENAME_NOREPLACE; rename(2) alone would silently replace an empty
 * directory). packdir_discard() removes the partial directory and the plain
 * files in it (nothing else: it never recurses into what it did not make).
 * The pack's file names and their crc32 walk are formats/pack_files.h's.
 * packdir_checksums() and packdir_write_manifest() finish a directory's
 * manifest, for a build and for a merge of shards alike. */
#ifndef STRATA_PACKDIR_H
#define STRATA_PACKDIR_H

#include <stddef.h>
#include <stdint.h>

char *packdir_begin(const char *target, uint64_t need, char *err, size_t errlen);
/* A partial directory of `target` left by a build that was killed or
 * interrupted ("<target>.partial.*" beside it, a directory): its path in
 * `path` and 1, else 0. The build names it and the command that removes it. */
int packdir_find_stale(const char *target, char *path, size_t n);
int packdir_publish(const char *tmp, const char *target, char *err, size_t errlen);
void packdir_discard(const char *tmp);

struct pack_layout;
/* Each pack file of dir: its crc32 and size into L->files (check: the bins
 * must have their planned sizes). 0, or -1 with the file named in err. */
int packdir_checksums(struct pack_layout *L, const char *dir, int check, char *err, size_t errlen);
/* manifest.json into dir from L (its files' sizes and crc32s filled in),
 * written under a temporary name and renamed. */
int packdir_write_manifest(const struct pack_layout *L, const char *dir, char *err, size_t errlen);

#endif
