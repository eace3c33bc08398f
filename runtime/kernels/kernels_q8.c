/* kernels_q8.c: quantized activations, the scalar reference. A row of x is
 * rounded the way ggml's reference quantizers round it (llama.cpp does this
 * to every activation that meets a quantized weight, and its logits differ
 * from f32 activations by far more than float rounding), then each weight
 * row is multiplied with integer sums per group and one float multiply-add
 * per group, as ggml's vec_dot kernels do. */
#include "runtime/kernels/kernels_impl.h"

#include "formats/fp16.h"
#include "formats/ggml_tables.h"
#include "formats/ggml_types.h"
#include "formats/iq3.h"
#include "runtime/kernels/ggml_order.h"

#include <math.h>
#include <string.h>

int qrow_block(int act) { return act == WA_Q8_0 || act == WA_Q8_1 ? 32 : act == WA_Q8_K ? 256 : 0; }

int kernels_ggml_act(int t)
{
    const ggml_type_row *row = ggml_type_info(t);
    const int act = row ? row->act : GGML_TYPE_F32;
    return act == GGML_TYPE_Q8_0 ? WA_Q8_0 : act == GGML_TYPE_Q8_K ? WA_Q8_K : act == GGML_TYPE_Q8_1 ? WA_Q8_1 : WA_F32;
}

/* ggml-cpu's x86 quantize_row_q8_0, the rounding llama.cpp applies to every
 * activation that meets a Q8_0-family weight on an x86 CPU: d = amax/127
 * (stored as fp16), q = x * (127/amax) rounded to nearest, ties to even.
 * The _ref rule ggml uses to quantize weights (x * (1/d), ties away from
 * zero) gives another code at exact ties and where the two multipliers
 * round x across a .5 boundary; one such code is enough for logits to part
 * from llama.cpp's by 1e-2 (docs/runtime.md). */
void kscalar_quant_q8_0(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16)
{
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + b * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float db = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
        d[b] = fp16_to_f32(f32_to_fp16(db));
        for (int j = 0; j < 32; j++) q[b * 32 + j] = (int8_t)nearbyintf(xb[j] * id);
    }
    for (int64_t s = 0; s < n / 16; s++) {
        int32_t t = 0;
        for (int j = 0; j < 16; j++) t += q[s * 16 + j];
        sum16[s] = t;
    }
}

/* ggml nearest_int(): round half to even through the 1.5 * 2^23 trick. */
static int nearest_int(float f)
{
    float v = f + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* ggml quantize_row_q8_K_ref: the scale comes from the signed value of the
 * first element of largest magnitude (iscale = -127/max, so q = -127 there),
 * codes capped at 127; d = 1/iscale (f32). An all-zero block has d = 0. */
void kscalar_quant_q8_k(const float *x, int64_t n, int8_t *q, float *d, int32_t *sum16)
{
    for (int64_t b = 0; b < n / 256; b++) {
        const float *xb = x + b * 256;
        int8_t *qb = q + b * 256;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 256; j++) {
            float ax = fabsf(xb[j]);
            if (ax > amax) { amax = ax; max = xb[j]; }
        }
        if (amax == 0.0f) {
            d[b] = 0.0f;
            memset(qb, 0, 256);
        } else {
            const float iscale = -127.0f / max;
            for (int j = 0; j < 256; j++) {
                int v = nearest_int(iscale * xb[j]);
                qb[j] = (int8_t)(v < 127 ? v : 127);
            }
            d[b] = 1.0f / iscale;
        }
    }
    for (int64_t s = 0; s < n / 16; s++) {
        int32_t t = 0;
        for (int j = 0; j < 16; j++) t += q[s * 16 + j];
        sum16[s] = t;
    }
}

void qrow_fill(const kernels *k, qrow *a, const float *x)
{
    const int blk = qrow_block(a->kind);
    k->quant_q8[a->kind == WA_Q8_1 ? WA_Q8_0 : a->kind](x, a->n, a->q, a->d, a->sum16);
    if (a->kind == WA_Q8_1) /* ggml's x86 quantize_row_q8_1: (float)sum x (amax / 127), to fp16 */
        for (int64_t b = 0; b < a->n / 32; b++) {
            float amax = 0.0f;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            const float s = (float)(a->sum16[2 * b] + a->sum16[2 * b + 1]) * (amax / 127.0f);
            a->s1[b] = fp16_to_f32(f32_to_fp16(s));
        }
    if (a->kind == WA_Q8_K && a->sum32)
        for (int64_t b = 0; b < a->n / 32; b++) a->sum32[b] = (int16_t)(a->sum16[2 * b] + a->sum16[2 * b + 1]);
    if (a->kind == WA_Q8_K && a->qnib) {
        int src[64];
        for (int j = 0; j < 64; j++) src[j] = qnib_src(j);
        for (int64_t c = 0; c < a->n; c += 64)
            for (int j = 0; j < 64; j++) a->qnib[c + j] = a->q[c + src[j]];
    }
    /* Block by block: an index division per element (blk is not a
     * constant here) cost 4 of the 5 us of a 2048-row fill, which decode
     * pays ~50 times per token on the calling thread. Same products. */
    for (int64_t b = 0; a->deq && b < a->n / blk; b++) {
        const float db = a->d[b];
        const int8_t *q = a->q + b * blk;
        float *deq = a->deq + b * blk;
        for (int i = 0; i < blk; i++) deq[i] = (float)q[i] * db;
    }
}

/* A K-quant S-form with its factors (kfactor.h), as ggml-cpu's x86
 * ggml_vec_dot_q3_K/q4_K/q5_K/q6_K/iq4_xs_q8_K sum: per super-block, lanes of
 * sc * sum(value * q) (value: code + bias, or IQ4_XS's codebook entry)
 * fused-multiply-added by d x (activation scale); the
 * mins as integer sums of m x (activation sums of 32) times -dmin x
 * (activation scale): one float per super-block added up (Q5_K) or four
 * float lanes (Q4_K); then the lanes' horizontal sum plus the mins. */
float kscalar_qdot_kf(const weight *w, int64_t r, const qrow *a)
{
    const kfactor *kf = w->kf;
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int bits = w->code_bits, per_byte = 8 / bits, mask = (1 << bits) - 1;
    const int64_t nsb = w->cols / 256, sb0 = r * nsb;
    float acc[8] = { 0 }, accm[4] = { 0 }, summs = 0.0f;
    uint8_t split[256]; /* a split super-block's codes (weight.h: code_split) */
    for (int64_t i = 0; i < nsb; i++) {
        const float yd = a->d[i];
        const float D = yd * fp16_to_f32(kf_d(kf, sb0 + i));
        const int8_t *sc = kf_sc(kf, sb0 + i);
        const uint8_t *sbc = w->code_split ? kq_sb_codes(w, codes, i, split) : NULL;
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            const int64_t c = i * 256 + e;
            const int code = sbc ? sbc[e] : (codes[c / per_byte] >> ((c % per_byte) * bits)) & mask;
            const int v = kf->style == 2 ? kf->cb[code] : code + w->code_bias;
            lane[(e % 32) / 4] += (int32_t)sc[e / w->group] * v * a->q[c];
        }
        for (int l = 0; l < 8; l++) acc[l] = fmaf(D, (float)lane[l], acc[l]);
        if (!kf_has_mins(kf->style)) continue; /* Q6_K, Q3_K, IQ4_XS: no mins */
        int32_t bs[8];
        for (int j = 0; j < 8; j++) bs[j] = a->sum16[(i * 256 + j * 32) / 16] + a->sum16[(i * 256 + j * 32) / 16 + 1];
        summs = ggml_order_kmins(kf->style, -yd * fp16_to_f32(kf_dmin(kf, sb0 + i)), kf_m(kf, sb0 + i), bs, accm, summs);
    }
    return ggml_order_hsum8(acc) + ggml_order_kmins_total(kf->style, accm, summs);
}

/* The order ggml-cpu's x86 dot kernels sum in, which the SIMD kernels keep
 * and this one spells out: per 32 elements, 8 integer lane sums (lane l =
 * elements 4l..4l+3), each lane accumulated in float with one fused
 * multiply-add by (weight scale x activation scale), groups of 16 giving
 * lanes 0..3 and 4..7 their own scale; offsets (x the activation sums of 16)
 * summed separately in unit order; the lanes' horizontal sum, plus that. */
float kscalar_qdot_scode(const weight *w, int64_t r, const qrow *a)
{
    if (w->kf && a->kind == WA_Q8_K) return kscalar_qdot_kf(w, r, a);
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int bits = w->code_bits, per_byte = 8 / bits, mask = (1 << bits) - 1;
    const int blk = qrow_block(a->kind);
    const int64_t g0 = r * (w->cols / w->group);
    int8_t cb[16] = { 0 };
    if (w->codebook) kq8_codebook_i8(w, cb);
    float acc[8] = { 0 }, off = 0.0f;
    for (int64_t c0 = 0; c0 < w->cols; c0 += 32) {
        int32_t lane[8] = { 0 };
        for (int64_t c = c0; c < c0 + 32; c++) {
            int code = (codes[c / per_byte] >> ((c % per_byte) * bits)) & mask;
            int v = w->codebook ? cb[code] : code + w->code_bias;
            lane[(c - c0) / 4] += v * a->q[c];
        }
        const int64_t g = g0 + c0 / w->group;
        const float db = a->d[c0 / blk];
        const float s0 = w->scales[g] * db, s1 = w->group < 32 ? w->scales[g + 1] * db : s0;
        for (int l = 0; l < 8; l++) acc[l] = fmaf((float)lane[l], l < 4 ? s0 : s1, acc[l]);
        if (w->offsets) {
            const int32_t *s16 = a->sum16 + c0 / 16;
            float t;
            if (w->group >= 32) {
                const float od = w->offsets[g] * db;
                t = od * (float)(s16[0] + s16[1]);
                off += t;
            } else {
                const float od0 = w->offsets[g] * db, od1 = w->offsets[g + 1] * db;
                t = od0 * (float)s16[0];
                off += t;
                t = od1 * (float)s16[1];
                off += t;
            }
        }
    }
    return ggml_order_hsum8(acc) + off;
}

void kscalar_qdot4_scode(const weight *w, int64_t r, int64_t stride, const qrow *a, float *y)
{
    for (int k = 0; k < 4; k++) y[k * stride] = kscalar_qdot_scode(w, r + k * stride, a);
}

/* value = d * (2*code + 1) * grid * sign / 8, so per 256-block the lanes
 * (elements 4l..4l+3 of every 32) hold sum over 32-subs of (2*code + 1) *
 * sum(grid * sign * q), and y = hsum(lanes fused-multiply-added by
 * d * dx * 0.125): the AVX2 kernel's order, which is ggml's
 * ggml_vec_dot_iq3_xxs_q8_K on x86 (its d is half ours, its final factor
 * 0.25: the same bits). */
float kscalar_qdot_iq3(const weight *w, int64_t r, const qrow *a)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    float acc[8] = { 0 };
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const iq3_block *blk = (const iq3_block *)row + b;
        const int8_t *q = a->q + b * IQ3_QK;
        const uint16_t dh = iq3_block_d(blk);
        int32_t lane[8] = { 0 };
        for (int s = 0; s < 8; s++) {
            const uint32_t word = iq3_block_word(blk, s);
            const int32_t mul = (int32_t)(2 * (word >> 28) + 1);
            for (int k = 0; k < 4; k++) {
                const unsigned s7 = (word >> (7 * k)) & 127u;
                const unsigned signs = s7 | ((unsigned)__builtin_parity(s7) << 7);
                for (int h = 0; h < 2; h++) {
                    const uint32_t gv = ggml_iq3xxs_grid[blk->grid[s * 8 + k * 2 + h]];
                    int32_t sub = 0;
                    for (int j = 0; j < 4; j++) {
                        const int e = k * 8 + h * 4 + j;
                        const int v = (int)((gv >> (8 * j)) & 255u);
                        sub += (signs >> (h * 4 + j) & 1u) ? -v * q[s * 32 + e] : v * q[s * 32 + e];
                    }
                    lane[k * 2 + h] += sub * mul;
                }
            }
        }
        const float dd = fp16_to_f32(dh) * a->d[b] * 0.125f;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(dd, (float)lane[l], acc[l]);
    }
    return ggml_order_hsum8(acc);
}

void kscalar_qdotn_scode(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    for (int t = 0; t < nt; t++) y[t * ystride] = kscalar_qdot_scode(w, r, &a[t]);
}

void kscalar_qdotn_iq3(const weight *w, int64_t r, const qrow *a, int nt, float *y, int64_t ystride)
{
    for (int t = 0; t < nt; t++) y[t * ystride] = kscalar_qdot_iq3(w, r, &a[t]);
}

