/* fp16.c: bit-level half/bfloat16 conversions (see fp16.h). Written with
 * integer arithmetic so the result never depends on the FPU's rounding mode
 * or on F16C being present. */
#include "fp16.h"

float fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp  = (h >> 10) & 0x1Fu;
    uint32_t man  = h & 0x3FFu;
    uint32_t bits;

    if (exp == 0x1F) {
        /* inf keeps a zero mantissa; a NaN keeps its payload and comes out
         * quiet, as F16C's vcvtph2ps and ggml's reference converter give it */
        bits = sign | 0x7F800000u | (man << 13) | (man ? 0x400000u : 0u);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* subnormal: normalise the mantissa; value = man * 2^-24 */
        int e = -1;
        do { man <<= 1; e++; } while (!(man & 0x400u));
        man &= 0x3FFu;
        bits = sign | ((uint32_t)(112 - e) << 23) | (man << 13);
    }
    return fp_bits_f32(bits);
}

uint16_t f32_to_fp16(float f)
{
    uint32_t x = fp_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t man = x & 0x7FFFFFu;

    if (exp == 0xFF) {
        if (man == 0) return sign | 0x7C00u;
        /* ggml's reference converter: every NaN becomes the canonical quiet NaN */
        return sign | 0x7E00u;
    }
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1F) return sign | 0x7C00u; /* overflow -> inf */
    if (e <= 0) {
        /* result is subnormal or zero: shift the full 24-bit significand */
        if (e < -10) return sign; /* below half the smallest subnormal */
        uint32_t sig = man | 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t q = sig >> shift;
        uint32_t rem = sig & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return sign | (uint16_t)q; /* a carry into bit 10 is the smallest normal: correct */
    }
    uint32_t q = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++; /* carry may reach inf: correct */
    return sign | (uint16_t)q;
}

uint16_t f32_to_bf16(float f)
{
    uint32_t x = fp_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static void fp16_row_scalar(const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = fp16_to_f32(src[i]);
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

/* clang 14's __builtin_cpu_supports does not know "f16c": ask cpuid. */
static int cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_F16C) && __builtin_cpu_supports("avx");
}

/* vcvtph2ps is exact for every half, subnormals included, and quiets NaN the
 * way the scalar path does, so both paths give the same bits. */
__attribute__((target("avx,f16c")))
static void fp16_row_f16c(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    fp16_row_scalar(src + i, dst + i, n - i);
}

void fp16_row_to_f32(const uint16_t *src, float *dst, int64_t n)
{
    if (cpu_has_f16c()) fp16_row_f16c(src, dst, n);
    else fp16_row_scalar(src, dst, n);
}
#else
void fp16_row_to_f32(const uint16_t *src, float *dst, int64_t n)
{
    fp16_row_scalar(src, dst, n);
}
#endif

void fp16_row_to_f32_scalar(const uint16_t *src, float *dst, int64_t n)
{
    fp16_row_scalar(src, dst, n);
}

void bf16_row_to_f32(const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(src[i]);
}
