/* fp16.h: IEEE half and bfloat16 <-> float32 conversions.
 *
 * Contract: every conversion is exact where the value is representable and
 * handles subnormals, infinities and NaN. fp32 -> fp16 and fp32 -> bf16 round
 * to nearest, ties to even (what ggml's reference converters do). NaN stays
 * NaN: fp32 -> fp16 gives the canonical quiet NaN 0x7E00 with the sign, as
 * ggml does; fp32 -> bf16 keeps the payload with the quiet bit forced.
 * Pure functions, no tables, no global state: safe from any thread. */
#ifndef STRATA_FP16_H
#define STRATA_FP16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t fp_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float fp_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float    fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);

/* bf16 is the high half of an f32: widening is exact by construction. */
static inline float bf16_to_f32(uint16_t h) { return fp_bits_f32((uint32_t)h << 16); }
uint16_t f32_to_bf16(float f);

/* Row helpers (n elements). fp16_row_to_f32 uses F16C when the CPU has it;
 * the _scalar variant is the portable reference it is tested against. */
void fp16_row_to_f32(const uint16_t *src, float *dst, int64_t n);
void fp16_row_to_f32_scalar(const uint16_t *src, float *dst, int64_t n);
void bf16_row_to_f32(const uint16_t *src, float *dst, int64_t n);

#endif
