/* kernels_q8_avx2.c: quantized activations with AVX2 (the AVX2 layer of
 * kernel_table.c): the quantizers, which give the scalar ones' codes and
 * scales exactly (the same float operations, the same rounding rules spelled
 * out in integer-exact steps), and the S-form and IQ3 dots, which take the
 * same integer sums per group (maddubs/madd) and the float steps of the
 * scalar reference in its order, so the same bits (kernels.h). */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"
#include "formats/fp16.h"
#include "formats/iq3.h"
#include "runtime/kernels/ggml_order.h"

#include <math.h>
#include <string.h>

AVX2 static inline float hmax_ps(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Four vectors of 8 int32 (each within int8) -> 32 int8 in element order. */
AVX2 static inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    __m256i r = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* Sums of 16 int8 per half: lanes 0..1 of the result hold sum(elements 0..15), (16..31). */
AVX2 static inline void sums16(__m256i q, int32_t *out)
{
    __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
    __m128i lo = _mm256_castsi256_si128(s), hi = _mm256_extracti128_si256(s, 1);
    lo = _mm_hadd_epi32(lo, lo); lo = _mm_hadd_epi32(lo, lo);
    hi = _mm_hadd_epi32(hi, hi); hi = _mm_hadd_epi32(hi, hi);
    out[0] = _mm_cvtsi128_si32(lo);
    out[1] = _mm_cvtsi128_si32(hi);
}

/* Round to nearest, ties to even (the MXCSR default), as _mm256_round_ps with
 * _MM_FROUND_TO_NEAREST_INT does in ggml's x86 quantize_row_q8_0. */
AVX2 static inline __m256i round_even(__m256 v)
{
    return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

AVX2 void kavx2_quant_q8_0(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + b * 32;
        __m256 v[4], m = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(xb + 8 * k);
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
        }
        const float amax = hmax_ps(m);
        const float db = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
        d[b] = fp16_to_f32(f32_to_fp16(db));
        const __m256 vid = _mm256_set1_ps(id);
        __m256i r = pack32(round_even(_mm256_mul_ps(v[0], vid)), round_even(_mm256_mul_ps(v[1], vid)),
                           round_even(_mm256_mul_ps(v[2], vid)), round_even(_mm256_mul_ps(v[3], vid)));
        _mm256_storeu_si256((__m256i *)(q + b * 32), r);
        sums16(r, sum16 + b * 2);
    }
}

AVX2 void kavx2_quant_q8_k(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / 256; b++) {
        const float *xb = x + b * 256;
        int8_t *qb = q + b * 256;
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + j)));
        const float amax = hmax_ps(m);
        if (amax == 0.0f) {
            d[b] = 0.0f;
            memset(qb, 0, 256);
            for (int s = 0; s < 16; s++) sum16[b * 16 + s] = 0;
            continue;
        }
        /* the first element whose magnitude is amax gives the signed max */
        float max = 0.0f;
        const __m256 va = _mm256_set1_ps(amax);
        for (int j = 0; j < 256; j += 8) {
            __m256 e = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(xb + j)), va, _CMP_EQ_OQ);
            int mk = _mm256_movemask_ps(e);
            if (mk) { max = xb[j + __builtin_ctz((unsigned)mk)]; break; }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i cap = _mm256_set1_epi32(127);
        for (int j = 0; j < 256; j += 32) {
            __m256i c[4];
            for (int k = 0; k < 4; k++) /* cvtps rounds half to even, as nearest_int() */
                c[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + j + 8 * k), vs)), cap);
            __m256i r = pack32(c[0], c[1], c[2], c[3]);
            _mm256_storeu_si256((__m256i *)(qb + j), r);
            sums16(r, sum16 + b * 16 + j / 16);
        }
        d[b] = 1.0f / iscale;
    }
}

/* S8 with a bias other than -128: codes + bias need not fit int8, so the
 * products are taken in int16: lanes 0..3 elements 0..15, 4..7 16..31. */
AVX2 static inline __m256i dot32_wide(const uint8_t *p, const int8_t *q, __m256i bias16)
{
    __m128i c = _mm_loadu_si128((const __m128i *)p), c2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i a = _mm_loadu_si128((const __m128i *)q), a2 = _mm_loadu_si128((const __m128i *)(q + 16));
    __m256i w0 = _mm256_add_epi16(_mm256_cvtepu8_epi16(c), bias16);
    __m256i w1 = _mm256_add_epi16(_mm256_cvtepu8_epi16(c2), bias16);
    __m256i s0 = _mm256_madd_epi16(w0, _mm256_cvtepi8_epi16(a));
    __m256i s1 = _mm256_madd_epi16(w1, _mm256_cvtepi8_epi16(a2));
    /* s0 holds 16 elements in 8 lanes; fold to 4 lanes per half */
    __m256i h = _mm256_hadd_epi32(s0, s1); /* per 128-lane: s0 pairs, s1 pairs */
    return _mm256_permute4x64_epi64(h, 0xd8);
}

/* Q8_0-shaped rows (one weight scale and one activation scale per 32
 * elements, no offsets): the hot loop of decode. Two chunks per step, both
 * into one accumulator in unit order (8 float lanes, one fused multiply-add
 * of (weight scale x activation scale) per unit, ggml's horizontal sum at
 * the end: ggml-cpu's x86 ggml_vec_dot_q8_0_q8_0 and llamafile's tinyBLAS
 * give these bits); `bits` is a constant at each call site, so the code
 * unpacking is specialised. Rows are read ahead of the hardware prefetcher,
 * which stops at 4 KiB page boundaries. */
AVX2 static inline __attribute__((always_inline)) float qdot_unit32(const uint8_t *codes, const int8_t *q,
                                                                    const float *sc, const float *d, int64_t n32,
                                                                    int bits, __m256i bias, __m256i cb, int use_cb)
{
    __m256 acc0 = _mm256_setzero_ps();
    const int64_t step = 4 * bits; /* bytes of codes per 32 elements */
    int64_t i = 0;
    for (; i + 2 <= n32; i += 2) {
        const uint8_t *p = codes + i * step;
        _mm_prefetch((const char *)p + QD_AHEAD, QD_HINT);
        if (bits == 8) _mm_prefetch((const char *)p + QD_AHEAD + 64, QD_HINT);
        const __m256i s0 = dot32_i8(values32(p, bits, bias, cb, use_cb), _mm256_loadu_si256((const __m256i *)(q + i * 32)));
        const __m256i s1 = dot32_i8(values32(p + step, bits, bias, cb, use_cb),
                                    _mm256_loadu_si256((const __m256i *)(q + i * 32 + 32)));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(sc[i] * d[i]), acc0);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(sc[i + 1] * d[i + 1]), acc0);
    }
    if (i < n32) {
        const __m256i s0 = dot32_i8(values32(codes + i * step, bits, bias, cb, use_cb),
                                    _mm256_loadu_si256((const __m256i *)(q + i * 32)));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(sc[i] * d[i]), acc0);
    }
    return hsum_ps(acc0);
}

/* A K-quant S-form with its factors (kscalar_qdot_kf's order): per
 * super-block the 8 groups' lane sums times their integer scales in
 * integers, one fused multiply-add by d x (activation scale); the mins as
 * the scalar kernel takes them. */
/* ggml_order_kmins with the integer part on vectors: bs[j] (activation sums
 * of super-block i's eight 32s: qrow.sum32 where the caller made them, else
 * pairs of its sixteen sums of 16) times the mins m[j] (0..63), summed in
 * pairs (exact integers, so any order); then the float steps are
 * ggml_order_kmins's: Q4_K's four pair sums each fused-multiply-added into
 * accm (one rounding per element, as fmaf), Q5_K's total
 * fused-multiply-added into summs by dmin (ggml's build fuses it). */
AVX2 static inline float kf_mins(int style, float dmin, const int8_t *m, const qrow *a, int64_t i, float accm[4],
                                 float summs)
{
    __m128i pairs; /* m[2k] bs[2k] + m[2k+1] bs[2k+1], k = 0..3 */
    if (a->sum32) {
        pairs = _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(a->sum32 + i * 8)),
                               _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)m)));
    } else {
        const int32_t *sum16 = a->sum16 + i * 16;
        const __m128i bs0 =
            _mm_hadd_epi32(_mm_loadu_si128((const __m128i *)sum16), _mm_loadu_si128((const __m128i *)(sum16 + 4)));
        const __m128i bs1 =
            _mm_hadd_epi32(_mm_loadu_si128((const __m128i *)(sum16 + 8)), _mm_loadu_si128((const __m128i *)(sum16 + 12)));
        int32_t m4[2];
        memcpy(m4, m, 8);
        const __m128i p0 = _mm_mullo_epi32(bs0, _mm_cvtepi8_epi32(_mm_cvtsi32_si128(m4[0])));
        const __m128i p1 = _mm_mullo_epi32(bs1, _mm_cvtepi8_epi32(_mm_cvtsi32_si128(m4[1])));
        pairs = _mm_hadd_epi32(p0, p1);
    }
    if (style == 5) {
        const __m128i t = _mm_hadd_epi32(pairs, pairs);
        const int32_t tot = _mm_cvtsi128_si32(t) + _mm_extract_epi32(t, 1);
        return fmaf(dmin, (float)tot, summs);
    }
    _mm_storeu_ps(accm, _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(pairs), _mm_loadu_ps(accm)));
    return summs;
}

/* A K-quant group's scale as int16 for madd: lanes 0..3 (elements 0..15)
 * take sc[j] or sc[2j], lanes 4..7 sc[j] or sc[2j + 1]. */
AVX2 static inline __m256i kf_sc16(const int8_t *sc, int per_sb, int j)
{
    if (per_sb == 8) return _mm256_set1_epi16(sc[j]);
    return _mm256_set_m128i(_mm_set1_epi16(sc[2 * j + 1]), _mm_set1_epi16(sc[2 * j]));
}

/* How a K-quant row's codes become maddubs operands. KF_GEN: any style,
 * split or not (values32: the values' magnitudes meet the activations with
 * the values' signs; |pair| <= 2 x 127 x 128). Each shape the pack holds
 * unsplit has its own loop with the same integers: 4-bit codes (two a
 * byte, element 2i low) widened and interleaved into element order in four
 * steps (values32 takes seven) for KF_Q4 (Q4_K, codes 0..15), KF_Q3 (Q3_K,
 * value code - 4) and KF_CB (IQ4_XS, value codebook[code]); a code a byte
 * for KF_B8 (Q5_K, 0..31) and KF_Q6 (Q6_K, value code - 32). Codes that
 * are the values, or the values plus a bias, meet the activations as they
 * are (maddubs(code, q), less maddubs(bias, q): both exact in int16); the
 * codebook's values by magnitude and sign, as KF_GEN's; the scales come
 * by one shuffle a chunk. From 15-19 to 6-9 ns per super-block on one row
 * (docs/runtime.md). KF_Q4N, KF_Q3N and KF_CBN are the 4-bit shapes
 * against activations that carry qrow.qnib: 64 codes at a time, their
 * bytes moved by two shuffles so that the low nibbles (one and) and the
 * high ones (shift, and) meet qnib as they lie, and a madd by the two
 * groups' scales adds both into ggml's lanes (kernels_impl.h: qnib_src):
 * Q4_K from 9.7 to 5.9 ns per super-block on one row. */
enum { KF_GEN, KF_Q4, KF_Q3, KF_CB, KF_B8, KF_Q6, KF_Q4N, KF_Q3N, KF_CBN };
#define KF_QNIB(mode) ((mode) >= KF_Q4N)
#define KF_NIBBLES(mode) ((mode) == KF_Q4 || (mode) == KF_Q3 || (mode) == KF_CB)
#define KF_BIAS(mode) ((mode) == KF_Q6 ? 32 : (mode) == KF_Q3 ? 4 : 0)

AVX2 static int kf_mode(const weight *w)
{
    const kfactor *kf = w->kf;
    if (w->code_split) return KF_GEN;
    if (w->code_bits == 4 && kf->style == 4 && w->code_bias == 0) return KF_Q4;
    if (w->code_bits == 4 && kf->style == 3 && w->code_bias == -4) return KF_Q3;
    if (w->code_bits == 4 && kf->style == 2) return KF_CB;
    if (w->code_bits == 8 && kf->style == 5 && w->code_bias == 0) return KF_B8;
    if (w->code_bits == 8 && kf->style == 6 && w->code_bias == -32) return KF_Q6;
    return KF_GEN;
}

/* The weight side of chunk c of a super-block: the maddubs operand (v) and,
 * for KF_GEN and the codebook modes, the values whose signs go onto the
 * activations (sgn); and the chunk's int16 scales. A chunk is 32 elements
 * (v[c]), or for the qnib modes 64 (v[c] its low nibbles' operand, v[4 + c]
 * its high ones'). Made chunk by chunk: kf_rown meets each chunk with every
 * token before it makes the next, or makes them all first (KF_TOKENS_OUTER). */
typedef struct kf_wt { __m256i v[8], sgn[8], sc16[8]; } kf_wt;
typedef struct kf_gen { int bits, use_cb; __m256i bias, cb; } kf_gen;
#define KF_CHUNKS(mode) (KF_QNIB(mode) ? 4 : 8)
/* Whether a batch makes the whole super-block's weight side first and meets
 * it token by token (the 4-bit codes against qnib, Q5_K's bytes: as fast as,
 * or faster than, the other way here), rather than chunk by chunk with every
 * token's int32 lanes in registers (Q6_K's 24 ymm of weight side spilled
 * the other way: 6.1 against 4.8 ns a super-block a token from cache; the
 * 4-bit codes without qnib alike; docs/runtime.md). */
#define KF_TOKENS_OUTER(mode) (KF_QNIB(mode) || (mode) == KF_B8)

#define KF_INLINE static inline __attribute__((always_inline))

/* The super-block's scales in both 128-bit lanes, for the per-chunk
 * shuffles of kf_wt_chunk (every mode but KF_GEN). */
AVX2 KF_INLINE __m256i kf_scb(const int8_t *sc, int per_sb)
{
    return _mm256_broadcastsi128_si256(per_sb == 8 ? _mm_loadl_epi64((const __m128i *)sc)
                                                   : _mm_loadu_si128((const __m128i *)sc));
}

AVX2 KF_INLINE void kf_wt_chunk(kf_wt *u, const uint8_t *sbc, const int8_t *sc, __m256i scb, int per_sb,
                                const kf_gen *g, const int c, const int mode)
{
    if (mode == KF_GEN) { /* the magnitudes, and the values for their signs */
        const __m256i v = values32(sbc + c * 32 * g->bits / 8, g->bits, g->bias, g->cb, g->use_cb);
        u->v[c] = _mm256_sign_epi8(v, v);
        u->sgn[c] = v;
        u->sc16[c] = kf_sc16(sc, per_sb, c);
        return;
    }
    /* the scales by one shuffle of scb: Q4_K's and Q5_K's (8 a super-block,
     * 0..63) word = the byte, zero-extended; the signed ones (IQ4_XS's 8,
     * Q3_K's and Q6_K's 16: lanes 0..3 sc[2c], 4..7 sc[2c + 1]) the byte
     * into each word's high half, shifted down */
    const unsigned long long w4 = 0x0001000100010001ull;
    if (KF_QNIB(mode)) {
        /* 64 codes (32-groups A, B); the int16 lanes' scales alternate A's and B's */
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        const __m256i mix = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 0, 1, 8, 9, 2, 3,
                                             10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
        const __m256i x =
            _mm256_shuffle_epi8(_mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i *)(sbc + 32 * c)), 0xd8), mix);
        u->v[c] = _mm256_and_si256(x, m4);
        u->v[4 + c] = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
        if (mode == KF_CBN)
            for (int k = c; k < 8; k += 4) {
                u->sgn[k] = _mm256_shuffle_epi8(g->cb, u->v[k]);
                u->v[k] = _mm256_sign_epi8(u->sgn[k], u->sgn[k]);
            }
        const unsigned a = 2u * (unsigned)c, b = a + 1u; /* Q4_K's, IQ4_XS's groups of 32 */
        if (mode == KF_Q4N) { /* 0..63: the byte zero-extended */
            u->sc16[c] = _mm256_shuffle_epi8(scb, _mm256_set1_epi32((int)((0x8000u | b) << 16 | (0x8000u | a))));
        } else if (mode == KF_CBN) { /* signed: the byte into the word's high half, shifted down */
            u->sc16[c] = _mm256_srai_epi16(
                _mm256_shuffle_epi8(scb, _mm256_set1_epi32((int)((b << 8 | 0x80u) << 16 | (a << 8 | 0x80u)))), 8);
        } else { /* Q3_K's groups of 16: half h of A is group 4c + h, of B 4c + 2 + h; signed */
            const unsigned a0 = 4u * (unsigned)c, b0 = a0 + 2u;
            const int h0 = (int)(((b0 << 8) | 0x80u) << 16 | ((a0 << 8) | 0x80u)),
                      h1 = (int)((((b0 + 1u) << 8) | 0x80u) << 16 | (((a0 + 1u) << 8) | 0x80u));
            u->sc16[c] = _mm256_srai_epi16(_mm256_shuffle_epi8(scb, _mm256_setr_epi32(h0, h0, h0, h0, h1, h1, h1, h1)), 8);
        }
        return;
    }
    if (KF_NIBBLES(mode)) { /* word i = byte i; (w | w << 4) & 0x0f0f: its low nibble, then its high */
        const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(sbc + 16 * c)));
        u->v[c] = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi16(x, 4)), _mm256_set1_epi16(0x0f0f));
    } else {
        u->v[c] = _mm256_loadu_si256((const __m256i *)(sbc + 32 * c));
    }
    if (mode == KF_CB) {
        u->sgn[c] = _mm256_shuffle_epi8(g->cb, u->v[c]);
        u->v[c] = _mm256_sign_epi8(u->sgn[c], u->sgn[c]);
    }
    if (mode == KF_Q4 || mode == KF_B8) {
        const long long k = (long long)((0x8000ull + (unsigned)c) * w4);
        u->sc16[c] = _mm256_shuffle_epi8(scb, _mm256_set1_epi64x(k));
    } else if (mode == KF_CB) {
        const long long k = (long long)(((unsigned long long)c << 8 | 0x80u) * w4);
        u->sc16[c] = _mm256_srai_epi16(_mm256_shuffle_epi8(scb, _mm256_set1_epi64x(k)), 8);
    } else {
        const long long lo = (long long)(((unsigned long long)(2 * c) << 8 | 0x80u) * w4),
                        hi = (long long)(((unsigned long long)(2 * c + 1) << 8 | 0x80u) * w4);
        u->sc16[c] = _mm256_srai_epi16(_mm256_shuffle_epi8(scb, _mm256_set_epi64x(hi, hi, lo, lo)), 8);
    }
}

/* lanes plus chunk c's sc x (4 products of value and activation) in each
 * int32 lane: madd by the scale adds two maddubs pairs, the same integer as
 * the lane sum times sc (|x| < 2^24, exact), without a 32-bit multiply. q:
 * the super-block's activations (qnib for the qnib modes: per 64 the low
 * nibbles' partners, then the high ones'). */
AVX2 KF_INLINE __m256i kf_lanes(const kf_wt *u, const int8_t *q, const int c, __m256i lanes, const int mode)
{
    if (KF_QNIB(mode)) {
        const __m256i qe = _mm256_loadu_si256((const __m256i *)(q + 64 * c)),
                      qo = _mm256_loadu_si256((const __m256i *)(q + 64 * c + 32));
        if (mode == KF_CBN) { /* each pair up to 2 x 127 x 128: the halves madd'ed apart */
            const __m256i pe = _mm256_maddubs_epi16(u->v[c], _mm256_sign_epi8(qe, u->sgn[c])),
                          po = _mm256_maddubs_epi16(u->v[4 + c], _mm256_sign_epi8(qo, u->sgn[4 + c]));
            return _mm256_add_epi32(lanes,
                                    _mm256_add_epi32(_mm256_madd_epi16(pe, u->sc16[c]), _mm256_madd_epi16(po, u->sc16[c])));
        }
        /* codes 0..15: the two halves' pairs add up to at most 4 x 15 x 128 */
        __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(u->v[c], qe), _mm256_maddubs_epi16(u->v[4 + c], qo));
        if (mode == KF_Q3N) {
            const __m256i b4 = _mm256_set1_epi8(4);
            p16 = _mm256_sub_epi16(p16, _mm256_add_epi16(_mm256_maddubs_epi16(b4, qe), _mm256_maddubs_epi16(b4, qo)));
        }
        return _mm256_add_epi32(lanes, _mm256_madd_epi16(p16, u->sc16[c]));
    }
    const __m256i qv = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
    __m256i p16;
    if (mode == KF_GEN || mode == KF_CB) p16 = _mm256_maddubs_epi16(u->v[c], _mm256_sign_epi8(qv, u->sgn[c]));
    else p16 = _mm256_maddubs_epi16(u->v[c], qv);
    if (KF_BIAS(mode)) p16 = _mm256_sub_epi16(p16, _mm256_maddubs_epi16(_mm256_set1_epi8(KF_BIAS(mode)), qv));
    return _mm256_add_epi32(lanes, _mm256_madd_epi16(p16, u->sc16[c]));
}

/* One row against nt <= KQ_NT_MAX tokens (nt = 1: decode): a super-block's
 * weight side is made once and met by every token (in the order
 * KF_TOKENS_OUTER picks); per token the int32 lanes (integers, any order),
 * the factor D, the fused multiply-add and the mins in kscalar_qdot_kf's
 * order, so each y is its bits. */
AVX2 KF_INLINE void kf_rown(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride, const int mode)
{
    const kfactor *kf = w->kf;
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int per_sb = 256 / w->group;
    const int64_t nsb = w->cols / 256, sb0 = r * nsb;
    const kf_gen g = { w->code_split ? 8 : w->code_bits, kf->style == 2, _mm256_set1_epi8((char)w->code_bias),
                       _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kf->cb)) }; /* style 2's codebook */
    const size_t sb_bytes = (size_t)32 * (size_t)w->code_bits, /* unsplit codes (the modes other than KF_GEN) */
        ahead = qd4_ahead(w->row_bytes, 1);
    __m256 acc[KQ_NT_MAX];
    float accm[KQ_NT_MAX][4], summs[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        memset(accm[t], 0, sizeof accm[t]);
        summs[t] = 0.0f;
    }
    uint8_t split[256];
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t *sbc = mode == KF_GEN ? kq_sb_codes(w, codes, i, split) : codes + (size_t)i * sb_bytes;
        if (mode != KF_GEN) /* decode reads K-quants row after row (matmul.c): ahead within the stream */
            for (size_t o = 0; o < sb_bytes; o += 64) _mm_prefetch((const char *)sbc + ahead + o, QD_HINT);
        const int8_t *sc = kf_sc(kf, sb0 + i);
        const __m256i scb = mode == KF_GEN ? _mm256_setzero_si256() : kf_scb(sc, per_sb);
        __m256i lanes[KQ_NT_MAX];
        QD_UNROLL
        for (int t = 0; t < KQ_NT_MAX; t++) lanes[t] = _mm256_setzero_si256();
        kf_wt u;
        QD_UNROLL /* a constant bound: gcc drops the unroll request on KF_CHUNKS(mode) */
        for (int c = 0; c < 8; c++) {
            if (c >= KF_CHUNKS(mode)) break;
            kf_wt_chunk(&u, sbc, sc, scb, per_sb, &g, c, mode);
            if (KF_TOKENS_OUTER(mode)) continue;
            QD_UNROLL
            for (int t = 0; t < KQ_NT_MAX; t++)
                if (t < nt) lanes[t] = kf_lanes(&u, a[t].q + i * 256, c, lanes[t], mode);
        }
        for (int t = 0; t < nt; t++) {
            __m256i l = KF_TOKENS_OUTER(mode) ? _mm256_setzero_si256() : lanes[t];
            if (KF_TOKENS_OUTER(mode))
                QD_UNROLL
                for (int c = 0; c < 8; c++)
                    if (c < KF_CHUNKS(mode)) l = kf_lanes(&u, (KF_QNIB(mode) ? a[t].qnib : a[t].q) + i * 256, c, l, mode);
            const float yd = a[t].d[i], D = yd * _cvtsh_ss(kf_d(kf, sb0 + i));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(l), acc[t]);
            if (!kf_has_mins(kf->style)) continue; /* Q6_K, Q3_K, IQ4_XS: no mins */
            summs[t] = kf_mins(kf->style, -yd * _cvtsh_ss(kf_dmin(kf, sb0 + i)), kf_m(kf, sb0 + i), &a[t], i, accm[t],
                               summs[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = hsum_ps(acc[t]) + ggml_order_kmins_total(kf->style, accm[t], summs[t]);
}

/* Whether every one of the nt activations carries qnib. */
static inline int kf_all_qnib(const qrow *a, int nt)
{
    for (int t = 0; t < nt; t++)
        if (!a[t].qnib) return 0;
    return 1;
}

/* kf_rown in the weight's mode, each mode a constant so that each call is
 * its own loop; inlined into kf_dot with nt = 1 too. */
AVX2 KF_INLINE void kf_run(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    const int nib = kf_all_qnib(a, nt);
    switch (kf_mode(w)) {
    case KF_Q4:
        if (nib) kf_rown(w, r, a, nt, y, ystride, KF_Q4N);
        else kf_rown(w, r, a, nt, y, ystride, KF_Q4);
        break;
    case KF_Q3:
        if (nib) kf_rown(w, r, a, nt, y, ystride, KF_Q3N);
        else kf_rown(w, r, a, nt, y, ystride, KF_Q3);
        break;
    case KF_CB:
        if (nib) kf_rown(w, r, a, nt, y, ystride, KF_CBN);
        else kf_rown(w, r, a, nt, y, ystride, KF_CB);
        break;
    case KF_B8: kf_rown(w, r, a, nt, y, ystride, KF_B8); break;
    case KF_Q6: kf_rown(w, r, a, nt, y, ystride, KF_Q6); break;
    default: kf_rown(w, r, a, nt, y, ystride, KF_GEN); break;
    }
}

AVX2 static float kf_dot(const weight *w, int64_t r, const qrow *a)
{
    float y;
    kf_run(w, r, a, 1, &y, 1);
    return y;
}

/* qdotn for S-forms: rows with K-quant factors share their decoding across
 * the tokens (kf_run); any other S-form row is the table's single dot per
 * token (the matmul gives those rows to qdot4 instead). */
AVX2 void kavx2_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    if (w->kf && a[0].kind == WA_Q8_K) { kf_run(w, r, a, nt, y, ystride); return; }
    for (int t = 0; t < nt; t++) y[t * ystride] = kavx2_qdot_scode(w, r, &a[t]);
}

AVX2 float kavx2_qdot_scode(const weight *w, int64_t r, const qrow *a)
{
    if (w->kf && a->kind == WA_Q8_K) return kf_dot(w, r, a);
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int bits = w->code_bits, blk = qrow_block(a->kind), group = w->group;
    const int64_t g0 = r * (w->cols / group), n32 = w->cols / 32;
    int8_t cbv[16] = { 0 };
    const int use_cb = w->codebook != NULL;
    if (use_cb) kq8_codebook_i8(w, cbv);
    const __m256i cb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cbv));
    const int wide = bits == 8 && !use_cb && w->code_bias != -128;
    const __m256i bias = _mm256_set1_epi8((char)w->code_bias), bias16 = _mm256_set1_epi16((short)w->code_bias);
    if (group == 32 && blk == 32 && !w->offsets && !wide) {
        if (bits == 8) return qdot_unit32(codes, a->q, w->scales + g0, a->d, n32, 8, bias, cb, 0);
        if (bits == 4) return use_cb ? qdot_unit32(codes, a->q, w->scales + g0, a->d, n32, 4, bias, cb, 1)
                                     : qdot_unit32(codes, a->q, w->scales + g0, a->d, n32, 4, bias, cb, 0);
    }
    /* Everything else: scale and activation-block pointers advance by
     * countdown (no division per chunk); a group of 16 has two scales per
     * chunk of 32. */
    const float *sp = w->scales + g0, *op = w->offsets ? w->offsets + g0 : NULL, *dp = a->d;
    const int gstep = group >= 32 ? group / 32 : 0, dstep = blk / 32;
    int gcnt = gstep, dcnt = dstep;
    __m256 acc0 = _mm256_setzero_ps();
    float off = 0.0f;
    for (int64_t i = 0; i < n32; i++) {
        const int64_t c0 = i * 32;
        const uint8_t *p = codes + c0 * bits / 8;
        const __m256i q = _mm256_loadu_si256((const __m256i *)(a->q + c0));
        __m256i s = wide ? dot32_wide(p, a->q + c0, bias16) : dot32_i8(values32(p, bits, bias, cb, use_cb), q);
        const float db = *dp;
        __m256 sd;
        if (group >= 32) {
            sd = _mm256_set1_ps(sp[0] * db);
        } else {
            const float s0 = sp[0] * db, s1 = sp[1] * db;
            sd = _mm256_setr_ps(s0, s0, s0, s0, s1, s1, s1, s1);
        }
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sd, acc0);
        if (op) { /* units of 32 (one 16-sum pair) or 16 (one each) */
            const int32_t *s16 = a->sum16 + c0 / 16;
            float t;
            if (group >= 32) {
                const float od = op[0] * db;
                t = od * (float)(s16[0] + s16[1]);
                off += t;
            } else {
                const float od0 = op[0] * db, od1 = op[1] * db;
                t = od0 * (float)s16[0];
                off += t;
                t = od1 * (float)s16[1];
                off += t;
            }
        }
        if (group < 32) { sp += 2; if (op) op += 2; }
        else if (--gcnt == 0) { sp++; if (op) op++; gcnt = gstep; }
        if (--dcnt == 0) { dp++; dcnt = dstep; }
    }
    return hsum_ps(acc0) + off;
}

/* Four Q8_0-shaped rows at once (rows r + k * stride): the activation codes and the
 * activation scales are loaded once for the four weight streams, the
 * (weight scale x activation scale) products of 8 units are taken as one
 * vector multiply and broadcast by lane, and the horizontal sums and the
 * call overhead are paid once per four rows. Each row keeps exactly
 * qdot_unit32's operations in qdot_unit32's order (every unit into one
 * accumulator in order, the same products and fused multiply-adds), so every y[k] equals
 * the one-row kernel's result bit for bit: how rows are grouped never
 * changes a logit. */
AVX2 static inline __attribute__((always_inline)) void qdot4_unit32(const uint8_t *codes, size_t row_bytes,
                                                                    const int8_t *q, const float *sc, int64_t n32,
                                                                    const float *d, int bits, __m256i bias,
                                                                    __m256i cb, int use_cb, float *y, int64_t stride)
{
    __m256 acc0[QD_ROWS];
    QD_UNROLL
    for (int k = 0; k < QD_ROWS; k++) acc0[k] = _mm256_setzero_ps();
    const int64_t step = 4 * bits;
    const size_t rstep = (size_t)stride * row_bytes;
    const int64_t sstep = stride * n32;
    const size_t ahead = qd4_ahead(row_bytes, stride);
    int64_t i = 0;
    for (; i + 8 <= n32; i += 8) {
        const __m256 vd = _mm256_loadu_ps(d + i);
        float sd[QD_ROWS][8];
        QD_UNROLL
        for (int k = 0; k < QD_ROWS; k++) _mm256_storeu_ps(sd[k], _mm256_mul_ps(_mm256_loadu_ps(sc + k * sstep + i), vd));
        QD_UNROLL
        for (int u = 0; u < 8; u += 2) {
            const __m256i q0 = _mm256_loadu_si256((const __m256i *)(q + (i + u) * 32));
            const __m256i q1 = _mm256_loadu_si256((const __m256i *)(q + (i + u) * 32 + 32));
            QD_UNROLL
            for (int k = 0; k < QD_ROWS; k++) {
                const uint8_t *p = codes + k * rstep + (i + u) * step;
                if (bits == 8 || u % 4 == 0) _mm_prefetch((const char *)p + ahead, QD_HINT);
                const __m256i s0 = dot32_i8(values32(p, bits, bias, cb, use_cb), q0);
                const __m256i s1 = dot32_i8(values32(p + step, bits, bias, cb, use_cb), q1);
                acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_broadcast_ss(&sd[k][u]), acc0[k]);
                acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_broadcast_ss(&sd[k][u + 1]), acc0[k]);
            }
        }
    }
    for (; i + 2 <= n32; i += 2)
        QD_UNROLL
        for (int k = 0; k < QD_ROWS; k++) {
            const uint8_t *p = codes + k * rstep + i * step;
            const float *s = sc + k * sstep;
            const __m256i s0 = dot32_i8(values32(p, bits, bias, cb, use_cb), _mm256_loadu_si256((const __m256i *)(q + i * 32)));
            const __m256i s1 = dot32_i8(values32(p + step, bits, bias, cb, use_cb),
                                        _mm256_loadu_si256((const __m256i *)(q + i * 32 + 32)));
            acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(s[i] * d[i]), acc0[k]);
            acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(s[i + 1] * d[i + 1]), acc0[k]);
        }
    if (i < n32)
        QD_UNROLL
        for (int k = 0; k < QD_ROWS; k++) {
            const __m256i s0 = dot32_i8(values32(codes + k * rstep + i * step, bits, bias, cb, use_cb),
                                        _mm256_loadu_si256((const __m256i *)(q + i * 32)));
            acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(sc[k * sstep + i] * d[i]), acc0[k]);
        }
    QD_UNROLL
    for (int k = 0; k < QD_ROWS; k++) y[k * stride] = hsum_ps(acc0[k]);
}

AVX2 void kavx2_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (w->kf && a->kind == WA_Q8_K) { for (int k = 0; k < QD_ROWS; k++) y[k * stride] = kf_dot(w, r + k * stride, a); return; }
    const int bits = w->code_bits, use_cb = w->codebook != NULL;
    if (w->group == 32 && qrow_block(a->kind) == 32 && !w->offsets && (bits == 8 || bits == 4) &&
        (use_cb || bits == 4 || w->code_bias == -128)) {
        const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        const int64_t n32 = w->cols / 32;
        int8_t cbv[16] = { 0 };
        if (use_cb) kq8_codebook_i8(w, cbv);
        const __m256i cb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)cbv));
        const __m256i bias = _mm256_set1_epi8((char)w->code_bias);
        const float *sc = w->scales + r * n32;
        if (bits == 8) qdot4_unit32(codes, w->row_bytes, a->q, sc, n32, a->d, 8, bias, cb, 0, y, stride);
        else if (use_cb) qdot4_unit32(codes, w->row_bytes, a->q, sc, n32, a->d, 4, bias, cb, 1, y, stride);
        else qdot4_unit32(codes, w->row_bytes, a->q, sc, n32, a->d, 4, bias, cb, 0, y, stride);
        return;
    }
    for (int k = 0; k < QD_ROWS; k++) y[k * stride] = kavx2_qdot_scode(w, r + k * stride, a);
}

/* IQ3 (kernels_x86.h has the method, with the helpers): per block the eight
 * sub-blocks' integer lanes, then dd x the lanes fused-multiply-added. */
AVX2 float kavx2_qdot_iq3(const weight *w, int64_t r, const qrow *a)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const iq3_block *blk = (const iq3_block *)row + b;
        const int8_t *q = a->q + b * IQ3_QK;
        _mm_prefetch((const char *)blk + QD_AHEAD, QD_HINT);
        const uint16_t dh = iq3_block_d(blk);
        uint32_t mask[8], mul[8];
        iq3_words(blk, mask, mul);
        __m256i isum = _mm256_setzero_si256();
        QD_UNROLL
        for (int s = 0; s < 8; s++) {
            const __m256i p16 = _mm256_maddubs_epi16(iq3_grid8(blk->grid + s * 8, IQ3_GATHER), iq3_signed_q(q + s * 32, mask[s]));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, _mm256_set1_epi32((int)mul[s])));
        }
        const float dd = _cvtsh_ss(dh) * a->d[b] * 0.125f; /* F16C: fp16_to_f32 bit for bit, inline */
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* kavx2_qdot_iq3 of one row against nt <= KQ_NT_MAX activation rows: each
 * sub-block's grid bytes and sign vector are made once and met by every
 * token before the next sub-block's, so a prefill pays the expansion (most
 * of a single dot's work) once per row instead of once per row and token,
 * and the tokens' integer sums stay in registers (with the whole block's
 * grid and signs held across the tokens instead, sixteen ymm of them
 * spilled: 6.9 against 6.0 ns a block and token from cache;
 * docs/runtime.md). Per token the int32 lanes (integers, any order), the
 * block factor dd and the fused multiply-add are kavx2_qdot_iq3's, so each
 * y is its bits. */
AVX2 static inline __attribute__((always_inline)) void iq3n_rows(const weight *w, int64_t r, const qrow *a, const int nt,
                                                                 float *y, int64_t ystride)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    __m256 acc[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const iq3_block *blk = (const iq3_block *)row + b;
        uint32_t mask[8], mul[8];
        iq3_words(blk, mask, mul);
        __m256i isum[KQ_NT_MAX];
        QD_UNROLL
        for (int t = 0; t < KQ_NT_MAX; t++) isum[t] = _mm256_setzero_si256();
        QD_UNROLL
        for (int s = 0; s < 8; s++) {
            const __m256i grid = iq3_grid8(blk->grid + s * 8, IQ3_GATHER), sign = iq3_sign_pm1(mask[s]),
                          m = _mm256_set1_epi32((int)mul[s]);
            QD_UNROLL
            for (int t = 0; t < nt; t++) {
                const __m256i qs = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(a[t].q + b * IQ3_QK + s * 32)), sign);
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(grid, qs), m));
            }
        }
        const float d = _cvtsh_ss(iq3_block_d(blk));
        QD_UNROLL
        for (int t = 0; t < nt; t++) {
            const float dd = d * a[t].d[b] * 0.125f;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = hsum_ps(acc[t]);
}

/* a full batch with nt a constant: the token loops unrolled */
AVX2 void kavx2_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    if (nt == KQ_NT_MAX) iq3n_rows(w, r, a, KQ_NT_MAX, y, ystride);
    else iq3n_rows(w, r, a, nt, y, ystride);
}

#endif
