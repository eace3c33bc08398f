/* ggml_types.c: the type table (see ggml_types.h). One row per ggml type id;
 * removed ids have no row. Decoders live in dequant_*.c (ggml_dequant.h).
 * Q8_1 and the integer/f64 types have no to_f32: ggml has none to match. */
#include "ggml_types.h"

#include "ggml_dequant.h"

#include <strings.h>

#define ROW(ID, NAME, BLCK, BYTES, FN) [ID] = { NAME, ID, BLCK, BYTES, FN }

static const ggml_type_row type_table[GGML_TYPE_COUNT] = {
    ROW(GGML_TYPE_F32,     "f32",     1,   4,   dequantize_row_f32),
    ROW(GGML_TYPE_F16,     "f16",     1,   2,   dequantize_row_f16),
    ROW(GGML_TYPE_Q4_0,    "q4_0",    32,  18,  dequantize_row_q4_0),
    ROW(GGML_TYPE_Q4_1,    "q4_1",    32,  20,  dequantize_row_q4_1),
    ROW(GGML_TYPE_Q5_0,    "q5_0",    32,  22,  dequantize_row_q5_0),
    ROW(GGML_TYPE_Q5_1,    "q5_1",    32,  24,  dequantize_row_q5_1),
    ROW(GGML_TYPE_Q8_0,    "q8_0",    32,  34,  dequantize_row_q8_0),
    ROW(GGML_TYPE_Q8_1,    "q8_1",    32,  36,  NULL),
    ROW(GGML_TYPE_Q2_K,    "q2_K",    256, 84,  dequantize_row_q2_K),
    ROW(GGML_TYPE_Q3_K,    "q3_K",    256, 110, dequantize_row_q3_K),
    ROW(GGML_TYPE_Q4_K,    "q4_K",    256, 144, dequantize_row_q4_K),
    ROW(GGML_TYPE_Q5_K,    "q5_K",    256, 176, dequantize_row_q5_K),
    ROW(GGML_TYPE_Q6_K,    "q6_K",    256, 210, dequantize_row_q6_K),
    ROW(GGML_TYPE_Q8_K,    "q8_K",    256, 292, dequantize_row_q8_K),
    ROW(GGML_TYPE_IQ2_XXS, "iq2_xxs", 256, 66,  dequantize_row_iq2_xxs),
    ROW(GGML_TYPE_IQ2_XS,  "iq2_xs",  256, 74,  dequantize_row_iq2_xs),
    ROW(GGML_TYPE_IQ3_XXS, "iq3_xxs", 256, 98,  dequantize_row_iq3_xxs),
    ROW(GGML_TYPE_IQ1_S,   "iq1_s",   256, 50,  dequantize_row_iq1_s),
    ROW(GGML_TYPE_IQ4_NL,  "iq4_nl",  32,  18,  dequantize_row_iq4_nl),
    ROW(GGML_TYPE_IQ3_S,   "iq3_s",   256, 110, dequantize_row_iq3_s),
    ROW(GGML_TYPE_IQ2_S,   "iq2_s",   256, 82,  dequantize_row_iq2_s),
    ROW(GGML_TYPE_IQ4_XS,  "iq4_xs",  256, 136, dequantize_row_iq4_xs),
    ROW(GGML_TYPE_I8,      "i8",      1,   1,   NULL),
    ROW(GGML_TYPE_I16,     "i16",     1,   2,   NULL),
    ROW(GGML_TYPE_I32,     "i32",     1,   4,   NULL),
    ROW(GGML_TYPE_I64,     "i64",     1,   8,   NULL),
    ROW(GGML_TYPE_F64,     "f64",     1,   8,   NULL),
    ROW(GGML_TYPE_IQ1_M,   "iq1_m",   256, 56,  dequantize_row_iq1_m),
    ROW(GGML_TYPE_BF16,    "bf16",    1,   2,   dequantize_row_bf16),
    ROW(GGML_TYPE_TQ1_0,   "tq1_0",   256, 54,  dequantize_row_tq1_0),
    ROW(GGML_TYPE_TQ2_0,   "tq2_0",   256, 66,  dequantize_row_tq2_0),
    ROW(GGML_TYPE_MXFP4,   "mxfp4",   32,  17,  dequantize_row_mxfp4),
    ROW(GGML_TYPE_NVFP4,   "nvfp4",   64,  36,  dequantize_row_nvfp4),
    ROW(GGML_TYPE_Q1_0,    "q1_0",    128, 18,  dequantize_row_q1_0),
    ROW(GGML_TYPE_Q2_0,    "q2_0",    64,  18,  dequantize_row_q2_0),
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
