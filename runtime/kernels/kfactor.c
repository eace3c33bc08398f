/* kfactor.c: see kfactor.h. */
#include "runtime/kernels/kfactor.h"

#include "formats/fp16.h"

#include <math.h>
#include <string.h>

/* 4 or 5 (Q4_K/Q5_K-shaped: offsets, groups of 32, codes from 0), 6
 * (Q6_K-shaped: no offsets, groups of 16, 8-bit codes biased by -32), or 0. */
static int kstyle(const weight *w)
{
    if (w->form != WF_SCODE || w->codebook || w->act != WA_Q8_K || w->cols % 256) return 0;
    if (w->offsets && w->group == 32 && w->code_bias == 0 && (w->code_bits == 4 || w->code_bits == 8))
        return w->code_bits == 4 ? 4 : 5;
    if (!w->offsets && w->group == 16 && w->code_bias == -32 && w->code_bits == 8) return 6;
    return 0;
}

size_t kfactor_bytes(const weight *w)
{
    const int st = kstyle(w);
    if (!st) return 0;
    const size_t sb = (size_t)w->rows * (size_t)(w->cols / 256);
    return st == 6 ? sb * sizeof(uint16_t) + sb * 16 : sb * 2 * sizeof(uint16_t) + sb * 8 * 2;
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

int kfactor_build(const weight *w, void *mem, kfactor *kf)
{
    const int st = kstyle(w);
    if (!st) return 0;
    const size_t sb = (size_t)w->rows * (size_t)(w->cols / 256);
    uint16_t *d = mem;
    float f, g;
    if (st == 6) {
        int8_t *sc = (int8_t *)(d + sb);
        for (size_t i = 0; i < sb; i++) {
            if (!factor(w->scales + i * 16, 16, 1, -128, 127, &f, sc + i * 16)) return 0;
            d[i] = f32_to_fp16(f); /* exact: factor() gives fp16 values */
        }
        *kf = (kfactor){ 6, d, NULL, sc, NULL };
        return 1;
    }
    uint16_t *dmin = d + sb;
    int8_t *sc = (int8_t *)(dmin + sb), *m = sc + sb * 8;
    for (size_t i = 0; i < sb; i++) {
        if (!factor(w->scales + i * 8, 8, 1, 0, 63, &f, sc + i * 8) ||
            !factor(w->offsets + i * 8, 8, -1, 0, 63, &g, m + i * 8))
            return 0;
        d[i] = f32_to_fp16(f);
        dmin[i] = f32_to_fp16(g);
    }
    *kf = (kfactor){ st, d, dmin, sc, m };
    return 1;
}
