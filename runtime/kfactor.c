/* kfactor.c: see kfactor.h. */
#include "runtime/kfactor.h"

#include "formats/fp16.h"

#include <math.h>

size_t kfactor_bytes(const weight *w)
{
    if (w->form != WF_SCODE || !w->offsets || w->codebook || w->group != 32 || w->code_bias != 0 ||
        (w->code_bits != 4 && w->code_bits != 8) || w->act != WA_Q8_K || w->cols % 256)
        return 0;
    const size_t sb = (size_t)w->rows * (size_t)(w->cols / 256);
    return sb * 2 * sizeof(float) + sb * 8 * 2;
}

/* x[j] = f * k[j] with f an fp16 value and k[j] in 0..63. ggml's plain
 * quantizer gives the largest x the code 63; with an importance matrix the
 * codes are searched and the largest may be smaller, so each candidate
 * max(x) / K, K = 63 down to 1, is tried and the first that factors every
 * x exactly is taken (the true one does; a larger K can only also fit when
 * it is the true K times a power of two, which gives the same products). */
static int factor(const float *x, int sign, float *f, uint8_t *k)
{
    float mx = 0.0f;
    for (int j = 0; j < 8; j++) mx = fmaxf(mx, sign * x[j]);
    if (mx == 0.0f) {
        *f = 0.0f;
        for (int j = 0; j < 8; j++) {
            if (x[j] != 0.0f) return 0;
            k[j] = 0;
        }
        return 1;
    }
    for (int K = 63; K >= 1; K--) {
        const float u = mx / (float)K;
        if (fp16_to_f32(f32_to_fp16(u)) != u || u * (float)K != mx) continue;
        int ok = 1;
        for (int j = 0; j < 8 && ok; j++) {
            const float v = sign * x[j] / u, r = nearbyintf(v);
            ok = v == r && r >= 0.0f && r <= 63.0f && u * r == sign * x[j];
            if (ok) k[j] = (uint8_t)r;
        }
        if (ok) { *f = u; return 1; }
    }
    return 0;
}

int kfactor_build(const weight *w, void *mem, kfactor *kf)
{
    if (!kfactor_bytes(w)) return 0;
    const size_t sb = (size_t)w->rows * (size_t)(w->cols / 256);
    float *d = mem, *dmin = d + sb;
    uint8_t *sc = (uint8_t *)(dmin + sb), *m = sc + sb * 8;
    for (size_t i = 0; i < sb; i++)
        if (!factor(w->scales + i * 8, 1, &d[i], sc + i * 8) || !factor(w->offsets + i * 8, -1, &dmin[i], m + i * 8))
            return 0;
    *kf = (kfactor){ w->code_bits == 4 ? 4 : 5, d, dmin, sc, m };
    return 1;
}
