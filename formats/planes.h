/* planes.h: the pack's canonical tensor forms and their one decoder.
 *
 * Contract. A pack tensor of `rows` rows of ne0 elements is held in one of:
 *   P32 / P16  `values`: f32, or fp16 when values_fp16 (bf16 sources are
 *              promoted to f32, which is exact);
 *   S2/S4/S8   `codes` (unsigned, code_bits each, LSB-first, 8/bits per byte,
 *              row-major over all elements), `scales` (one per group of
 *              group_elems along ne0, fp16 when scales_fp16, else f32),
 *              optional `offsets` (same count, fp16 when offsets_fp16);
 *              value = (code + code_bias) * scale (+ offset), or with the
 *              IQ4NL codebook codebook[code] * scale (+ offset);
 *   NATIVE     `blocks`: the source's ggml blocks verbatim, decoded by
 *              ggml_dequantize (types with no bit-exact S-form mapping);
 *   IQ3        the 98-byte-per-256 expert container (formats/iq3.h).
 * planes_decode() evaluates exactly those float expressions, one rounding
 * each, never an fma, so a decoder elsewhere (runtime kernels) that follows
 * the same order gets the same bits. Pure functions, no global state. */
#ifndef STRATA_PLANES_H
#define STRATA_PLANES_H

#include <stddef.h>
#include <stdint.h>

typedef enum pack_form {
    FORM_P32 = 0, FORM_P16, FORM_S2, FORM_S4, FORM_S8, FORM_NATIVE, FORM_IQ3, FORM_COUNT
} pack_form;

enum { CODEBOOK_NONE = 0, CODEBOOK_IQ4NL = 1 };
enum { PLANE_CODES = 0, PLANE_SCALES, PLANE_OFFSETS, PLANE_VALUES, PLANE_BLOCKS, PLANE_COUNT };

typedef struct planes_desc {
    pack_form form;
    int code_bits;     /* S-forms: 2, 4 or 8 */
    int code_bias;
    int group_elems;
    int codebook;      /* CODEBOOK_* */
    int has_offset;
    int scales_fp16, offsets_fp16, values_fp16;
    int native_type;   /* NATIVE: the ggml type id of the blocks */
} planes_desc;

const char *pack_form_name(pack_form f);       /* "S4", "P32", "native", "IQ3" */
int pack_form_parse(const char *name);          /* -1 when unknown */
const char *codebook_name(int codebook);        /* NULL for none */
const int8_t *codebook_values(int codebook, int *n); /* NULL for none */

/* Bytes of each plane (PLANE_*) for rows x ne0; 0 for absent planes.
 * Returns -1 when the shape does not fit the form (ne0 not a multiple of the
 * group or block, code bits not 2/4/8). */
int planes_sizes(const planes_desc *d, int64_t ne0, int64_t rows, size_t bytes[PLANE_COUNT]);

/* Decode rows x ne0 elements into out. plane[k] points at plane k (unused
 * ones may be NULL). Returns 0, or -1 (shape/form mismatch) with a message. */
int planes_decode(const planes_desc *d, const uint8_t *const plane[PLANE_COUNT], int64_t ne0,
                  int64_t rows, float *out, char *err, size_t errlen);

#endif
