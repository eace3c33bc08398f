/* iq3_avx2.c: AVX2 brute-force nearest grid point, 8 grid points per step.
 * Same operations and order as the scalar versions in iq3.c, so the same
 * index comes back; callers dispatch on __builtin_cpu_supports. */
#include "iq3_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Lane-wise running minimum with its index kept under strict <, then the
 * smallest index among the lanes holding the overall minimum: the same
 * answer as a first-minimum scan. */
__attribute__((target("avx2,fma")))
static int first_min(__m256 best, __m256i bidx)
{
    float v[8];
    int32_t ix[8];
    _mm256_storeu_ps(v, best);
    _mm256_storeu_si256((__m256i *)ix, bidx);
    int b = 0;
    for (int l = 1; l < 8; l++)
        if (v[l] < v[b] || (v[l] == v[b] && ix[l] < ix[b])) b = l;
    return ix[b];
}

__attribute__((target("avx2,fma")))
int iq3_nearest_ref_avx2(const iq3_tables *t, const float c[4])
{
    __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]);
    __m256 c2 = _mm256_set1_ps(c[2]), c3 = _mm256_set1_ps(c[3]);
    __m256 best = _mm256_set1_ps(0);
    __m256i bidx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), idx = bidx;
    const __m256i eight = _mm256_set1_epi32(8);
    for (int i = 0; i < 256; i += 8) {
        __m256 s = _mm256_mul_ps(c0, _mm256_load_ps(t->gt[0] + i));
        s = _mm256_fmadd_ps(c1, _mm256_load_ps(t->gt[1] + i), s);
        s = _mm256_fmadd_ps(c2, _mm256_load_ps(t->gt[2] + i), s);
        s = _mm256_fmadd_ps(c3, _mm256_load_ps(t->gt[3] + i), s);
        __m256 sc = _mm256_sub_ps(_mm256_load_ps(t->g2 + i), _mm256_add_ps(s, s));
        if (i == 0) {
            best = sc;
        } else {
            __m256 lt = _mm256_cmp_ps(sc, best, _CMP_LT_OQ);
            best = _mm256_blendv_ps(best, sc, lt);
            bidx = _mm256_blendv_epi8(bidx, idx, _mm256_castps_si256(lt));
        }
        idx = _mm256_add_epi32(idx, eight);
    }
    return first_min(best, bidx);
}

__attribute__((target("avx2,fma")))
int iq3_nearest_w_avx2(const iq3_tables *t, const float c[4], const float w[4])
{
    __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]);
    __m256 c2 = _mm256_set1_ps(c[2]), c3 = _mm256_set1_ps(c[3]);
    __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(w[1]);
    __m256 w2 = _mm256_set1_ps(w[2]), w3 = _mm256_set1_ps(w[3]);
    __m256 best = _mm256_set1_ps(0);
    __m256i bidx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), idx = bidx;
    const __m256i eight = _mm256_set1_epi32(8);
    for (int i = 0; i < 256; i += 8) {
        __m256 d0 = _mm256_sub_ps(c0, _mm256_load_ps(t->gt[0] + i));
        __m256 d1 = _mm256_sub_ps(c1, _mm256_load_ps(t->gt[1] + i));
        __m256 d2 = _mm256_sub_ps(c2, _mm256_load_ps(t->gt[2] + i));
        __m256 d3 = _mm256_sub_ps(c3, _mm256_load_ps(t->gt[3] + i));
        __m256 s = _mm256_add_ps(_mm256_mul_ps(w0, _mm256_mul_ps(d0, d0)),
                                 _mm256_mul_ps(w1, _mm256_mul_ps(d1, d1)));
        s = _mm256_add_ps(s, _mm256_mul_ps(w2, _mm256_mul_ps(d2, d2)));
        s = _mm256_add_ps(s, _mm256_mul_ps(w3, _mm256_mul_ps(d3, d3)));
        if (i == 0) {
            best = s;
        } else {
            __m256 lt = _mm256_cmp_ps(s, best, _CMP_LT_OQ);
            best = _mm256_blendv_ps(best, s, lt);
            bidx = _mm256_blendv_epi8(bidx, idx, _mm256_castps_si256(lt));
        }
        idx = _mm256_add_epi32(idx, eight);
    }
    return first_min(best, bidx);
}

/* Same operations as iq3_lattice_bound_scalar, lane i % 8 per vector. */
__attribute__((target("avx2,fma")))
float iq3_lattice_bound_avx2(const float *m, float db, const float *w)
{
    __m256 den = _mm256_set1_ps(db > 1e-20f ? db : 1e-20f), vdb = _mm256_set1_ps(db);
    const __m256 q = _mm256_set1_ps(0.25f), top = _mm256_set1_ps(28.5f), l31 = _mm256_set1_ps(31.0f);
    const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f);
    const __m256i six = _mm256_set1_epi32(6);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < 32; i += 8) {
        __m256 mv = _mm256_loadu_ps(m + i), c = _mm256_div_ps(mv, den);
        /* c >= 0 here, so truncation gives level 0 below 4 as iq3_level does */
        __m256i l = _mm256_min_epi32(_mm256_cvttps_epi32(_mm256_mul_ps(c, q)), six);
        __m256 lv = _mm256_add_ps(two, _mm256_mul_ps(four, _mm256_cvtepi32_ps(l)));
        lv = _mm256_blendv_ps(lv, l31, _mm256_cmp_ps(c, top, _CMP_GE_OQ));
        __m256 e = _mm256_sub_ps(_mm256_mul_ps(lv, vdb), mv), e2 = _mm256_mul_ps(e, e);
        if (w) e2 = _mm256_mul_ps(_mm256_loadu_ps(w + i), e2);
        acc = _mm256_add_ps(acc, e2);
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* Decode of one block, 8 weights (two grid points) per vector: the grid
 * points are two 16-byte loads, the 8 signs become sign-bit masks by testing
 * one bit per lane, and each value is (+-g) * db as in the scalar decode, so
 * the floats are the same bits. */
__attribute__((target("avx2,fma")))
void iq3_decode_block_avx2(const iq3_tables *t, const uint8_t *b, float d, float *y)
{
    const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *wp = b + 64 + 4 * ib;
        uint32_t w = (uint32_t)wp[0] | (uint32_t)wp[1] << 8 | (uint32_t)wp[2] << 16 | (uint32_t)wp[3] << 24;
        __m256 db = _mm256_set1_ps(d * (0.5f + (float)(w >> 28)) * 0.5f);
        for (int l = 0; l < 4; l++) {
            uint32_t s7 = (w >> (7 * l)) & 0x7F, p = s7 ^ (s7 >> 4);
            p ^= p >> 2;
            p ^= p >> 1;
            __m256i sg = _mm256_set1_epi32((int)(s7 | (p & 1) << 7));
            __m256i neg = _mm256_cmpeq_epi32(_mm256_and_si256(sg, bits), bits);
            __m256 g = _mm256_set_m128(_mm_load_ps(t->g[b[8 * ib + 2 * l + 1]]),
                                       _mm_load_ps(t->g[b[8 * ib + 2 * l]]));
            g = _mm256_xor_ps(g, _mm256_castsi256_ps(_mm256_slli_epi32(neg, 31)));
            _mm256_storeu_ps(y + 32 * ib + 8 * l, _mm256_mul_ps(g, db));
        }
    }
}

__attribute__((target("avx2,fma")))
int iq3_nearest_ref_list_avx2(const iq3_tables *t, const float c[4], int cell)
{
    return iq3_nearest_ref_list_body(t, c, cell);
}

#else
int iq3_nearest_ref_list_avx2(const iq3_tables *t, const float c[4], int cell)
{
    return iq3_nearest_ref_list(t, c, cell);
}
void iq3_decode_block_avx2(const iq3_tables *t, const uint8_t *b, float d, float *y)
{
    (void)t; (void)b; (void)d; (void)y;
}
float iq3_lattice_bound_avx2(const float *m, float db, const float *w) { return iq3_lattice_bound_scalar(m, db, w); }
int iq3_nearest_ref_avx2(const iq3_tables *t, const float c[4]) { return iq3_nearest_ref_scalar(t, c); }
int iq3_nearest_w_avx2(const iq3_tables *t, const float c[4], const float w[4])
{
    return iq3_nearest_w_scalar(t, c, w);
}
#endif
