/* kernels_q8_avx512.c: the AVX-512 layers of kernel_table.c for S-forms
 * and IQ3: the IQ3 dots (F, BW, VL, VBMI, GFNI) and the four-row S8 dot
 * (AVX-512 VNNI), each the AVX2 kernel's integers and float steps, so its
 * bits. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"
#include "formats/iq3.h"

#include <string.h>

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

/* iq3_words() with GFNI (kernels_x86.h: iq3_words_gfni_v). */
AVX512 static inline __attribute__((always_inline)) void iq3_words_gfni(const iq3_block *blk, uint32_t mask[8],
                                                                        uint32_t mul[8])
{
    __m256i m, c;
    iq3_words_gfni_v(_mm256_loadu_si256((const __m256i *)blk->word), &m, &c);
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

/* Eight scales from unit `at` on: the fp16 copy where the weight has one
 * (the same values, half the bytes read), else the f32 plane. */
AVX512VNNI static inline __m256 z_scales8(const float *sc, const uint16_t *sch, int64_t at)
{
    return sch ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sch + at))) : _mm256_loadu_ps(sc + at);
}

AVX512VNNI static inline float z_scale1(const float *sc, const uint16_t *sch, int64_t at)
{
    return sch ? _cvtsh_ss(sch[at]) : sc[at];
}

/* Read-ahead within each of decode's four streams (rows a stride apart):
 * 1.5 KiB rather than QD_AHEAD's 1 KiB. Alternated token by token in one
 * decode run (the Q8_0 MoE, the other build's code as the base): one
 * thread 1.02-1.06 (1.75 KiB 1.00-1.05, 2 KiB 1.02-1.05, 3 KiB 0.96-0.99,
 * 1.25 KiB 1.01-1.03; into L1 1.04-1.05), two threads 1.03-1.08, the Q4_K
 * MoE's dense rows on one thread 1.01-1.07. */
#define Z4_AHEAD 1536

AVX512VNNI static void z4_s8(const uint8_t *codes, size_t row_bytes, const int8_t *q, const float *sc,
                             const uint16_t *sch, int64_t n32, const float *d, float *y, int64_t stride)
{
    const size_t rstep = (size_t)stride * row_bytes;
    const int64_t sstep = stride * n32;
    const size_t ahead = stride == 1 ? qd4_ahead(row_bytes, 1) : Z4_AHEAD;
    const __m256i one = _mm256_set1_epi8(1), bias16 = _mm256_set1_epi16(-128);
    __m512 acc[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() };
    int64_t i = 0;
    for (; i + 8 <= n32; i += 8) {
        const __m256 vd = _mm256_loadu_ps(d + i);
        __m512 sd[2];
        for (int h = 0; h < 2; h++) {
            const __m256 lo = _mm256_mul_ps(z_scales8(sc, sch, (2 * h) * sstep + i), vd);
            const __m256 hi = _mm256_mul_ps(z_scales8(sc, sch, (2 * h + 1) * sstep + i), vd);
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
                _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_set1_ps(z_scale1(sc, sch, (2 * h) * sstep + i) * d[i]))),
                _mm256_castps_pd(_mm256_set1_ps(z_scale1(sc, sch, (2 * h + 1) * sstep + i) * d[i])), 1));
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
    return qrow_block(a->kind) == 32 &&
           sform_q8_0_shaped(w->code_bits, w->code_bias, w->group, w->offsets != NULL, w->codebook != NULL);
}

/* z4_s8 for four adjacent rows against NT tokens (prefill), on ymm: one
 * accumulator per row and token, as the AVX2 kernel has per row (a ymm fma
 * takes its scale as a broadcast from memory). z4n_s8 runs the tokens in
 * pairs on zmm (z4n_s8_np, below) and this only for an odd last one. Each
 * unit's codes are loaded once per row and met by every token; each
 * token's codes and bias once per unit and met by four rows; the scale
 * products sc * d of a chunk of units are made 16 at a time beforehand.
 * Per token and row the integers (vpdpbusd over the bias from the token's
 * sums), the product sc * d and the multiply-add into one accumulator per
 * row are z4_s8's, in the same unit order: its bits. NT is a constant in
 * each copy (z4n_s8 dispatches), so the 4 x NT accumulators stay in
 * registers. */
#define Z4N_CHUNK 64

/* Unit b of a row (32 codes), reading ahead in the row every other unit. */
AVX512VNNI static inline __m256i z4n_unit(const uint8_t *row, int64_t b, size_t ahead, int read_ahead)
{
    const uint8_t *p = row + b * 32;
    if (read_ahead) _mm_prefetch((const char *)p + ahead, QD_HINT);
    return _mm256_loadu_si256((const __m256i *)p);
}

AVX512VNNI static inline __attribute__((always_inline)) void z4n_s8_nt(const uint8_t *codes, size_t row_bytes,
                                                                        const float *sc, int64_t n32,
                                                                        const qrow *a, const int NT, float *y,
                                                                        int64_t ystride)
{
    const __m256i one = _mm256_set1_epi8(1), bias16 = _mm256_set1_epi16(-128);
    __m256 acc[4][4];
    QD_UNROLL
    for (int k = 0; k < 4; k++)
        QD_UNROLL
        for (int t = 0; t < NT; t++) acc[k][t] = _mm256_setzero_ps();
    float sd[4][4][Z4N_CHUNK] __attribute__((aligned(64)));
    const size_t ahead = 4 * row_bytes;
    for (int64_t i0 = 0; i0 < n32; i0 += Z4N_CHUNK) {
        const int n = n32 - i0 < Z4N_CHUNK ? (int)(n32 - i0) : Z4N_CHUNK;
        for (int k = 0; k < 4; k++)
            for (int t = 0; t < NT; t++) {
                const float *s = sc + k * n32 + i0, *d = a[t].d + i0;
                int i = 0;
                for (; i + 16 <= n; i += 16)
                    _mm512_store_ps(sd[k][t] + i, _mm512_mul_ps(_mm512_loadu_ps(s + i), _mm512_loadu_ps(d + i)));
                for (; i < n; i++) sd[k][t][i] = s[i] * d[i];
            }
        for (int i = 0; i < n; i++) {
            const int64_t b = i0 + i;
            __m256i wv[4];
            QD_UNROLL
            for (int k = 0; k < 4; k++) wv[k] = z4n_unit(codes + k * row_bytes, b, ahead, i % 2 == 0);
            QD_UNROLL
            for (int t = 0; t < NT; t++) {
                const __m256i q = _mm256_loadu_si256((const __m256i *)(a[t].q + b * 32));
                const __m256i bias = _mm256_madd_epi16(_mm256_maddubs_epi16(one, q), bias16);
                QD_UNROLL
                for (int k = 0; k < 4; k++) {
                    const __m256i s = _mm256_dpbusd_epi32(bias, wv[k], q);
                    acc[k][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(sd[k][t][i]), acc[k][t]);
                }
            }
        }
    }
    QD_UNROLL
    for (int t = 0; t < NT; t++)
        QD_UNROLL
        for (int k = 0; k < 4; k++) y[t * ystride + k] = hsum_ps(acc[k][t]);
}

/* z4n_s8_nt for NP pairs of tokens on zmm: a pair's accumulator holds the
 * two tokens' ymm accumulators lane by lane interleaved (lane 2j token 0's
 * lane j, 2j + 1 token 1's), so one vpdpbusd, one conversion and one
 * multiply-add do a row's unit for both: the row's unit with each dword
 * doubled, the two tokens' codes and biases interleaved by dword, and the
 * two scale products one broadcast pair. Every lane sees the integer, the
 * product and the multiply-add the ymm kernel gives that token's lane, in
 * the same unit order, and each token's lanes are taken back out in order
 * for hsum_ps: its bits. Prefill through it against the ymm kernel for
 * every token (the 1.18 GB MoEs of tests/diag/vs_llamacpp.sh, this 2-core
 * Zen 5 machine, `strata bench -p 128`): Q8_0 experts 1.21-1.27x on one
 * thread and 1.15-1.18x on two, Q4_K experts (their Q8_0 attention)
 * 1.08-1.10x and 1.06-1.13x. */
AVX512VNNI static inline __attribute__((always_inline)) void z4n_s8_np(const uint8_t *codes, size_t row_bytes,
                                                                        const float *sc, int64_t n32,
                                                                        const qrow *a, const int NP, float *y,
                                                                        int64_t ystride)
{
    const __m256i one = _mm256_set1_epi8(1), bias16 = _mm256_set1_epi16(-128);
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i ilv = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ilv_hi = _mm512_add_epi32(ilv, _mm512_set1_epi32(8));
    __m512 acc[4][4];
    QD_UNROLL
    for (int k = 0; k < 4; k++)
        QD_UNROLL
        for (int p = 0; p < NP; p++) acc[k][p] = _mm512_setzero_ps();
    /* sd[k][p][2 i + t]: row k's scale times token 2p + t's, unit i */
    float sd[4][4][2 * Z4N_CHUNK] __attribute__((aligned(64)));
    const size_t ahead = 4 * row_bytes;
    for (int64_t i0 = 0; i0 < n32; i0 += Z4N_CHUNK) {
        const int n = n32 - i0 < Z4N_CHUNK ? (int)(n32 - i0) : Z4N_CHUNK;
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < NP; p++) {
                const float *s = sc + k * n32 + i0, *d0 = a[2 * p].d + i0, *d1 = a[2 * p + 1].d + i0;
                int i = 0;
                for (; i + 16 <= n; i += 16) {
                    const __m512 sv = _mm512_loadu_ps(s + i);
                    const __m512 m0 = _mm512_mul_ps(sv, _mm512_loadu_ps(d0 + i));
                    const __m512 m1 = _mm512_mul_ps(sv, _mm512_loadu_ps(d1 + i));
                    _mm512_store_ps(sd[k][p] + 2 * i, _mm512_permutex2var_ps(m0, ilv, m1));
                    _mm512_store_ps(sd[k][p] + 2 * i + 16, _mm512_permutex2var_ps(m0, ilv_hi, m1));
                }
                for (; i < n; i++) {
                    sd[k][p][2 * i] = s[i] * d0[i];
                    sd[k][p][2 * i + 1] = s[i] * d1[i];
                }
            }
        for (int i = 0; i < n; i++) {
            const int64_t b = i0 + i;
            __m512i wv[4];
            QD_UNROLL
            for (int k = 0; k < 4; k++)
                wv[k] = _mm512_permutexvar_epi32(dup, _mm512_castsi256_si512(z4n_unit(codes + k * row_bytes, b, ahead, i % 2 == 0)));
            QD_UNROLL
            for (int p = 0; p < NP; p++) {
                const __m256i q0 = _mm256_loadu_si256((const __m256i *)(a[2 * p].q + b * 32));
                const __m256i q1 = _mm256_loadu_si256((const __m256i *)(a[2 * p + 1].q + b * 32));
                const __m512i q = _mm512_permutex2var_epi32(_mm512_castsi256_si512(q0), ilv, _mm512_castsi256_si512(q1));
                const __m512i bias = _mm512_permutex2var_epi32(
                    _mm512_castsi256_si512(_mm256_madd_epi16(_mm256_maddubs_epi16(one, q0), bias16)), ilv,
                    _mm512_castsi256_si512(_mm256_madd_epi16(_mm256_maddubs_epi16(one, q1), bias16)));
                QD_UNROLL
                for (int k = 0; k < 4; k++) {
                    const __m512i sum = _mm512_dpbusd_epi32(bias, wv[k], q);
                    double pair; /* the two tokens' products, one 8-byte broadcast */
                    memcpy(&pair, sd[k][p] + 2 * i, sizeof pair);
                    const __m512 sdv = _mm512_castpd_ps(_mm512_set1_pd(pair));
                    acc[k][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), sdv, acc[k][p]);
                }
            }
        }
    }
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    QD_UNROLL
    for (int p = 0; p < NP; p++)
        QD_UNROLL
        for (int k = 0; k < 4; k++) {
            const __m512 t = _mm512_permutexvar_ps(evens, acc[k][p]);
            y[2 * p * ystride + k] = hsum_ps(_mm512_castps512_ps256(t));
            y[(2 * p + 1) * ystride + k] = hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
        }
}

AVX512VNNI static void z4n_s8(const uint8_t *codes, size_t row_bytes, const float *sc, int64_t n32, const qrow *a,
                              int nt, float *y, int64_t ystride)
{
    _Static_assert(KQ_NT_MAX == 8, "up to four pairs");
    switch (nt / 2) {
    case 0: break;
    case 1: z4n_s8_np(codes, row_bytes, sc, n32, a, 1, y, ystride); break;
    case 2: z4n_s8_np(codes, row_bytes, sc, n32, a, 2, y, ystride); break;
    case 3: z4n_s8_np(codes, row_bytes, sc, n32, a, 3, y, ystride); break;
    default: z4n_s8_np(codes, row_bytes, sc, n32, a, 4, y, ystride); break;
    }
    if (nt % 2) z4n_s8_nt(codes, row_bytes, sc, n32, a + nt - 1, 1, y + (nt - 1) * ystride, ystride);
}

/* Rows r..r + 3 against nt <= KQ_NT_MAX tokens, y[k + t * ystride]: the
 * Q8_0-shaped S8 rows z4_takes; 0 (nothing computed) for others. */
AVX512VNNI int kavx512_qdot4n_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    if (!z4_takes(w, a) || r + 4 > w->rows) return 0;
    const int64_t n32 = w->cols / 32;
    z4n_s8((const uint8_t *)w->data + (size_t)r * w->row_bytes, w->row_bytes, w->scales + r * n32, n32, a, nt, y,
           ystride);
    return 1;
}

/* K-quant rows go to kernels_kq_avx512.c's four-row kernel. The two
 * entries differ only in what takes the other rows: each table's
 * own four-row kernel (no AVX-VNNI instruction in the AVX2 one). */
AVX512VNNI void kavx512_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (kavx512_qdot4_kq(w, r, stride, a, y)) return;
    if (!z4_takes(w, a)) { kavx2_qdot4_scode(w, r, stride, a, y); return; }
    const int64_t n32 = w->cols / 32;
    z4_s8((const uint8_t *)w->data + (size_t)r * w->row_bytes, w->row_bytes, a->q, w->scales + r * n32,
          w->scales_h ? w->scales_h + r * n32 : NULL, n32, a->d, y, stride);
}

AVX512VNNI void kavx512v_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    if (kavx512_qdot4_kq(w, r, stride, a, y)) return;
    if (!z4_takes(w, a)) { kvnni_qdot4_scode(w, r, stride, a, y); return; }
    const int64_t n32 = w->cols / 32;
    z4_s8((const uint8_t *)w->data + (size_t)r * w->row_bytes, w->row_bytes, a->q, w->scales + r * n32,
          w->scales_h ? w->scales_h + r * n32 : NULL, n32, a->d, y, stride);
}

#endif
