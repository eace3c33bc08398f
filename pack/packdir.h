/* packdir.h: finishing a pack directory's manifest, for a build and for a
 * merge of shards alike (the directory itself is written under a partial
 * name and published by formats/fileio.h's outdir_*). The pack's file names
 * and their crc32 walk are formats/pack_files.h's. */
#ifndef STRATA_PACKDIR_H
#define STRATA_PACKDIR_H

#include <stddef.h>
#include <stdint.h>

struct pack_layout;
/* Each pack file of dir: its crc32 and size into L->files (check: the bins
 * must have their planned sizes). 0, or -1 with the file named in err. */
int packdir_checksums(struct pack_layout *L, const char *dir, int check, char *err, size_t errlen);
/* manifest.json into dir from L (its files' sizes and crc32s filled in),
 * written under a temporary name and renamed. */
int packdir_write_manifest(const struct pack_layout *L, const char *dir, char *err, size_t errlen);

#endif
