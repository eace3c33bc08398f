/* kernels_kq_avx512.c: the K-quant S-forms (Q3_K, Q4_K, Q5_K, Q6_K and
 * IQ4_XS with their factors, kfactor.h) against Q8_K activations on AVX-512 (F, BW, VL,
 * VNNI): one row (decode) and one row against several tokens (prefill).
 * Each gives the AVX2 kernel's bits (kernels_q8_avx2.c, kf_dot: ggml-cpu's
 * order), because every float step is the same and the integers are the
 * same:
 *  - A zmm holds 64 elements, two groups of 32 (Q6_K, Q3_K: four of 16). Per
 *    group maddubs makes pair sums of value x activation and vpdpwssd
 *    multiplies them by the group's integer scale and adds them into 16
 *    int32 lanes; the upper eight lanes are added onto the lower, so lane
 *    k holds, summed over the super-block's groups, the scale times the
 *    four products of elements 4k..4k+3: the AVX2 kernel's lane k, exactly
 *    (integers: no rounding, any order; |lane| < 2^24).
 *  - Q4_K's codes are packed two to a byte (element 2i low, 2i+1 high);
 *    zero-extending 32 bytes to words and or-ing each word with itself
 *    shifted left by four puts element 2i in the word's low byte and 2i+1
 *    in its high byte after masking (one ternary-logic step): element order.
 *  - Q6_K's values are code - 32: maddubs of the codes (0..63) minus
 *    maddubs of 32, both exact in int16; Q3_K's code - 4 (codes 0..7, two
 *    to a byte as Q4_K's), the same way with 4.
 *  - The mins (Q4_K, Q5_K): the activations' sums of 32 as int16 pairs,
 *    vpmaddwd by the integer mins: the AVX2 kernel's four pair sums. The
 *    sums come ready from qrow.sum32 where the caller made them (matmul.c
 *    does): one load a super-block instead of four vector steps, which a
 *    prefill batch paid for every row and every token (docs/runtime.md:
 *    Q4_K and Q5_K prefill 2-5 % faster, decode unchanged).
 * Why: the AVX2 kernel unpacked 32 codes at a time, took absolute values
 * and signs for maddubs and multiplied the scales with a separate madd;
 * here half the instructions do the same work. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/ggml_order.h"
#include "runtime/kernels/kernels_x86.h"

#define KQ512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define KQ_INLINE static inline __attribute__((always_inline))
/* What each style (kfactor.h) is made of: mins (Q4_K, Q5_K), 4-bit codes
 * (Q4_K, Q3_K), and the bias its codes carry (Q6_K 32, Q3_K 4), whose
 * products maddubs(bias, q) are taken off; Q6_K and Q3_K have 16 scales a
 * super-block. */
#define KQ_MINS(style) ((style) == 4 || (style) == 5)
#define KQ_BITS(style) ((style) == 4 || (style) == 3 || (style) == 2 ? 4 : 8)
#define KQ_BIAS(style) ((style) == 6 ? 32 : (style) == 3 ? 4 : 0)
#define KQ_PER_SB(style) (KQ_MINS(style) || (style) == 2 ? 8 : 16)
/* IQ4_XS (style 2): its codes index a codebook of signed values, whose
 * magnitudes go to maddubs and whose signs go onto the activation codes */
#define KQ_CB(style) ((style) == 2)

/* 64 codes from p, as bytes in element order. */
KQ512 KQ_INLINE __m512i kq_values64(const uint8_t *p, int bits)
{
    if (bits == 8) return _mm512_loadu_si512((const void *)p);
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)p));
    /* (w | w << 4) & 0x0f0f: A | B then & C is ternary-logic 0xa8 */
    return _mm512_ternarylogic_epi32(w, _mm512_slli_epi16(w, 4), _mm512_set1_epi16(0x0f0f), 0xa8);
}

/* The int16 scale of every pair of zmm step p (elements 64p..64p+63 of a
 * super-block) from the super-block's scales broadcast to every 128-bit
 * lane (scb): groups of 32 (8 scales, 0..63): lanes 0-1 sc[2p], 2-3
 * sc[2p + 1], zero-extended; groups of 16 (16 scales, signed): lane L
 * sc[4p + L], put in the high byte and shifted down with its sign; signed
 * groups of 32 (IQ4_XS): lanes 0-1 sc[2p], 2-3 sc[2p + 1] that way. */
KQ512 KQ_INLINE __m512i kq_scale16(__m512i scb, int per_sb, int p, int sgn)
{
    const unsigned long long w4 = 0x0001000100010001ull; /* a word in all four of a qword */
    if (per_sb == 8 && sgn) {
        const unsigned long long lo = ((unsigned long long)(2 * p) << 8 | 0x80u) * w4,
                                 hi = ((unsigned long long)(2 * p + 1) << 8 | 0x80u) * w4;
        return _mm512_srai_epi16(_mm512_shuffle_epi8(scb, _mm512_set_epi64((long long)hi, (long long)hi, (long long)hi,
                                                                           (long long)hi, (long long)lo, (long long)lo,
                                                                           (long long)lo, (long long)lo)),
                                 8);
    }
    if (per_sb == 8) { /* control words 0x80 << 8 | index: the byte, then a zero */
        const unsigned long long lo = (0x8000ull + (unsigned)(2 * p)) * w4, hi = (0x8000ull + (unsigned)(2 * p + 1)) * w4;
        return _mm512_shuffle_epi8(scb, _mm512_set_epi64((long long)hi, (long long)hi, (long long)hi, (long long)hi,
                                                         (long long)lo, (long long)lo, (long long)lo, (long long)lo));
    }
    unsigned long long c[4]; /* control words index << 8 | 0x80: a zero, then the byte */
    for (int l = 0; l < 4; l++) c[l] = ((unsigned long long)(4 * p + l) << 8 | 0x80u) * w4;
    const __m512i ctl = _mm512_set_epi64((long long)c[3], (long long)c[3], (long long)c[2], (long long)c[2],
                                         (long long)c[1], (long long)c[1], (long long)c[0], (long long)c[0]);
    return _mm512_srai_epi16(_mm512_shuffle_epi8(scb, ctl), 8);
}

/* A super-block's scales (8 or 16 int8) in every 128-bit lane. */
KQ512 KQ_INLINE __m512i kq_scales(const int8_t *sc, int per_sb)
{
    if (per_sb == 8) {
        long long v;
        memcpy(&v, sc, 8);
        return _mm512_set1_epi64(v);
    }
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)sc));
}

/* The activations' eight sums of 32 of super-block i as int16 (|sum| <=
 * 32 x 127): pairs of its sixteen sums of 16 (for a qrow without sum32). */
KQ512 KQ_INLINE __m128i kq_bsums(const qrow *a, int64_t i)
{
    const __m512i s = _mm512_loadu_si512((const void *)(a->sum16 + i * 16));
    return _mm512_cvtepi64_epi16(_mm512_add_epi32(s, _mm512_srli_epi64(s, 32)));
}

/* The activation side of one super-block: its four zmm of codes, their
 * maddubs with the codes' bias (Q6_K, Q3_K), its sums of 32 (Q4_K, Q5_K)
 * and its scale. */
typedef struct kq_act { __m512i q[4], q32[4]; __m128i bs; float yd; } kq_act;

KQ512 KQ_INLINE void kq_act_load(kq_act *t, const qrow *a, int64_t i, const int style)
{
    QD_UNROLL
    for (int p = 0; p < 4; p++) {
        t->q[p] = _mm512_loadu_si512((const void *)(a->q + i * 256 + p * 64));
        t->q32[p] = KQ_BIAS(style) ? _mm512_maddubs_epi16(_mm512_set1_epi8(KQ_BIAS(style)), t->q[p]) : _mm512_setzero_si512();
    }
    t->bs = !KQ_MINS(style) ? _mm_setzero_si128()
            : a->sum32      ? _mm_loadu_si128((const __m128i *)(a->sum32 + i * 8))
                            : kq_bsums(a, i);
    t->yd = a->d[i];
}

/* 64 codes (step p of a super-block) from split codes (weight.h:
 * code_split): the low nibbles (half p / 2 of the first 128 bytes, the low
 * nibbles for even p, the high for odd), then each bit plane's 64 bits as
 * a mask that adds 16 (or 32) to its bytes. */
KQ512 KQ_INLINE __m512i kq_split64(const uint8_t *sb, int p, int split)
{
    const __m512i h = _mm512_loadu_si512((const void *)(sb + 64 * (p / 2)));
    __m512i v = _mm512_and_si512(p % 2 ? _mm512_srli_epi16(h, 4) : h, _mm512_set1_epi8(15));
    QD_UNROLL
    for (int j = 0; j < split - 4; j++) {
        uint64_t m;
        memcpy(&m, sb + 128 + 32 * j + p * 8, 8);
        v = _mm512_mask_add_epi8(v, _cvtu64_mask64(m), v, _mm512_set1_epi8((char)(16 << j)));
    }
    return v;
}

/* The bytes of one super-block of a row: 128 (Q4_K), split ones, or 256. */
static inline size_t kq_sb_bytes(int style, int split)
{
    return KQ_BITS(style) == 4 ? 128 : split ? kq_split_sb_bytes(split) : 256;
}

/* The weight side of one super-block of one row: its values and scales.
 * split: 0, or the code_split of the row (a constant at each call). */
typedef struct kq_wt { __m512i v[4], sc[4]; __mmask64 neg[4]; } kq_wt;

KQ512 KQ_INLINE void kq_wt_load(kq_wt *u, const uint8_t *codes, const int8_t *sc, const int8_t *cb, const int style,
                                const int split)
{
    const int bits = KQ_BITS(style), per_sb = KQ_PER_SB(style);
    const __m512i scb = kq_scales(sc, per_sb);
    QD_UNROLL
    for (int p = 0; p < 4; p++) {
        u->v[p] = split ? kq_split64(codes, p, split) : kq_values64(codes + p * 64 * bits / 8, bits);
        if (KQ_CB(style)) { /* the values' magnitudes, and where they are negative */
            const __m512i sv = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)cb)), u->v[p]);
            u->neg[p] = _mm512_movepi8_mask(sv);
            u->v[p] = _mm512_abs_epi8(sv);
        }
        u->sc[p] = kq_scale16(scb, per_sb, p, !KQ_MINS(style));
    }
}

/* Step p's activation codes, negated where the weight's value is
 * (IQ4_XS: u->v holds magnitudes; |q| <= 127, so negation is exact), as
 * AVX2's sign_epi8 gives them. */
KQ512 KQ_INLINE __m512i kq_signed(const kq_wt *u, const kq_act *t, int p, const int style)
{
    return KQ_CB(style) ? _mm512_mask_sub_epi8(t->q[p], u->neg[p], _mm512_setzero_si512(), t->q[p]) : t->q[p];
}

/* One super-block's factors (weight.h: kfactor): d and dmin as fp16 bits,
 * the scales and the mins. rec (a constant at each call): from the
 * records, which a weight with split codes has (kq_takes), else from the
 * planes. */
typedef struct kq_fac { uint16_t d, dmin; const int8_t *sc, *m; } kq_fac;

KQ512 KQ_INLINE kq_fac kq_fac_at(const kfactor *kf, int64_t sb, const int style, const int rec)
{
    kq_fac f = { 0, 0, NULL, NULL };
    if (rec) { /* kf_rec_at, with the style's record size a constant */
        const uint8_t *r = kf->rec + sb * kf_rec_bytes(style);
        memcpy(&f.d, r, 2);
        if (KQ_MINS(style)) { memcpy(&f.dmin, r + KF_REC_DMIN_AT, 2); f.m = (const int8_t *)r + KF_REC_M_AT; }
        f.sc = (const int8_t *)r + kf_rec_sc_at(style);
        return f;
    }
    f.d = kf->d[sb];
    f.sc = kf->sc + sb * KQ_PER_SB(style);
    if (KQ_MINS(style)) { f.dmin = kf->dmin[sb]; f.m = kf->m + sb * 8; }
    return f;
}

/* One super-block of one row against one token, added into acc (and the
 * mins into accm or summs), in kf_dot's float steps. */
KQ512 KQ_INLINE void kq_step(const kq_fac *f, const kq_wt *u, const kq_act *t, __m256 *acc, __m128 *accm,
                             float *summs, const int style)
{
    __m512i lanes = _mm512_setzero_si512();
    QD_UNROLL
    for (int p = 0; p < 4; p++) {
        __m512i p16 = _mm512_maddubs_epi16(u->v[p], kq_signed(u, t, p, style));
        if (KQ_BIAS(style)) p16 = _mm512_sub_epi16(p16, t->q32[p]);
        lanes = _mm512_dpwssd_epi32(lanes, p16, u->sc[p]);
    }
    const __m256i l8 = _mm256_add_epi32(_mm512_castsi512_si256(lanes), _mm512_extracti64x4_epi64(lanes, 1));
    const float D = t->yd * _cvtsh_ss(f->d);
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(l8), *acc);
    if (!KQ_MINS(style)) return;
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)f->m));
    const __m128i pairs = _mm_madd_epi16(t->bs, m16); /* m[2k] bs[2k] + m[2k+1] bs[2k+1] */
    const float dmin = -t->yd * _cvtsh_ss(f->dmin);
    if (style == 5) {
        const __m128i h = _mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0x4e));
        const int32_t tot = _mm_cvtsi128_si32(_mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1)));
        *summs = fmaf(dmin, (float)tot, *summs);
        return;
    }
    *accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(pairs), *accm);
}

KQ512 KQ_INLINE float kq_total(int style, __m256 acc, __m128 accm, float summs)
{
    float m4[4];
    _mm_storeu_ps(m4, accm);
    return hsum_ps(acc) + ggml_order_kmins_total(style, m4, summs);
}

/* Row r against one token; style (kfactor.h) and split constants at each
 * call, so each style's loop is its own code. Decode reads K-quants with
 * factor planes row after row (matmul.c: one stream of codes and one of
 * each factor plane, where four rows at once made twenty), so this reads
 * ahead within its own row. */
KQ512 KQ_INLINE void kq_row(const weight *w, int64_t r, const qrow *a, float *y, const int style, const int split)
{
    const kfactor *kf = w->kf;
    const int64_t nsb = w->cols / 256;
    const size_t sb_bytes = kq_sb_bytes(style, split), ahead = qd4_ahead(w->row_bytes, 1);
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    float summs = 0.0f;
    for (int64_t i = 0; i < nsb; i++) {
        kq_act t;
        kq_act_load(&t, a, i, style);
        const int64_t sb = r * nsb + i;
        const uint8_t *c = (const uint8_t *)w->data + (size_t)r * w->row_bytes + (size_t)i * sb_bytes;
        for (size_t o = 0; o < sb_bytes; o += 64) _mm_prefetch((const char *)c + ahead + o, QD_HINT);
        const kq_fac f = kq_fac_at(kf, sb, style, split != 0);
        kq_wt u;
        kq_wt_load(&u, c, f.sc, kf->cb, style, split);
        kq_step(&f, &u, &t, &acc, &accm, &summs, style);
    }
    *y = kq_total(style, acc, accm, summs);
}

/* Bytes the four-row kernel reads ahead in each of its four streams of
 * codes (in the 1.18 GB Q4_K MoE, one thread: 2 KiB 5-9 % faster decode
 * than row after row, 1 KiB 3 %, 3 and 4 KiB 0-2 %), and rows ahead in
 * each stream of records. */
#define KQ4_AHEAD 2048
#define KQ4_REC_AHEAD 8

/* Rows r, r + stride, r + 2 stride, r + 3 stride (each the start of one of
 * matmul.c's four streams) against one token, super-block by super-block:
 * each super-block's activations loaded once for the four rows, and the
 * four streams of codes and of factor records read ahead. A weight with
 * split codes only (its factors are records: kq_takes). Each row's steps
 * are kq_row's, its bits. */
KQ512 KQ_INLINE void kq_rows4(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y, const int style,
                              const int split)
{
    const kfactor *kf = w->kf;
    const int64_t nsb = w->cols / 256;
    const size_t sb_bytes = kq_sb_bytes(style, split);
    const int rb = kf_rec_bytes(style);
    __m256 acc[QD_ROWS];
    __m128 accm[QD_ROWS];
    float summs[QD_ROWS];
    QD_UNROLL
    for (int k = 0; k < QD_ROWS; k++) { acc[k] = _mm256_setzero_ps(); accm[k] = _mm_setzero_ps(); summs[k] = 0.0f; }
    for (int64_t i = 0; i < nsb; i++) {
        kq_act t;
        kq_act_load(&t, a, i, style);
        QD_UNROLL
        for (int k = 0; k < QD_ROWS; k++) {
            const int64_t rr = r + k * stride, sb = rr * nsb + i;
            const uint8_t *c = (const uint8_t *)w->data + (size_t)rr * w->row_bytes + (size_t)i * sb_bytes;
            for (size_t o = 0; o < sb_bytes; o += 64) _mm_prefetch((const char *)c + KQ4_AHEAD + o, QD_HINT);
            _mm_prefetch((const char *)kf->rec + (sb + KQ4_REC_AHEAD * nsb) * rb, QD_HINT);
            const kq_fac f = kq_fac_at(kf, sb, style, 1);
            kq_wt u;
            kq_wt_load(&u, c, f.sc, kf->cb, style, split);
            kq_step(&f, &u, &t, &acc[k], &accm[k], &summs[k], style);
        }
    }
    QD_UNROLL
    for (int k = 0; k < QD_ROWS; k++) y[k * stride] = kq_total(style, acc[k], accm[k], summs[k]);
}

KQ512 static void kq_rows1(const weight *w, int64_t r, const qrow *a, float *y)
{
    switch (w->kf->style * 8 + w->code_split) { /* style, split */
    case 2 * 8: kq_row(w, r, a, y, 2, 0); break;
    case 2 * 8 + 4: kq_row(w, r, a, y, 2, 4); break;
    case 3 * 8: kq_row(w, r, a, y, 3, 0); break;
    case 3 * 8 + 4: kq_row(w, r, a, y, 3, 4); break;
    case 4 * 8: kq_row(w, r, a, y, 4, 0); break;
    case 4 * 8 + 4: kq_row(w, r, a, y, 4, 4); break;
    case 5 * 8: kq_row(w, r, a, y, 5, 0); break;
    case 5 * 8 + 5: kq_row(w, r, a, y, 5, 5); break;
    case 6 * 8 + 6: kq_row(w, r, a, y, 6, 6); break;
    default: kq_row(w, r, a, y, 6, 0); break;
    }
}

/* Whether these kernels take w against a: a K-quant with its factors,
 * Q8_K activations, and records exactly when its codes are split (so the
 * split constant of each copy also says where its factors lie; any other
 * weight goes to the AVX2 kernels, which read either). */
static int kq_takes(const weight *w, const qrow *a)
{
    return w->kf && a->kind == WA_Q8_K && (w->code_split != 0) == (w->kf->rec != NULL);
}

KQ512 float kavx512_qdot_scode(const weight *w, int64_t r, const qrow *a)
{
    if (!kq_takes(w, a)) return kavx2_qdot_scode(w, r, a);
    float y;
    kq_rows1(w, r, a, &y);
    return y;
}

KQ512 float kavx512v_qdot_scode(const weight *w, int64_t r, const qrow *a)
{
    if (!kq_takes(w, a)) return kvnni_qdot_scode(w, r, a);
    float y;
    kq_rows1(w, r, a, &y);
    return y;
}

/* Four rows a stride apart, each as kavx512_qdot_scode gives it: a
 * weight with split codes (and factor records) super-block by super-block
 * (kq_rows4), others row after row (decode reads those row after row
 * anyway: matmul.c). */
KQ512 int kavx512_qdot4_kq(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (!kq_takes(w, a)) return 0;
    switch (w->kf->style * 8 + w->code_split) { /* style, split */
    case 2 * 8 + 4: kq_rows4(w, r, stride, a, y, 2, 4); return 1;
    case 3 * 8 + 4: kq_rows4(w, r, stride, a, y, 3, 4); return 1;
    case 4 * 8 + 4: kq_rows4(w, r, stride, a, y, 4, 4); return 1;
    case 5 * 8 + 5: kq_rows4(w, r, stride, a, y, 5, 5); return 1;
    case 6 * 8 + 6: kq_rows4(w, r, stride, a, y, 6, 6); return 1;
    default: break;
    }
    for (int k = 0; k < QD_ROWS; k++) kq_rows1(w, r + k * stride, a, &y[k * stride]);
    return 1;
}

/* kq_step for two tokens at once: token t0's float lanes in the lower half
 * of acc2 (accm2), t1's in the upper; each lane meets the same operands in
 * the same operation as in kq_step, so each token keeps its bits, while
 * the conversions and multiply-adds are shared. */
KQ512 KQ_INLINE void kq_step2(const kq_fac *f, const kq_wt *u, const kq_act *t0, const kq_act *t1,
                              __m512 *acc2, __m256 *accm2, float *summs0, float *summs1, const int style)
{
    __m512i l0 = _mm512_setzero_si512(), l1 = _mm512_setzero_si512();
    QD_UNROLL
    for (int p = 0; p < 4; p++) {
        __m512i p0 = _mm512_maddubs_epi16(u->v[p], kq_signed(u, t0, p, style)),
                p1 = _mm512_maddubs_epi16(u->v[p], kq_signed(u, t1, p, style));
        if (KQ_BIAS(style)) { p0 = _mm512_sub_epi16(p0, t0->q32[p]); p1 = _mm512_sub_epi16(p1, t1->q32[p]); }
        l0 = _mm512_dpwssd_epi32(l0, p0, u->sc[p]);
        l1 = _mm512_dpwssd_epi32(l1, p1, u->sc[p]);
    }
    /* [t0 lanes 0-7 | t1 lanes 0-7] + [t0 lanes 8-15 | t1 lanes 8-15] */
    const __m512i l8 = _mm512_add_epi32(_mm512_shuffle_i64x2(l0, l1, 0x44), _mm512_shuffle_i64x2(l0, l1, 0xee));
    const __m512 yd2 = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_set1_ps(t0->yd))),
                                                           _mm256_castps_pd(_mm256_set1_ps(t1->yd)), 1));
    *acc2 = _mm512_fmadd_ps(_mm512_mul_ps(yd2, _mm512_set1_ps(_cvtsh_ss(f->d))), _mm512_cvtepi32_ps(l8), *acc2);
    if (!KQ_MINS(style)) return;
    const __m256i m16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)f->m)));
    const __m256i pairs = _mm256_madd_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(t0->bs), t1->bs, 1), m16);
    if (style == 5) {
        const __m256i h = _mm256_add_epi32(pairs, _mm256_shuffle_epi32(pairs, 0x4e));
        const __m256i s = _mm256_add_epi32(h, _mm256_shuffle_epi32(h, 0xb1));
        *summs0 = fmaf(-t0->yd * _cvtsh_ss(f->dmin), (float)_mm256_cvtsi256_si32(s), *summs0);
        *summs1 = fmaf(-t1->yd * _cvtsh_ss(f->dmin), (float)_mm256_extract_epi32(s, 4), *summs1);
        return;
    }
    const __m256 nyd = _mm256_set_m128(_mm_set1_ps(-t1->yd), _mm_set1_ps(-t0->yd));
    *accm2 = _mm256_fmadd_ps(_mm256_mul_ps(nyd, _mm256_set1_ps(_cvtsh_ss(f->dmin))), _mm256_cvtepi32_ps(pairs), *accm2);
}

/* One row against nt tokens: the row's values and scales are made once per
 * super-block and met by every token, two tokens at a time (kq_step2),
 * an odd last one alone (kq_step). */
KQ512 KQ_INLINE void kq_rown(const weight *w, int64_t r, const qrow *a, const int nt, float *y, int64_t ystride,
                             const int style, const int split)
{
    const kfactor *kf = w->kf;
    const int64_t nsb = w->cols / 256;
    const size_t sb_bytes = kq_sb_bytes(style, split);
    const int np = nt / 2;
    __m512 acc2[KQ_NT_MAX / 2];
    __m256 accm2[KQ_NT_MAX / 2], acc1 = _mm256_setzero_ps();
    __m128 accm1 = _mm_setzero_ps();
    float summs[KQ_NT_MAX];
    for (int t = 0; t < np; t++) { acc2[t] = _mm512_setzero_ps(); accm2[t] = _mm256_setzero_ps(); }
    for (int t = 0; t < nt; t++) summs[t] = 0.0f;
    for (int64_t i = 0; i < nsb; i++) {
        const kq_fac f = kq_fac_at(kf, r * nsb + i, style, split != 0);
        kq_wt u;
        kq_wt_load(&u, (const uint8_t *)w->data + (size_t)r * w->row_bytes + (size_t)i * sb_bytes, f.sc, kf->cb, style, split);
        QD_UNROLL
        for (int t = 0; t < np; t++) {
            kq_act q0, q1;
            kq_act_load(&q0, &a[2 * t], i, style);
            kq_act_load(&q1, &a[2 * t + 1], i, style);
            kq_step2(&f, &u, &q0, &q1, &acc2[t], &accm2[t], &summs[2 * t], &summs[2 * t + 1], style);
        }
        if (nt % 2) {
            kq_act q;
            kq_act_load(&q, &a[nt - 1], i, style);
            kq_step(&f, &u, &q, &acc1, &accm1, &summs[nt - 1], style);
        }
    }
    for (int t = 0; t < np; t++) {
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc2[t]), 1));
        y[2 * t * ystride] = kq_total(style, _mm512_castps512_ps256(acc2[t]), _mm256_castps256_ps128(accm2[t]), summs[2 * t]);
        y[(2 * t + 1) * ystride] = kq_total(style, hi, _mm256_extractf128_ps(accm2[t], 1), summs[2 * t + 1]);
    }
    if (nt % 2) y[(nt - 1) * ystride] = kq_total(style, acc1, accm1, summs[nt - 1]);
}

/* kq_rown with the style and the token count constant in each copy, so
 * that the accumulators live in registers. */
#define KQ_ROWN_NT(style, split)                                                                            \
    switch (nt) {                                                                                           \
    case 1: kq_rown(w, r, a, 1, y, ystride, style, split); break;                                           \
    case 2: kq_rown(w, r, a, 2, y, ystride, style, split); break;                                           \
    case 3: kq_rown(w, r, a, 3, y, ystride, style, split); break;                                           \
    case 4: kq_rown(w, r, a, 4, y, ystride, style, split); break;                                           \
    case 5: kq_rown(w, r, a, 5, y, ystride, style, split); break;                                           \
    case 6: kq_rown(w, r, a, 6, y, ystride, style, split); break;                                           \
    case 7: kq_rown(w, r, a, 7, y, ystride, style, split); break;                                           \
    default: kq_rown(w, r, a, KQ_NT_MAX, y, ystride, style, split); break;                                  \
    }

KQ512 void kavx512_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    if (!kq_takes(w, &a[0])) { kavx2_qdotn_scode(w, r, a, nt, y, ystride); return; }
    _Static_assert(KQ_NT_MAX == 8, "one case per token count");
    switch (w->kf->style * 8 + w->code_split) { /* style, split */
    case 2 * 8: KQ_ROWN_NT(2, 0) break;
    case 2 * 8 + 4: KQ_ROWN_NT(2, 4) break;
    case 3 * 8: KQ_ROWN_NT(3, 0) break;
    case 3 * 8 + 4: KQ_ROWN_NT(3, 4) break;
    case 4 * 8: KQ_ROWN_NT(4, 0) break;
    case 4 * 8 + 4: KQ_ROWN_NT(4, 4) break;
    case 5 * 8: KQ_ROWN_NT(5, 0) break;
    case 5 * 8 + 5: KQ_ROWN_NT(5, 5) break;
    case 6 * 8 + 6: KQ_ROWN_NT(6, 6) break;
    default: KQ_ROWN_NT(6, 0) break;
    }
}

#endif
