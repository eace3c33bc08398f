/* kernels_q8_vnni.c: the AVX-VNNI layer of kernel_table.c: the
 * Q8_0-shaped S-form dots and the IQ3 dot with vpdpbusd / vpdpwssd, the
 * AVX2 kernels' integers and float steps, so their bits. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"
#include "formats/iq3.h"

#include <string.h>

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

#endif
