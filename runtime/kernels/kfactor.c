/* kfactor.c: see kfactor.h. */
#include "runtime/kernels/kfactor.h"

#include "formats/fp16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 4 or 5 (Q4_K/Q5_K-shaped: offsets, groups of 32, codes from 0), 6
 * (Q6_K-shaped: no offsets, groups of 16, 8-bit codes biased by -32), 3
 * (Q3_K-shaped: no offsets, groups of 16, 4-bit codes biased by -4), 2
 * (IQ4_XS-shaped: no offsets, groups of 32, 4-bit codes into an integer
 * 16-value codebook), or 0. */
static int kstyle(const weight *w)
{
    if (w->form != WF_SCODE || w->act != WA_Q8_K || w->cols % 256) return 0;
    if (w->codebook) {
        int8_t cb[16];
        return !w->offsets && w->group == 32 && w->code_bias == 0 && w->code_bits == 4 && kq8_codebook_i8(w, cb) ? 2 : 0;
    }
    if (w->offsets && w->group == 32 && w->code_bias == 0 && (w->code_bits == 4 || w->code_bits == 8))
        return w->code_bits == 4 ? 4 : 5;
    if (!w->offsets && w->group == 16 && w->code_bias == -32 && w->code_bits == 8) return 6;
    if (!w->offsets && w->group == 16 && w->code_bias == -4 && w->code_bits == 4) return 3;
    return 0;
}

size_t kfactor_bytes(const weight *w)
{
    const int st = kstyle(w);
    if (!st) return 0;
    const size_t sb = (size_t)w->rows * (size_t)(w->cols / 256);
    if (st == 6 || st == 3 || st == 2) return sb * sizeof(uint16_t) + sb * (st == 2 ? 8 : 16);
    return sb * 2 * sizeof(uint16_t) + sb * 8 * 2;
}

/* x[j] = f * k[j] (j < n) with f an fp16 value and k[j] in lo..hi. ggml's
 * plain quantizers give the largest |x| the code hi (Q4_K/Q5_K: 63) or lo
 * (Q6_K: -128); with an importance matrix the codes are searched and the
 * extreme one may be smaller, so each candidate x_max / K, |K| from the
 * largest down, is tried and the first that factors every x exactly is
 * taken (the true one does; another can only also fit when it is the true
 * one times -1 or a power of two, which give the same products). */
static int factor(const float *x, int n, int sign, int lo, int hi, float *f, int8_t *k)
{
    float mx = 0.0f;
    int at = 0;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > mx) { mx = fabsf(x[j]); at = j; }
    if (mx == 0.0f) {
        *f = 0.0f;
        memset(k, 0, (size_t)n);
        return 1;
    }
    const int kmax = -lo > hi ? -lo : hi;
    for (int K = kmax; K >= 1; K--)
        for (int s = -1; s <= 1; s += 2) {
            const int kk = s * K;
            if (kk < lo || kk > hi) continue;
            const float u = sign * x[at] / (float)kk;
            if (fp16_to_f32(f32_to_fp16(u)) != u || u * (float)kk != sign * x[at]) continue;
            int ok = 1;
            for (int j = 0; j < n && ok; j++) {
                const float v = sign * x[j] / u, r = nearbyintf(v);
                ok = v == r && r >= (float)lo && r <= (float)hi && u * r == sign * x[j];
                if (ok) k[j] = (int8_t)r;
            }
            if (ok) { *f = u; return 1; }
        }
    return 0;
}

int kfactor_build(const weight *w, void *mem, kfactor *kf, int records)
{
    const int st = kstyle(w);
    if (!st) return 0;
    const size_t sb = (size_t)w->rows * (size_t)(w->cols / 256);
    const int per_sb = kf_per_sb(st), mins = kf_has_mins(st), rb = kf_rec_bytes(st);
    /* Q6_K's scales are int8, Q3_K's and IQ4_XS's 6-bit minus 32, Q4_K's
     * and Q5_K's scales and mins 6-bit */
    const int lo = st == 6 ? -128 : mins ? 0 : -32, hi = st == 6 ? 127 : mins ? 63 : 31;
    uint8_t *base = mem;
    /* the planes: d, dmin, the scales, the mins (kf_per_sb(st) and 8 a super-block) */
    uint16_t *d = mem, *dmin = mins ? d + sb : NULL;
    int8_t *scp = (int8_t *)(d + (mins ? 2 : 1) * sb), *mp = mins ? scp + sb * 8 : NULL;
    for (size_t i = 0; i < sb; i++) {
        uint8_t *r = base + i * (size_t)rb;
        int8_t *sc = records ? (int8_t *)(r + kf_rec_sc_at(st)) : scp + i * (size_t)per_sb;
        int8_t *m = !mins ? NULL : records ? (int8_t *)(r + KF_REC_M_AT) : mp + i * 8;
        float f, g = 0.0f;
        if (!factor(w->scales + i * (size_t)per_sb, per_sb, 1, lo, hi, &f, sc) ||
            (mins && !factor(w->offsets + i * 8, 8, -1, 0, 63, &g, m)))
            return 0;
        const uint16_t hd = f32_to_fp16(f), hm = f32_to_fp16(g); /* exact: factor() gives fp16 values */
        if (records) {
            memcpy(r, &hd, 2);
            if (mins) memcpy(r + KF_REC_DMIN_AT, &hm, 2);
        } else {
            d[i] = hd;
            if (mins) dmin[i] = hm;
        }
    }
    *kf = records ? (kfactor){ st, NULL, NULL, NULL, NULL, { 0 }, base } : (kfactor){ st, d, dmin, scp, mp, { 0 }, NULL };
    if (st == 2) kq8_codebook_i8(w, kf->cb);
    return 1;
}

int kq_split_bits(const weight *w)
{
    if (w->code_split) return 0;
    const int st = kstyle(w);
    if (w->code_bits == 4) return st == 4 || st == 3 || st == 2 ? 4 : 0;
    return st == 5 ? 5 : st == 6 ? 6 : 0;
}

/* One super-block of 256 codes (one a byte, each < 2^split) split into out
 * (weight.h: kq_split_sb_bytes). */
static void kq_split_sb(const uint8_t *c, int split, uint8_t *out)
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 64; j++) out[64 * h + j] = (uint8_t)((c[128 * h + j] & 15) | (c[128 * h + 64 + j] & 15) << 4);
    for (int j = 0; j < split - 4; j++)
        for (int b = 0; b < 32; b++) {
            uint8_t v = 0;
            for (int k = 0; k < 8; k++) v |= (uint8_t)((c[8 * b + k] >> (4 + j) & 1) << k);
            out[128 + 32 * j + b] = v;
        }
}

void kq_unsplit(const uint8_t *sb, int split, uint8_t out[256])
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 64; j++) {
            out[128 * h + j] = sb[64 * h + j] & 15;
            out[128 * h + 64 + j] = sb[64 * h + j] >> 4;
        }
    for (int j = 0; j < split - 4; j++)
        for (int e = 0; e < 256; e++) out[e] |= (uint8_t)((sb[128 + 32 * j + e / 8] >> (e % 8) & 1) << (4 + j));
}

/* Super-block s's split form (sbb bytes at s * sbb) ends before super-block
 * s + 1's codes start (at (s + 1) * in: 256 bytes of 8-bit codes, or the
 * same 128 bytes of 4-bit ones), so in order nothing still to be read is
 * overwritten; each goes through a buffer, since it lands on its own
 * codes. */
int kq_split_rows(weight *w, uint8_t *codes)
{
    const int split = w->kf ? kq_split_bits(w) : 0;
    if (!split || codes != (const uint8_t *)w->data) return 0;
    const int64_t n = w->rows * w->cols;
    if (w->code_bits == 8)
        for (int64_t i = 0; i < n; i++)
            if (codes[i] >> split) return 0;
    const size_t sbb = kq_split_sb_bytes(split), in = (size_t)32 * (size_t)w->code_bits;
    uint8_t tmp[256];
    for (int64_t s = 0; s < n / 256; s++) {
        const uint8_t *src = codes + (size_t)s * in;
        if (w->code_bits == 4) /* two to a byte, element 2i low: byte b of a half's first 32 holds codes
                                * 128h + 2b and 2b + 1, of its last 32 codes 128h + 64 + 2b and 2b + 1 */
            for (int h = 0; h < 2; h++)
                for (int b = 0; b < 32; b++) {
                    const uint8_t lo = src[64 * h + b], hi = src[64 * h + 32 + b];
                    tmp[64 * h + 2 * b] = (uint8_t)((lo & 15) | (hi & 15) << 4);
                    tmp[64 * h + 2 * b + 1] = (uint8_t)((lo >> 4) | (hi & 0xf0));
                }
        else kq_split_sb(src, split, tmp);
        memcpy(codes + (size_t)s * sbb, tmp, sbb);
    }
    w->code_split = split;
    w->row_bytes = kq_split_row_bytes(w->cols, split);
    return 1;
}

const uint8_t *kq_sb_codes(const weight *w, const uint8_t *row, int64_t i, uint8_t buf[256])
{
    if (!w->code_split) return row + i * 256 * w->code_bits / 8;
    kq_unsplit(row + (size_t)i * kq_split_sb_bytes(w->code_split), w->code_split, buf);
    return buf;
}
