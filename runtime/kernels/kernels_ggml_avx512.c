/* kernels_ggml_avx512.c: native MXFP4 and NVFP4 with AVX-512 VNNI and VBMI, IQ1_S
 * and IQ1_M batch dots, Q1_0, TQ1_0 and TQ2_0 dots and Q4_1 and Q5_1 single
 * dots with AVX-512 VNNI (the AVX-512 VNNI layer's slots
 * in kernel_table.c), native Q2_K and the IQ2_XS, IQ2_S and IQ3_S batch
 * dots with AVX-512 BW and IQ2_XXS with VBMI and GFNI (the AVX-512
 * layer's): the AVX2 kernels' bits. */
#include "runtime/kernels/kernels_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "runtime/kernels/kernels_x86.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_tables.h"

#include <string.h>

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

#define AVX512BW __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

/* Two ymm as one zmm, lo in the lower half. */
AVX512BW static inline __m512i pair_z(__m256i lo, __m256i hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* The 16 integer lanes of a zmm step as ggml's 8: the upper eight added
 * onto the lower (lane l and l + 8 cover the same elements of 32). */
AVX512BW static inline __m256i lanes8(__m512i lanes)
{
    return _mm256_add_epi32(_mm512_castsi512_si256(lanes), _mm512_extracti64x4_epi64(lanes, 1));
}

/* Native Q2_K on AVX-512 BW: a zmm holds 64 codes, the 32 bytes of a half
 * in both of its 256-bit halves shifted by 2l and 2l + 2 at once
 * (vpsrlvw), so 32 elements of two 2-bit fields; one in-lane byte shuffle
 * lays out the four 16-element scales of those 64, and maddubs and madd
 * give 16 integer lanes, the upper eight (the second 32) added onto the
 * lower at the end: kavx2_qdot_q2_k's 8 lanes, exactly (integers). The
 * mins and the float steps are the AVX2 kernel's (q2k_mins_step), so its
 * bits, with half the vector operations on the codes. */
typedef struct q2kz_wt { __m512i c[4], sc[4]; __m256i mins; } q2kz_wt;

AVX512BW static inline __attribute__((always_inline)) void q2kz_load(const block_q2_K *blk, q2kz_wt *u)
{
    const unsigned long long w4 = 0x0001000100010001ull; /* a word in all four of a qword */
    const __m128i ms = _mm_loadu_si128((const __m128i *)blk->scales), m4 = _mm_set1_epi8(15);
    u->mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(ms, 4), m4));
    const __m512i scb = _mm512_broadcast_i32x4(_mm_and_si128(ms, m4)), m3 = _mm512_set1_epi8(3);
    QD_UNROLL /* constant shifts and shuffle controls */
    for (int j = 0; j < 2; j++) {
        const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk->qs + 32 * j)));
        QD_UNROLL
        for (int p = 0; p < 2; p++) {
            const __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * p)), _mm256_set1_epi16((short)(4 * p + 2)), 1);
            u->c[2 * j + p] = _mm512_and_si512(_mm512_srlv_epi16(bits, sh), m3);
            unsigned long long c[4]; /* 128-bit lane L: the scale of sub-block g + L as int16 */
            QD_UNROLL
            for (int l = 0; l < 4; l++) c[l] = (0x8000ull + (unsigned)(8 * j + 4 * p + l)) * w4;
            u->sc[2 * j + p] = _mm512_shuffle_epi8(scb, _mm512_set_epi64((long long)c[3], (long long)c[3], (long long)c[2],
                                                                         (long long)c[2], (long long)c[1], (long long)c[1],
                                                                         (long long)c[0], (long long)c[0]));
        }
    }
}

AVX512BW static inline __attribute__((always_inline)) __m256 q2kz_step(const block_q2_K *blk, const q2kz_wt *u,
                                                                       const qrow *a, int64_t i, __m256 acc)
{
    acc = q2k_mins_step(blk, u->mins, a, i, acc);
    const int8_t *q = a->q + i * 256;
    __m512i lanes = _mm512_setzero_si512();
    QD_UNROLL
    for (int k = 0; k < 4; k++)
        lanes = _mm512_add_epi32(lanes, _mm512_madd_epi16(_mm512_maddubs_epi16(u->c[k], _mm512_loadu_si512((const void *)(q + 64 * k))),
                                                          u->sc[k]));
    const __m256i l8 = lanes8(lanes);
    return _mm256_fmadd_ps(_mm256_set1_ps(a->d[i] * _cvtsh_ss(blk->d)), _mm256_cvtepi32_ps(l8), acc);
}

NATIVE_BLOCK_DOTS(AVX512BW, kavx512_qdot_q2_k, kavx512_qdotn_q2_k, block_q2_K, q2kz_wt, q2kz_load, q2kz_step, __m256, hsum_ps_1)

/* The sign-grid IQ types on AVX-512 BW (sgridz_step: IQ2_XXS's dots,
 * IQ2_XS's, IQ2_S's and IQ3_S's batch dots): a zmm holds two sub-blocks
 * (64 elements): their grid bytes, their signs as one 64-bit mask that
 * negates the activation codes where set (one masked subtract, where AVX2
 * expands the bits to bytes and multiplies signs), their scales in the
 * lower and upper 16 words; maddubs and madd give 16 integer lanes, the
 * upper eight added onto the lower at the end: the AVX2 kernels' lanes,
 * exactly, and their float steps, so their bits. d is each block's first
 * field. */
typedef struct sgridz_wt { __m512i grid[4], scv[4]; __mmask64 neg[4]; } sgridz_wt;

AVX512BW static inline __attribute__((always_inline)) __m256 sgridz_step(const void *blk, const sgridz_wt *u,
                                                                         const qrow *a, int64_t i, __m256 acc)
{
    uint16_t dh;
    memcpy(&dh, blk, 2);
    const int8_t *q = a->q + i * 256;
    __m512i lanes = _mm512_setzero_si512();
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m512i q8 = _mm512_loadu_si512((const void *)(q + 64 * k));
        const __m512i qs8 = _mm512_mask_sub_epi8(q8, u->neg[k], _mm512_setzero_si512(), q8);
        lanes = _mm512_add_epi32(lanes, _mm512_madd_epi16(_mm512_maddubs_epi16(u->grid[k], qs8), u->scv[k]));
    }
    const __m256i l8 = lanes8(lanes);
    return _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(dh) * a->d[i]), _mm256_cvtepi32_ps(l8), acc);
}


/* IQ2_XXS's weight side with VBMI and GFNI (the AVX-512 table has both):
 * its grid's bytes are 8, 25 or 43, so entry i is eight 2-bit codes, a
 * byte for elements 0-3 (plane 0) and one for 4-7 (plane 1). A block's 32
 * indices look both planes up at once (two 128-byte vpermi2b each, blended
 * by the index's top bit); per zmm of two sub-blocks one vpermi2b puts
 * each index's two code bytes into its qword, vpmultishiftqb takes element
 * e's code to byte e, and a 64-byte vpermb turns codes into grid bytes.
 * The signs and multipliers of the eight words come as IQ3's
 * (iq3_words_gfni_v: the same format). The same grid bytes, sign masks and
 * scales as the loader this replaced (32 table loads a block, their index
 * arithmetic and four inserts a sub-block: 2.5 against 1.0 ns per 32 from
 * cache; docs/runtime.md), so sgridz_step gives the same bits. The planes
 * are ggml_iq2xxs_grid's entries recoded (test_kernels meets every index
 * in random rows). */
static const uint8_t iq2xxs_code_planes[2][256] = {
    {
        0x00, 0x02, 0x05, 0x08, 0x0a, 0x11, 0x14, 0x20, 0x22, 0x28, 0x2a, 0x41, 0x44, 0x50, 0x58, 0x61,
        0x64, 0x80, 0x82, 0x8a, 0xa2, 0x01, 0x04, 0x10, 0x15, 0x40, 0x84, 0x98, 0x00, 0x02, 0x22, 0x82,
        0x01, 0x04, 0x10, 0x21, 0x24, 0x40, 0x42, 0x48, 0x60, 0x81, 0x84, 0x90, 0xa4, 0x00, 0x02, 0x08,
        0x20, 0x46, 0x69, 0x80, 0x91, 0x09, 0x10, 0x40, 0x84, 0xa4, 0x00, 0x05, 0x08, 0x14, 0x28, 0x41,
        0x44, 0x50, 0x52, 0x88, 0x04, 0x40, 0x02, 0x14, 0x01, 0x04, 0x10, 0x21, 0x40, 0x60, 0x84, 0x90,
        0x95, 0x00, 0x08, 0x20, 0x50, 0x5a, 0x80, 0x24, 0x45, 0x00, 0x08, 0x20, 0x25, 0x49, 0x80, 0x18,
        0x62, 0x00, 0x16, 0x01, 0x04, 0x10, 0x40, 0x81, 0x00, 0x05, 0xa0, 0x51, 0x00, 0x02, 0x0a, 0x44,
        0x61, 0x80, 0x82, 0x29, 0x48, 0x00, 0x02, 0x01, 0x04, 0x10, 0x40, 0x56, 0x00, 0x41, 0x64, 0x90,
        0x08, 0x20, 0x94, 0x44, 0x01, 0x04, 0x10, 0x18, 0x21, 0x24, 0x40, 0x48, 0x56, 0x60, 0x81, 0x84,
        0x90, 0x00, 0x20, 0x61, 0x80, 0x85, 0x01, 0x10, 0x48, 0x56, 0x68, 0x00, 0x08, 0x20, 0x80, 0x99,
        0x12, 0x24, 0x00, 0x01, 0x04, 0x10, 0x40, 0x45, 0x00, 0x58, 0x61, 0x82, 0x45, 0x90, 0x00, 0x08,
        0x11, 0x19, 0x20, 0x80, 0x88, 0x04, 0x42, 0xa4, 0x91, 0x90, 0x92, 0x0a, 0x01, 0x54, 0x00, 0x11,
        0x19, 0x64, 0x40, 0x08, 0x04, 0x10, 0x40, 0x68, 0x00, 0x55, 0x18, 0x60, 0x00, 0x05, 0x10, 0x12,
        0x84, 0x42, 0x00, 0x02, 0x0a, 0x41, 0x82, 0x04, 0x18, 0x40, 0x11, 0x01, 0x04, 0x10, 0x15, 0x40,
        0x60, 0x00, 0x46, 0x94, 0x09, 0x40, 0x60, 0x02, 0x04, 0x11, 0x04, 0x10, 0x24, 0x40, 0xa1, 0x16,
        0x80, 0x45, 0x00, 0x22, 0x44, 0x51, 0x81, 0x20, 0x02, 0x50, 0x85, 0x09, 0x00, 0x18, 0x50, 0x04,
    },
    {
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x02, 0x02, 0x02,
        0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x05, 0x05, 0x05,
        0x05, 0x05, 0x05, 0x05, 0x05, 0x06, 0x06, 0x06, 0x06, 0x06, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08,
        0x08, 0x08, 0x08, 0x08, 0x09, 0x09, 0x0a, 0x0a, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x12, 0x12, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x15,
        0x15, 0x16, 0x16, 0x18, 0x18, 0x18, 0x18, 0x18, 0x19, 0x19, 0x19, 0x1a, 0x20, 0x20, 0x20, 0x20,
        0x20, 0x20, 0x20, 0x21, 0x21, 0x22, 0x22, 0x24, 0x24, 0x24, 0x24, 0x24, 0x25, 0x25, 0x25, 0x26,
        0x28, 0x28, 0x28, 0x2a, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
        0x40, 0x41, 0x41, 0x41, 0x41, 0x41, 0x42, 0x42, 0x42, 0x42, 0x42, 0x44, 0x44, 0x44, 0x44, 0x44,
        0x45, 0x45, 0x46, 0x48, 0x48, 0x48, 0x48, 0x48, 0x49, 0x49, 0x49, 0x49, 0x4a, 0x4a, 0x50, 0x50,
        0x50, 0x50, 0x50, 0x50, 0x50, 0x51, 0x51, 0x51, 0x52, 0x54, 0x54, 0x55, 0x56, 0x56, 0x58, 0x58,
        0x58, 0x58, 0x59, 0x5a, 0x60, 0x60, 0x60, 0x60, 0x61, 0x61, 0x62, 0x62, 0x64, 0x64, 0x65, 0x65,
        0x65, 0x68, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x81, 0x81, 0x82, 0x84, 0x84, 0x84, 0x84, 0x84,
        0x84, 0x85, 0x85, 0x85, 0x86, 0x86, 0x86, 0x88, 0x89, 0x8a, 0x90, 0x90, 0x90, 0x90, 0x90, 0x91,
        0x91, 0x92, 0x94, 0x94, 0x94, 0x95, 0x98, 0x99, 0xa0, 0xa0, 0xa0, 0xa1, 0xa2, 0xa4, 0xa8, 0xa9,
    },
};

#define AVX512VBMI_GFNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vbmi,gfni")))

/* The grid bytes of a block's 32 indices from their code bytes (index i's
 * plane-0 byte at byte i of c0, its plane-1 byte at byte i of c1): zmm k
 * holds indices 8k .. 8k + 7, one a qword. Per zmm one vpermi2b puts each
 * index's two code bytes into its qword, vpmultishiftqb takes element e's
 * code to byte e, and a 64-byte vpermb turns codes 0, 1, 2 (whatever lies
 * above them) into 8, 25, 43: the bytes of the IQ2 grids. */
AVX512VBMI_GFNI static inline __attribute__((always_inline)) void iq2_grid_from_codes(__m512i c0, __m512i c1,
                                                                                    __m512i grid[4])
{
    const __m512i sh = _mm512_set1_epi64(0x0e0c0a0806040200ll), lv = _mm512_set1_epi32(0x002b1908);
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        long long q[8]; /* qword j: index 8k + j's plane-0 byte, then its plane-1 byte */
        for (int j = 0; j < 8; j++) q[j] = (long long)((unsigned)(8 * k + j) | (unsigned)(64 + 8 * k + j) << 8);
        const __m512i w = _mm512_permutex2var_epi8(c0, _mm512_setr_epi64(q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]), c1);
        grid[k] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(sh, w), lv);
    }
}

/* Byte i of a 128-entry-per-pair table lookup: entries 0..127 from t[0..1]
 * (64 bytes each), 128..255 from t[2..3] by bit 7 of idx (top). */
AVX512VBMI_GFNI static inline __m512i lookup256(const uint8_t *t, __m512i idx, __mmask64 top)
{
    return _mm512_mask_blend_epi8(
        top, _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)t), idx, _mm512_loadu_si512((const void *)(t + 64))),
        _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)(t + 128)), idx,
                                 _mm512_loadu_si512((const void *)(t + 192))));
}


AVX512VBMI_GFNI static inline __attribute__((always_inline)) void iq2xxsz_load(const block_iq2_xxs *blk, sgridz_wt *u)
{
    /* index 4s + j is byte 8s + j of qs (dword d of the indices: bytes 8d .. 8d + 3) */
    const __m512i cidx = _mm512_setr_epi32(0x03020100, 0x0b0a0908, 0x13121110, 0x1b1a1918, 0x23222120, 0x2b2a2928,
                                           0x33323130, 0x3b3a3938, 0x03020100, 0x0b0a0908, 0x13121110, 0x1b1a1918,
                                           0x23222120, 0x2b2a2928, 0x33323130, 0x3b3a3938);
    const __m512i x = _mm512_loadu_si512((const void *)blk->qs);
    const __m512i idx = _mm512_permutexvar_epi8(cidx, x);
    const __mmask64 top = _mm512_movepi8_mask(idx);
    __m512i c[2];
    for (int pl = 0; pl < 2; pl++) c[pl] = lookup256(iq2xxs_code_planes[pl], idx, top);
    iq2_grid_from_codes(c[0], c[1], u->grid);
    /* the eight words (dwords 1, 3, .., 15 of qs) */
    const __m256i words = _mm512_castsi512_si256(
        _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15), x));
    __m256i mask, mul;
    iq3_words_gfni_v(words, &mask, &mul);
    const __m512i mulz = _mm512_castsi256_si512(mul);
    u->neg[0] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(mask, 0)); /* sub-blocks 2k, 2k + 1 */
    u->neg[1] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(mask, 1));
    u->neg[2] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(mask, 2));
    u->neg[3] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(mask, 3));
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        u->scv[k] = _mm512_permutexvar_epi32(_mm512_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k,
                                                               2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1,
                                                               2 * k + 1, 2 * k + 1, 2 * k + 1),
                                             mulz);
    }
}

NATIVE_BLOCK_DOTS(AVX512VBMI_GFNI, kavx512_qdot_iq2_xxs, kavx512_qdotn_iq2_xxs, block_iq2_xxs, sgridz_wt, iq2xxsz_load,
                  sgridz_step, __m256, hsum_ps_8th)


/* IQ2_XS's weight side the same way (its grid's bytes are 8, 25 and 43
 * too): each u16 of qs holds a 9-bit index and a 7-bit sign group. One
 * vpermb puts the low bytes (index bits 0-7) at 0..31 and the high bytes
 * (bit 8, the signs above it) at 32..63; the 512-entry planes are two
 * 256-entry lookups chosen by bit 8. One GF(2) affine map per high byte
 * moves its seven sign bits down and puts their parity on top (matrix row
 * for output bit i < 7: input bit i + 1; for bit 7: bits 1..7), the sign
 * byte ggml's ksigns table gives. The scales as iq2xs_load's. The same grid
 * bytes, signs and scales as the AVX2 loader (regrouped, as it was for the
 * batch dot), so the same bits; one row against one token was the AVX2
 * dot's (docs/runtime.md). */
static const uint8_t iq2xs_code_planes[2][512] = {
    {
        0x00, 0x02, 0x05, 0x08, 0x0a, 0x11, 0x14, 0x16, 0x19, 0x20, 0x22, 0x25, 0x28, 0x41, 0x44, 0x46,
        0x49, 0x50, 0x52, 0x55, 0x58, 0x61, 0x64, 0x80, 0x82, 0x85, 0x88, 0x91, 0x94, 0x99, 0xa0, 0x01,
        0x04, 0x06, 0x09, 0x10, 0x12, 0x15, 0x18, 0x1a, 0x21, 0x24, 0x40, 0x42, 0x45, 0x48, 0x51, 0x54,
        0x60, 0x68, 0x81, 0x84, 0x90, 0x00, 0x02, 0x05, 0x08, 0x11, 0x14, 0x20, 0x41, 0x44, 0x50, 0x55,
        0x80, 0x8a, 0x01, 0x04, 0x06, 0x09, 0x10, 0x12, 0x15, 0x18, 0x21, 0x24, 0x40, 0x42, 0x45, 0x48,
        0x51, 0x54, 0x56, 0x60, 0x81, 0x84, 0x90, 0x00, 0x02, 0x05, 0x08, 0x11, 0x14, 0x20, 0x41, 0x44,
        0x50, 0x61, 0x80, 0x01, 0x04, 0x10, 0x26, 0x40, 0x42, 0x84, 0x00, 0x02, 0x05, 0x08, 0x0a, 0x11,
        0x14, 0x20, 0x25, 0x41, 0x44, 0x50, 0x58, 0x80, 0xa0, 0xaa, 0x01, 0x04, 0x10, 0x40, 0x81, 0x89,
        0x00, 0x20, 0x28, 0x96, 0xa0, 0x01, 0x04, 0x06, 0x09, 0x10, 0x12, 0x15, 0x18, 0x21, 0x24, 0x40,
        0x42, 0x45, 0x48, 0x51, 0x54, 0x60, 0x6a, 0x81, 0x84, 0x90, 0x00, 0x02, 0x05, 0x08, 0x11, 0x14,
        0x20, 0x41, 0x44, 0x50, 0x80, 0x94, 0x96, 0x01, 0x04, 0x06, 0x10, 0x40, 0x60, 0x00, 0x02, 0x05,
        0x08, 0x11, 0x14, 0x20, 0x41, 0x44, 0x49, 0x50, 0x64, 0x80, 0x01, 0x04, 0x10, 0x40, 0x00, 0x14,
        0x49, 0x01, 0x04, 0x10, 0x12, 0x40, 0x54, 0x86, 0x00, 0x05, 0x66, 0x51, 0xa9, 0x00, 0x02, 0x05,
        0x08, 0x0a, 0x11, 0x14, 0x20, 0x41, 0x44, 0x50, 0x80, 0xa0, 0x01, 0x04, 0x10, 0x40, 0x48, 0x65,
        0x00, 0x22, 0x80, 0xa8, 0x01, 0x04, 0x10, 0x29, 0x40, 0x00, 0x41, 0x52, 0x99, 0x01, 0x1a, 0xa6,
        0x00, 0x08, 0x0a, 0x20, 0x55, 0x88, 0xa2, 0x68, 0x90, 0x08, 0x20, 0x82, 0x88, 0x8a, 0x01, 0x04,
        0x06, 0x09, 0x10, 0x12, 0x15, 0x18, 0x21, 0x24, 0x40, 0x42, 0x45, 0x48, 0x4a, 0x51, 0x54, 0x60,
        0x65, 0x81, 0x84, 0x90, 0x00, 0x02, 0x05, 0x08, 0x11, 0x14, 0x20, 0x41, 0x44, 0x50, 0x80, 0x85,
        0xa2, 0x01, 0x04, 0x10, 0x12, 0x29, 0x40, 0x00, 0x02, 0x05, 0x08, 0x11, 0x14, 0x19, 0x20, 0x41,
        0x44, 0x50, 0x80, 0x94, 0x01, 0x04, 0x10, 0x24, 0x40, 0x9a, 0x00, 0x0a, 0x44, 0x50, 0x01, 0x04,
        0x10, 0x40, 0x45, 0x54, 0x62, 0x00, 0x11, 0x44, 0x50, 0x69, 0x04, 0x00, 0x02, 0x05, 0x08, 0x11,
        0x14, 0x20, 0x28, 0x41, 0x44, 0x50, 0x80, 0x01, 0x04, 0x10, 0x15, 0x40, 0x42, 0x00, 0x44, 0xaa,
        0x01, 0x04, 0x10, 0x21, 0x40, 0x60, 0x81, 0xa1, 0x00, 0x08, 0x80, 0x88, 0x21, 0x68, 0xa1, 0x00,
        0x14, 0x41, 0x50, 0x99, 0x1a, 0x40, 0x42, 0x85, 0x01, 0x04, 0x10, 0x40, 0x54, 0x62, 0x86, 0xa9,
        0x00, 0x24, 0x4a, 0x92, 0x00, 0x16, 0x10, 0x40, 0x45, 0xa4, 0x01, 0x6a, 0x25, 0x06, 0x54, 0x62,
        0x00, 0x02, 0x05, 0x08, 0x11, 0x14, 0x20, 0x2a, 0x41, 0x44, 0x50, 0x80, 0x82, 0xa8, 0xaa, 0x01,
        0x04, 0x06, 0x10, 0x40, 0x51, 0x59, 0x00, 0x20, 0x80, 0x82, 0xa0, 0xa8, 0x01, 0x04, 0x10, 0x12,
        0x15, 0x40, 0x60, 0x89, 0x00, 0x44, 0xa5, 0x18, 0x6a, 0x00, 0x08, 0x25, 0x5a, 0x80, 0x82, 0xa8,
        0x06, 0x22, 0x80, 0x88, 0x96, 0xa8, 0x01, 0x04, 0x10, 0x40, 0x56, 0x84, 0x00, 0x22, 0x64, 0x56,
        0x89, 0x00, 0x05, 0x44, 0x50, 0x58, 0x29, 0x90, 0x92, 0x41, 0x51, 0xa6, 0x49, 0x15, 0x60, 0x00,
        0x02, 0x08, 0x0a, 0x20, 0x2a, 0xa0, 0x51, 0x59, 0xa6, 0x00, 0x02, 0x08, 0x2a, 0x80, 0xa0, 0x40,
        0x95, 0x65, 0x98, 0x0a, 0x20, 0x22, 0x28, 0xa0, 0xa8, 0x04, 0x84, 0x86, 0x28, 0x2a, 0x91, 0xaa,
    },
    {
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
        0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02,
        0x02, 0x02, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
        0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05,
        0x05, 0x05, 0x05, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08,
        0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09,
        0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
        0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x12, 0x12, 0x12, 0x12, 0x12, 0x12, 0x14, 0x14, 0x14,
        0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x15, 0x15, 0x15, 0x15, 0x16, 0x16,
        0x16, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x19, 0x19, 0x19, 0x1a, 0x1a, 0x20, 0x20, 0x20,
        0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21,
        0x22, 0x22, 0x22, 0x22, 0x24, 0x24, 0x24, 0x24, 0x24, 0x25, 0x25, 0x25, 0x25, 0x26, 0x26, 0x26,
        0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x29, 0x29, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x40, 0x40,
        0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
        0x40, 0x40, 0x40, 0x40, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
        0x41, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44,
        0x44, 0x44, 0x44, 0x44, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x46, 0x46, 0x46, 0x46, 0x48, 0x48,
        0x48, 0x48, 0x48, 0x48, 0x48, 0x49, 0x49, 0x49, 0x49, 0x49, 0x4a, 0x50, 0x50, 0x50, 0x50, 0x50,
        0x50, 0x50, 0x50, 0x50, 0x50, 0x50, 0x50, 0x51, 0x51, 0x51, 0x51, 0x51, 0x51, 0x52, 0x52, 0x52,
        0x54, 0x54, 0x54, 0x54, 0x54, 0x54, 0x54, 0x54, 0x55, 0x55, 0x55, 0x55, 0x56, 0x56, 0x56, 0x58,
        0x58, 0x58, 0x58, 0x58, 0x59, 0x59, 0x59, 0x5a, 0x60, 0x60, 0x60, 0x60, 0x60, 0x60, 0x60, 0x60,
        0x61, 0x62, 0x62, 0x62, 0x64, 0x64, 0x65, 0x65, 0x65, 0x65, 0x68, 0x68, 0x69, 0x6a, 0x6a, 0x6a,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81,
        0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x84, 0x84, 0x84, 0x84,
        0x84, 0x84, 0x84, 0x84, 0x85, 0x85, 0x85, 0x86, 0x86, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
        0x89, 0x8a, 0x8a, 0x8a, 0x8a, 0x8a, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x91, 0x91, 0x91, 0x92,
        0x92, 0x94, 0x94, 0x94, 0x94, 0x94, 0x95, 0x95, 0x95, 0x96, 0x98, 0x98, 0x99, 0x9a, 0x9a, 0xa0,
        0xa0, 0xa0, 0xa0, 0xa0, 0xa0, 0xa0, 0xa1, 0xa1, 0xa1, 0xa2, 0xa2, 0xa2, 0xa2, 0xa2, 0xa2, 0xa4,
        0xa4, 0xa6, 0xa6, 0xa8, 0xa8, 0xa8, 0xa8, 0xa8, 0xa8, 0xa9, 0xa9, 0xa9, 0xaa, 0xaa, 0xaa, 0xaa,
    },
};

AVX512VBMI_GFNI static inline __attribute__((always_inline)) void iq2xsz_load(const block_iq2_xs *blk, sgridz_wt *u)
{
    const __m512i sep = _mm512_setr_epi32(0x06040200, 0x0e0c0a08, 0x16141210, 0x1e1c1a18, 0x26242220, 0x2e2c2a28,
                                          0x36343230, 0x3e3c3a38, 0x07050301, 0x0f0d0b09, 0x17151311, 0x1f1d1b19,
                                          0x27252321, 0x2f2d2b29, 0x37353331, 0x3f3d3b39);
    const __m512i y = _mm512_permutexvar_epi8(sep, _mm512_loadu_si512((const void *)blk->qs));
    const __m512i hi = _mm512_shuffle_i64x2(y, y, 0xee); /* the high bytes at 0..31 */
    const __mmask64 b7 = _mm512_movepi8_mask(y), b8 = _mm512_test_epi8_mask(hi, _mm512_set1_epi8(1));
    __m512i c[2];
    for (int pl = 0; pl < 2; pl++)
        c[pl] = _mm512_mask_blend_epi8(b8, lookup256(iq2xs_code_planes[pl], y, b7),
                                       lookup256(iq2xs_code_planes[pl] + 256, y, b7));
    iq2_grid_from_codes(c[0], c[1], u->grid);
    const __m512i sg = _mm512_gf2p8affine_epi64_epi8(hi, _mm512_set1_epi64(0x02040810204080fell), 0);
    const __m256i s4 = _mm512_castsi512_si256(sg);
    u->neg[0] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(s4, 0)); /* groups 8k .. 8k + 7 */
    u->neg[1] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(s4, 1));
    u->neg[2] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(s4, 2));
    u->neg[3] = _cvtu64_mask64((uint64_t)_mm256_extract_epi64(s4, 3));
    const __m256i sc = nibble_scales(blk->scales);
    QD_UNROLL
    for (int k = 0; k < 4; k++)
        u->scv[k] = _mm512_inserti64x4(_mm512_castsi256_si512(scale_lanes(sc, 2 * k)), scale_lanes(sc, 2 * k + 1), 1);
}

NATIVE_BLOCK_DOTS(AVX512VBMI_GFNI, kavx512_qdot_iq2_xs, kavx512_qdotn_iq2_xs, block_iq2_xs, sgridz_wt, iq2xsz_load,
                  sgridz_step, __m256, hsum_ps_8th)

/* The batch dots (qdotn) of IQ2_S and IQ3_S on AVX-512 BW: a
 * block's AVX2 weight side (kernels_x86.h's loaders) regrouped once into
 * zmm pairs of sub-blocks (grid bytes and scales side by side, the signs
 * as one 64-bit mask: the sign bytes' top bits), then each token as
 * sgridz_step meets them: 64 elements a step, the activation codes
 * negated under the mask, the same 8 integer lanes and float steps as the
 * AVX2 kernel, so its bits. One row against one token stays AVX2's: the
 * regrouping costs more than the step saves there (IQ3_S from cache: 3.5
 * against 2.8 ns per 32 elements; a token of a batch of 8: 0.67 against
 * 0.95). */
AVX512BW static inline __attribute__((always_inline)) void sgrid_to_z(const sgrid_wt *v, sgridz_wt *u)
{
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        u->grid[k] = pair_z(v->grid[2 * k], v->grid[2 * k + 1]);
        u->scv[k] = pair_z(v->scv[2 * k], v->scv[2 * k + 1]);
        u->neg[k] = _cvtu64_mask64((uint64_t)(uint32_t)_mm256_movemask_epi8(v->sgn[2 * k + 1]) << 32 |
                                   (uint32_t)_mm256_movemask_epi8(v->sgn[2 * k]));
    }
}

/* Type T's zmm loader: its AVX2 loader, regrouped. */
#define SGRIDZ_LOAD(T, BLK)                                                                                      \
    AVX512BW static inline __attribute__((always_inline)) void T##z_load(const BLK *blk, sgridz_wt *u)         \
    {                                                                                                          \
        sgrid_wt v;                                                                                            \
        T##_load(blk, &v);                                                                                     \
        sgrid_to_z(&v, u);                                                                                     \
    }
SGRIDZ_LOAD(iq2s, block_iq2_s)
SGRIDZ_LOAD(iq3s, block_iq3_s)

NATIVE_BLOCK_QDOTN(AVX512BW, kavx512_qdotn_iq2_s, block_iq2_s, sgridz_wt, iq2sz_load, sgridz_step, __m256, hsum_ps_8th)
NATIVE_BLOCK_QDOTN(AVX512BW, kavx512_qdotn_iq3_s, block_iq3_s, sgridz_wt, iq3sz_load, sgridz_step, __m256, hsum_ps_1)


/* NVFP4 with AVX-512 VNNI and VBMI: a whole block's 64 values in one zmm
 * (one two-source byte permute of its 36 bytes and of them shifted right
 * by 4 puts every weight's nibble in element order, one 64-entry byte
 * permute of the table, 16 values four times, makes the values), their
 * magnitudes against the activation with the values' signs put on, one
 * vpdpbusd: lanes 0..7 the first Q8_0 block's 8 lanes, 8..15 the second's,
 * the integers kavx2_qdot_nvfp4's lanes hold. The scales (activation scale x
 * halved UE4M3, the same single products) spread to their lanes by one
 * permute; then the two fused multiply-adds of the AVX2 step, the first
 * block's lanes before the second's, so its bits. */
/* byte e of the layout: weight e's code byte in the block (4 + 8 x sub-block + e % 8), from the
 * shifted copy (64 +) for the high nibbles, weights 8..15 of each sub-block */
static const uint8_t nvfp4_layout[64] = {
    4,  5,  6,  7,  8,  9,  10, 11, 68, 69, 70, 71, 72, 73, 74, 75,
    12, 13, 14, 15, 16, 17, 18, 19, 76, 77, 78, 79, 80, 81, 82, 83,
    20, 21, 22, 23, 24, 25, 26, 27, 84, 85, 86, 87, 88, 89, 90, 91,
    28, 29, 30, 31, 32, 33, 34, 35, 92, 93, 94, 95, 96, 97, 98, 99,
};
typedef struct nvfp4z_wt { __m512i mag; __mmask64 neg; __m128 s; } nvfp4z_wt;

AVX512VNNI_VBMI static inline __attribute__((always_inline)) void nvfp4z_load(const block_nvfp4 *blk, nvfp4z_wt *u)
{
    const __mmask64 block = ((__mmask64)1 << sizeof(block_nvfp4)) - 1;
    const __m512i raw = _mm512_maskz_loadu_epi8(block, blk);
    const __m512i nib = _mm512_permutex2var_epi8(raw, _mm512_loadu_si512(nvfp4_layout), _mm512_srli_epi16(raw, 4));
    const __m512i v =
        _mm512_permutexvar_epi8(nib, _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)ggml_kvalues_fp4)));
    u->neg = _mm512_movepi8_mask(v);
    u->mag = _mm512_abs_epi8(v);
    u->s = ue4m3_half4(blk->d);
}

AVX512VNNI_VBMI static inline __attribute__((always_inline)) __m256 nvfp4z_step(const block_nvfp4 *blk,
                                                                                const nvfp4z_wt *u, const qrow *a,
                                                                                int64_t i, __m256 acc)
{
    (void)blk;
    const __m512i q = _mm512_loadu_si512((const void *)(a->q + 64 * i));
    const __m512i sq = _mm512_mask_sub_epi8(q, u->neg, _mm512_setzero_si512(), q);
    const __m512 lanes = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u->mag, sq));
    /* activation scales d0, d0, d1, d1 times the four sub-block scales, then each over its 4 lanes */
    const __m128 d2 = _mm_castpd_ps(_mm_load_sd((const double *)(a->d + 2 * i)));
    const __m512 sc = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                            _mm512_castps128_ps512(_mm_mul_ps(_mm_unpacklo_ps(d2, d2), u->s)));
    acc = _mm256_fmadd_ps(_mm512_castps512_ps256(lanes), _mm512_castps512_ps256(sc), acc);
    return _mm256_fmadd_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lanes), 1)),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sc), 1)), acc);
}

NATIVE_BLOCK_DOTS_N(AVX512VNNI_VBMI, kavx512_qdot_nvfp4, kavx512_qdotn_nvfp4, block_nvfp4, 64, nvfp4z_wt, nvfp4z_load,
                    nvfp4z_step, __m256, hsum_ps_1)

/* IQ1_S's and IQ1_M's batch dots with AVX-512 VNNI (every CPU with the
 * AVX-512 layer's VBMI and GFNI has it, so there is no AVX-512 BW
 * version): a grid value (-1, 0, 1) times its scale (1..15) is a signed
 * byte, so the weight side is the
 * block's elements as such bytes (IQ1_M's delta part too: its sign times
 * the scale) and a token's 64 codes are one vpdpbusd against them, the
 * codes biased to unsigned (q + 128: q xor 0x80); the bias's share, 128
 * times each lane's sum of weight bytes, is taken off the lanes' start
 * once a block, for all tokens. Each lane ends at the integer the AVX2
 * dot gives (vpdpbusd does not saturate), then its float steps: its
 * bits. */
#define AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
typedef struct iq1v_wt { __m512i w[4], dw[4], start, dstart; __m256i dls; uint16_t dh; } iq1v_wt;

/* int16 lanes of small values (|v| <= 15) as both of their bytes */
AVX512VNNI static inline __m256i words_to_bytes(__m256i v)
{
    return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi16(0xff)), _mm256_slli_epi16(v, 8));
}

/* -(128 x each lane's sum of four weight bytes), over the block's 4 zmm */
AVX512VNNI static inline __m512i bias_start(const __m512i w[4])
{
    const __m512i b128 = _mm512_set1_epi8((char)0x80);
    __m512i s = _mm512_setzero_si512();
    QD_UNROLL
    for (int k = 0; k < 4; k++) s = _mm512_dpbusd_epi32(s, b128, w[k]);
    return _mm512_sub_epi32(_mm512_setzero_si512(), s);
}

AVX512VNNI static inline __attribute__((always_inline)) void iq1v_grid(const iq1_wt *v, iq1v_wt *u)
{
    QD_UNROLL
    for (int k = 0; k < 4; k++)
        u->w[k] = pair_z(_mm256_sign_epi8(words_to_bytes(v->scv[2 * k]), v->grid[2 * k]),
                         _mm256_sign_epi8(words_to_bytes(v->scv[2 * k + 1]), v->grid[2 * k + 1]));
    u->start = bias_start(u->w);
    u->dh = v->dh;
}

AVX512VNNI static inline __attribute__((always_inline)) void iq1sv_load(const block_iq1_s *blk, iq1v_wt *u)
{
    iq1_wt v;
    iq1s_load(blk, &v);
    iq1v_grid(&v, u);
    u->dls = v.dls;
}

AVX512VNNI static inline __attribute__((always_inline)) void iq1mv_load(const block_iq1_m *blk, iq1v_wt *u)
{
    iq1_wt v;
    iq1m_load(blk, &v);
    iq1v_grid(&v, u);
    QD_UNROLL
    for (int k = 0; k < 4; k++) u->dw[k] = pair_z(words_to_bytes(v.dsc[2 * k]), words_to_bytes(v.dsc[2 * k + 1]));
    u->dstart = bias_start(u->dw);
}

AVX512VNNI static inline __attribute__((always_inline)) iq1_acc iq1sv_step(const block_iq1_s *blk, const iq1v_wt *u,
                                                                           const qrow *a, int64_t i, iq1_acc acc)
{
    (void)blk;
    const float D = a->d[i] * _cvtsh_ss(u->dh);
    const int8_t *q = a->q + i * 256;
    __m512i lanes = u->start;
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m512i qu = _mm512_xor_si512(_mm512_loadu_si512((const void *)(q + 64 * k)), _mm512_set1_epi8((char)0x80));
        lanes = _mm512_dpbusd_epi32(lanes, qu, u->w[k]);
    }
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(D), _mm256_cvtepi32_ps(lanes8(lanes)), acc.v);
    iq1s_delta(u->dls, a, i, D, &acc);
    return acc;
}

AVX512VNNI static inline __attribute__((always_inline)) iq1_acc iq1mv_step(const block_iq1_m *blk, const iq1v_wt *u,
                                                                           const qrow *a, int64_t i, iq1_acc acc)
{
    (void)blk;
    const __m256 D = _mm256_set1_ps(a->d[i] * _cvtsh_ss(u->dh));
    const int8_t *q = a->q + i * 256;
    __m512i lanes = u->start, dl = u->dstart;
    QD_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m512i qu = _mm512_xor_si512(_mm512_loadu_si512((const void *)(q + 64 * k)), _mm512_set1_epi8((char)0x80));
        lanes = _mm512_dpbusd_epi32(lanes, qu, u->w[k]);
        dl = _mm512_dpbusd_epi32(dl, qu, u->dw[k]);
    }
    acc.v = _mm256_fmadd_ps(D, _mm256_cvtepi32_ps(lanes8(lanes)), acc.v);
    acc.dv = _mm256_fmadd_ps(D, _mm256_cvtepi32_ps(lanes8(dl)), acc.dv);
    return acc;
}

NATIVE_BLOCK_QDOTN(AVX512VNNI, kavx512v_qdotn_iq1_s, block_iq1_s, iq1v_wt, iq1sv_load, iq1sv_step, iq1_acc, iq1s_finish)
NATIVE_BLOCK_QDOTN(AVX512VNNI, kavx512v_qdotn_iq1_m, block_iq1_m, iq1v_wt, iq1mv_load, iq1mv_step, iq1_acc, iq1m_finish)

/* TQ1_0 and TQ2_0 with AVX-512 VNNI: a block's 256 codes (0..2) as 4 zmm
 * of 64 in element order, made as the AVX2 loaders make them 32 at a
 * time (TQ1_0's trits by ggml's average trick, on 64 bytes at once), and
 * one vpdpbusd each against the activation: zmm lane l sums elements
 * 4(l % 8).. of every 32 in its half, so its two halves added are the
 * AVX2 lanes' integers; then the same sums of 32 activation elements
 * taken off (pairs of the 16-element sums, as 64-bit adds narrowed) and
 * the same fused multiply-add: kavx2_qdot_tq*'s bits. */
typedef struct ternz_wt { __m512i c[4]; uint16_t dh; } ternz_wt;

TRIT_OPS(AVX512VNNI, __m512i, 512, si512, z)

/* TQ1_0 (kernels_ggml_avx2.c: tq1_load has the layout): the first 32 bytes
 * times 1 | 3, then 9 | 27, then 81 with the next 16 bytes times 1 | 3 above
 * them; then those 16 bytes times 9 | 27 | 81 and qh's words times 1, 3, 9, 27. */
AVX512VNNI static inline __attribute__((always_inline)) void tq1z_load(const block_tq1_0 *blk, ternz_wt *u)
{
    const __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)blk->qs));
    const __m512i x01 = _mm512_mask_blend_epi64(0xF0, x, mul3_z(x)), x23 = mul9_z(x01);
    const __m512i y = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(blk->qs + 32)));
    const __m512i y0101 = _mm512_mask_blend_epi64(0xCC, y, mul3_z(y));
    const __m512i y0123 = _mm512_mask_blend_epi64(0xF0, y0101, mul9_z(y0101)); /* y x 1, 3, 9, 27 */
    uint32_t h32;
    memcpy(&h32, blk->qh, 4);
    const __m512i h = _mm512_set1_epi32((int)h32);
    const __m512i h01 = _mm512_mask_blend_epi32(0xAAAA, h, mul3_z(h));
    const __m512i hk = _mm512_mask_blend_epi32(0xCCCC, h01, mul9_z(h01)); /* each lane: qh x 1, 3, 9, 27 */
    const __m512i y81_hk = _mm512_mask_blend_epi64(0xCC, mul9_z(mul9_z(y)), hk);
    u->c[0] = trit_top_z(x01);
    u->c[1] = trit_top_z(x23);
    u->c[2] = trit_top_z(_mm512_inserti64x4(mul9_z(x23), _mm512_castsi512_si256(y0123), 1));
    u->c[3] = trit_top_z(_mm512_shuffle_i64x2(y0123, y81_hk, 0x4E));
    u->dh = blk->d;
}

/* TQ2_0: half j's 32 bytes in both halves of a zmm, shifted by 0 | 2 and 4 | 6 */
AVX512VNNI static inline __attribute__((always_inline)) void tq2z_load(const block_tq2_0 *blk, ternz_wt *u)
{
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m512i s02 = _mm512_mask_blend_epi64(0xF0, _mm512_setzero_si512(), _mm512_set1_epi16(2));
    const __m512i s46 = _mm512_add_epi16(s02, _mm512_set1_epi16(4));
    QD_UNROLL
    for (int j = 0; j < 2; j++) {
        const __m512i b = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk->qs + 32 * j)));
        u->c[2 * j] = _mm512_and_si512(_mm512_srlv_epi16(b, s02), m3);
        u->c[2 * j + 1] = _mm512_and_si512(_mm512_srlv_epi16(b, s46), m3);
    }
    u->dh = blk->d;
}

AVX512VNNI static inline __attribute__((always_inline)) __m256 ternz_step(const void *blk, const ternz_wt *u,
                                                                          const qrow *a, int64_t i, __m256 acc)
{
    (void)blk;
    const int8_t *q = a->q + 256 * i;
    __m512i l = _mm512_setzero_si512();
    QD_UNROLL
    for (int k = 0; k < 4; k++) l = _mm512_dpbusd_epi32(l, u->c[k], _mm512_loadu_si512((const void *)(q + 64 * k)));
    const __m256i l8 = _mm256_add_epi32(_mm512_castsi512_si256(l), _mm512_extracti64x4_epi64(l, 1));
    const __m512i s = _mm512_loadu_si512((const void *)(a->sum16 + 16 * i));
    const __m256i pairs = _mm512_cvtepi64_epi32(_mm512_add_epi32(s, _mm512_srli_epi64(s, 32)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(l8, pairs)), _mm256_set1_ps(a->d[i] * _cvtsh_ss(u->dh)),
                           acc);
}

NATIVE_BLOCK_DOTS(AVX512VNNI, kavx512v_qdot_tq1_0, kavx512v_qdotn_tq1_0, block_tq1_0, ternz_wt, tq1z_load, ternz_step,
                  __m256, hsum_ps_1)
NATIVE_BLOCK_DOTS(AVX512VNNI, kavx512v_qdot_tq2_0, kavx512v_qdotn_tq2_0, block_tq2_0, ternz_wt, tq2z_load, ternz_step,
                  __m256, hsum_ps_1)

/* Q1_0 with AVX-512 VNNI: 64 sign bits are a mask, so one masked subtract
 * negates the activation codes of the clear bits (the weights -1) and one
 * vpdpbusd of ones against them gives two Q8_0 blocks' lanes (0..7 and
 * 8..15), the integers of the AVX2 dot's lanes; then its float steps in
 * its order: kavx2_qdot_q1_0's bits. */
typedef struct q1z_wt { __mmask64 neg[2]; } q1z_wt;

AVX512VNNI static inline __attribute__((always_inline)) void q1z_load(const block_q1_0 *blk, q1z_wt *u)
{
    QD_UNROLL
    for (int k = 0; k < 2; k++) {
        uint64_t bits;
        memcpy(&bits, blk->qs + 8 * k, 8);
        u->neg[k] = _cvtu64_mask64(~bits);
    }
}

AVX512VNNI static inline __attribute__((always_inline)) __m256 q1z_step(const block_q1_0 *blk, const q1z_wt *u,
                                                                        const qrow *a, int64_t i, __m256 acc)
{
    const __m512i one8 = _mm512_set1_epi8(1);
    __m256 t = _mm256_setzero_ps();
    QD_UNROLL
    for (int k = 0; k < 2; k++) {
        const __m512i q = _mm512_loadu_si512((const void *)(a->q + 128 * i + 64 * k));
        const __m512i sq = _mm512_mask_sub_epi8(q, u->neg[k], _mm512_setzero_si512(), q);
        const __m512 l = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), one8, sq));
        const __m256 d0 = _mm256_set1_ps(a->d[4 * i + 2 * k]), d1 = _mm256_set1_ps(a->d[4 * i + 2 * k + 1]);
        t = k ? _mm256_fmadd_ps(d0, _mm512_castps512_ps256(l), t) : _mm256_mul_ps(d0, _mm512_castps512_ps256(l));
        t = _mm256_fmadd_ps(d1, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(l), 1)), t);
    }
    return _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(blk->d)), t, acc);
}

NATIVE_BLOCK_DOTS_N(AVX512VNNI, kavx512v_qdot_q1_0, kavx512v_qdotn_q1_0, block_q1_0, 128, q1z_wt, q1z_load, q1z_step,
                    __m256, hsum_ps_1)

/* Q4_1 and Q5_1 single dots with AVX-512 VNNI: two blocks a step, their 64
 * codes (each block's 16 bytes as low then high nibbles, Q5_1's fifth bits
 * put on through a mask of its two qh words) against the two activation
 * blocks in one vpdpbusd (lanes 0..7 the first block's, 8..15 the second's:
 * the AVX2 lanes' integers), then each block's float steps in block order,
 * as kavx2_qdot_q4_1 takes them; a last odd block alone (its activation
 * read with a 32-byte mask). Its bits. */
AVX512VNNI static inline __attribute__((always_inline)) float q41z_dot(const weight *w, int64_t r, const qrow *a,
                                                                       int five)
{
    const size_t bsize = five ? sizeof(block_q5_1) : sizeof(block_q4_1), qs_at = five ? 8 : 4;
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const __m512i m4 = _mm512_set1_epi8(15), hi5 = _mm512_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    const int64_t nb = w->cols / 32;
    for (int64_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        const uint8_t *b0 = row + (size_t)b * bsize, *b1 = two ? b0 + bsize : b0;
        /* [x0, x0 >> 4, x1, x1 >> 4] by 128-bit lanes: block b's elements 0..31, then b+1's */
        const __m512i y = _mm512_inserti32x4(_mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(b0 + qs_at))),
                                             _mm_loadu_si128((const __m128i *)(b1 + qs_at)), 2);
        const __m512i yy = _mm512_shuffle_i64x2(y, y, 0xA0);
        __m512i c = _mm512_and_si512(_mm512_mask_blend_epi64(0xCC, yy, _mm512_srli_epi16(yy, 4)), m4);
        if (five) {
            uint32_t h0, h1;
            memcpy(&h0, b0 + 4, 4);
            memcpy(&h1, b1 + 4, 4);
            c = _mm512_or_si512(c, _mm512_maskz_mov_epi8(_cvtu64_mask64((uint64_t)h1 << 32 | h0), hi5));
        }
        const __mmask64 qm = two ? ~(__mmask64)0 : 0xFFFFFFFFull;
        const __m512i q = _mm512_maskz_loadu_epi8(qm, a->q + 32 * b);
        const __m512 l = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), c, q));
        uint16_t dm[4];
        memcpy(dm, b0, 4);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(dm[0]) * a->d[b]), _mm512_castps512_ps256(l), acc);
        summs = fmaf(_cvtsh_ss(dm[1]), a->s1[b], summs);
        if (two) {
            memcpy(dm + 2, b1, 4);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(dm[2]) * a->d[b + 1]),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(l), 1)), acc);
            summs = fmaf(_cvtsh_ss(dm[3]), a->s1[b + 1], summs);
        }
    }
    return hsum_ps(acc) + summs;
}
AVX512VNNI float kavx512v_qdot_q4_1(const weight *w, int64_t r, const qrow *a) { return q41z_dot(w, r, a, 0); }
AVX512VNNI float kavx512v_qdot_q5_1(const weight *w, int64_t r, const qrow *a) { return q41z_dot(w, r, a, 1); }

#endif
