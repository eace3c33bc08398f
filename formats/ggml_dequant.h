/* ggml_dequant.h: the per-type row decoders behind ggml_types.c's table.
 *
 * Contract: each dequantize_row_T(src, dst, n) turns n elements (a multiple
 * of T's block size, src aligned as ggml_blocks.h says) into f32, bit for bit
 * what ggml's to_float writes: same float operations in the same order, one
 * rounding each. Callers normally go through ggml_dequantize(); these are
 * exported for kernels and tests that want one type without the table.
 *
 * Bit-exactness forbids contracting a*b+c into an fma: gcc's -std=c11 already
 * sets -ffp-contract=off, clang needs the pragma below (its default is "on",
 * and with -march=haswell it emits vfmadd for Q4_1's x*d + m). For today's
 * types the products before an add happen to be exact (fp16 scale times a
 * few-bit integer), so an fma would round the same; the pragma keeps the
 * contract from resting on that analysis. */
#ifndef STRATA_GGML_DEQUANT_H
#define STRATA_GGML_DEQUANT_H

#include <stdint.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define GGML_DEQUANT_DECL(T) void dequantize_row_##T(const void *src, float *dst, int64_t n)

/* Q3_K's twelve scale bytes as its sixteen signed scales (6-bit, minus 32). */
void ggml_q3_K_scales(const uint8_t in[12], int8_t out[16]);

GGML_DEQUANT_DECL(f32);
GGML_DEQUANT_DECL(f16);
GGML_DEQUANT_DECL(bf16);
GGML_DEQUANT_DECL(q4_0);
GGML_DEQUANT_DECL(q4_1);
GGML_DEQUANT_DECL(q5_0);
GGML_DEQUANT_DECL(q5_1);
GGML_DEQUANT_DECL(q8_0);
GGML_DEQUANT_DECL(q1_0);
GGML_DEQUANT_DECL(q2_0);
GGML_DEQUANT_DECL(q2_K);
GGML_DEQUANT_DECL(q3_K);
GGML_DEQUANT_DECL(q4_K);
GGML_DEQUANT_DECL(q5_K);
GGML_DEQUANT_DECL(q6_K);
GGML_DEQUANT_DECL(q8_K);
GGML_DEQUANT_DECL(tq1_0);
GGML_DEQUANT_DECL(tq2_0);
GGML_DEQUANT_DECL(iq4_nl);
GGML_DEQUANT_DECL(iq4_xs);
GGML_DEQUANT_DECL(iq2_xxs);
GGML_DEQUANT_DECL(iq2_xs);
GGML_DEQUANT_DECL(iq2_s);
GGML_DEQUANT_DECL(iq3_xxs);
GGML_DEQUANT_DECL(iq3_s);
GGML_DEQUANT_DECL(iq1_s);
GGML_DEQUANT_DECL(iq1_m);
GGML_DEQUANT_DECL(mxfp4);
/* MXFP4's E8M0 block scale halved, 2^(e-128), as ggml's E8M0_TO_FP32_HALF
 * (inline: the kernels that multiply its doubled E2M1 codes take it per
 * block). e = 0 and 1 give f32 subnormals, built from bits; 255 (the MX
 * NaN) is not special-cased, as in ggml. */
static inline float ggml_e8m0_half(uint8_t e)
{
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
GGML_DEQUANT_DECL(nvfp4);
/* NVFP4's UE4M3 sub-block scale halved (the codes are ggml_kvalues_fp4,
 * doubled E2M1), as ggml decodes it: 4-bit exponent (bias 7), 3-bit
 * mantissa, bit 7 ignored; 0x7F (the E4M3 NaN) reads as 0 as in ggml.
 * Normal (1 + m/8) 2^(e-8), built from bits; subnormal m 2^-10 (exact).
 * Inline: the dots take four per 64 weights. */
static inline float ggml_ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F) return 0.0f;
    const uint32_t e = (x >> 3) & 0xFu, m = x & 7u;
    if (e == 0) return (float)m * 0x1p-10f;
    const uint32_t bits = (e + 119u) << 23 | m << 20;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* The ternary types' codes t in {0, 1, 2} (the weight is (t - 1) d) of one
 * block in element order, the one statement of their layouts: the row
 * decoders and the CPU's integer dots read them from here. */
void ggml_tq1_0_codes(const void *block, uint8_t t[256]);
void ggml_tq2_0_codes(const void *block, uint8_t t[256]);

#endif
