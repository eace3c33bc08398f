/* iq3_avx2.c: AVX2 brute-force nearest grid point, 8 grid points per step.
 * Same operations and order as the scalar versions in iq3_search.c (the
 * decode: iq3.c), so the same index comes back; callers dispatch on
 * __builtin_cpu_supports. */
#include "iq3_impl.h"
#include "ggml_tables.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Lane-wise running minimum with its index kept under strict <, then the
 * smallest index among the lanes holding the overall minimum: the same
 * answer as a first-minimum scan. */
__attribute__((target("avx2,fma")))
static inline int first_min(__m256 best, __m256i bidx)
{
    __m256 m = _mm256_min_ps(best, _mm256_permute2f128_ps(best, best, 1));
    m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0x4E));
    m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0xB1));
    /* every lane now holds the minimum; keep the indices of the lanes equal to it */
    __m256i ix = _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MAX), bidx,
                                    _mm256_castps_si256(_mm256_cmp_ps(best, m, _CMP_EQ_OQ)));
    ix = _mm256_min_epi32(ix, _mm256_permute2x128_si256(ix, ix, 1));
    ix = _mm256_min_epi32(ix, _mm256_shuffle_epi32(ix, 0x4E));
    ix = _mm256_min_epi32(ix, _mm256_shuffle_epi32(ix, 0xB1));
    return _mm256_cvtsi256_si32(ix);
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
 * points' 8 packed bytes widened to floats and halved (exact), the 8 signs
 * become sign-bit masks by testing one bit per lane, and each value is
 * (+-g) * db as in the scalar decode, so the floats are the same bits. No
 * table to build, so decoding one short row costs no set-up. */
__attribute__((target("avx2,fma")))
void iq3_decode_block_avx2(const iq3_block *b, float d, float *y)
{
    const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 half = _mm256_set1_ps(0.5f);
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w = iq3_block_word(b, ib);
        __m256 db = _mm256_set1_ps(d * (0.5f + (float)(w >> 28)) * 0.5f);
        for (int l = 0; l < 4; l++) {
            uint32_t s7 = (w >> (7 * l)) & 0x7F, p = s7 ^ (s7 >> 4);
            p ^= p >> 2;
            p ^= p >> 1;
            __m256i sg = _mm256_set1_epi32((int)(s7 | (p & 1) << 7));
            __m256i neg = _mm256_cmpeq_epi32(_mm256_and_si256(sg, bits), bits);
            __m128i two = _mm_set_epi32(0, 0, (int)ggml_iq3xxs_grid[b->grid[8 * ib + 2 * l + 1]],
                                        (int)ggml_iq3xxs_grid[b->grid[8 * ib + 2 * l]]);
            __m256 g = _mm256_mul_ps(half, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(two)));
            g = _mm256_xor_ps(g, _mm256_castsi256_ps(_mm256_slli_epi32(neg, 31)));
            _mm256_storeu_ps(y + 32 * ib + 8 * l, _mm256_mul_ps(g, db));
        }
    }
}

/* The coordinates of 8 grid points with one gather of their packed bytes:
 * byte / 2 is exact, so these are the very floats of t->gt. */
__attribute__((target("avx2,fma")))
static inline void grid_coords(__m256i idx, __m256 g[4])
{
    const __m256i ff = _mm256_set1_epi32(0xFF);
    const __m256 half = _mm256_set1_ps(0.5f);
    __m256i u = _mm256_i32gather_epi32((const int *)ggml_iq3xxs_grid, idx, 4);
    for (int j = 0; j < 4; j++)
        g[j] = _mm256_mul_ps(half, _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(u, 8 * j), ff)));
}

/* Candidate-list scans, 8 candidates per step: per candidate the same
 * operations as the scalar scans, lanes past the list's end masked out, the
 * first minimum in list order (which is index order) as in first_min. */
__attribute__((target("avx2,fma")))
int iq3_nearest_ref_list_avx2(const iq3_tables *t, const float c[4], int cell)
{
    const uint8_t *p = t->cand + t->cand_off[cell];
    int n = t->cand_off[cell + 1] - t->cand_off[cell];
    __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]);
    __m256 c2 = _mm256_set1_ps(c[2]), c3 = _mm256_set1_ps(c[3]);
    __m256 best = _mm256_set1_ps(INFINITY);
    __m256i bidx = _mm256_setzero_si256();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q = 0; q < n; q += 8) {
        __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + q)));
        __m256 g[4];
        grid_coords(idx, g);
        /* squares of halves below 32 and their sums are exact: this is t->g2 */
        __m256 g2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(g[0], g[0]), _mm256_mul_ps(g[1], g[1])),
                                  _mm256_add_ps(_mm256_mul_ps(g[2], g[2]), _mm256_mul_ps(g[3], g[3])));
        __m256 s = _mm256_mul_ps(c0, g[0]);
        s = _mm256_fmadd_ps(c1, g[1], s);
        s = _mm256_fmadd_ps(c2, g[2], s);
        s = _mm256_fmadd_ps(c3, g[3], s);
        __m256 sc = _mm256_sub_ps(g2, _mm256_add_ps(s, s));
        __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - q), lane);
        __m256 lt = _mm256_and_ps(_mm256_cmp_ps(sc, best, _CMP_LT_OQ), _mm256_castsi256_ps(valid));
        best = _mm256_blendv_ps(best, sc, lt);
        bidx = _mm256_blendv_epi8(bidx, idx, _mm256_castps_si256(lt));
    }
    return first_min(best, bidx);
}

__attribute__((target("avx2,fma")))
int iq3_nearest_w_list_avx2(const iq3_tables *t, const float c[4], const float w[4], int cell)
{
    return iq3_nearest_w_among_avx2(t, c, w, t->cand + t->cand_off[cell], t->cand_off[cell + 1] - t->cand_off[cell]);
}

__attribute__((target("avx2,fma")))
int iq3_nearest_w_among_avx2(const iq3_tables *t, const float c[4], const float w[4], const uint8_t *p, int n)
{
    (void)t; /* the grid's coordinates come from ggml's table (grid_coords) */
    __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]);
    __m256 c2 = _mm256_set1_ps(c[2]), c3 = _mm256_set1_ps(c[3]);
    __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(w[1]);
    __m256 w2 = _mm256_set1_ps(w[2]), w3 = _mm256_set1_ps(w[3]);
    __m256 best = _mm256_set1_ps(INFINITY);
    __m256i bidx = _mm256_setzero_si256();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q = 0; q < n; q += 8) {
        __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + q)));
        __m256 g[4];
        grid_coords(idx, g);
        __m256 d0 = _mm256_sub_ps(c0, g[0]), d1 = _mm256_sub_ps(c1, g[1]);
        __m256 d2 = _mm256_sub_ps(c2, g[2]), d3 = _mm256_sub_ps(c3, g[3]);
        __m256 s = _mm256_add_ps(_mm256_mul_ps(w0, _mm256_mul_ps(d0, d0)),
                                 _mm256_mul_ps(w1, _mm256_mul_ps(d1, d1)));
        s = _mm256_add_ps(s, _mm256_mul_ps(w2, _mm256_mul_ps(d2, d2)));
        s = _mm256_add_ps(s, _mm256_mul_ps(w3, _mm256_mul_ps(d3, d3)));
        __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - q), lane);
        __m256 lt = _mm256_and_ps(_mm256_cmp_ps(s, best, _CMP_LT_OQ), _mm256_castsi256_ps(valid));
        best = _mm256_blendv_ps(best, s, lt);
        bidx = _mm256_blendv_epi8(bidx, idx, _mm256_castps_si256(lt));
    }
    return first_min(best, bidx);
}

/* iq3_cells32_scalar, 8 coordinates (two groups) per vector. */
__attribute__((target("avx2,fma")))
void iq3_cells32_avx2(const float *c, int cell[8], unsigned *in, unsigned *safe)
{
    const __m256 q = _mm256_set1_ps(0.25f), top = _mm256_set1_ps(28.5f), four = _mm256_set1_ps(4.0f);
    const __m256 big = _mm256_set1_ps(1e30f), nbig = _mm256_set1_ps(-1e30f), tol = _mm256_set1_ps(0.02f);
    const __m256 zero = _mm256_setzero_ps(), cmax = _mm256_set1_ps(IQ3_CAND_CMAX);
    const __m256i six = _mm256_set1_epi32(6), seven = _mm256_set1_epi32(7), izero = _mm256_setzero_si256();
    const __m256i sh = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9);
    unsigned vin = 0, vsafe = 0;
    for (int k = 0; k < 4; k++) {
        __m256 v = _mm256_loadu_ps(c + 8 * k), ge = _mm256_cmp_ps(v, top, _CMP_GE_OQ);
        __m256i l = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvttps_epi32(_mm256_mul_ps(v, q)), six), izero);
        l = _mm256_blendv_epi8(l, seven, _mm256_castps_si256(ge));
        __m256 lf = _mm256_mul_ps(four, _mm256_cvtepi32_ps(l));
        __m256 l0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(l, izero));
        __m256 l6 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(l, six));
        __m256 lo = _mm256_blendv_ps(_mm256_blendv_ps(lf, top, ge), nbig, l0);
        __m256 hi = _mm256_blendv_ps(_mm256_blendv_ps(_mm256_add_ps(lf, four), top, l6), big, ge);
        __m256 bad = _mm256_or_ps(_mm256_cmp_ps(_mm256_sub_ps(v, lo), tol, _CMP_LT_OQ),
                                  _mm256_cmp_ps(_mm256_sub_ps(hi, v), tol, _CMP_LT_OQ));
        __m256 ok = _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ), _mm256_cmp_ps(v, cmax, _CMP_LE_OQ));
        unsigned mo = (unsigned)_mm256_movemask_ps(ok), mb = (unsigned)_mm256_movemask_ps(bad);
        __m256i x = _mm256_sllv_epi32(l, sh);
        x = _mm256_hadd_epi32(x, x);
        x = _mm256_hadd_epi32(x, x);
        cell[2 * k] = _mm256_extract_epi32(x, 0);
        cell[2 * k + 1] = _mm256_extract_epi32(x, 4);
        for (int h = 0; h < 2; h++) {
            unsigned o = (mo >> (4 * h)) & 15, b = (mb >> (4 * h)) & 15;
            vin |= (unsigned)(o == 15) << (2 * k + h);
            vsafe |= (unsigned)(o == 15 && b == 0) << (2 * k + h);
        }
    }
    *in = vin;
    *safe = vsafe;
}

#else
int iq3_nearest_ref_list_avx2(const iq3_tables *t, const float c[4], int cell)
{
    return iq3_nearest_ref_list(t, c, cell);
}
int iq3_nearest_w_list_avx2(const iq3_tables *t, const float c[4], const float w[4], int cell)
{
    return iq3_nearest_w_list(t, c, w, cell);
}
int iq3_nearest_w_among_avx2(const iq3_tables *t, const float c[4], const float w[4], const uint8_t *p, int n)
{
    return iq3_nearest_w_among(t, c, w, p, n);
}
void iq3_cells32_avx2(const float *c, int cell[8], unsigned *in, unsigned *safe)
{
    iq3_cells32_scalar(c, cell, in, safe);
}
void iq3_decode_block_avx2(const iq3_block *b, float d, float *y)
{
    (void)b; (void)d; (void)y;
}
float iq3_lattice_bound_avx2(const float *m, float db, const float *w) { return iq3_lattice_bound_scalar(m, db, w); }
int iq3_nearest_ref_avx2(const iq3_tables *t, const float c[4]) { return iq3_nearest_ref_scalar(t, c); }
int iq3_nearest_w_avx2(const iq3_tables *t, const float c[4], const float w[4])
{
    return iq3_nearest_w_scalar(t, c, w);
}
#endif
