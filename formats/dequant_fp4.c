/* dequant_fp4.c: row decoders for the FP4 microscaling types. Both store
 * E2M1 codes that ggml decodes through a doubled table (ggml_kvalues_fp4 =
 * 2 * E2M1), so both scale decoders return half the scale. Every product is
 * exact (a <=4-bit integer times a <=4-bit-mantissa power of two), hence no
 * ordering subtleties here. */
#include "ggml_dequant.h"

#include <string.h>

#include "ggml_blocks.h"
#include "ggml_tables.h"

/* MXFP4: 32 weights, one E8M0 scale; low nibbles first half, high second. */
void dequantize_row_mxfp4(const void *src, float *dst, int64_t n)
{
    const block_mxfp4 *x = src;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, dst += QK_MXFP4) {
        const float d = ggml_e8m0_half(x[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            dst[j] = ggml_kvalues_fp4[x[i].qs[j] & 0xF] * d;
            dst[j + QK_MXFP4 / 2] = ggml_kvalues_fp4[x[i].qs[j] >> 4] * d;
        }
    }
}

/* NVFP4: 64 weights in four sub-blocks of 16, each with a UE4M3 scale and 8
 * code bytes (low nibble weight j, high nibble weight j + 8). */
void dequantize_row_nvfp4(const void *src, float *dst, int64_t n)
{
    const block_nvfp4 *x = src;
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; s++, dst += QK_NVFP4_SUB) {
            const float d = ggml_ue4m3_half(x[i].d[s]);
            const uint8_t *qs = x[i].qs + s * (QK_NVFP4_SUB / 2);
            for (int j = 0; j < QK_NVFP4_SUB / 2; j++) {
                dst[j] = ggml_kvalues_fp4[qs[j] & 0xF] * d;
                dst[j + QK_NVFP4_SUB / 2] = ggml_kvalues_fp4[qs[j] >> 4] * d;
            }
        }
    }
}
