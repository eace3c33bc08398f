/* build.h: GGUF (+ imatrix) -> pack directory (`iq3pack build`).
 *
 * Contract: pack_build() plans the whole layout first (every tensor's form,
 * plane offsets 64-aligned, expert blobs 4096-aligned, exact file sizes),
 * refuses before writing anything (existing output, undecodable type, an
 * imatrix entry of the wrong width, too little free space), then writes into
 * "<out>.partial.XXXXXX", runs the index step and renames the directory into
 * place; on any failure, and on SIGINT/SIGTERM (build_common.h), it removes
 * the partial directory. It refuses first an architecture the runtime cannot
 * run (formats/arch_table.h) and names a partial directory an earlier,
 * killed build left, with the command that removes it. Dense tensors are
 * transcoded bit-exactly (convert/transcode.h); routed experts go into the
 * IQ3 container: IQ3_XXS sources moved losslessly, others dequantized and
 * encoded in quality mode with importance. A summary goes to `out`, one-line
 * errors to `err`. Returns the exit status (0 ok, 1 refused/failed). */
#ifndef STRATA_BUILD_H
#define STRATA_BUILD_H

#include <stdio.h>

#include "pack/build_common.h"
#include "formats/pack_manifest.h"
#include "pack/source.h"

typedef struct build_opts {
    const char *src, *out, *imatrix;
    const char *grams; /* a calibration recording (strata calibrate): GPTQ for the experts' gate and up */
    int experts_keep; /* 1: experts keep a canonical form instead of IQ3 */
    int64_t rotate;   /* 0: none; -1: --rotate hadamard (each part's default block); B: hadamard:B */
    int drop_nextn;   /* 1: leave the next-token-prediction blocks out (--no-nextn) */
    int threads;
    int progress;     /* 1: redraw a progress line (stderr is a terminal); 2: a line every 10 % */
    int verbose;      /* per-tensor lines and the index step's summary */
    int shard_k, shard_n; /* shard_n > 0: build only shard K of N into a shard directory (pack/shard.h) */
    const char *mmproj; /* a vision projector's GGUF, carried as vision.gguf, or NULL */
} build_opts;

int pack_build(const build_opts *o, FILE *out, FILE *err);

/* ---- the experts' half, in build_experts.c ---- */
struct imatrix;
/* Plans the expert tensors of source into L (layers and arena). */
/* rotate as build_opts.rotate: each IQ3-encoded part's Hadamard block
 * (a block that does not divide a part's rows is refused, naming it). */
int build_plan_experts(pack_layout *L, const source *s, const struct imatrix *im, int keep, int drop_nextn,
                       int64_t rotate, uint64_t *experts_bytes,
                       char *err, size_t errlen);
/* What the experts' encoding did: IQ3_XXS slices re-encoded; slices
 * encoded with GPTQ from their expert's gram, and those without a gram or
 * with under 4 x its width rows (too few to trust: the imatrix path). */
typedef struct expert_counts { int reencoded, gptq, gptq_few; } expert_counts;
/* Writes the expert layers [l0, l1) of experts.bin at fd as planned, each
 * byte at its experts.bin offset minus off0 (a whole pack: 0, n_layers, 0;
 * a shard: its layers and range). grams: a strata calibrate folder, or NULL. */
/* Every gram of dir that the expert layers [l0, l1) will read, checked
 * before anything is written: a RADGRAM2 file of the width its part takes,
 * recorded in the model's own basis or in the part's rotation (domain).
 * 0, or -1 with the file named in err. */
int build_check_grams(const pack_layout *L, const char *dir, int l0, int l1, char *err, size_t errlen);
int build_write_experts(const pack_layout *L, const source *s, const struct imatrix *im, const char *grams, int fd,
                        int threads, int l0, int l1, uint64_t off0, build_progress *pg, expert_counts *cnt,
                        char *err, size_t errlen);


/* ---- the vision projector, in build_vision.c ---- */
/* L->vision from the projector GGUF at path: refused (one line, naming it)
 * unless it is llama.cpp's mmproj form (general.architecture clip, a vision
 * encoder) with names the index can hold. Nothing is written. */
int build_plan_vision(pack_layout *L, const char *path, char *err, size_t errlen);
/* Copies the planned projector into dir/vision.gguf (never over a file),
 * its crc32 and sha256 taken from the bytes written. */
int build_write_vision(pack_layout *L, const char *dir, char *err, size_t errlen);

#endif
