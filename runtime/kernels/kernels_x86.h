/* kernels_x86.h: what the x86 kernel files share (private to
 * runtime/kernels/, included inside their x86 guard): the AVX2 target
 * attribute, the read-ahead and unrolling settings, and the small inline
 * pieces more than one ISA file uses (horizontal sums, S-form code
 * unpacking, IQ3's sign/scale words and grid lookups, MXFP4's nibbles).
 * Each piece computes exactly what the one file it came from computed, so
 * every kernel keeps its bits. */
#ifndef STRATA_KERNELS_X86_H
#define STRATA_KERNELS_X86_H

#include "formats/ggml_blocks.h"
#include "formats/ggml_dequant.h"
#include "formats/ggml_tables.h"
#include "formats/iq3.h"
#include "runtime/kernels/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

AVX2 static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Rows are read QD_AHEAD bytes ahead of the hardware prefetcher, which
 * stops at 4 KiB page boundaries. */
#define QD_AHEAD 1024
/* Read-ahead goes to L2 (T1), not L1: a core holds few more L1 misses in
 * flight than one DRAM stream needs, and the four-row kernels' streams are
 * one row long; into L1 (T0), one core streamed the S8 four-row kernel from
 * DRAM at 8-10 GB/s, into L2 at 13-17 (the single-row kernel: 18), with the
 * same speed from cache (Zen 4). */
#define QD_HINT _MM_HINT_T1

/* Rows the four-row kernels (qdot4) take at once. */
#define QD_ROWS 4
/* The loops over the four rows and the eight units are unrolled so that the
 * eight accumulators live in registers (rolled, gcc kept them on the stack:
 * a store and a reload around every multiply-add). Unrolling changes no
 * operation and no order. */
#define QD_PRAGMA(x) _Pragma(#x)
#define QD_UNROLL QD_PRAGMA(GCC unroll 8)

/* Calls F(args..., K) with K the constant 1, 2, 3 or 4 that k names (4 and
 * up give 4): each copy of an always-inline F then has its count of heads
 * fixed, so its accumulators stay in registers. */
#define QD_CONST_1_TO_4(k, F, ...)                                                                      \
    do {                                                                                                \
        switch (k) {                                                                                    \
        case 1: F(__VA_ARGS__, 1); break;                                                               \
        case 2: F(__VA_ARGS__, 2); break;                                                               \
        case 3: F(__VA_ARGS__, 3); break;                                                               \
        default: F(__VA_ARGS__, 4); break;                                                              \
        }                                                                                               \
    } while (0)

/* axpy_f16_heads from element i on, for what a kernel's wider blocks
 * leave: eight elements at a time with a fused multiply-add, the last
 * n % 8 with a product then a sum (axpy_f16's steps), each element meeting
 * the rows in order; NY heads' sums at y + h * n. */
AVX2 static inline __attribute__((always_inline)) void axpy_f16_heads_rest(float *y, const float *w, int64_t wstride,
                                                                           const uint16_t *const *x, int rows,
                                                                           int64_t n, int64_t i, const int NY)
{
    for (; i + 8 <= n; i += 8) {
        __m256 acc[4];
        QD_UNROLL
        for (int h = 0; h < NY; h++) acc[h] = _mm256_loadu_ps(y + h * n + i);
        for (int r = 0; r < rows; r++) {
            const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x[r] + i)));
            QD_UNROLL
            for (int h = 0; h < NY; h++) acc[h] = _mm256_fmadd_ps(_mm256_set1_ps(w[h * wstride + r]), xv, acc[h]);
        }
        QD_UNROLL
        for (int h = 0; h < NY; h++) _mm256_storeu_ps(y + h * n + i, acc[h]);
    }
    for (; i < n; i++)
        QD_UNROLL
        for (int h = 0; h < NY; h++) {
            float v = y[h * n + i];
            for (int r = 0; r < rows; r++) v += w[h * wstride + r] * _cvtsh_ss(x[r][i]);
            y[h * n + i] = v;
        }
}

/* Read-ahead distance of the four-row kernels. Adjacent rows (stride 1):
 * the same place in the next four rows. Rows a stride apart are four
 * sequential streams (each continues into its own next row), so each
 * reads QD_AHEAD bytes ahead within its stream; the hardware prefetchers
 * then see four forward streams instead of four 2 KiB pieces per group. */
static inline size_t qd4_ahead(size_t row_bytes, int64_t stride)
{
    return stride == 1 ? QD_ROWS * row_bytes : QD_AHEAD;
}

/* 32 codes as int8 weight values (code + bias, or the codebook's). */
AVX2 static inline __m256i values32(const uint8_t *p, int bits, __m256i bias, __m256i cb, int use_cb)
{
    __m256i v;
    if (bits == 8) {
        v = _mm256_loadu_si256((const __m256i *)p);
    } else if (bits == 4) {
        __m128i x = _mm_loadu_si128((const __m128i *)p), m = _mm_set1_epi8(15);
        __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
        v = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
    } else {
        int8_t t[32];
        for (int i = 0; i < 32; i++) t[i] = (int8_t)((p[i / 4] >> (2 * (i % 4))) & 3);
        v = _mm256_loadu_si256((const __m256i *)t);
    }
    return use_cb ? _mm256_shuffle_epi8(cb, v) : _mm256_add_epi8(v, bias);
}

/* int8 w times int8 q, 8 int32 partial sums (elements 4i..4i+3 in lane i). */
AVX2 static inline __m256i dot32_i8(__m256i w, __m256i q)
{
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(q, w));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* IQ3. One block's eight sign/scale words are turned into eight 32-bit
 * sign masks (bit e = element e of the sub-block negative) and eight
 * (2*code + 1) multipliers with a handful of vector operations on all eight
 * words at once: the four 7-bit groups are spread to the four bytes of a
 * lane, and the parity of each byte's seven bits (the eighth sign) is
 * folded into bit 0 of that byte with shifts and xors (bits that a 32-bit
 * shift brings in from the next byte land in bits 4..7 and never reach bit
 * 0). Per sub-block of 32 the mask is broadcast, expanded to bytes, and put
 * on the activations; the grid bytes (unsigned, at most 62) meet them in
 * maddubs (no saturation: 2 x 62 x 127 < 32767), then madd by the
 * multiplier. Every int32 lane holds the same integer as the scalar sum of
 * its four elements times the multiplier, summed over the eight subs, and
 * the float steps per block (dd, one fused multiply-add, one horizontal sum
 * at the end) are those of the kernel this one replaced, so the results are
 * the same bits. */
AVX2 static inline __attribute__((always_inline)) void iq3_words(const iq3_block *blk, uint32_t mask[8],
                                                                 uint32_t mul[8])
{
    const __m256i w = _mm256_loadu_si256((const __m256i *)blk->word);
    const __m256i b7 = _mm256_set1_epi32(0x7f);
    __m256i m = _mm256_or_si256(
        _mm256_or_si256(_mm256_and_si256(w, b7), _mm256_and_si256(_mm256_slli_epi32(w, 1), _mm256_set1_epi32(0x7f00))),
        _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(w, 2), _mm256_set1_epi32(0x7f0000)),
                        _mm256_and_si256(_mm256_slli_epi32(w, 3), _mm256_set1_epi32(0x7f000000))));
    __m256i t = _mm256_xor_si256(m, _mm256_srli_epi32(m, 4));
    t = _mm256_xor_si256(t, _mm256_srli_epi32(t, 2));
    t = _mm256_xor_si256(t, _mm256_srli_epi32(t, 1));
    m = _mm256_or_si256(m, _mm256_slli_epi32(_mm256_and_si256(t, _mm256_set1_epi32(0x01010101)), 7));
    __m256i c = _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(w, 28), 1), _mm256_set1_epi32(1));
    c = _mm256_or_si256(c, _mm256_slli_epi32(c, 16)); /* two int16 copies per lane, for madd */
    _mm256_storeu_si256((__m256i *)mask, m);
    _mm256_storeu_si256((__m256i *)mul, c);
}

/* iq3_words() of eight words already in a vector (IQ3's and IQ2_XXS's
 * blocks hold them alike), with GFNI, for the AVX-512 tables: byte k of
 * (w << k) holds group k's seven bits in bits 0..6, so three shifts and
 * three byte blends gather the four groups, and one GF(2) affine map per
 * byte (gf2p8affineqb) keeps bits 0..6 and writes the parity of bits 0..6
 * into bit 7, ignoring the junk in input bit 7 (matrix row for output bit
 * i is qword byte 7 - i). The multiplier is (w >> 27) | 1 = 2 * code + 1,
 * in both int16 halves. The same masks and multipliers as iq3_words(). */
__attribute__((target("avx2,avx512f,avx512bw,avx512vl,gfni"))) static inline __attribute__((always_inline)) void
iq3_words_gfni_v(__m256i w, __m256i *mask, __m256i *mul)
{
    __m256i m = _mm256_mask_blend_epi8(0x22222222u, w, _mm256_slli_epi32(w, 1));
    m = _mm256_mask_blend_epi8(0x44444444u, m, _mm256_slli_epi32(w, 2));
    m = _mm256_mask_blend_epi8(0x88888888u, m, _mm256_slli_epi32(w, 3));
    *mask = _mm256_gf2p8affine_epi64_epi8(m, _mm256_set1_epi64x(0x010204081020407fll), 0);
    const __m256i c = _mm256_or_si256(_mm256_srli_epi32(w, 27), _mm256_set1_epi32(1));
    *mul = _mm256_or_si256(c, _mm256_slli_epi32(c, 16));
}

/* The eight grid words of one sub-block: eight scalar loads, or one gather. */
AVX2 static inline __attribute__((always_inline)) __m256i iq3_grid8(const uint8_t *ix, int gather)
{
    if (gather)
        return _mm256_i32gather_epi32((const int *)ggml_iq3xxs_grid,
                                      _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)ix)), 4);
    return _mm256_setr_epi32((int)ggml_iq3xxs_grid[ix[0]], (int)ggml_iq3xxs_grid[ix[1]], (int)ggml_iq3xxs_grid[ix[2]],
                             (int)ggml_iq3xxs_grid[ix[3]], (int)ggml_iq3xxs_grid[ix[4]], (int)ggml_iq3xxs_grid[ix[5]],
                             (int)ggml_iq3xxs_grid[ix[6]], (int)ggml_iq3xxs_grid[ix[7]]);
}

/* 32 activations with a sub-block's signs put on (mask bit e: element e);
 * IQ3 and native IQ2_S both keep one sign bit per element in such a word. */
AVX2 static inline __m256i iq3_sign_pm1(uint32_t mask)
{
    const __m256i sidx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bitsel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i sb = _mm256_shuffle_epi8(_mm256_set1_epi32((int)mask), sidx);
    const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(sb, bitsel), bitsel);
    return _mm256_or_si256(neg, _mm256_set1_epi8(1)); /* -1 where the bit is set, else +1 */
}

AVX2 static inline __m256i iq3_signed_q(const int8_t *q, uint32_t mask)
{
    return _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)q), iq3_sign_pm1(mask));
}

#define IQ3_GATHER 0

/* The qdot and qdotn entries of a native block type whose kernel makes a
 * block's weight side once (WT u, LOAD(blk, &u)) and meets one token with
 * it (acc = STEP(blk, &u, a, i, acc), acc of type ACC, zero at the start),
 * the result FINISH(acc): one row against one token (NATIVE_BLOCK_QDOT),
 * and against nt <= KQ_NT_MAX tokens, each block's weight side shared by
 * all of them (NATIVE_BLOCK_QDOTN: every token's steps the single dot's,
 * so its bits); NATIVE_BLOCK_DOTS both. The _N forms take blocks of ELEMS
 * weights (i counts blocks; STEP finds its activation blocks). */
#define NATIVE_BLOCK_QDOT_N(ATTR, QDOT, BLK, ELEMS, WT, LOAD, STEP, ACC, FINISH)                               \
    ATTR float QDOT(const weight *w, int64_t r, const qrow *a)                                                  \
    {                                                                                                           \
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;                              \
        ACC acc = { 0 };                                                                                        \
        for (int64_t i = 0; i < w->cols / (ELEMS); i++) {                                                       \
            const BLK *blk = (const BLK *)row + i;                                                              \
            WT u;                                                                                               \
            LOAD(blk, &u);                                                                                      \
            acc = STEP(blk, &u, a, i, acc);                                                                     \
        }                                                                                                       \
        return FINISH(acc);                                                                                     \
    }
#define NATIVE_BLOCK_QDOTN_N(ATTR, QDOTN, BLK, ELEMS, WT, LOAD, STEP, ACC, FINISH)                             \
    ATTR static inline __attribute__((always_inline)) void QDOTN##_nt(const weight *w, int64_t r, const qrow *a, \
                                                                      int nt, float *y, int64_t ystride)        \
    {                                                                                                           \
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;                              \
        ACC acc[KQ_NT_MAX];                                                                                     \
        memset(acc, 0, sizeof acc);                                                                             \
        for (int64_t i = 0; i < w->cols / (ELEMS); i++) {                                                       \
            const BLK *blk = (const BLK *)row + i;                                                              \
            WT u;                                                                                               \
            LOAD(blk, &u);                                                                                      \
            QD_UNROLL                                                                                           \
            for (int t = 0; t < nt; t++) acc[t] = STEP(blk, &u, &a[t], i, acc[t]);                              \
        }                                                                                                       \
        for (int t = 0; t < nt; t++) y[t * ystride] = FINISH(acc[t]);                                           \
    }                                                                                                           \
    /* a full batch with nt a constant: the steps unrolled, the accumulators can stay in registers */         \
    ATTR void QDOTN(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)               \
    {                                                                                                           \
        if (nt == KQ_NT_MAX) QDOTN##_nt(w, r, a, KQ_NT_MAX, y, ystride);                                        \
        else QDOTN##_nt(w, r, a, nt, y, ystride);                                                               \
    }
/* The super-block types (256 weights a block) */
#define NATIVE_BLOCK_QDOT(ATTR, QDOT, BLK, WT, LOAD, STEP, ACC, FINISH)                                        \
    NATIVE_BLOCK_QDOT_N(ATTR, QDOT, BLK, 256, WT, LOAD, STEP, ACC, FINISH)
#define NATIVE_BLOCK_QDOTN(ATTR, QDOTN, BLK, WT, LOAD, STEP, ACC, FINISH)                                      \
    NATIVE_BLOCK_QDOTN_N(ATTR, QDOTN, BLK, 256, WT, LOAD, STEP, ACC, FINISH)
#define NATIVE_BLOCK_DOTS_N(ATTR, QDOT, QDOTN, BLK, ELEMS, WT, LOAD, STEP, ACC, FINISH)                        \
    NATIVE_BLOCK_QDOT_N(ATTR, QDOT, BLK, ELEMS, WT, LOAD, STEP, ACC, FINISH)                                   \
    NATIVE_BLOCK_QDOTN_N(ATTR, QDOTN, BLK, ELEMS, WT, LOAD, STEP, ACC, FINISH)
#define NATIVE_BLOCK_DOTS(ATTR, QDOT, QDOTN, BLK, WT, LOAD, STEP, ACC, FINISH)                                 \
    NATIVE_BLOCK_DOTS_N(ATTR, QDOT, QDOTN, BLK, 256, WT, LOAD, STEP, ACC, FINISH)

/* FINISH of the types whose row is hsum x 1 or x 1/8 (the grid's unit). */
AVX2 static inline float hsum_ps_1(__m256 acc) { return hsum_ps(acc); }
AVX2 static inline float hsum_ps_8th(__m256 acc) { return 0.125f * hsum_ps(acc); }

/* IQ2_XXS (kernels_ggml_avx2.c and kernels_ggml_avx512.c): a sub-block's
 * two words, its four grid-index bytes (idx) and its sign word (four
 * 7-bit groups, the 4-bit scale on top): the four 8-byte grid entries in
 * element order, and the four groups' sign bytes as one 32-bit mask (bit
 * e: element e negative), made on vectors (ksigns_iq2xs_vec). */
AVX2 static inline __m256i iq2xxs_grid4(uint32_t idx)
{
    return _mm256_setr_epi64x((long long)ggml_iq2xxs_grid[idx & 255], (long long)ggml_iq2xxs_grid[(idx >> 8) & 255],
                              (long long)ggml_iq2xxs_grid[(idx >> 16) & 255], (long long)ggml_iq2xxs_grid[idx >> 24]);
}

/* ggml_ksigns_iq2xs on vectors: each 7-bit sign group (a byte of s7 whose
 * other bytes in its 16-bit lane are zero) with its eighth sign on top,
 * the parity of the seven: g ^ g >> 4 has the same parity in its low four
 * bits, and a 16-entry table gives 0x80 where that is odd. */
AVX2 static inline __m128i ksigns_iq2xs_vec(__m128i s7)
{
    const __m128i odd = _mm_setr_epi8(0, (char)0x80, (char)0x80, 0, (char)0x80, 0, 0, (char)0x80, (char)0x80, 0, 0,
                                      (char)0x80, 0, (char)0x80, (char)0x80, 0);
    return _mm_or_si128(s7, _mm_shuffle_epi8(odd, _mm_xor_si128(s7, _mm_srli_epi16(s7, 4))));
}

AVX2 static inline uint32_t iq2xxs_signs32(uint32_t word)
{
    const __m128i s7 = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)word), _mm_setr_epi32(0, 7, 14, 21)),
                                     _mm_set1_epi32(127));
    return (uint32_t)_mm_cvtsi128_si32(_mm_shuffle_epi8(ksigns_iq2xs_vec(s7), _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1,
                                                                                            -1, -1, -1, -1, -1, -1, -1)));
}

/* A block's 32 grid indices of 8-entry groups (the IQ1 and IQ2_S types),
 * a sub-block's four in a 64-bit word idx[s], made on vectors (the scalar
 * shifts and masks were most of a single dot's work) and read out by word:
 * qs's bytes, and high bits from each sub-block's word of h (8 x u16):
 * group j's from ((h x mul_j) >> sh) & mask, mul_j a power of two. */
AVX2 static inline __attribute__((always_inline)) void grid_indices(const uint8_t *qs, __m128i h, __m128i mul, int sh,
                                                                   __m128i mask, uint64_t idx[8])
{
    const __m128i lo = _mm_unpacklo_epi16(h, h), hi = _mm_unpackhi_epi16(h, h);
    const __m128i hw[4] = { _mm_unpacklo_epi32(lo, lo), _mm_unpackhi_epi32(lo, lo), _mm_unpacklo_epi32(hi, hi),
                            _mm_unpackhi_epi32(hi, hi) }; /* sub-blocks 2k and 2k + 1's words, four lanes each */
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m128i q = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(qs + 8 * k)));
        const __m128i v = _mm_or_si128(q, _mm_and_si128(_mm_srli_epi16(_mm_mullo_epi16(hw[k], mul), sh), mask));
        idx[2 * k] = (uint64_t)_mm_cvtsi128_si64(v);
        idx[2 * k + 1] = (uint64_t)_mm_extract_epi64(v, 1);
    }
}

/* The four 8-byte grid entries of a sub-block's index word. */
#define GRID4(grid, w)                                                                                           \
    _mm256_setr_epi64x((long long)(grid)[(w) & 0xffff], (long long)(grid)[((w) >> 16) & 0xffff],                 \
                       (long long)(grid)[((w) >> 32) & 0xffff], (long long)(grid)[(w) >> 48])

/* Sub-block s's scale lanes (words, the first 16 elements' in the lower
 * 8) from 16 scale bytes in both halves of b2, sub-block s's at bytes 2s
 * (first 16 elements) and 2s + 1: one shuffle a sub-block. */
AVX2 static inline __m256i scale_lanes(__m256i b2, int s)
{
    const __m256i ctrl = _mm256_setr_epi8(0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 0, -128, 1, -128, 1,
                                          -128, 1, -128, 1, -128, 1, -128, 1, -128, 1, -128, 1, -128);
    return _mm256_shuffle_epi8(b2, _mm256_add_epi8(ctrl, _mm256_set1_epi8((char)(2 * s))));
}

/* 8 bytes of two 4-bit scales each (low nibble: a sub-block's first 16
 * elements) as scale_lanes' 16 bytes of 2n + 1. */
AVX2 static inline __m256i nibble_scales(const uint8_t sc[8])
{
    const __m128i b = _mm_loadl_epi64((const __m128i *)sc), m = _mm_set1_epi8(15);
    const __m128i v = _mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m));
    return _mm256_broadcastsi128_si256(_mm_add_epi8(_mm_add_epi8(v, v), _mm_set1_epi8(1)));
}

/* The IQ types whose sub-blocks of 32 are unsigned grid bytes, a sign
 * per element and an integer scale per 16 (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_S), as ggml's AVX2 dots sum them: per sub-block the activation codes
 * take the signs, maddubs against the grid bytes, madd by the scales (the
 * first 16 elements' in the lower 8 words, the next 16's in the upper),
 * the 8 integer lanes summed over the block, converted, one fused
 * multiply-add by d x (activation scale); d is each block's first field.
 * kernels_ggml_q8.c has the scalar spelling of each type's values; the
 * AVX2 kernels (kernels_ggml_avx2.c) run these loaders and this step, the
 * AVX-512 batch ones (kernels_ggml_avx512.c) these loaders. */
typedef struct sgrid_wt { __m256i grid[8], sgn[8], scv[8]; } sgrid_wt;

AVX2 static inline __attribute__((always_inline)) __m256 sgrid_step(const void *blk, const sgrid_wt *u, const qrow *a,
                                                                    int64_t i, __m256 acc)
{
    uint16_t dh;
    memcpy(&dh, blk, 2);
    const int8_t *q = a->q + i * 256;
    __m256i lanes = _mm256_setzero_si256();
    QD_UNROLL
    for (int s = 0; s < 8; s++) {
        const __m256i qs8 = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(q + 32 * s)), u->sgn[s]);
        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(u->grid[s], qs8), u->scv[s]));
    }
    return _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(dh) * a->d[i]), _mm256_cvtepi32_ps(lanes), acc);
}

/* IQ2_XXS: per sub-block a word of four grid-index bytes and a word of
 * four 7-bit sign groups with the 4-bit scale on top. */
AVX2 static inline __attribute__((always_inline)) void iq2xxs_load(const block_iq2_xxs *blk, sgrid_wt *u)
{
    const uint8_t *qs = (const uint8_t *)blk->qs;
    QD_UNROLL
    for (int s = 0; s < 8; s++) {
        uint32_t idx, word;
        memcpy(&idx, qs + 8 * s, 4);
        memcpy(&word, qs + 8 * s + 4, 4);
        u->grid[s] = iq2xxs_grid4(idx);
        u->sgn[s] = iq3_sign_pm1(iq2xxs_signs32(word));
        u->scv[s] = _mm256_set1_epi16((short)(2 * (word >> 28) + 1));
    }
}

/* IQ2_XS's signs of a sub-block (four u16, each a 7-bit sign group above
 * a 9-bit index) as +-1 bytes. */
AVX2 static inline __m256i iq2xs_sign_pm1(const uint16_t *x)
{
    const __m128i full = ksigns_iq2xs_vec(_mm_srli_epi16(_mm_loadl_epi64((const __m128i *)x), 9));
    const __m256i sidx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2,
                                          4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6);
    const __m256i bitsel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i sb = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(full), sidx);
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(sb, bitsel), bitsel), _mm256_set1_epi8(1));
}

/* IQ2_XS: per 8 elements a u16 of a 9-bit grid index and a 7-bit sign group. */
AVX2 static inline __attribute__((always_inline)) void iq2xs_load(const block_iq2_xs *blk, sgrid_wt *u)
{
    const __m256i sc = nibble_scales(blk->scales);
    QD_UNROLL
    for (int s = 0; s < 8; s++) {
        const uint16_t *x = blk->qs + 4 * s;
        uint64_t w;
        memcpy(&w, x, 8);
        w &= 0x01ff01ff01ff01ffull;
        u->grid[s] = GRID4(ggml_iq2xs_grid, w);
        u->sgn[s] = iq2xs_sign_pm1(x);
        u->scv[s] = scale_lanes(sc, s);
    }
}

/* IQ2_S: 32 grid-index bytes with two more bits each in qh (group j's at
 * bits 2j), 32 sign bytes. */
AVX2 static inline __attribute__((always_inline)) void iq2s_load(const block_iq2_s *blk, sgrid_wt *u)
{
    uint64_t idx[8];
    grid_indices(blk->qs, _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)blk->qh)), _mm_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4), 0,
                 _mm_set1_epi16(0x300), idx);
    const __m256i sc = nibble_scales(blk->scales);
    QD_UNROLL
    for (int s = 0; s < 8; s++) {
        u->grid[s] = GRID4(ggml_iq2s_grid, idx[s]);
        uint32_t sw;
        memcpy(&sw, blk->qs + 32 + 4 * s, 4);
        u->sgn[s] = iq3_sign_pm1(sw);
        u->scv[s] = scale_lanes(sc, s);
    }
}

/* IQ3_S: per sub-block eight grid-index bytes with a ninth bit each in
 * qh[s] (element group k's at bit k; grid entries of 4 bytes), four sign
 * bytes, a 4-bit scale. The indices made on vectors, a sub-block's eight
 * in two 64-bit words, as grid_indices does. */
AVX2 static inline __attribute__((always_inline)) void iq3s_load(const block_iq3_s *blk, sgrid_wt *u)
{
    const __m128i h = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)blk->qh));
    const __m128i mul = _mm_setr_epi16(256, 128, 64, 32, 16, 8, 4, 2), mask = _mm_set1_epi16(0x100);
    uint32_t scw;
    memcpy(&scw, blk->scales, 4);
    const __m128i b = _mm_cvtsi32_si128((int)scw), m = _mm_set1_epi8(15);
    const __m128i v = _mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m)); /* sub-block s's at byte s */
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_add_epi8(_mm_add_epi8(v, v), _mm_set1_epi8(1)));
    QD_UNROLL
    for (int s = 0; s < 8; s++) {
        const __m128i hs = _mm_shuffle_epi8(h, _mm_set1_epi16((short)(0x0100 + 0x0202 * s)));
        const __m128i iv = _mm_or_si128(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(blk->qs + 8 * s))),
                                        _mm_and_si128(_mm_mullo_epi16(hs, mul), mask));
        const uint64_t w0 = (uint64_t)_mm_cvtsi128_si64(iv), w1 = (uint64_t)_mm_extract_epi64(iv, 1);
        u->grid[s] = _mm256_setr_epi32((int)ggml_iq3s_grid[w0 & 0xffff], (int)ggml_iq3s_grid[(w0 >> 16) & 0xffff],
                                       (int)ggml_iq3s_grid[(w0 >> 32) & 0xffff], (int)ggml_iq3s_grid[w0 >> 48],
                                       (int)ggml_iq3s_grid[w1 & 0xffff], (int)ggml_iq3s_grid[(w1 >> 16) & 0xffff],
                                       (int)ggml_iq3s_grid[(w1 >> 32) & 0xffff], (int)ggml_iq3s_grid[w1 >> 48]);
        uint32_t sw;
        memcpy(&sw, blk->signs + 4 * s, 4);
        u->sgn[s] = iq3_sign_pm1(sw);
        u->scv[s] = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(0x8000 + s)));
    }
}

/* IQ1_S and IQ1_M (kernels_ggml_q8.c has the scalar spelling and the
 * order): the grid's -1/0/1 bytes as signs of the activation codes, pairs
 * summed by maddubs against ones, madd by the scales: the grid part's
 * lanes, as the types above. The delta part: IQ1_S one integer a block
 * (the activation's sums of 32 times the signed scales) into a float,
 * IQ1_M lanes of the activation codes' pair sums times the scales with
 * the delta signs on them (dsc: one sign an 8-group), into a second float
 * vector. A block's 32 grid indices are made on vectors and read out a
 * sub-block's four at a time (the scalar shifts and masks were most of
 * the single dot's work), IQ1_S's signed scales are one vector (eight
 * scalar stores read back as one load stalled store forwarding every
 * block). kernels_ggml_avx2.c runs these loaders and steps,
 * kernels_ggml_avx512.c's batch dots these loaders. */
typedef struct iq1_wt { __m256i grid[8], scv[8], dsc[8], dls; uint16_t dh; } iq1_wt;
typedef struct iq1_acc { __m256 v, dv; float s; } iq1_acc;

#define IQ1M_L8(v) v, v, v, v, v, v, v, v
#define IQ1M_SC(w) { IQ1M_L8(2 * ((w) & 7) + 1), IQ1M_L8(2 * (((w) >> 3) & 7) + 1) }
#define IQ1M_SC8(w) IQ1M_SC(w), IQ1M_SC(w + 1), IQ1M_SC(w + 2), IQ1M_SC(w + 3), IQ1M_SC(w + 4), IQ1M_SC(w + 5), \
                    IQ1M_SC(w + 6), IQ1M_SC(w + 7)
static const int16_t iq1m_scales[64][16] __attribute__((aligned(32))) = {
    IQ1M_SC8(0), IQ1M_SC8(8), IQ1M_SC8(16), IQ1M_SC8(24), IQ1M_SC8(32), IQ1M_SC8(40), IQ1M_SC8(48), IQ1M_SC8(56)
};
#define IQ1M_D4(b, g) (((b) >> (g)) & 1 ? -1 : 1), (((b) >> (g)) & 1 ? -1 : 1), (((b) >> (g)) & 1 ? -1 : 1), \
                      (((b) >> (g)) & 1 ? -1 : 1)
#define IQ1M_DS(b) { IQ1M_D4(b, 0), IQ1M_D4(b, 1), IQ1M_D4(b, 2), IQ1M_D4(b, 3) }
static const int16_t iq1m_delta_signs[16][16] __attribute__((aligned(32))) = {
    IQ1M_DS(0), IQ1M_DS(1), IQ1M_DS(2),  IQ1M_DS(3),  IQ1M_DS(4),  IQ1M_DS(5),  IQ1M_DS(6),  IQ1M_DS(7),
    IQ1M_DS(8), IQ1M_DS(9), IQ1M_DS(10), IQ1M_DS(11), IQ1M_DS(12), IQ1M_DS(13), IQ1M_DS(14), IQ1M_DS(15)
};

/* IQ1 grid indices (grid_indices): IQ1_S's qh words hold a sub-block's
 * four groups' 3 high bits at bits 0, 3, 6, 9; IQ1_M's qh bytes, read as
 * a sub-block's word, at bits 0, 4, 8, 12 (a delta sign above each). */
AVX2 static inline __attribute__((always_inline)) void iq1s_indices(const block_iq1_s *blk, uint64_t idx[8])
{
    grid_indices(blk->qs, _mm_loadu_si128((const __m128i *)blk->qh), _mm_setr_epi16(512, 64, 8, 1, 512, 64, 8, 1), 1,
                 _mm_set1_epi16(0x700), idx);
}

AVX2 static inline __attribute__((always_inline)) void iq1m_indices(const block_iq1_m *blk, uint64_t idx[8])
{
    grid_indices(blk->qs, _mm_loadu_si128((const __m128i *)blk->qh), _mm_setr_epi16(4096, 256, 16, 1, 4096, 256, 16, 1), 4,
                 _mm_set1_epi16(0x700), idx);
}

/* IQ1_S's eight 3-bit scales (bits 12-14 of each qh word) as
 * scale_lanes' bytes of 2n + 1, both bytes of a word a sub-block's. */
AVX2 static inline __m256i iq1s_scale_bytes(const block_iq1_s *blk)
{
    const __m128i v = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)blk->qh), 12), _mm_set1_epi16(7));
    const __m128i b = _mm_mullo_epi16(_mm_add_epi16(_mm_add_epi16(v, v), _mm_set1_epi16(1)), _mm_set1_epi16(0x0101));
    return _mm256_broadcastsi128_si256(b);
}

/* IQ1_S's sub-block s: its grid bytes (-1, 0, 1) and its scale's lanes. */
AVX2 static inline __attribute__((always_inline)) void iq1s_sub(__m256i scb, const uint64_t idx[8], int s, __m256i *grid, __m256i *scv)
{
    *grid = GRID4(ggml_iq1s_grid, idx[s]);
    *scv = scale_lanes(scb, s);
}

/* IQ1_S's 8 signed sub-block scales (2 x bits 12-14 + 1, negative where
 * bit 15 of qh is set) as int32 lanes in the order of iq1s_delta's pair
 * sums: sub-blocks 0 1 4 5 2 3 6 7. */
AVX2 static inline __m256i iq1s_signed_scales(const uint16_t qh[8])
{
    const __m256i h = _mm256_permute4x64_epi64(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)qh)), 0xD8);
    const __m256i ls = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(h, 11), _mm256_set1_epi32(14)), _mm256_set1_epi32(1));
    return _mm256_sign_epi32(ls, _mm256_or_si256(_mm256_slli_epi32(h, 16), _mm256_set1_epi32(1)));
}

AVX2 static inline __attribute__((always_inline)) void iq1s_load(const block_iq1_s *blk, iq1_wt *u)
{
    u->dh = blk->d;
    uint64_t idx[8];
    iq1s_indices(blk, idx);
    const __m256i scb = iq1s_scale_bytes(blk);
    QD_UNROLL
    for (int s = 0; s < 8; s++) iq1s_sub(scb, idx, s, &u->grid[s], &u->scv[s]);
    u->dls = iq1s_signed_scales(blk->qh);
}

/* IQ1_M's delta-sign bits: bits 3, 7, 11 and 15 of each sub-block's qh
 * word gathered to bits 12-15 of that word by one multiply of four words
 * at once (the other partial products land on distinct lower bits of the
 * word or of the next one: no carries), sub-block s's four at bits
 * 16 (s % 4) + 12 of dbits[s / 4]. */
static inline void iq1m_delta_bits(const block_iq1_m *blk, uint64_t dbits[2])
{
    uint64_t w[2];
    memcpy(w, blk->qh, 16);
    for (int k = 0; k < 2; k++) dbits[k] = ((w[k] >> 3) & 0x1111111111111111ull) * 0x1248;
}

/* IQ1_M's sub-block s: its grid bytes, its two 3-bit scales (6 bits of
 * the scale words sc, read as one 64-bit word) as the int16 vector of its
 * lanes (2s + 1, the first 16 elements' in the lower 8 words), and those
 * with its four delta signs on them (a 64-bit lane an 8-group): tables,
 * so a sub-block's are one load each. */
AVX2 static inline __attribute__((always_inline)) void iq1m_sub(uint64_t sc, const uint64_t idx[8], const uint64_t dbits[2], int s,
                                                               __m256i *grid, __m256i *scv, __m256i *dsc)
{
    *grid = GRID4(ggml_iq1s_grid, idx[s]);
    *scv = _mm256_load_si256((const __m256i *)iq1m_scales[(sc >> (16 * (s / 2) + 6 * (s % 2))) & 63]);
    *dsc = _mm256_sign_epi16(*scv, _mm256_load_si256((const __m256i *)iq1m_delta_signs[(dbits[s / 4] >> (16 * (s % 4) + 12)) & 15]));
}

AVX2 static inline __attribute__((always_inline)) void iq1m_load(const block_iq1_m *blk, iq1_wt *u)
{
    uint16_t sc[4];
    u->dh = block_iq1_m_d(blk, sc);
    uint64_t sc64, idx[8], dbits[2];
    memcpy(&sc64, sc, 8);
    iq1m_indices(blk, idx);
    iq1m_delta_bits(blk, dbits);
    QD_UNROLL
    for (int s = 0; s < 8; s++) iq1m_sub(sc64, idx, dbits, s, &u->grid[s], &u->scv[s], &u->dsc[s]);
}

/* One sub-block's lanes: its sign bytes sg (-1, 0 or 1) against the
 * activation codes q, times its scales scv, added to lanes. */
AVX2 static inline __attribute__((always_inline)) __m256i signed_lanes_add(__m256i lanes, __m256i sg, __m256i scv, const int8_t *q)
{
    const __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)q), sg));
    return _mm256_add_epi32(lanes, _mm256_madd_epi16(p, scv));
}

/* IQ1_M's delta lanes of one sub-block: the codes' pair sums times dsc. */
AVX2 static inline __attribute__((always_inline)) __m256i iq1m_delta_add(__m256i dl, __m256i dsc, const int8_t *q)
{
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)q));
    return _mm256_add_epi32(dl, _mm256_madd_epi16(pairs, dsc));
}

/* IQ1_S's delta part of block i (its integer, the activation's sums of 32
 * times the signed scales dls, by D fused into acc->s), as ggml adds it. */
AVX2 static inline void iq1s_delta(__m256i dls, const qrow *a, int64_t i, float D, iq1_acc *acc)
{
    const __m256i *bs = (const __m256i *)(a->sum16 + i * 16);
    const __m256i pairs = _mm256_hadd_epi32(_mm256_loadu_si256(bs), _mm256_loadu_si256(bs + 1));
    acc->s = fmaf(D, (float)hsum_epi32(_mm256_mullo_epi32(pairs, dls)), acc->s);
}

AVX2 static inline __attribute__((always_inline)) iq1_acc iq1s_step(const block_iq1_s *blk, const iq1_wt *u, const qrow *a,
                                                                    int64_t i, iq1_acc acc)
{
    (void)blk;
    const float D = a->d[i] * _cvtsh_ss(u->dh);
    const int8_t *q = a->q + i * 256;
    __m256i lanes = _mm256_setzero_si256();
    QD_UNROLL
    for (int s = 0; s < 8; s++) lanes = signed_lanes_add(lanes, u->grid[s], u->scv[s], q + 32 * s);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes), acc.v);
    iq1s_delta(u->dls, a, i, D, &acc);
    return acc;
}

AVX2 static inline __attribute__((always_inline)) iq1_acc iq1m_step(const block_iq1_m *blk, const iq1_wt *u, const qrow *a,
                                                                    int64_t i, iq1_acc acc)
{
    (void)blk;
    const __m256 D = _mm256_set1_ps(a->d[i] * _cvtsh_ss(u->dh));
    const int8_t *q = a->q + i * 256;
    __m256i lanes = _mm256_setzero_si256(), dl = _mm256_setzero_si256();
    QD_UNROLL
    for (int s = 0; s < 8; s++) {
        lanes = signed_lanes_add(lanes, u->grid[s], u->scv[s], q + 32 * s);
        dl = iq1m_delta_add(dl, u->dsc[s], q + 32 * s);
    }
    acc.v = _mm256_fmadd_ps(D, _mm256_cvtepi32_ps(lanes), acc.v);
    acc.dv = _mm256_fmadd_ps(D, _mm256_cvtepi32_ps(dl), acc.dv);
    return acc;
}

AVX2 static inline float iq1s_finish(iq1_acc acc) { return hsum_ps(acc.v) + 0.125f * acc.s; }
AVX2 static inline float iq1m_finish(iq1_acc acc) { return hsum_ps(acc.v) + 0.125f * hsum_ps(acc.dv); }

/* Q2_K (kernels_ggml_avx2.c and kernels_ggml_avx512.c have the method):
 * the first of a block's two fused multiply-adds into acc, ggml's: the
 * mins (mins: its 16 as int16) times the activation's sums of 16 of block
 * i (|sum| <= 16 x 127, as int16, in order) pairwise into 8 lanes, by
 * -dmin x (activation scale). */
AVX2 static inline __m256 q2k_mins_step(const block_q2_K *blk, __m256i mins, const qrow *a, int64_t i, __m256 acc)
{
    const int32_t *s16 = a->sum16 + i * 16;
    const __m256i bs = _mm256_permute4x64_epi64(
        _mm256_packs_epi32(_mm256_loadu_si256((const __m256i *)s16), _mm256_loadu_si256((const __m256i *)(s16 + 8))), 0xd8);
    const float nd = -a->d[i] * _cvtsh_ss(blk->dmin);
    return _mm256_fmadd_ps(_mm256_set1_ps(nd), _mm256_cvtepi32_ps(_mm256_madd_epi16(mins, bs)), acc);
}

/* TQ1_0's byte arithmetic at one vector width W (256: AVX2, 512: AVX-512;
 * SI its integer-type suffix), the functions mul3_SFX, mul9_SFX and
 * trit_top_SFX: bytes times 3 and times 9 mod 256 (x + x + x; x << 3 with
 * the bits shifted in from the byte beneath cleared, plus x), and each
 * byte's top trit, (x * 3) >> 8 (ggml_tq1_0_codes), as ggml's AVX2 kernel
 * reads it: the average of x - 1 (saturated) and its half, top two bits;
 * the same value for every byte (checked over all 256). */
#define TRIT_OPS(ATTR, T, W, SI, SFX)                                                                            \
    ATTR static inline T mul3_##SFX(T x) { return _mm##W##_add_epi8(x, _mm##W##_add_epi8(x, x)); }            \
    ATTR static inline T mul9_##SFX(T x)                                                                       \
    {                                                                                                          \
        return _mm##W##_add_epi8(_mm##W##_and_##SI(_mm##W##_slli_epi16(x, 3), _mm##W##_set1_epi8((char)0xF8)), x); \
    }                                                                                                          \
    ATTR static inline T trit_top_##SFX(T x)                                                                   \
    {                                                                                                          \
        const T y = _mm##W##_subs_epu8(x, _mm##W##_set1_epi8(1));                                              \
        const T avg = _mm##W##_avg_epu8(y, _mm##W##_avg_epu8(y, _mm##W##_setzero_##SI()));                     \
        return _mm##W##_and_##SI(_mm##W##_srli_epi16(avg, 6), _mm##W##_set1_epi8(3));                          \
    }

/* NVFP4's four sub-block scales at d (kernels_ggml_avx2.c and
 * kernels_ggml_avx512.c), ggml_ue4m3_half on vectors (random
 * scale bytes made its branches a misprediction a block): the low 7 bits
 * shifted to the mantissa's top with 119 added to the exponent give the
 * normal value (1 + m/8) 2^(e-8); for e = 0 that is (1 + m/8) 2^-8, and
 * 2 x (it - 2^-8) = m 2^-10 is the subnormal one (exact); 0x7F reads 0. */
AVX2 static inline __m128 ue4m3_half4(const uint8_t *d)
{
    uint32_t d4;
    memcpy(&d4, d, 4);
    const __m128i x = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)d4));
    const __m128 f = _mm_castsi128_ps(_mm_add_epi32(_mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(0x7F)), 20),
                                                    _mm_set1_epi32(119 << 23)));
    const __m128 sub = _mm_fmsub_ps(f, _mm_set1_ps(2.0f), _mm_set1_ps(0x1p-7f));
    const __m128i e0 = _mm_cmpeq_epi32(_mm_and_si128(x, _mm_set1_epi32(0x78)), _mm_setzero_si128());
    const __m128 v = _mm_blendv_ps(f, sub, _mm_castsi128_ps(e0));
    return _mm_andnot_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(x, _mm_set1_epi32(0x7F))), v);
}

/* MXFP4 (kernels_ggml_avx2.c has the method). */

/* The 32 code indices of an MXFP4 block at blk, low nibbles first: its 16
 * bytes broadcast to both 128-bit lanes (a load, no shuffle), the upper
 * lane shifted down by 4, so that one in-lane table shuffle finds the
 * values (instead of two 128-bit shuffles and an insert). */
AVX2 static inline __m256i mxfp4_nibbles(const uint8_t *blk)
{
    const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 1)));
    return _mm256_and_si256(_mm256_blend_epi32(x, _mm256_srli_epi16(x, 4), 0xF0), _mm256_set1_epi8(0x0f));
}

/* The 8 integer lanes (lane l: elements 4l..4l+3) of the block at blk
 * against the activation q: |value| x (q with the value's sign). */
AVX2 static inline __m256i mxfp4_lanes_signed(const uint8_t *blk, const int8_t *q)
{
    const __m256i v = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggml_kvalues_fp4)),
                                          mxfp4_nibbles(blk));
    const __m256i q8 = _mm256_loadu_si256((const __m256i *)q);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(q8, v)),
                             _mm256_set1_epi16(1));
}

/* s (the row's accumulators summed), and a last odd block's product after it. */
AVX2 static inline float mxfp4_tail(const uint8_t *row, const qrow *a, int64_t nb, float s)
{
    if (nb % 2 == 0) return s;
    const uint8_t *blk = row + (nb - 1) * 17;
    const __m256i lanes = mxfp4_lanes_signed(blk, a->q + (nb - 1) * 32);
    return fmaf(a->d[nb - 1] * ggml_e8m0_half(blk[0]), (float)hsum_epi32(lanes), s);
}

#endif
