/* kernels_q8_avx2.c: quantized activations with AVX2 (chosen at run time
 * through kernels_avx2.c's table). The quantizers give the scalar ones'
 * codes and scales exactly (same float operations, the same rounding rules
 * spelled out in integer-exact steps); the dot products take the same
 * integer sums per group (maddubs/madd) and differ from the scalar
 * reference only by the order of the float additions (8 lanes). */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "formats/fp16.h"
#include "formats/ggml_dequant.h"
#include "formats/ggml_tables.h"
#include "formats/ggml_types.h"
#include "formats/iq3.h"
#include "runtime/kernels/ggml_order.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

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
#define QD_AHEAD 1024
/* Read-ahead goes to L2 (T1), not L1: a core holds few more L1 misses in
 * flight than one DRAM stream needs, and the four-row kernels' streams are
 * one row long; into L1 (T0), one core streamed the S8 four-row kernel from
 * DRAM at 8-10 GB/s, into L2 at 13-17 (the single-row kernel: 18), with the
 * same speed from cache (Zen 4). */
#define QD_HINT _MM_HINT_T1
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
 * of the super-block's eight 32s) as pairs of its sixteen sums of 16, times
 * the mins m[j], summed in pairs (exact integers, so any order); then the
 * float steps are ggml_order_kmins's: Q4_K's four pair sums each
 * fused-multiply-added into accm (one rounding per element, as fmaf), Q5_K's
 * total fused-multiply-added into summs by dmin (ggml's build fuses it). */
AVX2 static inline float kf_mins(int style, float dmin, const int8_t *m, const int32_t *sum16, float accm[4],
                                 float summs)
{
    const __m128i bs0 = _mm_hadd_epi32(_mm_loadu_si128((const __m128i *)sum16), _mm_loadu_si128((const __m128i *)(sum16 + 4)));
    const __m128i bs1 =
        _mm_hadd_epi32(_mm_loadu_si128((const __m128i *)(sum16 + 8)), _mm_loadu_si128((const __m128i *)(sum16 + 12)));
    int32_t m4[2];
    memcpy(m4, m, 8);
    const __m128i p0 = _mm_mullo_epi32(bs0, _mm_cvtepi8_epi32(_mm_cvtsi32_si128(m4[0])));
    const __m128i p1 = _mm_mullo_epi32(bs1, _mm_cvtepi8_epi32(_mm_cvtsi32_si128(m4[1])));
    const __m128i pairs = _mm_hadd_epi32(p0, p1); /* m[2k] bs[2k] + m[2k+1] bs[2k+1], k = 0..3 */
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

/* sc x (4 products of value and activation) in each int32 lane: the value's
 * magnitude meets the activation with the value's sign in maddubs (pairs
 * of products, |pair| <= 2 x 127 x 128), and madd by the scale adds two
 * pairs: the same integer as the lane sum times sc (|x| < 2^24, exact),
 * without a 32-bit multiply. av = |v|, kept by callers that reuse v. */
AVX2 static inline __m256i kf_lane32(__m256i av, __m256i v, __m256i q, __m256i sc16)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(q, v)), sc16);
}

AVX2 static float kf_dot(const weight *w, int64_t r, const qrow *a)
{
    const kfactor *kf = w->kf;
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int bits = w->code_bits, per_sb = 256 / w->group;
    const int64_t nsb = w->cols / 256, sb0 = r * nsb;
    const __m256i zero = _mm256_setzero_si256(), bias = _mm256_set1_epi8((char)w->code_bias);
    __m256 acc = _mm256_setzero_ps();
    float accm[4] = { 0 }, summs = 0.0f;
    for (int64_t i = 0; i < nsb; i++) {
        const int8_t *sc = kf->sc + (sb0 + i) * per_sb;
        __m256i lanes = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            const int64_t c0 = i * 256 + j * 32;
            const __m256i v = values32(codes + c0 * bits / 8, bits, bias, zero, 0);
            lanes = _mm256_add_epi32(lanes, kf_lane32(_mm256_sign_epi8(v, v), v,
                                                      _mm256_loadu_si256((const __m256i *)(a->q + c0)), kf_sc16(sc, per_sb, j)));
        }
        const float yd = a->d[i], D = yd * kf->d[sb0 + i];
        acc = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes), acc);
        if (kf->style == 6) continue;
        summs = kf_mins(kf->style, -yd * kf->dmin[sb0 + i], kf->m + (sb0 + i) * 8, a->sum16 + i * 16, accm, summs);
    }
    return hsum_ps(acc) + ggml_order_kmins_total(kf->style, accm, summs);
}

/* kf_dot of one row against nt <= KQ_NT_MAX tokens: a super-block's code
 * values and integer scales are made once and met by every token; per
 * token the int32 lanes, the factor D, the fused multiply-add and the mins
 * are kf_dot's, in its order, so each y is its bits. */
AVX2 static void kf_dotn(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    const kfactor *kf = w->kf;
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int bits = w->code_bits, per_sb = 256 / w->group;
    const int64_t nsb = w->cols / 256, sb0 = r * nsb;
    const __m256i zero = _mm256_setzero_si256(), bias = _mm256_set1_epi8((char)w->code_bias);
    __m256 acc[KQ_NT_MAX];
    float accm[KQ_NT_MAX][4], summs[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        memset(accm[t], 0, sizeof accm[t]);
        summs[t] = 0.0f;
    }
    for (int64_t i = 0; i < nsb; i++) {
        const int8_t *sc = kf->sc + (sb0 + i) * per_sb;
        __m256i vals[8], avals[8], sc16[8];
        for (int j = 0; j < 8; j++) {
            vals[j] = values32(codes + (i * 256 + j * 32) * bits / 8, bits, bias, zero, 0);
            avals[j] = _mm256_sign_epi8(vals[j], vals[j]);
            sc16[j] = kf_sc16(sc, per_sb, j);
        }
        for (int t = 0; t < nt; t++) {
            __m256i lanes = _mm256_setzero_si256();
            for (int j = 0; j < 8; j++)
                lanes = _mm256_add_epi32(lanes, kf_lane32(avals[j], vals[j],
                                                          _mm256_loadu_si256((const __m256i *)(a[t].q + i * 256 + j * 32)),
                                                          sc16[j]));
            const float yd = a[t].d[i], D = yd * kf->d[sb0 + i];
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes), acc[t]);
            if (kf->style == 6) continue;
            summs[t] = kf_mins(kf->style, -yd * kf->dmin[sb0 + i], kf->m + (sb0 + i) * 8, a[t].sum16 + i * 16, accm[t],
                               summs[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = hsum_ps(acc[t]) + ggml_order_kmins_total(kf->style, accm[t], summs[t]);
}

/* qdotn for S-forms: rows with K-quant factors share their decoding across
 * the tokens (kf_dotn); any other S-form row is the table's single dot per
 * token (the matmul gives those rows to qdot4 instead). */
AVX2 void kavx2_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    if (w->kf && a[0].kind == WA_Q8_K) { kf_dotn(w, r, a, nt, y, ystride); return; }
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
#define QD_ROWS 4
/* The loops over the four rows and the eight units are unrolled so that the
 * eight accumulators live in registers (rolled, gcc kept them on the stack:
 * a store and a reload around every multiply-add). Unrolling changes no
 * operation and no order. */
#define QD_PRAGMA(x) _Pragma(#x)
#define QD_UNROLL QD_PRAGMA(GCC unroll 8)
/* Read-ahead distance of the four-row kernels. Adjacent rows (stride 1):
 * the same place in the next four rows. Rows a stride apart are four
 * sequential streams (each continues into its own next row), so each
 * reads QD_AHEAD bytes ahead within its stream; the hardware prefetchers
 * then see four forward streams instead of four 2 KiB pieces per group. */
static inline size_t qd4_ahead(size_t row_bytes, int64_t stride)
{
    return stride == 1 ? QD_ROWS * row_bytes : QD_AHEAD;
}
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
 * block's grid bytes and sign vectors are expanded once and met by every
 * token, so a prefill pays the expansion (most of a single dot's work)
 * once per row instead of once per row and token. Per token the int32
 * lanes, the block factor dd and the fused multiply-add are
 * kavx2_qdot_iq3's, so each y is its bits. */
AVX2 void kavx2_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    __m256 acc[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const iq3_block *blk = (const iq3_block *)row + b;
        const uint16_t dh = iq3_block_d(blk);
        const float d = _cvtsh_ss(dh);
        uint32_t mask[8], mul[8];
        iq3_words(blk, mask, mul);
        __m256i grid[8], sign[8];
        for (int s = 0; s < 8; s++) {
            grid[s] = iq3_grid8(blk->grid + s * 8, IQ3_GATHER);
            sign[s] = iq3_sign_pm1(mask[s]);
        }
        for (int t = 0; t < nt; t++) {
            const int8_t *q = a[t].q + b * IQ3_QK;
            __m256i isum = _mm256_setzero_si256();
            QD_UNROLL
            for (int s = 0; s < 8; s++) {
                const __m256i qs = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(q + s * 32)), sign[s]);
                const __m256i p16 = _mm256_maddubs_epi16(grid[s], qs);
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, _mm256_set1_epi32((int)mul[s])));
            }
            const float dd = d * a[t].d[b] * 0.125f;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(isum), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = hsum_ps(acc[t]);
}


/* ------------------------------------------------------------- AVX-VNNI */

/* The same Q8_0-shaped dots with vpdpbusd (AVX-VNNI: unsigned bytes times
 * signed bytes, four products summed into each int32 lane). The codes are
 * taken as they are stored (unsigned 0..255 or 0..15) and the bias is put
 * back per lane: lane i starts at bias x (q[4i] + .. + q[4i+3]), so every
 * lane ends at sum((code + bias) x q) over its four elements, the very
 * integer dot32_i8 gives (no saturation either way: 4 x 255 x 127 fits).
 * Everything after the integer lanes is qdot_unit32's / qdot4_unit32's,
 * operation for operation, so these kernels equal the AVX2 ones bit for
 * bit; they are faster because one vpdpbusd replaces two vpsignb, a
 * vpmaddubsw and a vpmaddwd per 32 codes (measured in-cache: the AVX2 loop
 * could not keep up with two cores' memory reads). */
#define VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))

/* 32 codes as unsigned bytes in element order (no bias). */
VNNI static inline __m256i codes32_u8(const uint8_t *p, int bits)
{
    if (bits == 8) return _mm256_loadu_si256((const __m256i *)p);
    __m128i x = _mm_loadu_si128((const __m128i *)p), m = _mm_set1_epi8(15);
    __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
    return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

/* bias x (sum of each four consecutive q): the starting value of the lanes. */
VNNI static inline __m256i bias_lanes(__m256i q, __m256i bias16)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), bias16);
}

VNNI static inline __attribute__((always_inline)) float vnni_unit32(const uint8_t *codes, const int8_t *q,
                                                                    const float *sc, const float *d, int64_t n32,
                                                                    int bits, __m256i bias16)
{
    __m256 acc0 = _mm256_setzero_ps();
    const int64_t step = 4 * bits;
    int64_t i = 0;
    for (; i + 2 <= n32; i += 2) {
        const uint8_t *p = codes + i * step;
        _mm_prefetch((const char *)p + QD_AHEAD, QD_HINT);
        if (bits == 8) _mm_prefetch((const char *)p + QD_AHEAD + 64, QD_HINT);
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)(q + i * 32));
        const __m256i q1 = _mm256_loadu_si256((const __m256i *)(q + i * 32 + 32));
        const __m256i s0 = _mm256_dpbusd_avx_epi32(bias_lanes(q0, bias16), codes32_u8(p, bits), q0);
        const __m256i s1 = _mm256_dpbusd_avx_epi32(bias_lanes(q1, bias16), codes32_u8(p + step, bits), q1);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(sc[i] * d[i]), acc0);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(sc[i + 1] * d[i + 1]), acc0);
    }
    if (i < n32) {
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)(q + i * 32));
        const __m256i s0 = _mm256_dpbusd_avx_epi32(bias_lanes(q0, bias16), codes32_u8(codes + i * step, bits), q0);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(sc[i] * d[i]), acc0);
    }
    return hsum_ps(acc0);
}

/* The rows qdot_unit32 takes, less the codebook ones (left to AVX2). */
static int vnni_takes(const weight *w, const qrow *a)
{
    return w->group == 32 && qrow_block(a->kind) == 32 && !w->offsets && !w->codebook &&
           (w->code_bits == 4 || (w->code_bits == 8 && w->code_bias == -128));
}

VNNI float kvnni_qdot_scode(const weight *w, int64_t r, const qrow *a)
{
    if (!vnni_takes(w, a)) return kavx2_qdot_scode(w, r, a);
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int64_t n32 = w->cols / 32;
    const float *sc = w->scales + r * n32;
    const __m256i bias16 = _mm256_set1_epi16((short)w->code_bias);
    return w->code_bits == 8 ? vnni_unit32(codes, a->q, sc, a->d, n32, 8, bias16)
                             : vnni_unit32(codes, a->q, sc, a->d, n32, 4, bias16);
}

VNNI static inline __attribute__((always_inline)) void vnni4_unit32(const uint8_t *codes, size_t row_bytes,
                                                                    const int8_t *q, const float *sc, int64_t n32,
                                                                    const float *d, int bits, __m256i bias16, float *y,
                                                                    int64_t stride)
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
            const __m256i b0 = bias_lanes(q0, bias16), b1 = bias_lanes(q1, bias16);
            QD_UNROLL
            for (int k = 0; k < QD_ROWS; k++) {
                const uint8_t *p = codes + k * rstep + (i + u) * step;
                if (bits == 8 || u % 4 == 0) _mm_prefetch((const char *)p + ahead, QD_HINT);
                const __m256i s0 = _mm256_dpbusd_avx_epi32(b0, codes32_u8(p, bits), q0);
                const __m256i s1 = _mm256_dpbusd_avx_epi32(b1, codes32_u8(p + step, bits), q1);
                acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_broadcast_ss(&sd[k][u]), acc0[k]);
                acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_broadcast_ss(&sd[k][u + 1]), acc0[k]);
            }
        }
    }
    for (; i + 2 <= n32; i += 2) {
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)(q + i * 32));
        const __m256i q1 = _mm256_loadu_si256((const __m256i *)(q + i * 32 + 32));
        const __m256i b0 = bias_lanes(q0, bias16), b1 = bias_lanes(q1, bias16);
        QD_UNROLL
        for (int k = 0; k < QD_ROWS; k++) {
            const uint8_t *p = codes + k * rstep + i * step;
            const float *s = sc + k * sstep;
            const __m256i s0 = _mm256_dpbusd_avx_epi32(b0, codes32_u8(p, bits), q0);
            const __m256i s1 = _mm256_dpbusd_avx_epi32(b1, codes32_u8(p + step, bits), q1);
            acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(s[i] * d[i]), acc0[k]);
            acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(s[i + 1] * d[i + 1]), acc0[k]);
        }
    }
    if (i < n32) {
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)(q + i * 32));
        const __m256i b0 = bias_lanes(q0, bias16);
        QD_UNROLL
        for (int k = 0; k < QD_ROWS; k++) {
            const __m256i s0 = _mm256_dpbusd_avx_epi32(b0, codes32_u8(codes + k * rstep + i * step, bits), q0);
            acc0[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(sc[k * sstep + i] * d[i]), acc0[k]);
        }
    }
    QD_UNROLL
    for (int k = 0; k < QD_ROWS; k++) y[k * stride] = hsum_ps(acc0[k]);
}

VNNI void kvnni_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (!vnni_takes(w, a)) { kavx2_qdot4_scode(w, r, stride, a, y); return; }
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int64_t n32 = w->cols / 32;
    const float *sc = w->scales + r * n32;
    const __m256i bias16 = _mm256_set1_epi16((short)w->code_bias);
    if (w->code_bits == 8) vnni4_unit32(codes, w->row_bytes, a->q, sc, n32, a->d, 8, bias16, y, stride);
    else vnni4_unit32(codes, w->row_bytes, a->q, sc, n32, a->d, 4, bias16, y, stride);
}

/* IQ3 with vpdpwssd: the madd by (2*code + 1) and the add into the block
 * sum are one instruction (the same int32 lanes: vpmaddwd cannot saturate
 * here, the products are at most 2 x 15748 x 31). */
VNNI float kvnni_qdot_iq3(const weight *w, int64_t r, const qrow *a)
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
            isum = _mm256_dpwssd_avx_epi32(isum, p16, _mm256_set1_epi32((int)mul[s]));
        }
        const float dd = _cvtsh_ss(dh) * a->d[b] * 0.125f; /* F16C: fp16_to_f32 bit for bit, inline */
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}


/* ------------------------------------------------------------- AVX-512 */

/* IQ3 with AVX-512 (F, BW, VL, VBMI, GFNI): the grid lookups leave the
 * scalar side. iq3_planes[j][i] is byte j of ggml_iq3xxs_grid[i] (a
 * transposed copy; the tests reach every entry through the kernels); each
 * plane's 256 bytes sit in four zmm registers and are looked up for all 64
 * indices of a block with two two-table byte permutes (index bits 0..6)
 * and a blend on index bit 7. Two rounds of byte and word unpacks
 * interleave the four planes into grid words; the indices are first put in
 * the order (one vpermb) that makes the unpacks' in-lane order come out as
 * element order: four zmm of 64 grid bytes, sub-blocks (0, 1), (2, 3),
 * (4, 5), (6, 7). The signs go on the activations with a masked subtract
 * under the block's 32-bit sign masks (two per zmm), and two sub-blocks at
 * a time meet maddubs and madd by their multipliers. The two 256-bit
 * halves are added into the block's eight int32 lanes, the very integers
 * of the AVX2 kernel, and the float steps are its steps: the same bits.
 * (A first version looked up a 12-bit form of the entries with word
 * permutes and expanded it with vpmultishiftqb + vpermb: 27 against this
 * one's 32 G weights/s in-cache.) */
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vbmi,gfni")))

/* iq3_words() with fewer steps: byte k of (w << k) holds group k's seven
 * bits in bits 0..6, so three shifts and three byte blends gather the four
 * groups, and one GF(2) affine map per byte (gf2p8affineqb) keeps bits
 * 0..6 and writes the parity of bits 0..6 into bit 7, ignoring the junk
 * in input bit 7 (matrix row for output bit i is qword byte 7 - i). The
 * multiplier is (w >> 27) | 1 = 2 * code + 1. The same masks and
 * multipliers as iq3_words(). */
AVX512 static inline __attribute__((always_inline)) void iq3_words_gfni(const iq3_block *blk, uint32_t mask[8],
                                                                        uint32_t mul[8])
{
    const __m256i w = _mm256_loadu_si256((const __m256i *)blk->word);
    __m256i m = _mm256_mask_blend_epi8(0x22222222u, w, _mm256_slli_epi32(w, 1));
    m = _mm256_mask_blend_epi8(0x44444444u, m, _mm256_slli_epi32(w, 2));
    m = _mm256_mask_blend_epi8(0x88888888u, m, _mm256_slli_epi32(w, 3));
    m = _mm256_gf2p8affine_epi64_epi8(m, _mm256_set1_epi64x(0x010204081020407fll), 0);
    __m256i c = _mm256_or_si256(_mm256_srli_epi32(w, 27), _mm256_set1_epi32(1));
    c = _mm256_or_si256(c, _mm256_slli_epi32(c, 16));
    _mm256_storeu_si256((__m256i *)mask, m);
    _mm256_storeu_si256((__m256i *)mul, c);
}

static const uint8_t iq3_planes[4][256] = {
    {
         4, 20, 36, 12, 28, 62,  4, 20, 12, 20, 28, 44, 12, 28,  4, 20,
        12, 44,  4, 20, 12, 36,  4,  4, 20, 36, 12,  4, 20, 12, 28, 62,
        12, 62, 44, 12, 62,  4, 20, 44,  4, 28, 62, 36, 62, 28, 44, 12,
        62, 20, 20, 44, 36,  4, 36, 52, 28, 12, 12, 28,  4, 20, 12, 28,
         4, 20, 36, 62,  4,  4, 20, 12,  4, 20, 12, 28,  4, 20, 12,  4,
        20,  4, 20,  4, 12, 52, 52, 12, 44,  4,  4, 36, 52, 12, 44, 20,
         4,  4, 20, 12, 28,  4, 20, 52, 12, 20, 12, 28, 44,  4, 20, 12,
         4, 28, 62,  4,  4, 20, 12, 62,  4, 20, 62,  4, 44, 12,  4, 36,
         4, 36, 44, 28, 28, 62, 12, 36, 12, 28, 52, 44, 12,  4, 20, 12,
        28,  4, 44, 20,  4, 20,  4, 12, 36, 52, 12, 28,  4, 44, 20, 20,
        12, 28,  4, 62, 20,  4, 52, 20, 44, 36, 52, 28, 28,  4, 36, 62,
        44, 62, 28, 62, 36,  4, 62,  4,  4, 52, 62, 44, 36, 12, 36, 44,
        28,  4, 44,  4, 20,  4, 20, 12,  4,  4, 52, 52, 44, 36, 20, 20,
        20, 28,  4, 28, 62, 20, 20, 12,  4, 36, 20, 36, 36, 52, 36, 12,
        12, 62, 36,  4, 52, 36, 44, 20, 28, 28, 12, 28, 44, 62,  4, 20,
        20, 52,  4, 20, 44, 20,  4, 44, 28,  4, 12, 12,  4, 20, 36,  4,
    },
    {
         4,  4,  4, 12, 12, 12, 20, 20, 28, 36, 62, 62,  4,  4, 12, 12,
        20, 20, 28, 28, 36, 44, 62,  4,  4,  4, 12, 20, 20, 28, 28, 28,
        44, 44, 62,  4,  4, 12, 12, 20, 62, 12, 28, 36, 44, 62, 62,  4,
         4, 28, 44, 28, 52, 12, 12, 12, 36, 52,  4,  4, 12, 12, 20, 20,
        28, 28, 28, 36, 44,  4,  4, 12, 20, 20,  4,  4, 12, 12, 20, 28,
        62,  4,  4, 20, 28, 36, 52,  4,  4, 44, 20, 20, 36, 62,  4, 20,
        36,  4,  4, 12, 12, 20, 20, 20, 28, 36,  4,  4,  4, 12, 12, 20,
        28, 52, 52, 62,  4,  4, 12, 12, 20, 20, 28, 36, 44,  4, 12, 12,
        62, 62, 28, 44,  4, 20, 36, 62,  4,  4, 12, 36,  4, 12, 12, 20,
        20, 44, 52, 62,  4,  4, 20, 28, 36, 36,  4,  4, 12, 20, 44, 62,
        12, 28, 28, 36, 62,  4,  4, 20, 44, 12, 28, 52, 28, 52,  4, 12,
        28, 28, 44, 44, 62, 20, 28, 36, 52, 52,  4, 36,  4, 44, 52, 20,
        36, 62,  4, 12, 12, 28, 12, 36, 62,  4,  4, 20, 44, 12, 28, 62,
         4, 44, 12, 20, 20, 62,  4, 28, 44, 20, 36, 20, 36, 36, 52, 20,
        52, 12, 52, 28, 28, 36,  4, 44, 28,  4, 20,  4,  4,  4, 12, 28,
        44, 20, 36, 12, 36, 44,  4, 12, 28, 52, 20, 36,  4,  4, 20, 28,
    },
    {
         4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4, 12, 12, 12, 12,
        12, 12, 12, 12, 12, 12, 12, 20, 20, 20, 20, 20, 20, 20, 20, 20,
        20, 20, 20, 28, 28, 28, 28, 28, 28, 36, 36, 36, 36, 36, 36, 44,
        44, 44, 44, 52, 52, 62, 62, 62, 62, 62,  4,  4,  4,  4,  4,  4,
         4,  4,  4,  4,  4, 12, 12, 12, 12, 12, 20, 20, 20, 20, 20, 20,
        20, 28, 28, 28, 28, 28, 28, 36, 36, 36, 44, 44, 44, 44, 52, 62,
        62,  4,  4,  4,  4,  4,  4,  4,  4,  4, 12, 12, 12, 12, 12, 12,
        12, 12, 12, 12, 20, 20, 20, 20, 20, 20, 20, 20, 20, 28, 28, 28,
        28, 28, 36, 36, 44, 44, 44, 44, 62, 62, 62, 62,  4,  4,  4,  4,
         4,  4,  4,  4, 12, 12, 12, 12, 12, 12, 20, 20, 20, 20, 20, 20,
        28, 28, 36, 36, 36, 44, 44, 44, 44, 52, 52, 52, 62, 62,  4,  4,
         4,  4,  4,  4, 12, 20, 20, 20, 20, 20, 28, 28, 36, 36, 36, 44,
        44, 44, 62, 62, 62, 62,  4,  4,  4, 12, 12, 12, 12, 20, 20, 20,
        28, 28, 36, 36, 36, 36, 44, 44, 52, 62, 62,  4,  4,  4,  4, 12,
        12, 20, 20, 28, 28, 36, 44, 44, 52, 62, 62,  4,  4,  4,  4,  4,
         4, 12, 12, 20, 20, 20, 28, 28, 28, 28, 36, 36, 44, 44, 44, 52,
    },
    {
         4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,
         4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,
         4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,
         4,  4,  4,  4,  4,  4,  4,  4,  4,  4, 12, 12, 12, 12, 12, 12,
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
        12, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20,
        20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20,
        20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 28, 28, 28, 28,
        28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
        28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 36, 36,
        36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36,
        36, 36, 36, 36, 36, 36, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44,
        44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 52, 52, 52, 52, 52,
        52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 52, 62, 62, 62, 62, 62,
        62, 62, 62, 62, 62, 62, 62, 62, 62, 62, 62, 62, 62, 62, 62, 62,
    },
};

/* position 16k + 4m + t takes index 16m + 4k + t */
static const uint8_t iq3_zorder[64] = {
    0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4, 5, 6, 7, 20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55,
    8, 9, 10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63,
};

/* The 256-bit grid planes, the index order and bit 7, loaded once per call. */
typedef struct iq3_zmm {
    __m512i t[4][4], zord, bit7;
} iq3_zmm;

AVX512 static inline __attribute__((always_inline)) void iq3_zmm_init(iq3_zmm *z)
{
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) z->t[j][i] = _mm512_loadu_si512((const void *)(iq3_planes[j] + 64 * i));
    z->zord = _mm512_loadu_si512((const void *)iq3_zorder);
    z->bit7 = _mm512_set1_epi8((char)0x80);
}

/* One block's 256 grid bytes in element order: g[m] holds sub-blocks 2m
 * and 2m + 1. */
AVX512 static inline __attribute__((always_inline)) void iq3_grid_zmm(const iq3_zmm *z, const iq3_block *blk,
                                                                      __m512i g[4])
{
    const __m512i idx = _mm512_permutexvar_epi8(z->zord, _mm512_loadu_si512((const void *)blk->grid));
    const __mmask64 k7 = _mm512_test_epi8_mask(idx, z->bit7);
    __m512i pl[4];
    QD_UNROLL
    for (int j = 0; j < 4; j++)
        pl[j] = _mm512_mask_blend_epi8(k7, _mm512_permutex2var_epi8(z->t[j][0], idx, z->t[j][1]),
                                       _mm512_permutex2var_epi8(z->t[j][2], idx, z->t[j][3]));
    const __m512i x01l = _mm512_unpacklo_epi8(pl[0], pl[1]), x01h = _mm512_unpackhi_epi8(pl[0], pl[1]);
    const __m512i x23l = _mm512_unpacklo_epi8(pl[2], pl[3]), x23h = _mm512_unpackhi_epi8(pl[2], pl[3]);
    g[0] = _mm512_unpacklo_epi16(x01l, x23l);
    g[1] = _mm512_unpackhi_epi16(x01l, x23l);
    g[2] = _mm512_unpacklo_epi16(x01h, x23h);
    g[3] = _mm512_unpackhi_epi16(x01h, x23h);
}

AVX512 float kavx512_qdot_iq3(const weight *w, int64_t r, const qrow *a)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    iq3_zmm z;
    iq3_zmm_init(&z);
    const __m512i pair0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i two = _mm512_set1_epi32(2);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const iq3_block *blk = (const iq3_block *)row + b;
        const int8_t *q = a->q + b * IQ3_QK;
        _mm_prefetch((const char *)blk + QD_AHEAD, QD_HINT);
        const uint16_t dh = iq3_block_d(blk);
        uint32_t mask[8], mul[8];
        iq3_words_gfni(blk, mask, mul);
        const __m512i mulv = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)mul));
        __m512i g[4];
        iq3_grid_zmm(&z, blk, g);
        __m512i isum = _mm512_setzero_si512(), sel = pair0;
        QD_UNROLL
        for (int m = 0; m < 4; m++) { /* sub-blocks 2m, 2m + 1 */
            uint64_t m2;
            memcpy(&m2, mask + 2 * m, 8);
            const __m512i qv = _mm512_loadu_si512((const void *)(q + m * 64));
            const __m512i sq = _mm512_mask_sub_epi8(qv, (__mmask64)m2, _mm512_setzero_si512(), qv);
            const __m512i p16 = _mm512_maddubs_epi16(g[m], sq);
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p16, _mm512_permutexvar_epi32(sel, mulv)));
            sel = _mm512_add_epi32(sel, two);
        }
        const __m256i is8 = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
        const float dd = _cvtsh_ss(dh) * a->d[b] * 0.125f;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(is8), acc);
    }
    return hsum_ps(acc);
}

/* kavx512_qdot_iq3 of one row against nt <= KQ_NT_MAX tokens: the grid
 * bytes, the sign masks and the multipliers of a block are made once and
 * met by every token (kavx2_qdotn_iq3's idea; per token the integers and
 * float steps are kavx512_qdot_iq3's, so its bits). */
AVX512 void kavx512_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    iq3_zmm z;
    iq3_zmm_init(&z);
    const __m512i pair0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m256 acc[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const iq3_block *blk = (const iq3_block *)row + b;
        const uint16_t dh = iq3_block_d(blk);
        const float d = _cvtsh_ss(dh);
        uint32_t mask[8], mul[8];
        iq3_words_gfni(blk, mask, mul);
        const __m512i mulv = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)mul));
        __m512i g[4], mv[4];
        __mmask64 neg[4];
        iq3_grid_zmm(&z, blk, g);
        for (int m = 0; m < 4; m++) {
            uint64_t m2;
            memcpy(&m2, mask + 2 * m, 8);
            neg[m] = (__mmask64)m2;
            mv[m] = _mm512_permutexvar_epi32(_mm512_add_epi32(pair0, _mm512_set1_epi32(2 * m)), mulv);
        }
        for (int t = 0; t < nt; t++) {
            const int8_t *q = a[t].q + b * IQ3_QK;
            __m512i isum = _mm512_setzero_si512();
            QD_UNROLL
            for (int m = 0; m < 4; m++) {
                const __m512i qv = _mm512_loadu_si512((const void *)(q + m * 64));
                const __m512i sq = _mm512_mask_sub_epi8(qv, neg[m], _mm512_setzero_si512(), qv);
                isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(g[m], sq), mv[m]));
            }
            const __m256i is8 = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
            const float dd = d * a[t].d[b] * 0.125f;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(is8), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = hsum_ps(acc[t]);
}

/* Four Q8_0-shaped S8 rows (code bias -128) with 512-bit AVX-512 VNNI
 * (F, BW, VL, VNNI): one zmm holds the same unit of two rows (rows 0 and 1
 * in one accumulator, 2 and 3 in the other, lanes 0..7 and 8..15), so one
 * vpdpbusd, one conversion and one fused multiply-add do two rows' step of
 * the ymm kernels. Every lane sees the same integer (the bias put back per
 * lane from the same activation sums), the same scale product and the same
 * multiply-add in the same order, units one after another into one
 * accumulator per row as in ggml's dot; the horizontal sums are hsum_ps of
 * each half. So y equals the AVX2, AVX-VNNI and scalar kernels bit for bit
 * (tested). (The first version held two units of one row per zmm, the ymm
 * kernels' two accumulators; with one accumulator per row, as ggml sums,
 * rows are what can share a register.) */
#define AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

AVX512VNNI static inline __m512i z_pair(const uint8_t *p0, const uint8_t *p1)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p0)),
                              _mm256_loadu_si256((const __m256i *)p1), 1);
}

AVX512VNNI static void z4_s8(const uint8_t *codes, size_t row_bytes, const int8_t *q, const float *sc, int64_t n32,
                             const float *d, float *y, int64_t stride)
{
    const size_t rstep = (size_t)stride * row_bytes;
    const int64_t sstep = stride * n32;
    const size_t ahead = qd4_ahead(row_bytes, stride);
    const __m256i one = _mm256_set1_epi8(1), bias16 = _mm256_set1_epi16(-128);
    __m512 acc[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() };
    int64_t i = 0;
    for (; i + 8 <= n32; i += 8) {
        const __m256 vd = _mm256_loadu_ps(d + i);
        __m512 sd[2];
        for (int h = 0; h < 2; h++) {
            const __m256 lo = _mm256_mul_ps(_mm256_loadu_ps(sc + (2 * h) * sstep + i), vd);
            const __m256 hi = _mm256_mul_ps(_mm256_loadu_ps(sc + (2 * h + 1) * sstep + i), vd);
            sd[h] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
        }
        QD_UNROLL
        for (int u = 0; u < 8; u++) {
            const __m512i idx = _mm512_setr_epi32(u, u, u, u, u, u, u, u, 8 + u, 8 + u, 8 + u, 8 + u, 8 + u, 8 + u,
                                                  8 + u, 8 + u);
            const __m256i qu = _mm256_loadu_si256((const __m256i *)(q + (i + u) * 32));
            const __m512i q2 = _mm512_broadcast_i64x4(qu);
            const __m512i b2 = _mm512_broadcast_i64x4(_mm256_madd_epi16(_mm256_maddubs_epi16(one, qu), bias16));
            QD_UNROLL
            for (int h = 0; h < 2; h++) {
                const uint8_t *p0 = codes + (2 * h) * rstep + (i + u) * 32, *p1 = p0 + rstep;
                if (u % 2 == 0) {
                    _mm_prefetch((const char *)p0 + ahead, QD_HINT);
                    _mm_prefetch((const char *)p1 + ahead, QD_HINT);
                }
                const __m512i s2 = _mm512_dpbusd_epi32(b2, z_pair(p0, p1), q2);
                acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s2), _mm512_permutexvar_ps(idx, sd[h]), acc[h]);
            }
        }
    }
    for (; i < n32; i++) {
        const __m256i qu = _mm256_loadu_si256((const __m256i *)(q + i * 32));
        const __m512i q2 = _mm512_broadcast_i64x4(qu);
        const __m512i b2 = _mm512_broadcast_i64x4(_mm256_madd_epi16(_mm256_maddubs_epi16(one, qu), bias16));
        for (int h = 0; h < 2; h++) {
            const uint8_t *p0 = codes + (2 * h) * rstep + i * 32;
            const __m512i s2 = _mm512_dpbusd_epi32(b2, z_pair(p0, p0 + rstep), q2);
            const __m512 sdv = _mm512_castpd_ps(_mm512_insertf64x4(
                _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_set1_ps(sc[(2 * h) * sstep + i] * d[i]))),
                _mm256_castps_pd(_mm256_set1_ps(sc[(2 * h + 1) * sstep + i] * d[i])), 1));
            acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s2), sdv, acc[h]);
        }
    }
    for (int h = 0; h < 2; h++) {
        y[(2 * h) * stride] = hsum_ps(_mm512_castps512_ps256(acc[h]));
        y[(2 * h + 1) * stride] = hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[h]), 1)));
    }
}

static int z4_takes(const weight *w, const qrow *a)
{
    return w->group == 32 && qrow_block(a->kind) == 32 && !w->offsets && !w->codebook && w->code_bits == 8 &&
           w->code_bias == -128;
}

/* The two entries differ only in what takes the other rows: each table's
 * own four-row kernel (no AVX-VNNI instruction in the AVX2 one). */
AVX512VNNI void kavx512_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (!z4_takes(w, a)) { kavx2_qdot4_scode(w, r, stride, a, y); return; }
    const int64_t n32 = w->cols / 32;
    z4_s8((const uint8_t *)w->data + (size_t)r * w->row_bytes, w->row_bytes, a->q, w->scales + r * n32, n32, a->d, y,
          stride);
}

AVX512VNNI void kavx512v_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (!z4_takes(w, a)) { kvnni_qdot4_scode(w, r, stride, a, y); return; }
    const int64_t n32 = w->cols / 32;
    z4_s8((const uint8_t *)w->data + (size_t)r * w->row_bytes, w->row_bytes, a->q, w->scales + r * n32, n32, a->d, y,
          stride);
}


/* Native MXFP4 on AVX2, in the scalar dot_mxfp4's order (kernels_ggml_q8.c,
 * ggml's vec_dot_mxfp4_q8_0). A block's integer lanes are |value| x (the
 * activation with the value's sign), as ggml's AVX2 kernel makes them.
 * Even and odd blocks go into two float accumulators, their sum's hsum, a
 * last odd block's integer total fused-multiply-added after it. */

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

AVX2 static inline int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

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

/* s (the row's accumulators summed), and a last odd block's product after it. */
AVX2 static inline float mxfp4_tail(const uint8_t *row, const qrow *a, int64_t nb, float s)
{
    if (nb % 2 == 0) return s;
    const uint8_t *blk = row + (nb - 1) * 17;
    const __m256i lanes = mxfp4_lanes_signed(blk, a->q + (nb - 1) * 32);
    return fmaf(a->d[nb - 1] * ggml_e8m0_half(blk[0]), (float)hsum_epi32(lanes), s);
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

/* Native IQ2_S blocks on AVX2 (kernels_ggml_q8.c has the scalar spelling):
 * per 32 elements the four 8-byte grid entries, the 32 sign bits applied
 * to the activation codes, maddubs, and madd by the two 16-element scales
 * give the same 8 integer lanes; summed over the block, converted, one
 * fused multiply-add by d x (activation scale), 0.125 x hsum: the same
 * bits as the scalar kernel. */
AVX2 float kavx2_qdot_iq2_s(const weight *w, int64_t r, const qrow *a)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / 256; b++) {
        const uint8_t *blk = row + b * 82, *qs = blk + 2, *signs = blk + 34, *qh = blk + 66, *sc = blk + 74;
        const int8_t *q = a->q + b * 256;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        __m256i lanes = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const __m256i grid = _mm256_setr_epi64x(
                (long long)ggml_iq2s_grid[qs[ib * 4 + 0] | ((qh[ib] << 8) & 0x300)],
                (long long)ggml_iq2s_grid[qs[ib * 4 + 1] | ((qh[ib] << 6) & 0x300)],
                (long long)ggml_iq2s_grid[qs[ib * 4 + 2] | ((qh[ib] << 4) & 0x300)],
                (long long)ggml_iq2s_grid[qs[ib * 4 + 3] | ((qh[ib] << 2) & 0x300)]);
            uint32_t sw;
            memcpy(&sw, signs + ib * 4, 4);
            const __m256i p16 = _mm256_maddubs_epi16(grid, iq3_signed_q(q + ib * 32, sw));
            const short lo = (short)(2 * (sc[ib] & 15) + 1), hi = (short)(2 * (sc[ib] >> 4) + 1);
            const __m256i scv = _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi);
            lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(p16, scv));
        }
        const float D = _cvtsh_ss(dh) * a->d[b];
        acc = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes), acc);
    }
    return 0.125f * hsum_ps(acc);
}


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

/* kavx2_qdot_iq2_s of one row against nt <= KQ_NT_MAX tokens: a block's
 * grid bytes, sign vectors and scales are made once and met by every
 * token; per token the integer lanes and float steps are
 * kavx2_qdot_iq2_s's, so each y is its bits. */
AVX2 void kavx2_qdotn_iq2_s(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    __m256 acc[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / 256; b++) {
        const uint8_t *blk = row + b * 82, *qs = blk + 2, *signs = blk + 34, *qh = blk + 66, *sc = blk + 74;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        const float d = _cvtsh_ss(dh);
        __m256i grid[8], sgn[8], scv[8];
        for (int ib = 0; ib < 8; ib++) {
            grid[ib] = _mm256_setr_epi64x((long long)ggml_iq2s_grid[qs[ib * 4 + 0] | ((qh[ib] << 8) & 0x300)],
                                          (long long)ggml_iq2s_grid[qs[ib * 4 + 1] | ((qh[ib] << 6) & 0x300)],
                                          (long long)ggml_iq2s_grid[qs[ib * 4 + 2] | ((qh[ib] << 4) & 0x300)],
                                          (long long)ggml_iq2s_grid[qs[ib * 4 + 3] | ((qh[ib] << 2) & 0x300)]);
            uint32_t sw;
            memcpy(&sw, signs + ib * 4, 4);
            sgn[ib] = iq3_sign_pm1(sw);
            const short lo = (short)(2 * (sc[ib] & 15) + 1), hi = (short)(2 * (sc[ib] >> 4) + 1);
            scv[ib] = _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi);
        }
        for (int t = 0; t < nt; t++) {
            const int8_t *q = a[t].q + b * 256;
            __m256i lanes = _mm256_setzero_si256();
            for (int ib = 0; ib < 8; ib++) {
                const __m256i qs8 = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(q + ib * 32)), sgn[ib]);
                lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(grid[ib], qs8), scv[ib]));
            }
            const float D = d * a[t].d[b];
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = 0.125f * hsum_ps(acc[t]);
}

/* Four MXFP4 rows with AVX-512 VNNI and VBMI: one zmm holds a row's even
 * block (lanes 0..7) and the odd one after it (lanes 8..15), kavx2_qdot_mxfp4's
 * two accumulators side by side. Both blocks (34 bytes) come in with one
 * masked load (nothing past them is touched); one two-source byte
 * permute of those bytes and of them shifted right by 4 lays out block
 * b's low nibbles, its high nibbles, then block b+1's (the high bits of
 * each byte are don't-cares), and one 64-entry byte permute of the
 * biased table (16 values, four times) turns them into values. vpdpbusd
 * of those against both blocks' activations, 12 x their 4-element sums
 * taken off (the same integers); the two E8M0 bytes are permuted into
 * their dword lanes and scale the activation scales through scalef; one
 * fused multiply-add. A last odd block as kavx2_qdot4_mxfp4 takes it. y equals
 * kavx2_qdot_mxfp4's bits (tested). */
/* byte i of the layout: 128-bit lane i / 16 (low, high nibbles of block b, then of b+1), position
 * i % 16 of the block's codes; 64 + picks the shifted copy */
static const uint8_t mxfp4_layout[64] = {
    1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
    65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80,
    18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
    82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97,
};
/* the low byte of dword lanes 0..7: block b's E8M0 byte (offset 0), of lanes 8..15: block b+1's (17) */
static const uint8_t mxfp4_scale_at[64] = {
    [32] = 17, [36] = 17, [40] = 17, [44] = 17, [48] = 17, [52] = 17, [56] = 17, [60] = 17,
};
#define AVX512VNNI_VBMI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
/* a zmm's even-block half plus its odd-block half, summed as kavx2_qdot_mxfp4's two accumulators are */
AVX512VNNI_VBMI static inline float mxfp4_zsum(__m512 acc)
{
    const __m256 lo = _mm512_castps512_ps256(acc);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
    return hsum_ps(_mm256_add_ps(lo, hi));
}
/* one row's block pair at b0 into acc */
AVX512VNNI_VBMI static inline __attribute__((always_inline)) __m512 mxfp4_pair_z(
    const uint8_t *b0, size_t ahead, __m512i layout, __m512i scale_idx, __m512i values, __m512i nbias, __m512i q2,
    __m512 ad, __m512 acc)
{
    const __mmask64 two_blocks = ((__mmask64)1 << 34) - 1, dword_low = 0x1111111111111111ull;
    _mm_prefetch((const char *)b0 + ahead, QD_HINT);
    const __m512i raw = _mm512_maskz_loadu_epi8(two_blocks, b0);
    const __m512i nib = _mm512_permutex2var_epi8(raw, layout, _mm512_srli_epi16(raw, 4));
    const __m512i lanes = _mm512_dpbusd_epi32(nbias, _mm512_permutexvar_epi8(nib, values), q2);
    const __m512i e = _mm512_maskz_permutexvar_epi8(dword_low, scale_idx, raw);
    const __m512 dv = _mm512_scalef_ps(ad, _mm512_cvtepi32_ps(_mm512_add_epi32(e, _mm512_set1_epi32(-128))));
    return _mm512_fmadd_ps(dv, _mm512_cvtepi32_ps(lanes), acc);
}

AVX512VNNI_VBMI void kavx512_qdot4_mxfp4(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    const uint8_t *row[4];
    for (int k = 0; k < 4; k++) row[k] = (const uint8_t *)w->data + (size_t)(r + k * stride) * w->row_bytes;
    const __m512i values = _mm512_broadcast_i32x4(
        _mm_add_epi8(_mm_loadu_si128((const __m128i *)ggml_kvalues_fp4), _mm_set1_epi8(12)));
    const __m512i layout = _mm512_loadu_si512(mxfp4_layout), scale_idx = _mm512_loadu_si512(mxfp4_scale_at);
    const __m512i twelve8 = _mm512_set1_epi8(12);
    const size_t ahead = qd4_ahead(w->row_bytes, stride);
    /* four named accumulators: in an array gcc stored each one back to the stack every step */
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    const int64_t nb = w->cols / 32;
    for (int64_t b = 0; b + 1 < nb; b += 2) {
        const __m512i q2 = _mm512_loadu_si512((const void *)(a->q + b * 32));
        /* the bias's part, -12 x the 4-element sums, starts each row's integer sum */
        const __m512i nbias = _mm512_sub_epi32(_mm512_setzero_si512(),
                                               _mm512_dpbusd_epi32(_mm512_setzero_si512(), twelve8, q2));
        /* the activation scales of both blocks, each times 2^(e - 128): scalef multiplies by an
         * exact power of two, the same rounding as the product with ggml_e8m0_half(e) */
        const __m512 ad = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(a->d[b]), _mm512_set1_ps(a->d[b + 1]));
        const size_t off = (size_t)b * 17;
        acc0 = mxfp4_pair_z(row[0] + off, ahead, layout, scale_idx, values, nbias, q2, ad, acc0);
        acc1 = mxfp4_pair_z(row[1] + off, ahead, layout, scale_idx, values, nbias, q2, ad, acc1);
        acc2 = mxfp4_pair_z(row[2] + off, ahead, layout, scale_idx, values, nbias, q2, ad, acc2);
        acc3 = mxfp4_pair_z(row[3] + off, ahead, layout, scale_idx, values, nbias, q2, ad, acc3);
    }
    const __m512 acc[4] = { acc0, acc1, acc2, acc3 };
    for (int k = 0; k < 4; k++) y[k * stride] = mxfp4_tail(row[k], a, nb, mxfp4_zsum(acc[k]));
}

/* One MXFP4 row against nt <= KQ_NT_MAX tokens (prefill) with AVX-512
 * VNNI: a block pair is laid out and looked up once (as in kavx512_qdot4_mxfp4,
 * but signed values: their magnitudes meet each token's activation with
 * the values' signs put on, so no bias is needed per token), its scales'
 * exponents converted once; per token one vpdpbusd, the scale product
 * and one fused multiply-add, kavx512_qdot4_mxfp4's steps, so each y is its bits. */
AVX512VNNI_VBMI static inline __attribute__((always_inline)) void mxfp4_dotn_z_body(const weight *w, int64_t r,
                                                                                    const qrow *a, int nt, float *y,
                                                                                    int64_t ystride)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const __m512i values = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)ggml_kvalues_fp4));
    const __m512i layout = _mm512_loadu_si512(mxfp4_layout), scale_idx = _mm512_loadu_si512(mxfp4_scale_at);
    const __mmask64 two_blocks = ((__mmask64)1 << 34) - 1, dword_low = 0x1111111111111111ull;
    __m512 acc[KQ_NT_MAX];
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    const int64_t nb = w->cols / 32;
    for (int64_t b = 0; b + 1 < nb; b += 2) {
        const __m512i raw = _mm512_maskz_loadu_epi8(two_blocks, row + b * 17);
        const __m512i v = _mm512_permutexvar_epi8(_mm512_permutex2var_epi8(raw, layout, _mm512_srli_epi16(raw, 4)),
                                                  values);
        const __mmask64 neg = _mm512_movepi8_mask(v);
        const __m512i mag = _mm512_abs_epi8(v);
        const __m512 ev = _mm512_cvtepi32_ps(
            _mm512_add_epi32(_mm512_maskz_permutexvar_epi8(dword_low, scale_idx, raw), _mm512_set1_epi32(-128)));
        QD_UNROLL /* with nt a constant (a full batch), the accumulators stay in registers */
        for (int t = 0; t < nt; t++) {
            const __m512i q2 = _mm512_loadu_si512((const void *)(a[t].q + b * 32));
            const __m512i sq = _mm512_mask_sub_epi8(q2, neg, _mm512_setzero_si512(), q2);
            const __m512i lanes = _mm512_dpbusd_epi32(_mm512_setzero_si512(), mag, sq);
            const __m512 ad = _mm512_mask_mov_ps(_mm512_set1_ps(a[t].d[b]), 0xFF00, _mm512_set1_ps(a[t].d[b + 1]));
            acc[t] = _mm512_fmadd_ps(_mm512_scalef_ps(ad, ev), _mm512_cvtepi32_ps(lanes), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ystride] = mxfp4_tail(row, &a[t], nb, mxfp4_zsum(acc[t]));
}

AVX512VNNI_VBMI void kavx512_qdotn_mxfp4(const weight *w, int64_t r, const qrow *a, int nt, float *y,
                                         int64_t ystride)
{
    if (nt == KQ_NT_MAX) mxfp4_dotn_z_body(w, r, a, KQ_NT_MAX, y, ystride);
    else mxfp4_dotn_z_body(w, r, a, nt, y, ystride);
}

#endif
