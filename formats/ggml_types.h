/* ggml_types.h: the one table of ggml tensor types, and row dequantization.
 *
 * Contract:
 *  - ggml_type_info(id) returns the table row for a type id 0..GGML_TYPE_COUNT-1,
 *    or NULL for an id that is out of range or was removed from ggml (4, 5,
 *    31..33, 36..38: Q4_2, Q4_3, Q4_0_4_4 ...). Every row has the name ggml uses
 *    (ggml_type_name), elements per block and bytes per block.
 *  - ->to_f32 is set for every type whose dequantization is implemented; it
 *    turns n elements (n a multiple of blck) starting at a block boundary into
 *    f32, bit-for-bit equal to ggml's to_float (checked against
 *    ../shared/vectors/quant). Types without a decoder have to_f32 == NULL.
 *    src must be aligned as its block struct (ggml_blocks.h: 2 bytes, 4 for
 *    Q8_K), which GGUF's 32-byte tensor alignment guarantees.
 *  - ggml_row_bytes(id, n) is the byte size of n elements, or 0 when n is not
 *    a multiple of the block size or the type is unknown.
 *  - ->act is the activation type of the CPU's dot for the type (below).
 * Block layouts are declared in ggml_blocks.h with static size assertions;
 * ->bytes is the size of the type's block struct. */
#ifndef STRATA_GGML_TYPES_H
#define STRATA_GGML_TYPES_H

#include <stddef.h>
#include <stdint.h>

enum ggml_type_id {
    GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6, GGML_TYPE_Q5_1 = 7, GGML_TYPE_Q8_0 = 8, GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10, GGML_TYPE_Q3_K = 11, GGML_TYPE_Q4_K = 12, GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14, GGML_TYPE_Q8_K = 15, GGML_TYPE_IQ2_XXS = 16, GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18, GGML_TYPE_IQ1_S = 19, GGML_TYPE_IQ4_NL = 20, GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22, GGML_TYPE_IQ4_XS = 23, GGML_TYPE_I8 = 24, GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26, GGML_TYPE_I64 = 27, GGML_TYPE_F64 = 28, GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30, GGML_TYPE_TQ1_0 = 34, GGML_TYPE_TQ2_0 = 35, GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_NVFP4 = 40, GGML_TYPE_Q1_0 = 41, GGML_TYPE_Q2_0 = 42,
    GGML_TYPE_COUNT = 43
};

typedef void (*ggml_to_f32_fn)(const void *src, float *dst, int64_t n);

typedef struct ggml_type_row {
    const char    *name;   /* ggml_type_name: "q4_K", "iq3_xxs", "bf16" ... */
    int            id;
    int64_t        blck;   /* elements per block */
    size_t         bytes;  /* bytes per block */
    ggml_to_f32_fn to_f32; /* NULL when no decoder exists */
    /* The type a CPU rounds the activation to before it meets a row of this
     * type: ggml-cpu's vec_dot_type where that is GGML_TYPE_Q8_0, _Q8_K or
     * _Q8_1 (Q4_1 and Q5_1: Q8_0's codes plus each block's sum), else
     * GGML_TYPE_F32: the activation stays float (F16, BF16, and Q2_0, which
     * packs hold as S2 codes and so never meets a native dot). */
    int            act;
} ggml_type_row;

const ggml_type_row *ggml_type_info(int id);
const ggml_type_row *ggml_type_by_name(const char *name); /* case-insensitive */
size_t ggml_row_bytes(int id, int64_t n);

/* Dequantize n elements of type id; returns 0, or -1 when the type has no
 * decoder or n is not a multiple of the block size. */
int ggml_dequantize(int id, const void *src, float *dst, int64_t n);

#endif
