/* kernels_avx2.c: the AVX2+FMA+F16C primitives and row decoders, compiled
 * with target attributes (the build has no -march) and put in the AVX2
 * layer by kernel_table.c, which checks the CPU at run time. The dots keep
 * ggml's x86 orders (kernels.c spells them out), so they give the scalar
 * ones' bits (axpy may differ by rounding, kernels.h); decoders produce the
 * very same floats as the scalar ones (integer unpacking, then the same
 * multiply and add, never fused). Forms without a vector decoder keep the
 * scalar one. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

/* ggml_vec_dot_f32's order on x86 (kernels.c spells it out). */
AVX2 float kavx2_dot_f32(const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    s0 = _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s1, s3));
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    float s = _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
    for (int64_t i = np; i < n; i++) s += a[i] * b[i];
    return s;
}

AVX2 static inline __m256 load_h8(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

AVX2 float kavx2_dot_f16(const uint16_t *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(load_h8(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(load_h8(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(load_h8(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum_ps(_mm256_add_ps(s0, s1));
    for (; i < n; i++) s += _cvtsh_ss(a[i]) * b[i];
    return s;
}

/* llamafile tinyBLAS's order (kernels.c). */
AVX2 float kavx2_dot8_f32(const float *a, const float *b, int64_t n)
{
    __m256 s = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s);
    return hsum_ps(s);
}

/* dot8_f32 for a block of rows x tokens, 4 x 3 at a time in 12
 * accumulators (each product's order is dot8_f32's: one 8-lane chain over
 * k, then hsum), so every element has the same bits as one dot8_f32. */
AVX2 void kavx2_gemm8_f32(const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb, int64_t n, float *C,
                           int64_t ldc, int64_t k)
{
    int64_t j = 0;
    for (; j + 3 <= n; j += 3) {
        int64_t i = 0;
        for (; i + 4 <= m; i += 4) {
            __m256 c[4][3];
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 3; b++) c[a][b] = _mm256_setzero_ps();
            for (int64_t l = 0; l < k; l += 8) {
                const __m256 b0 = _mm256_loadu_ps(B + j * ldb + l), b1 = _mm256_loadu_ps(B + (j + 1) * ldb + l),
                             b2 = _mm256_loadu_ps(B + (j + 2) * ldb + l);
                for (int a = 0; a < 4; a++) {
                    const __m256 av = _mm256_loadu_ps(A + (i + a) * lda + l);
                    c[a][0] = _mm256_fmadd_ps(av, b0, c[a][0]);
                    c[a][1] = _mm256_fmadd_ps(av, b1, c[a][1]);
                    c[a][2] = _mm256_fmadd_ps(av, b2, c[a][2]);
                }
            }
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 3; b++) C[(j + b) * ldc + i + a] = hsum_ps(c[a][b]);
        }
        for (; i < m; i++)
            for (int b = 0; b < 3; b++) C[(j + b) * ldc + i] = kavx2_dot8_f32(A + i * lda, B + (j + b) * ldb, k);
    }
    for (; j < n; j++)
        for (int64_t i = 0; i < m; i++) C[j * ldc + i] = kavx2_dot8_f32(A + i * lda, B + j * ldb, k);
}

/* ggml_v_expf on 8 lanes, operation for operation (ggml_order.h has the
 * scalar spelling): the same bits as ggml_order_expf per lane. */
AVX2 static inline __m256 v_expf(__m256 x)
{
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
    const __m256i c = _mm256_castps_si256(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), n),
                                                        _mm256_set1_ps(126), _CMP_GT_OQ));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    if (!_mm256_movemask_ps(_mm256_castsi256_ps(c))) return _mm256_fmadd_ps(j, k, k);
    const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                       _mm256_set1_epi32((int)0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256i d = _mm256_castps_si256(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), n),
                                                        _mm256_set1_ps(192), _CMP_GT_OQ));
    return _mm256_or_ps(
        _mm256_and_ps(_mm256_castsi256_ps(d), _mm256_mul_ps(s1, s1)),
        _mm256_andnot_ps(_mm256_castsi256_ps(d),
                         _mm256_or_ps(_mm256_and_ps(_mm256_castsi256_ps(c), _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1)),
                                      _mm256_andnot_ps(_mm256_castsi256_ps(c), _mm256_fmadd_ps(k, j, k)))));
}

AVX2 void kavx2_swiglu_f32(float *x, const float *g, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 e = v_expf(_mm256_sub_ps(_mm256_setzero_ps(), v));
        const __m256 s = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(s, _mm256_loadu_ps(g + i)));
    }
    for (; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i])) * g[i];
}

/* ggml_order_softmax with the groups of 8 in vectors: the same bits. */
AVX2 void kavx2_softmax_f32(const float *x, int64_t n, float *y, float sink)
{
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    mx = sink > mx ? sink : mx;
    double sum = 0.0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = v_expf(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(mx)));
        _mm256_storeu_ps(y + i, e);
        sum += (double)hsum_ps(e);
    }
    for (; i < n; i++) {
        y[i] = expf(x[i] - mx);
        sum += (double)y[i];
    }
    if (sink != -INFINITY) sum += (double)expf(sink - mx);
    const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
    for (; i < n; i++) y[i] *= _mm256_cvtss_f32(inv);
}

AVX2 void kavx2_axpy_f32(float *y, float a, const float *x, int64_t n)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

AVX2 void kavx2_axpy_f16(float *y, float a, const uint16_t *x, int64_t n)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load_h8(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * _cvtsh_ss(x[i]);
}

/* kavx2_dot_f16 of one row against NB heads: each head's two chains and
 * order are dot_f16's (its bits), the row widened once for all of them
 * and the 2 x NB chains independent. NB is a constant in each copy. */
AVX2 static inline __attribute__((always_inline)) void dot_f16_heads_nb(const uint16_t *const *a, int rows,
                                                                        const float *b, int64_t n, float *out,
                                                                        int64_t ostride, const int NB)
{
    for (int r = 0; r < rows; r++) {
        const uint16_t *x = a[r];
        __m256 s0[4], s1[4];
        QD_UNROLL
        for (int h = 0; h < NB; h++) s0[h] = s1[h] = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m256 x0 = load_h8(x + i), x1 = load_h8(x + i + 8);
            QD_UNROLL
            for (int h = 0; h < NB; h++) {
                s0[h] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + h * n + i), s0[h]);
                s1[h] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + h * n + i + 8), s1[h]);
            }
        }
        for (; i + 8 <= n; i += 8) {
            const __m256 x0 = load_h8(x + i);
            QD_UNROLL
            for (int h = 0; h < NB; h++) s0[h] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + h * n + i), s0[h]);
        }
        QD_UNROLL
        for (int h = 0; h < NB; h++) {
            float s = hsum_ps(_mm256_add_ps(s0[h], s1[h]));
            for (int64_t j = i; j < n; j++) s += _cvtsh_ss(x[j]) * b[h * n + j];
            out[h * ostride + r] = s;
        }
    }
}

AVX2 void kavx2_dot_f16_heads(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                              int64_t ostride)
{
    QD_CONST_1_TO_4(nb, dot_f16_heads_nb, a, rows, b, n, out, ostride);
}

/* kavx2_axpy_f16 of the rows in turn into NY heads' sums: each element of
 * each y meets the rows in order with axpy_f16's operation (a fused
 * multiply-add; the tail a product, then a sum), its bits; y is loaded and
 * stored once for all rows, each row widened once for all heads. */
AVX2 static inline __attribute__((always_inline)) void axpy_f16_heads_ny(float *y, const float *w, int64_t wstride,
                                                                         const uint16_t *const *x, int rows,
                                                                         int64_t n, const int NY)
{
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 acc[4][4];
        QD_UNROLL
        for (int h = 0; h < NY; h++)
            QD_UNROLL
            for (int c = 0; c < 4; c++) acc[h][c] = _mm256_loadu_ps(y + h * n + i + 8 * c);
        for (int r = 0; r < rows; r++) {
            __m256 xv[4];
            QD_UNROLL
            for (int c = 0; c < 4; c++) xv[c] = load_h8(x[r] + i + 8 * c);
            QD_UNROLL
            for (int h = 0; h < NY; h++) {
                const __m256 wv = _mm256_set1_ps(w[h * wstride + r]);
                QD_UNROLL
                for (int c = 0; c < 4; c++) acc[h][c] = _mm256_fmadd_ps(wv, xv[c], acc[h][c]);
            }
        }
        QD_UNROLL
        for (int h = 0; h < NY; h++)
            QD_UNROLL
            for (int c = 0; c < 4; c++) _mm256_storeu_ps(y + h * n + i + 8 * c, acc[h][c]);
    }
    axpy_f16_heads_rest(y, w, wstride, x, rows, n, i, NY);
}

AVX2 void kavx2_axpy_f16_heads(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x, int rows,
                               int64_t n)
{
    QD_CONST_1_TO_4(ny, axpy_f16_heads_ny, y, w, wstride, x, rows, n);
}

AVX2 void kavx2_f16_to_f32(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_h8(src + i));
    for (; i < n; i++) dst[i] = _cvtsh_ss(src[i]);
}

/* Round to nearest even, as fp16.h does; (NaN payloads aside, which the KV
 * cache never holds.) */
AVX2 void kavx2_f32_to_f16(const float *src, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = (uint16_t)_cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

AVX2 void kavx2_row_p16(const weight *w, int64_t r, float *dst)
{
    kavx2_f16_to_f32((const uint16_t *)((const uint8_t *)w->data + (size_t)r * w->row_bytes), dst, w->cols);
}

/* 8 codes of `bits` bits starting at byte p (8 codes = `bits` bytes). */
AVX2 static inline __m256i codes8(const uint8_t *p, int bits)
{
    if (bits == 8) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    }
    uint32_t u = 0;
    memcpy(&u, p, (size_t)bits);
    const __m256i sh = bits == 4 ? _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)
                                 : _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)u), sh),
                            _mm256_set1_epi32((1 << bits) - 1));
}

AVX2 void kavx2_row_scode(const weight *w, int64_t r, float *dst)
{
    if (w->group % 8 || w->code_split) { kscalar_row_scode(w, r, dst); return; }
    const int bits = w->code_bits;
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int64_t ng = w->cols / w->group, g0 = r * ng;
    const __m256i bias = _mm256_set1_epi32(w->code_bias);
    for (int64_t g = 0; g < ng; g++) {
        const __m256 sc = _mm256_set1_ps(w->scales[g0 + g]);
        const __m256 of = _mm256_set1_ps(w->offsets ? w->offsets[g0 + g] : 0.0f);
        for (int64_t c = g * w->group; c < (g + 1) * w->group; c += 8) {
            __m256i q = codes8(codes + c * bits / 8, bits);
            __m256 v = w->codebook ? _mm256_i32gather_ps(w->codebook, q, 4)
                                   : _mm256_cvtepi32_ps(_mm256_add_epi32(q, bias));
            v = _mm256_mul_ps(v, sc);
            if (w->offsets) v = _mm256_add_ps(v, of);
            _mm256_storeu_ps(dst + c, v);
        }
    }
}

#endif
