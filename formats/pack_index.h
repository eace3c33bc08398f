/* pack_index.h: index.txt, the flat description of a pack the runtime
 * loads (docs/pack-format.md): its grammar, its reader and its writer, in
 * one place so that what packindex writes is what the loader reads.
 *
 * Contract (reading): pindex_parse() reads the text with a bounded cursor
 * (every line length, field count and number checked), accepts the seed's
 * three header lines, the 19-column rows, and the extension lines @shape,
 * @offsets_fp16, @native (each directly after its tensor's row), @hparam,
 * @file, @expert_layer, @expert (each @expert after its layer's
 * @expert_layer), @expert_rotate (directly after its @expert), @vision and
 * its @vision_tensor lines (a vision projector's GGUF, PACK_VISION). An
 * unknown @keyword is refused: each one changes how bytes are read. Errors: -1 and one line "<path>:<line>: <problem>". It checks the
 * syntax and the sums each line states about itself (a row's planes adding
 * up to its src and dst bytes, naming the tensor); sizes against the files
 * are the loader's job. pindex_free() releases everything.
 *
 * Contract (writing): one pindex_put_*() per line kind, each writing exactly
 * one line in the spelling pindex_parse() reads; the caller (packindex)
 * decides what is written and in which order, and checks names with
 * pindex_name_ok() / pindex_token_ok() first. No global state. */
#ifndef STRATA_PACK_INDEX_H
#define STRATA_PACK_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/pack_files.h"

/* The first line's first words: the version of the whole grammar. */
#define PINDEX_MAGIC "# strata pack index v3"

/* A row's engine form (its `kind` column). */
enum { PI_VERBATIM = 0, PI_BF16_IN_F32 = 1, PI_F32 = 2, PI_F16_IN_F32 = 3, PI_NKINDS = 4 };
/* The activation a quantized weight's dot product wants (`act_kind`). */
enum { PI_ACT_Q8_0 = 0, PI_ACT_Q8_K = 1 };

/* A row: the tensor's name, then these 18 columns, in the seed's order. */
enum {
    PI_C_FILE, PI_C_KIND, PI_C_SRC_OFF, PI_C_SRC_BYTES, PI_C_DST_OFF, PI_C_DST_BYTES, PI_C_NE0, PI_C_NE1,
    PI_C_CODE_BITS, PI_C_CODE_BIAS, PI_C_GROUP, PI_C_CODEBOOK, PI_C_HAS_OFFSET, PI_C_CODES_BYTES,
    PI_C_SCALES_BYTES, PI_C_OFFSET_BYTES, PI_C_SCALES_FP16, PI_C_ACT_KIND, PI_NCOLS
};

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
    int64_t rotate;          /* 0, or the Hadamard block of a rotated IQ3 part (@expert_rotate) */
} pi_expert;

typedef struct pi_layer {
    int layer, n_expert, n_parts;
    int64_t base, stride, blob_bytes;
} pi_layer;

typedef struct pi_hparam { char key[96]; char value[64]; } pi_hparam;

/* One tensor of the vision projector's GGUF: where it lies in PACK_VISION. */
typedef struct pi_vtensor {
    char name[96];
    int type; /* ggml type id */
    int64_t off, bytes, ne[4];
} pi_vtensor;

typedef struct pack_index {
    int64_t align, pool;
    pi_tensor *t;   int n_t;
    pi_expert *e;   int n_e;
    pi_layer  *l;   int n_l;
    pi_hparam *h;   int n_h;
    int have_file[PACK_NFILES];
    uint64_t file_bytes[PACK_NFILES];
    uint32_t file_crc[PACK_NFILES];
    /* @vision: the pack carries a vision projector (its size, crc32 and
     * clip.projector_type, and as many @vision_tensor lines as it says) */
    int have_vision;
    uint64_t vision_bytes;
    uint32_t vision_crc;
    char vision_projector[64];
    int vision_n_tensors; /* what @vision announced */
    pi_vtensor *vt;  int n_vt;
} pack_index;

/* ---- reading ---- */
int pindex_parse(pack_index *x, const char *text, size_t len, const char *path, char *err, size_t errlen);
/* The @hparam value of key, or NULL. */
const char *pindex_hparam(const pack_index *x, const char *key);
/* The runtime's hyperparameter getter over an index (ctx: the pack_index):
 * 0 with the @hparam value of key as a number (NAN when it is not one),
 * element i of a list value for "<key>[i]" (hparam_keys.h); -1 when absent. */
int pindex_hparam_num(void *ctx, const char *key, double *out);
void pindex_free(pack_index *x);

/* ---- writing ---- */
/* A value is one token: non-empty, no whitespace or control characters
 * (anything else would shift the columns read after it). A tensor name is
 * a token that does not start with # or @ (a header or an extension line). */
int pindex_token_ok(const char *s);
int pindex_name_ok(const char *s);
/* The act_kind of a quantized source type ("Q4_K"), -1 when unknown. No
 * combination of the S-form fields tells Q5_0 from Q5_K or IQ4_NL from
 * IQ4_XS, so it is decided from the type and written down, never re-derived
 * by the loader. */
int pindex_act_kind(const char *source_type);

void pindex_put_header(FILE *fp, int64_t align, int64_t pool, size_t n_rows);
void pindex_put_row(FILE *fp, const char *name, const int64_t col[PI_NCOLS]);
void pindex_put_shape(FILE *fp, const char *name, int n_dims, const int64_t *dims);
void pindex_put_offsets_fp16(FILE *fp, const char *name);
void pindex_put_native(FILE *fp, const char *name, int ggml_type, int64_t blck, size_t block_bytes);
/* "@hparam [ARCH.]KEY VALUE"; arch NULL: the key alone. Reals are printed
 * with 17 significant digits, so the double comes back exactly. */
void pindex_put_hparam_str(FILE *fp, const char *arch, const char *key, const char *value);
void pindex_put_hparam_int(FILE *fp, const char *arch, const char *key, int64_t value);
void pindex_put_hparam_real(FILE *fp, const char *arch, const char *key, double value);
void pindex_put_file(FILE *fp, int file, uint64_t bytes, uint32_t crc);
void pindex_put_expert_layer(FILE *fp, const pi_layer *l);
/* The @expert line, and its @expert_rotate line when e->rotate. */
void pindex_put_expert(FILE *fp, const pi_expert *e);
/* "@vision vision.gguf BYTES CRC32 PROJECTOR N", then one
 * "@vision_tensor NAME TYPE OFF BYTES NE0 NE1 NE2 NE3" per tensor. */
void pindex_put_vision(FILE *fp, uint64_t bytes, uint32_t crc, const char *projector, int n_tensors);
void pindex_put_vision_tensor(FILE *fp, const pi_vtensor *t);

#endif
