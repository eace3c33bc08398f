/* shard.h: a pack built in N pieces, one per machine (`iq3pack build SRC
 * --shard K/N -o SHARDDIR`, as a Slurm array task or an indexed job), and
 * assembled into the pack one build writes (`iq3pack merge SHARDDIR... -o
 * PACK`), byte for byte.
 *
 * Contract:
 *  - The split: the routed-expert layers in order, cut into N runs of about
 *    equal experts.bin bytes (the encode work is per expert byte); a shard
 *    may get no layer when N exceeds them. Shard 0 also writes the dense
 *    part (dense.bin, embd.bin, tokenizer.gguf). shard_range() is that rule.
 *  - A shard directory: experts.part (its bytes [lo, hi) of experts.bin),
 *    layout.json (the whole pack's plan, as manifest.json holds it without
 *    checksums), shard.json (which shard, of which source and flags, the
 *    range, the part's crc32), and in shard 0 the dense files. Written
 *    under a temporary name and renamed when complete, as a pack is.
 *  - pack_merge() refuses, naming the directory, before writing anything: a
 *    shard missing or given twice, one of another source (sha256), other
 *    flags (--experts, --imatrix, --no-nextn) or another strata version, a part whose
 *    size or crc32 is not what its shard.json says (a killed or damaged
 *    task). Then it writes the pack under a temporary name: the dense files
 *    copied, experts.bin the parts in order, manifest.json from layout.json
 *    with the files' checksums, the index; renamed into place.
 * Returns the exit status (0, or 1 with one line on err). */
#ifndef STRATA_SHARD_H
#define STRATA_SHARD_H

#include <stdint.h>
#include <stdio.h>

#include "formats/pack_manifest.h"

/* "K/N" with 0 <= K < N <= 4096: 0, else -1. */
int shard_parse(const char *s, int *k, int *n);
/* Shard k of n: expert layers [*l0, *l1) of L, bytes [*lo, *hi) of an
 * experts.bin of experts_bytes. */
void shard_range(const pack_layout *L, uint64_t experts_bytes, int k, int n, int *l0, int *l1, uint64_t *lo,
                 uint64_t *hi);
/* shard.json into dir for shard k of n (the other fields as above). */
int shard_write_info(const char *dir, int k, int n, const pack_layout *L, const char *experts_mode, int drop_nextn,
                     int64_t rotate, const char *imatrix_sha256, const char *grams_id, int l0, int l1, uint64_t lo, uint64_t hi,
                     uint64_t experts_bytes, uint32_t part_crc, char *err, size_t errlen);
int pack_merge(const char *const *dirs, int n_dirs, const char *out_dir, FILE *out, FILE *err);

#define SHARD_PART "experts.part"
#define SHARD_INFO "shard.json"
#define SHARD_LAYOUT "layout.json"

#endif
