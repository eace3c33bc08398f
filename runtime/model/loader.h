/* loader.h: a finished pack directory -> the model's hyperparameters,
 * engine-form weights and tokenizer. The runtime reads index.txt, the bins
 * and tokenizer.gguf, never manifest.json and never a GGUF model.
 *
 * Contract:
 *  - loader_open() refuses, with one line "<pack>/<file>: <problem>" (a
 *    tensor's name where one is at fault): a pack with no index.txt, an index
 *    that does not parse (formats/pack_index.h), a file whose size differs from the
 *    index's @file line, a row or expert part that reaches past its file or
 *    the pool, sizes that do not add up, a tensor the model graph has no use
 *    for, hyperparameters the model refuses.
 *  - The dense pool is built exactly as the index says: F32 and verbatim
 *    spans copied, fp16 scale/offset planes widened to f32, BF16-in-f32
 *    re-rounded to bf16 by taking the high half (refused if the low half is
 *    not zero: the pack would not hold promoted bf16), F16-in-f32 converted
 *    with round-to-nearest-even. experts.bin is mmapped read-only; expert
 *    parts point into the mapping (S-form scales are widened into owned f32).
 *  - 1-D tensors (norms, biases) are handed to the model as f32.
 *  - loader_check() recomputes the crc32 (zlib) and size of every file and
 *    compares them with the index; 0 when all agree, else -1 with the first
 *    mismatch in err. It prints one line per file to `out` when non-NULL.
 *  - loader_open_progress() is loader_open() that calls fn(ctx, done,
 *    total) as the dense weights are read into the pool (bytes, after each
 *    tensor; the last call has done == total), the part of the load that
 *    reads the disk.
 *  - loader_precheck() is the cheap look `strata serve` takes before it
 *    listens on a DIR whose index.txt exists (the caller checks the path
 *    first: runtime/cli's cli_check_pack_path()): index.txt parses and every
 *    file it names is present with the size its @file line states (stat
 *    only, nothing read). -1 and one line "<file>: <problem>". On success
 *    *n_ctx_train (NULL: skipped) is the index's ARCH.context_length, 0 when
 *    it is not stated.
 * Everything belongs to the loaded_pack; loader_close() frees it all. */
#ifndef STRATA_LOADER_H
#define STRATA_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/model/model.h"
#include "runtime/tokenizer/tokenizer.h"

typedef struct loaded_pack loaded_pack;

loaded_pack *loader_open(const char *dir, char *err, size_t errlen);
typedef void (*loader_progress_fn)(void *ctx, int64_t done, int64_t total);
loaded_pack *loader_open_progress(const char *dir, loader_progress_fn fn, void *ctx, char *err, size_t errlen);
void loader_close(loaded_pack *p);
int loader_precheck(const char *dir, long *n_ctx_train, char *err, size_t errlen);

const model_hparams *loader_hparams(const loaded_pack *p);
const model_weights *loader_weights(const loaded_pack *p);
const tokenizer *loader_tokenizer(const loaded_pack *p);
size_t loader_pool_bytes(const loaded_pack *p);     /* dense engine pool */
size_t loader_expert_bytes(const loaded_pack *p);   /* experts.bin mapping */
int loader_n_tensors(const loaded_pack *p);         /* rows + expert parts */

int loader_check(const char *dir, FILE *out, char *err, size_t errlen);

#endif
