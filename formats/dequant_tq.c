/* dequant_tq.c: row decoders for the ternary types TQ1_0 (base-3 packed,
 * 1.6875 bits per weight) and TQ2_0 (2-bit codes). Values are (t - 1) * d
 * with t in {0,1,2}, as ggml writes them. */
#include "ggml_dequant.h"

#include "fp16.h"
#include "ggml_blocks.h"

/* A TQ1_0 byte holds up to five trits as a fixed-point fraction of 243:
 * multiplying by 3^k (mod 256) brings trit k to the top, and (q * 3) >> 8
 * reads it. */
static inline int tq1_trit(uint8_t byte, int k)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t q = (uint8_t)(byte * pow3[k]);
    return ((uint16_t)q * 3) >> 8;
}

void ggml_tq1_0_codes(const void *block, uint8_t t[256])
{
    const block_tq1_0 *x = block;
    enum { NQS = sizeof x->qs, NQH = sizeof x->qh, MAIN = NQS - NQS % 32 };
    /* 32 bytes x 5 trits, then 16 bytes x 5 trits, then qh's 4 x 4, each
     * pass walking the bytes for one trit position */
    for (int k = 0; k < 5; k++)
        for (int m = 0; m < MAIN; m++) *t++ = (uint8_t)tq1_trit(x->qs[m], k);
    for (int k = 0; k < 5; k++)
        for (int m = MAIN; m < NQS; m++) *t++ = (uint8_t)tq1_trit(x->qs[m], k);
    for (int k = 0; k < 4; k++)
        for (int m = 0; m < NQH; m++) *t++ = (uint8_t)tq1_trit(x->qh[m], k);
}

/* TQ2_0: per 32 bytes, four 2-bit planes of 32 weights each. */
void ggml_tq2_0_codes(const void *block, uint8_t t[256])
{
    const block_tq2_0 *x = block;
    for (int j = 0; j < (int)sizeof x->qs; j += 32)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++) *t++ = (uint8_t)((x->qs[j + m] >> (2 * l)) & 3);
}

void dequantize_row_tq1_0(const void *src, float *dst, int64_t n)
{
    const block_tq1_0 *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        uint8_t t[QK_K];
        ggml_tq1_0_codes(&x[i], t);
        for (int e = 0; e < QK_K; e++) *dst++ = (t[e] - 1) * d;
    }
}

void dequantize_row_tq2_0(const void *src, float *dst, int64_t n)
{
    const block_tq2_0 *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        uint8_t t[QK_K];
        ggml_tq2_0_codes(&x[i], t);
        for (int e = 0; e < QK_K; e++) *dst++ = (t[e] - 1) * d;
    }
}
