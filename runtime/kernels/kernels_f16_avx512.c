/* kernels_f16_avx512.c: the f16 attention's two kernels (dot_f16_heads,
 * axpy_f16_heads) on zmm, for the AVX-512 layer of kernel_table.c. Each
 * computes what the AVX2 kernel beneath computes, lane for lane, so every
 * score and every sum keeps its bits (test_kernels). Why: from the cache
 * the AVX2 kernels took about 18 and 15 ns a cached position for four
 * heads of 128 (one thread, Zen 5), these 13.5 and 12.8 (a scratch probe),
 * and with the cache read head by head the attention is what decode at a
 * few thousand positions spends most of its time on after the weights. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"

#define AVX512F16 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl")))

AVX512F16 static inline __m512 load_h16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* The low eight lanes of v plus its high eight: the AVX2 dot's s0 + s1. */
AVX512F16 static inline __m256 halves_sum(__m512 v)
{
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* NR rows against NB heads. kavx2_dot_f16 keeps two chains of eight lanes
 * (elements i..i+7 and i+8..i+15 of every 16, then i..i+7 of a last 8) and
 * adds them before its horizontal sum and scalar tail: one zmm accumulator
 * a head holds both chains, the last 8 go in under a mask on the low lanes.
 * NR rows side by side give the multiply-adds NR x NB independent chains
 * and read each head's activations once for NR rows. NR and NB are
 * constants in each copy. */
AVX512F16 static inline __attribute__((always_inline)) void dot_heads_rows(const uint16_t *const *a, const float *b,
                                                                           const int NR, const int NB, int64_t n,
                                                                           float *out, int64_t ostride)
{
    __m512 s[4][4];
    QD_UNROLL
    for (int r = 0; r < NR; r++)
        QD_UNROLL
        for (int h = 0; h < NB; h++) s[r][h] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x[4];
        QD_UNROLL
        for (int r = 0; r < NR; r++) x[r] = load_h16(a[r] + i);
        QD_UNROLL
        for (int h = 0; h < NB; h++) {
            const __m512 bv = _mm512_loadu_ps(b + h * n + i);
            QD_UNROLL
            for (int r = 0; r < NR; r++) s[r][h] = _mm512_fmadd_ps(x[r], bv, s[r][h]);
        }
    }
    if (i + 8 <= n) {
        QD_UNROLL
        for (int r = 0; r < NR; r++) {
            const __m512 x = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a[r] + i))));
            QD_UNROLL
            for (int h = 0; h < NB; h++)
                s[r][h] = _mm512_mask3_fmadd_ps(x, _mm512_maskz_loadu_ps(0xff, b + h * n + i), s[r][h], 0xff);
        }
        i += 8;
    }
    QD_UNROLL
    for (int r = 0; r < NR; r++)
        QD_UNROLL
        for (int h = 0; h < NB; h++) {
            float v = hsum_ps(halves_sum(s[r][h]));
            for (int64_t j = i; j < n; j++) v += _cvtsh_ss(a[r][j]) * b[h * n + j];
            out[h * ostride + r] = v;
        }
}

AVX512F16 static inline __attribute__((always_inline)) void dot_heads_nb(const uint16_t *const *a, int rows,
                                                                         const float *b, int64_t n, float *out,
                                                                         int64_t ostride, const int NB)
{
    int r = 0;
    for (; r + 4 <= rows; r += 4) dot_heads_rows(a + r, b, 4, NB, n, out + r, ostride);
    for (; r < rows; r++) dot_heads_rows(a + r, b, 1, NB, n, out + r, ostride);
}

AVX512F16 void kavx512_dot_f16_heads(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                                     int64_t ostride)
{
    QD_CONST_1_TO_4(nb, dot_heads_nb, a, rows, b, n, out, ostride);
}

/* kavx2_axpy_f16_heads on zmm: the blocks of 32 elements in two zmm a
 * head (a fused multiply-add per element and row, rows in order, as the
 * AVX2 kernel's four ymm), the rest as there (axpy_f16_heads_rest); y is
 * loaded and stored once for all rows, each row widened once for all
 * heads. NY is a constant in each copy. */
AVX512F16 static inline __attribute__((always_inline)) void axpy_heads_ny(float *y, const float *w, int64_t wstride,
                                                                          const uint16_t *const *x, int rows,
                                                                          int64_t n, const int NY)
{
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 acc[4][2];
        QD_UNROLL
        for (int h = 0; h < NY; h++)
            QD_UNROLL
            for (int c = 0; c < 2; c++) acc[h][c] = _mm512_loadu_ps(y + h * n + i + 16 * c);
        for (int r = 0; r < rows; r++) {
            const __m512 x0 = load_h16(x[r] + i), x1 = load_h16(x[r] + i + 16);
            QD_UNROLL
            for (int h = 0; h < NY; h++) {
                const __m512 wv = _mm512_set1_ps(w[h * wstride + r]);
                acc[h][0] = _mm512_fmadd_ps(wv, x0, acc[h][0]);
                acc[h][1] = _mm512_fmadd_ps(wv, x1, acc[h][1]);
            }
        }
        QD_UNROLL
        for (int h = 0; h < NY; h++)
            QD_UNROLL
            for (int c = 0; c < 2; c++) _mm512_storeu_ps(y + h * n + i + 16 * c, acc[h][c]);
    }
    axpy_f16_heads_rest(y, w, wstride, x, rows, n, i, NY);
}

AVX512F16 void kavx512_axpy_f16_heads(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x,
                                      int rows, int64_t n)
{
    QD_CONST_1_TO_4(ny, axpy_heads_ny, y, w, wstride, x, rows, n);
}

#endif
