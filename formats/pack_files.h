/* pack_files.h: the files of a pack directory, named once, and the crc32
 * walk that fingerprints them (docs/pack-format.md).
 *
 * Contract: PACK_FILE_NAMES[f] is the leaf name of pack file f (the order
 * is the manifest's `files` order and the index's @file order); PACK_VISION
 * the optional one (a vision projector); PACK_MANIFEST
 * and PACK_INDEX name the two descriptions of those files. Every tool that
 * builds, indexes, checks or loads a pack spells a file name through these,
 * so a renamed file cannot leave one reader behind.
 * pack_file_crc32() streams a file through zlib's crc32 in 1 MiB chunks
 * (bounded memory for a file of any size) and gives its size and crc; errors
 * are one line "<path>: <what>" and -1. pack_path() joins a directory and a
 * leaf as "DIR/LEAF" in a malloc'd string (NULL when out of memory). */
#ifndef STRATA_PACK_FILES_H
#define STRATA_PACK_FILES_H

#include <stddef.h>
#include <stdint.h>

enum { PACK_DENSE = 0, PACK_EMBD = 1, PACK_EXPERTS = 2, PACK_TOKENIZER = 3, PACK_NFILES = 4 };

extern const char *const PACK_FILE_NAMES[PACK_NFILES];
extern const char PACK_MANIFEST[]; /* the pack's layout, written by `iq3pack build` */
extern const char PACK_INDEX[];    /* the flat index the runtime loads, written by `packindex` */
/* The one optional file: a vision projector's GGUF, byte for byte (`iq3pack build --mmproj`); the
 * manifest's `vision` and the index's @vision line say when a pack has one. */
extern const char PACK_VISION[];

int pack_file_crc32(const char *path, uint64_t *bytes, uint32_t *crc, char *err, size_t errlen);
/* pack_file_crc32, and the file's sha256 (64 hex digits) in the same pass. */
int pack_file_digest(const char *path, uint64_t *bytes, uint32_t *crc, char sha256[65], char *err, size_t errlen);
char *pack_path(const char *dir, const char *leaf);

#endif
