/* kernels_ggml_avx2.c: native ggml blocks on AVX2 (the AVX2 layer's
 * qdot_ggml slots in kernel_table.c): MXFP4, Q2_K, IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_S, IQ1_S, IQ1_M, NVFP4, Q1_0, TQ1_0, TQ2_0, Q4_1 and Q5_1, in the scalar
 * kernels' order (kernels_ggml_q8.c), so their bits. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_dequant.h"
#include "formats/ggml_tables.h"

#include <math.h>
#include <string.h>

/* Native MXFP4 on AVX2, in the scalar dot_mxfp4's order (kernels_ggml_q8.c,
 * ggml's vec_dot_mxfp4_q8_0). A block's integer lanes are |value| x (the
 * activation with the value's sign), as ggml's AVX2 kernel makes them.
 * Even and odd blocks go into two float accumulators, their sum's hsum, a
 * last odd block's integer total fused-multiply-added after it. */

/* One row's blocks b (at b0) and b+1 into the even and odd accumulators;
 * q the activation of block b. Callers keep four rows' eight accumulators
 * in named variables (indexed by b % 2 in an array, gcc kept them in
 * memory); with them, the table and the masks, AVX2's 16 registers are
 * nearly full, hence the signed lanes (no biases to hold) and the
 * activation read here. */
AVX2 static inline __attribute__((always_inline)) void mxfp4_pair(const uint8_t *b0, const int8_t *q,
                                                                  const float *sc, __m256 *even, __m256 *odd)
{
    const __m256i la = mxfp4_lanes_signed(b0, q), lb = mxfp4_lanes_signed(b0 + 17, q + 32);
    *even = _mm256_fmadd_ps(_mm256_broadcast_ss(sc), _mm256_cvtepi32_ps(la), *even);
    *odd = _mm256_fmadd_ps(_mm256_broadcast_ss(sc + 1), _mm256_cvtepi32_ps(lb), *odd);
}

/* The eight scales of four rows' block pairs (row 0 block b, row 0 block
 * b+1, row 1 block b, ...) into sc: ggml_e8m0_half of each E8M0 byte on
 * vectors (subnormal bits for e < 2), times the activation scale, the
 * product ggml rounds. */
AVX2 static inline __attribute__((always_inline)) void mxfp4_scales4(const uint8_t *r0, const uint8_t *r1,
                                                                     const uint8_t *r2, const uint8_t *r3,
                                                                     const float *d, float *sc)
{
    const __m256i e = _mm256_setr_epi32(r0[0], r0[17], r1[0], r1[17], r2[0], r2[17], r3[0], r3[17]);
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i bits = _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e));
    double dpair;
    memcpy(&dpair, d, sizeof dpair);
    _mm256_storeu_ps(sc, _mm256_mul_ps(_mm256_castpd_ps(_mm256_set1_pd(dpair)), _mm256_castsi256_ps(bits)));
}

/* The total of a row's two accumulators, and a last odd block's product after it. */
AVX2 static inline float mxfp4_finish(const uint8_t *row, const qrow *a, int64_t nb, __m256 even, __m256 odd)
{
    return mxfp4_tail(row, a, nb, hsum_ps(_mm256_add_ps(even, odd)));
}

AVX2 float kavx2_qdot_mxfp4(const weight *w, int64_t r, const qrow *a)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    __m256 even = _mm256_setzero_ps(), odd = even;
    const int64_t nb = w->cols / 32;
    for (int64_t b = 0; b + 1 < nb; b += 2) {
        const float sc[2] = { a->d[b] * ggml_e8m0_half(row[b * 17]), a->d[b + 1] * ggml_e8m0_half(row[b * 17 + 17]) };
        mxfp4_pair(row + b * 17, a->q + b * 32, sc, &even, &odd);
    }
    return mxfp4_finish(row, a, nb, even, odd);
}

/* Four MXFP4 rows (r, r + stride, ...) against one activation, each y
 * kavx2_qdot_mxfp4's bits: the activation blocks and their biases are made once. */
AVX2 void kavx2_qdot4_mxfp4(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    const size_t rs = (size_t)stride * w->row_bytes;
    const uint8_t *r0 = (const uint8_t *)w->data + (size_t)r * w->row_bytes, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
    const size_t ahead = qd4_ahead(w->row_bytes, stride);
    __m256 e0 = _mm256_setzero_ps(), o0 = e0, e1 = e0, o1 = e0, e2 = e0, o2 = e0, e3 = e0, o3 = e0;
    const int64_t nb = w->cols / 32;
    for (int64_t b = 0; b + 1 < nb; b += 2) {
        const int8_t *q = a->q + b * 32;
        const size_t off = (size_t)b * 17;
        float sc[8];
        mxfp4_scales4(r0 + off, r1 + off, r2 + off, r3 + off, a->d + b, sc);
        _mm_prefetch((const char *)r0 + off + ahead, QD_HINT);
        _mm_prefetch((const char *)r1 + off + ahead, QD_HINT);
        _mm_prefetch((const char *)r2 + off + ahead, QD_HINT);
        _mm_prefetch((const char *)r3 + off + ahead, QD_HINT);
        mxfp4_pair(r0 + off, q, sc + 0, &e0, &o0);
        mxfp4_pair(r1 + off, q, sc + 2, &e1, &o1);
        mxfp4_pair(r2 + off, q, sc + 4, &e2, &o2);
        mxfp4_pair(r3 + off, q, sc + 6, &e3, &o3);
    }
    y[0] = mxfp4_finish(r0, a, nb, e0, o0);
    y[stride] = mxfp4_finish(r1, a, nb, e1, o1);
    y[2 * stride] = mxfp4_finish(r2, a, nb, e2, o2);
    y[3 * stride] = mxfp4_finish(r3, a, nb, e3, o3);
}

/* The int16 scales of 32 Q2_K elements, 16 of sub-block g then 16 of
 * g + 1, from the block's 16 scales (0..15) in both 128-bit lanes. */
AVX2 static inline __m256i q2k_scale16(__m256i scb, int g)
{
    return _mm256_shuffle_epi8(scb, _mm256_set_m128i(_mm_set1_epi16((short)(0x8000 | (g + 1))),
                                                     _mm_set1_epi16((short)(0x8000 | g))));
}

/* The weight side of one Q2_K block: its codes 32 at a time in element
 * order (half j's bytes shifted by 2l give elements 128j + 32l..), their
 * scales, and its 16 mins as int16. */
typedef struct q2k_wt { __m256i c[8], sc[8], mins; } q2k_wt;

AVX2 static inline __attribute__((always_inline)) void q2k_load(const block_q2_K *blk, q2k_wt *u)
{
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i ms = _mm_loadu_si128((const __m128i *)blk->scales);
    u->mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(ms, 4), m4));
    const __m256i scb = _mm256_broadcastsi128_si256(_mm_and_si128(ms, m4));
    QD_UNROLL /* constant shifts and shuffle controls */
    for (int j = 0; j < 2; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * j));
        QD_UNROLL
        for (int l = 0; l < 4; l++) {
            u->c[4 * j + l] = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), m3);
            u->sc[4 * j + l] = q2k_scale16(scb, 8 * j + 2 * l);
        }
    }
}

/* Block i of one token added into acc as ggml's AVX2 dot does: the mins
 * (q2k_mins_step), then the codes' 8 integer lanes by d x (activation
 * scale), each one fused multiply-add. */
AVX2 static inline __attribute__((always_inline)) __m256 q2k_step(const block_q2_K *blk, const q2k_wt *u, const qrow *a,
                                                                  int64_t i, __m256 acc)
{
    acc = q2k_mins_step(blk, u->mins, a, i, acc);
    const float D = a->d[i] * _cvtsh_ss(blk->d);
    const int8_t *q = a->q + i * 256;
    __m256i lanes = _mm256_setzero_si256();
    QD_UNROLL
    for (int k = 0; k < 8; k++)
        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(u->c[k], _mm256_loadu_si256((const __m256i *)(q + 32 * k))),
                                                          u->sc[k]));
    return _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes), acc);
}

/* Native Q2_K blocks on AVX2 (kernels_ggml_q8.c has the scalar spelling
 * and the order): per 32 elements the 2-bit codes shifted out of their
 * bytes, maddubs against the activation codes, madd by the two
 * 16-element scales, summed into 8 integer lanes (q2k_step); prefill
 * shares each block's codes and scales across the tokens. */
NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_q2_k, kavx2_qdotn_q2_k, block_q2_K, q2k_wt, q2k_load, q2k_step, __m256, hsum_ps_1)

NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_iq2_xxs, kavx2_qdotn_iq2_xxs, block_iq2_xxs, sgrid_wt, iq2xxs_load, sgrid_step,
                  __m256, hsum_ps_8th)
NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_iq2_xs, kavx2_qdotn_iq2_xs, block_iq2_xs, sgrid_wt, iq2xs_load, sgrid_step,
                  __m256, hsum_ps_8th)
NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_iq2_s, kavx2_qdotn_iq2_s, block_iq2_s, sgrid_wt, iq2s_load, sgrid_step, __m256,
                  hsum_ps_8th)
NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_iq3_s, kavx2_qdotn_iq3_s, block_iq3_s, sgrid_wt, iq3s_load, sgrid_step, __m256,
                  hsum_ps_1)

NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_iq1_s, kavx2_qdotn_iq1_s, block_iq1_s, iq1_wt, iq1s_load, iq1s_step, iq1_acc,
                  iq1s_finish)
NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_iq1_m, kavx2_qdotn_iq1_m, block_iq1_m, iq1_wt, iq1m_load, iq1m_step, iq1_acc,
                  iq1m_finish)

/* One MXFP4 row against nt <= KQ_NT_MAX tokens (prefill): each block's
 * signed values and their magnitudes, and its scale, are made once and
 * met by every token; per token the integer lanes, the scale product and
 * the two accumulators are kavx2_qdot_mxfp4's, so each y is its bits. */
AVX2 void kavx2_qdotn_mxfp4(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggml_kvalues_fp4));
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 even[KQ_NT_MAX], odd[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) even[t] = odd[t] = _mm256_setzero_ps();
    const int64_t nb = w->cols / 32;
    for (int64_t b = 0; b + 1 < nb; b += 2) {
        const uint8_t *b0 = row + b * 17;
        const __m256i v0 = _mm256_shuffle_epi8(values, mxfp4_nibbles(b0));
        const __m256i v1 = _mm256_shuffle_epi8(values, mxfp4_nibbles(b0 + 17));
        const __m256i m0 = _mm256_sign_epi8(v0, v0), m1 = _mm256_sign_epi8(v1, v1);
        const float s0 = ggml_e8m0_half(b0[0]), s1 = ggml_e8m0_half(b0[17]);
        for (int t = 0; t < nt; t++) {
            const int8_t *q = a[t].q + b * 32;
            const __m256i q0 = _mm256_loadu_si256((const __m256i *)q), q1 = _mm256_loadu_si256((const __m256i *)(q + 32));
            const __m256i l0 = _mm256_madd_epi16(_mm256_maddubs_epi16(m0, _mm256_sign_epi8(q0, v0)), ones);
            const __m256i l1 = _mm256_madd_epi16(_mm256_maddubs_epi16(m1, _mm256_sign_epi8(q1, v1)), ones);
            even[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t].d[b] * s0), _mm256_cvtepi32_ps(l0), even[t]);
            odd[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t].d[b + 1] * s1), _mm256_cvtepi32_ps(l1), odd[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = mxfp4_finish(row, &a[t], nb, even[t], odd[t]);
}

/* ---- NVFP4, Q1_0, TQ1_0 and TQ2_0 (the scalar order: kernels_ggml_q8.c) ---- */

/* NVFP4's weight side: each half block's 32 values (elements 0..31, then
 * 32..63) signed and as magnitudes, ggml's sign trick, and the four halved
 * UE4M3 scales. A half's 16 code bytes hold two sub-blocks, each 8 bytes of
 * low nibbles (its weights 0..7) then high ones (8..15): 64-bit unpacks put
 * the nibbles in element order. */
typedef struct nvfp4_wt { __m256i v[2], m[2]; __m256 s[2]; } nvfp4_wt;

AVX2 static inline __attribute__((always_inline)) void nvfp4_load(const block_nvfp4 *blk, nvfp4_wt *u)
{
    const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggml_kvalues_fp4));
    const __m256i m4 = _mm256_set1_epi8(15);
    /* both halves at once: the 64-bit unpacks give elements 0..15 and 32..47,
     * then 16..31 and 48..63, one per 128-bit lane; two lane permutes part them */
    const __m256i x = _mm256_loadu_si256((const __m256i *)blk->qs);
    const __m256i lo = _mm256_and_si256(x, m4), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
    const __m256i a = _mm256_unpacklo_epi64(lo, hi), b = _mm256_unpackhi_epi64(lo, hi);
    u->v[0] = _mm256_shuffle_epi8(values, _mm256_permute2x128_si256(a, b, 0x20));
    u->v[1] = _mm256_shuffle_epi8(values, _mm256_permute2x128_si256(a, b, 0x31));
    u->m[0] = _mm256_sign_epi8(u->v[0], u->v[0]);
    u->m[1] = _mm256_sign_epi8(u->v[1], u->v[1]);
    /* each half's two scales, each over its four lanes */
    const __m256 s4 = _mm256_castps128_ps256(ue4m3_half4(blk->d));
    u->s[0] = _mm256_permutevar8x32_ps(s4, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    u->s[1] = _mm256_permutevar8x32_ps(s4, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3));
}

/* Block i against one token: each half's 8 integer lanes by (activation
 * scale x sub-block scale), the first sub-block's in lanes 0..3, fused into acc. */
AVX2 static inline __attribute__((always_inline)) __m256 nvfp4_step(const block_nvfp4 *blk, const nvfp4_wt *u,
                                                                    const qrow *a, int64_t i, __m256 acc)
{
    (void)blk;
    const __m256i ones = _mm256_set1_epi16(1);
    QD_UNROLL
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(a->q + 64 * i + 32 * h));
        const __m256i lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(u->m[h], _mm256_sign_epi8(q, u->v[h])), ones);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_mul_ps(_mm256_set1_ps(a->d[2 * i + h]), u->s[h]), acc);
    }
    return acc;
}

NATIVE_BLOCK_DOTS_N(AVX2, kavx2_qdot_nvfp4, kavx2_qdotn_nvfp4, block_nvfp4, 64, nvfp4_wt, nvfp4_load, nvfp4_step,
                    __m256, hsum_ps_1)

/* 0xff in byte e where bit e of the 32-bit word w is clear (LSB first). */
AVX2 static inline __m256i bits32_clear(uint32_t w)
{
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                            3, 3, 3, 3, 3, 3);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)w), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, _mm256_set1_epi64x((long long)0x8040201008040201ull)),
                             _mm256_setzero_si256());
}

/* Q1_0's weight side: per 32 weights a byte mask, 0xff where the sign bit
 * is clear (the weight -1): (q ^ mask) - mask negates those codes. */
typedef struct q1_wt { __m256i neg[4]; } q1_wt;

AVX2 static inline __attribute__((always_inline)) void q1_load(const block_q1_0 *blk, q1_wt *u)
{
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        uint32_t w32;
        memcpy(&w32, blk->qs + 4 * k, 4);
        u->neg[k] = bits32_clear(w32);
    }
}

/* Block i against one token: four activation blocks' signed sums into 8
 * lanes each, summed in float by their scales (a product, then three fused),
 * that sum fused into acc by the block's d. */
AVX2 static inline __attribute__((always_inline)) __m256 q1_step(const block_q1_0 *blk, const q1_wt *u, const qrow *a,
                                                                 int64_t i, __m256 acc)
{
    const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
    __m256 t = _mm256_setzero_ps();
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(a->q + 128 * i + 32 * k));
        const __m256i sq = _mm256_sub_epi8(_mm256_xor_si256(q, u->neg[k]), u->neg[k]);
        const __m256 lanes = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(one8, sq), one16));
        const __m256 dq = _mm256_set1_ps(a->d[4 * i + k]);
        t = k ? _mm256_fmadd_ps(dq, lanes, t) : _mm256_mul_ps(dq, lanes);
    }
    return _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(blk->d)), t, acc);
}

NATIVE_BLOCK_DOTS_N(AVX2, kavx2_qdot_q1_0, kavx2_qdotn_q1_0, block_q1_0, 128, q1_wt, q1_load, q1_step, __m256,
                    hsum_ps_1)

/* The ternary types' weight side: a block's 256 codes (0..2) as 8 vectors
 * of 32 in element order. */
typedef struct tern_wt { __m256i c[8]; uint16_t dh; } tern_wt;

TRIT_OPS(AVX2, __m256i, 256, si256, y)

/* TQ1_0: its first 32 bytes' five trits are elements 0..159 (trit k of byte
 * m: element 32k + m), the next 16 bytes' are 160..239 (160 + 16k + m), qh's
 * four bytes' four trits 240..255 (240 + 4k + m); trit k is on top after
 * multiplying by 3^k. */
AVX2 static inline __attribute__((always_inline)) void tq1_load(const block_tq1_0 *blk, tern_wt *u)
{
    const __m256i x = _mm256_loadu_si256((const __m256i *)blk->qs);
    const __m256i x3 = mul3_y(x), x9 = mul9_y(x);
    u->c[0] = trit_top_y(x);
    u->c[1] = trit_top_y(x3);
    u->c[2] = trit_top_y(x9);
    u->c[3] = trit_top_y(mul9_y(x3));
    u->c[4] = trit_top_y(mul9_y(x9));
    const __m256i y = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk->qs + 32)));
    const __m256i y3 = mul3_y(y), y9 = mul9_y(y);
    uint32_t h32;
    memcpy(&h32, blk->qh, 4);
    const __m256i h = _mm256_set1_epi32((int)h32), h3 = mul3_y(h);
    /* qh x 1, 3, 9, 27 in the upper lane's four words, y x 81 in the lower */
    const __m256i hk = _mm256_blend_epi32(_mm256_blend_epi32(h, h3, 0x20), mul9_y(_mm256_blend_epi32(h, h3, 0x80)), 0xC0);
    u->c[5] = trit_top_y(_mm256_blend_epi32(y, y3, 0xF0));
    u->c[6] = trit_top_y(_mm256_blend_epi32(y9, mul9_y(y3), 0xF0));
    u->c[7] = trit_top_y(_mm256_blend_epi32(mul9_y(y9), hk, 0xF0));
    u->dh = blk->d;
}

/* TQ2_0: half j's 32 bytes shifted by 2l give elements 128j + 32l.. */
AVX2 static inline __attribute__((always_inline)) void tq2_load(const block_tq2_0 *blk, tern_wt *u)
{
    const __m256i m3 = _mm256_set1_epi8(3);
    QD_UNROLL
    for (int j = 0; j < 2; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * j));
        QD_UNROLL
        for (int l = 0; l < 4; l++) u->c[4 * j + l] = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), m3);
    }
    u->dh = blk->d;
}

/* Block i's 8 integer lanes against one token, the codes' products less
 * the activation's sums of elements 32l..32l+31 in lane l (the scalar
 * dot_ternary's lanes). The products sum in 16 bits first, as ggml's do
 * (at most 16 of |2 x 128| a lane: no overflow). */
AVX2 static inline __attribute__((always_inline)) __m256 tern_step(const void *blk, const tern_wt *u, const qrow *a,
                                                                   int64_t i, __m256 acc)
{
    (void)blk;
    const int8_t *q = a->q + 256 * i;
    __m256i s = _mm256_setzero_si256();
    QD_UNROLL
    for (int k = 0; k < 8; k++)
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(u->c[k], _mm256_loadu_si256((const __m256i *)(q + 32 * k))));
    const int32_t *s16 = a->sum16 + 16 * i;
    /* hadd pairs the sums within 128-bit lanes (0+1, 2+3, 8+9, 10+11 | 4+5, ...); the permute puts them in order */
    const __m256i pairs = _mm256_permute4x64_epi64(_mm256_hadd_epi32(_mm256_loadu_si256((const __m256i *)s16),
                                                                     _mm256_loadu_si256((const __m256i *)(s16 + 8))),
                                                   0xD8);
    const __m256i lanes = _mm256_sub_epi32(_mm256_madd_epi16(s, _mm256_set1_epi16(1)), pairs);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_set1_ps(a->d[i] * _cvtsh_ss(u->dh)), acc);
}

NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_tq1_0, kavx2_qdotn_tq1_0, block_tq1_0, tern_wt, tq1_load, tern_step, __m256, hsum_ps_1)
NATIVE_BLOCK_DOTS(AVX2, kavx2_qdot_tq2_0, kavx2_qdotn_tq2_0, block_tq2_0, tern_wt, tq2_load, tern_step, __m256, hsum_ps_1)

/* Q4_1 and Q5_1 (dot_q41's order): a block's 32 codes in element order
 * (low nibbles 0..15, high ones 16..31, Q5_1's fifth bits 0x10 from qh), its
 * d and m; per token the 8 integer lanes fused by d x (activation d), m x
 * (the activation block's s) fused into the running mins. */
typedef struct q41_wt { __m256i c; float d, m; } q41_wt;
typedef struct q41_acc { __m256 v; float m; } q41_acc;

AVX2 static inline __attribute__((always_inline)) void q41_codes(const uint8_t *qs, uint16_t dh, uint16_t mh, q41_wt *u)
{
    const __m128i x = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(15);
    u->c = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 4), m4), _mm_and_si128(x, m4));
    u->d = _cvtsh_ss(dh);
    u->m = _cvtsh_ss(mh);
}
AVX2 static inline __attribute__((always_inline)) void q4_1_load(const block_q4_1 *blk, q41_wt *u)
{
    q41_codes(blk->qs, blk->d, blk->m, u);
}
AVX2 static inline __attribute__((always_inline)) void q5_1_load(const block_q5_1 *blk, q41_wt *u)
{
    q41_codes(blk->qs, blk->d, blk->m, u);
    uint32_t qh;
    memcpy(&qh, blk->qh, 4);
    u->c = _mm256_or_si256(u->c, _mm256_andnot_si256(bits32_clear(qh), _mm256_set1_epi8(0x10)));
}

AVX2 static inline __attribute__((always_inline)) q41_acc q41_step(const void *blk, const q41_wt *u, const qrow *a,
                                                                   int64_t i, q41_acc acc)
{
    (void)blk;
    const __m256i q = _mm256_loadu_si256((const __m256i *)(a->q + 32 * i));
    const __m256i lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(u->c, q), _mm256_set1_epi16(1));
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(u->d * a->d[i]), _mm256_cvtepi32_ps(lanes), acc.v);
    acc.m = fmaf(u->m, a->s1[i], acc.m);
    return acc;
}
AVX2 static inline float q41_finish(q41_acc acc) { return hsum_ps(acc.v) + acc.m; }

NATIVE_BLOCK_DOTS_N(AVX2, kavx2_qdot_q4_1, kavx2_qdotn_q4_1, block_q4_1, 32, q41_wt, q4_1_load, q41_step, q41_acc,
                    q41_finish)
NATIVE_BLOCK_DOTS_N(AVX2, kavx2_qdot_q5_1, kavx2_qdotn_q5_1, block_q5_1, 32, q41_wt, q5_1_load, q41_step, q41_acc,
                    q41_finish)

#endif
