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
 *    with round-to-nearest-even. Beside the pool, the S8 rows that decode
 *    reads as Q8_0 rows (loader_keeps_half_scales: 8-bit codes with bias
 *    -128 in groups of 32, fp16 scales, no offsets) keep their fp16 scales
 *    as well (weight.h scales_h): loader_half_scales_bytes more memory,
 *    counted in loader_pool_bytes. experts.bin is mmapped read-only (but see
 *    resident_experts); expert parts point into the mapping (S-form scales are widened into owned f32).
 *  - 1-D tensors (norms, biases) are handed to the model as f32.
 *  - loader_open_opts() with lazy_experts: every expert's planes are checked
 *    as above, but the routed experts' weights (model_weights) keep only
 *    their form and shape (data into the mapping, no scales, no K-quant
 *    factors, nothing of experts.bin read): whoever runs the model builds
 *    each expert when it needs it (loader_expert_build). Nothing of
 *    experts.bin is then resident unless a caller touches the mapping.
 *  - loader_open_opts() with resident_experts (and not lazy_experts):
 *    experts.bin is read into memory of the pack's own, on 2 MiB boundaries
 *    with transparent huge pages asked for, instead of mapped (its page
 *    cache dropped after the read): for a pack that fits in memory, decode
 *    then streams huge pages every run.
 *  - loader_open_opts() with split_codes: the K-quant tensors held one 5-
 *    or 6-bit code per byte (Q5_K and Q6_K shapes with their factors) have
 *    their codes split in the loader's own memory (kfactor.h:
 *    kq_split_rows): the dense ones in the pool, the routed experts when
 *    resident_experts read them in. Decode then reads 160 or 192 bytes per
 *    256 weights instead of 256, with the same results bit for bit on the
 *    CPU kernels (a caller that hands the weights to a GPU leaves it off,
 *    and so does one whose kernels unpack a split super-block before using
 *    it: kernels.h reads_split, device.h device_split_codes).
 *  - loader_check() recomputes the crc32 (zlib) and size of every file and
 *    compares them with the index; 0 when all agree, else -1 with the first
 *    mismatch in err. It prints one line per file to `out` when non-NULL.
 *  - loader_open_progress() is loader_open() that calls fn(ctx, done,
 *    total) as the dense weights are read into the pool (bytes, after each
 *    tensor; the last call has done == total), the part of the load that
 *    reads the disk; with resident_experts experts.bin's bytes come first
 *    in the same count.
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

#include "formats/pack_index.h"
#include "runtime/model/model.h"
#include "runtime/tokenizer/tokenizer.h"

typedef struct loaded_pack loaded_pack;

loaded_pack *loader_open(const char *dir, char *err, size_t errlen);
typedef void (*loader_progress_fn)(void *ctx, int64_t done, int64_t total);
loaded_pack *loader_open_progress(const char *dir, loader_progress_fn fn, void *ctx, char *err, size_t errlen);
typedef struct loader_opts {
    loader_progress_fn progress;    /* NULL: none */
    void *progress_ctx;
    int lazy_experts;               /* see the contract */
    int resident_experts;           /* see the contract */
    int split_codes;                /* see the contract */
} loader_opts;
loaded_pack *loader_open_opts(const char *dir, const loader_opts *o, char *err, size_t errlen);
void loader_close(loaded_pack *p);
int loader_precheck(const char *dir, long *n_ctx_train, char *err, size_t errlen);

const model_hparams *loader_hparams(const loaded_pack *p);
const model_weights *loader_weights(const loaded_pack *p);
const tokenizer *loader_tokenizer(const loaded_pack *p);
size_t loader_pool_bytes(const loaded_pack *p);     /* dense engine pool, with the kept fp16 scales */
int loader_keeps_half_scales(const pi_tensor *t);
uint64_t loader_half_scales_bytes(const pack_index *x);
size_t loader_expert_bytes(const loaded_pack *p);   /* experts.bin mapping */
int loader_n_tensors(const loaded_pack *p);         /* rows + expert parts */
/* The pack's vision projector (vision.gguf, `iq3pack build --mmproj`): its
 * clip.projector_type, with its tensor count and file bytes; NULL when the
 * pack has none. */
const char *loader_vision(const loaded_pack *p, int *n_tensors, uint64_t *bytes);
/* Its file's path (malloc'd; NULL when the pack has none or out of memory). */
char *loader_vision_path(const loaded_pack *p);

int loader_check(const char *dir, FILE *out, char *err, size_t errlen);

/* Routed experts one at a time (runtime/model/expert_tier.h reads them
 * from experts.bin into its slots). */
const char *loader_dir(const loaded_pack *p);
int loader_lazy_experts(const loaded_pack *p);
/* Expert e of layer `layer` in experts.bin: its blob's offset and bytes; -1
 * when that layer has no routed experts or e is out of range. */
int loader_expert_span(const loaded_pack *p, int layer, int e, uint64_t *off, size_t *bytes);
/* weight_bytes() summed over the parts loader_expert_build() gives for one
 * expert of the layer (codes or blocks, and f32 scales and offsets). */
size_t loader_expert_weight_bytes(const loaded_pack *p, int layer);
/* Bytes loader_expert_build() writes to `derived` for one expert of the layer. */
size_t loader_expert_derived_bytes(const loaded_pack *p, int layer);
/* Expert e's gate, up and down (out[0..2]; an absent part has data NULL)
 * over `blob`, its bytes as loader_expert_span gives them wherever they
 * were read to: data into blob, S-form planes widened and K-quant factors
 * into `derived` (64-aligned, loader_expert_derived_bytes), the factors'
 * headers in kf. The same weights the eager load gives, bit for bit in
 * every product. Reads only the pack's index: safe from any thread. */
void loader_expert_build(const loaded_pack *p, int layer, int e, const uint8_t *blob, void *derived, weight out[3],
                         kfactor kf[3]);

#endif
