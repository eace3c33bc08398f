/* ggml_types.c: the type table (see ggml_types.h). One row per ggml type id;
 * removed ids have no row. Decoders live in dequant_*.c (ggml_dequant.h).
 * Q8_1 and the integer/f64 types have no to_f32: ggml has none to match.
 * The last column is the row's act (ggml_types.h). */
#include "ggml_types.h"

#include "ggml_blocks.h"
#include "ggml_dequant.h"

#include <strings.h>

/* BLOCK is the block's struct (ggml_blocks.h) or the element's C type: the
 * row's bytes are its size, so the struct is the one statement of it. */
#define ROW(ID, NAME, BLCK, BLOCK, FN, ACT) [ID] = { NAME, ID, BLCK, sizeof(BLOCK), FN, GGML_TYPE_##ACT }

static const ggml_type_row type_table[GGML_TYPE_COUNT] = {
    ROW(GGML_TYPE_F32,     "f32",     1,   float,         dequantize_row_f32,      F32),
    ROW(GGML_TYPE_F16,     "f16",     1,   uint16_t,      dequantize_row_f16,      F32),
    ROW(GGML_TYPE_Q4_0,    "q4_0",    32,  block_q4_0,    dequantize_row_q4_0,     Q8_0),
    ROW(GGML_TYPE_Q4_1,    "q4_1",    32,  block_q4_1,    dequantize_row_q4_1,     Q8_1),
    ROW(GGML_TYPE_Q5_0,    "q5_0",    32,  block_q5_0,    dequantize_row_q5_0,     Q8_0),
    ROW(GGML_TYPE_Q5_1,    "q5_1",    32,  block_q5_1,    dequantize_row_q5_1,     Q8_1),
    ROW(GGML_TYPE_Q8_0,    "q8_0",    32,  block_q8_0,    dequantize_row_q8_0,     Q8_0),
    ROW(GGML_TYPE_Q8_1,    "q8_1",    32,  block_q8_1,    NULL,                    F32),
    ROW(GGML_TYPE_Q2_K,    "q2_K",    256, block_q2_K,    dequantize_row_q2_K,     Q8_K),
    ROW(GGML_TYPE_Q3_K,    "q3_K",    256, block_q3_K,    dequantize_row_q3_K,     Q8_K),
    ROW(GGML_TYPE_Q4_K,    "q4_K",    256, block_q4_K,    dequantize_row_q4_K,     Q8_K),
    ROW(GGML_TYPE_Q5_K,    "q5_K",    256, block_q5_K,    dequantize_row_q5_K,     Q8_K),
    ROW(GGML_TYPE_Q6_K,    "q6_K",    256, block_q6_K,    dequantize_row_q6_K,     Q8_K),
    ROW(GGML_TYPE_Q8_K,    "q8_K",    256, block_q8_K,    dequantize_row_q8_K,     F32),
    ROW(GGML_TYPE_IQ2_XXS, "iq2_xxs", 256, block_iq2_xxs, dequantize_row_iq2_xxs,  Q8_K),
    ROW(GGML_TYPE_IQ2_XS,  "iq2_xs",  256, block_iq2_xs,  dequantize_row_iq2_xs,   Q8_K),
    ROW(GGML_TYPE_IQ3_XXS, "iq3_xxs", 256, block_iq3_xxs, dequantize_row_iq3_xxs,  Q8_K),
    ROW(GGML_TYPE_IQ1_S,   "iq1_s",   256, block_iq1_s,   dequantize_row_iq1_s,    Q8_K),
    ROW(GGML_TYPE_IQ4_NL,  "iq4_nl",  32,  block_iq4_nl,  dequantize_row_iq4_nl,   Q8_0),
    ROW(GGML_TYPE_IQ3_S,   "iq3_s",   256, block_iq3_s,   dequantize_row_iq3_s,    Q8_K),
    ROW(GGML_TYPE_IQ2_S,   "iq2_s",   256, block_iq2_s,   dequantize_row_iq2_s,    Q8_K),
    ROW(GGML_TYPE_IQ4_XS,  "iq4_xs",  256, block_iq4_xs,  dequantize_row_iq4_xs,   Q8_K),
    ROW(GGML_TYPE_I8,      "i8",      1,   int8_t,        NULL,                    F32),
    ROW(GGML_TYPE_I16,     "i16",     1,   int16_t,       NULL,                    F32),
    ROW(GGML_TYPE_I32,     "i32",     1,   int32_t,       NULL,                    F32),
    ROW(GGML_TYPE_I64,     "i64",     1,   int64_t,       NULL,                    F32),
    ROW(GGML_TYPE_F64,     "f64",     1,   double,        NULL,                    F32),
    ROW(GGML_TYPE_IQ1_M,   "iq1_m",   256, block_iq1_m,   dequantize_row_iq1_m,    Q8_K),
    ROW(GGML_TYPE_BF16,    "bf16",    1,   uint16_t,      dequantize_row_bf16,     F32),
    ROW(GGML_TYPE_TQ1_0,   "tq1_0",   256, block_tq1_0,   dequantize_row_tq1_0,    Q8_K),
    ROW(GGML_TYPE_TQ2_0,   "tq2_0",   256, block_tq2_0,   dequantize_row_tq2_0,    Q8_K),
    ROW(GGML_TYPE_MXFP4,   "mxfp4",   32,  block_mxfp4,   dequantize_row_mxfp4,    Q8_0),
    ROW(GGML_TYPE_NVFP4,   "nvfp4",   64,  block_nvfp4,   dequantize_row_nvfp4,    Q8_0),
    ROW(GGML_TYPE_Q1_0,    "q1_0",    128, block_q1_0,    dequantize_row_q1_0,     Q8_0),
    ROW(GGML_TYPE_Q2_0,    "q2_0",    64,  block_q2_0,    dequantize_row_q2_0,     F32),
};

const ggml_type_row *ggml_type_info(int id)
{
    if (id < 0 || id >= GGML_TYPE_COUNT || type_table[id].name == NULL) return NULL;
    return &type_table[id];
}

const ggml_type_row *ggml_type_by_name(const char *name)
{
    for (int i = 0; i < GGML_TYPE_COUNT; i++)
        if (type_table[i].name && strcasecmp(type_table[i].name, name) == 0) return &type_table[i];
    return NULL;
}

size_t ggml_row_bytes(int id, int64_t n)
{
    const ggml_type_row *t = ggml_type_info(id);
    if (!t || n < 0 || n % t->blck != 0) return 0;
    return (size_t)(n / t->blck) * t->bytes;
}

int ggml_dequantize(int id, const void *src, float *dst, int64_t n)
{
    const ggml_type_row *t = ggml_type_info(id);
    if (!t || !t->to_f32 || n % t->blck != 0) return -1;
    t->to_f32(src, dst, n);
    return 0;
}
