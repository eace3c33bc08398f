/* loader_index.h: index.txt parsed into plain structs (docs/pack-format.md),
 * the loader's only view of a pack's layout.
 *
 * Contract: pindex_parse() reads the text with a bounded cursor (every line
 * length, field count and number checked), accepts the seed's three header
 * lines, the 19-column rows, and the extension lines @shape, @offsets_fp16,
 * @native (each directly after its tensor's row), @hparam, @file,
 * @expert_layer, @expert (each @expert after its layer's @expert_layer).
 * An unknown @keyword is refused: each one changes how bytes are read.
 * Errors: -1 and one line "<path>:<line>: <problem>". It checks the syntax
 * and the sums each line states about itself (a row's planes adding up to
 * its src and dst bytes, naming the tensor); sizes against the files are
 * the loader's job. pindex_free() releases everything. */
#ifndef STRATA_LOADER_INDEX_H
#define STRATA_LOADER_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "formats/pack_files.h"

enum { PI_VERBATIM = 0, PI_BF16_IN_F32 = 1, PI_F32 = 2, PI_F16_IN_F32 = 3 };

typedef struct pi_tensor {
    char name[96];
    int file, kind;
    int64_t src_off, src_bytes, dst_off, dst_bytes, ne0, ne1;
    int code_bits, code_bias, group, codebook, has_offset;
    int64_t codes_bytes, scales_bytes, offset_bytes;
    int scales_fp16, act_kind, offsets_fp16;
    int n_dims;
    int64_t shape[4];
    int64_t rows;            /* product of shape[1..] (ne1 for 2-D, 1 for 1-D) */
    int native_type;         /* -1 unless @native */
    int line;                /* of the row, for errors */
} pi_tensor;

typedef struct pi_expert {
    char name[96];
    int layer, part;
    int64_t blob_off, part_bytes, ne0, ne1;
    char form[8];            /* P32 P16 S2 S4 S8 native IQ3 */
    int code_bits, code_bias, group, codebook, has_offset, scales_fp16, offsets_fp16, native_type, act_kind;
    int64_t plane[5];        /* codes scales offsets values blocks, pack widths */
} pi_expert;

typedef struct pi_layer {
    int layer, n_expert, n_parts;
    int64_t base, stride, blob_bytes;
} pi_layer;

typedef struct pi_hparam { char key[96]; char value[64]; } pi_hparam;

typedef struct pack_index {
    int64_t align, pool;
    pi_tensor *t;   int n_t;
    pi_expert *e;   int n_e;
    pi_layer  *l;   int n_l;
    pi_hparam *h;   int n_h;
    int have_file[PACK_NFILES];
    uint64_t file_bytes[PACK_NFILES];
    uint32_t file_crc[PACK_NFILES];
} pack_index;

int pindex_parse(pack_index *x, const char *text, size_t len, const char *path, char *err, size_t errlen);
/* The @hparam value of key, or NULL. */
const char *pindex_hparam(const pack_index *x, const char *key);
void pindex_free(pack_index *x);

#endif
