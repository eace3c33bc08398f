/* iq3_ref.c: the reference-mode block encoder, seeds/iq3_pack.py encode()
 * reproduced operation for operation in float32 so the bytes are identical.
 * Where numpy's order of operations decides a rounding, the order is copied:
 * mean() is numpy's pairwise sum, `c @ g.T` an fma chain, ties keep the
 * first index / the earlier code. */
#include "iq3_impl.h"
#include "fp16.h"

#include <math.h>
#include <string.h>

/* numpy's pairwise_sum for float32 (loops_utils.h): 8 accumulators up to
 * 128 elements, halves above. A plain loop rounds differently. */
static float pw_sum(const float *a, int n)
{
    if (n < 8) {
        float r = 0;
        for (int i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) {
        float r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        int i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int n2 = n / 2;
    n2 -= n2 % 8;
    return pw_sum(a, n2) + pw_sum(a + n2, n - n2);
}

/* The seed's nearest point for group q of the 32 coordinates c, whose cells
 * iq3_cells32 gave: the cell's own point when that is safe, else its list,
 * else (out of the lists' range) all 256. Same answer as the full scan. */
static int nearest_ref(const iq3_tables *t, const float *c, int cell, int q, unsigned in, unsigned safe,
                       int simd)
{
    if (!(in >> q & 1) || t->cand_off[cell + 1] == t->cand_off[cell])
        return simd ? iq3_nearest_ref_avx2(t, c) : iq3_nearest_ref_scalar(t, c);
    if ((safe >> q & 1) && t->cell[cell] >= 0) return t->cell[cell];
    return simd ? iq3_nearest_ref_list_avx2(t, c, cell) : iq3_nearest_ref_list(t, c, cell);
}

void iq3_encode_block_ref(const iq3_tables *t, const float *x, iq3_block *out, int simd)
{
    float mag[256], sq[256];
    uint8_t neg[256];
    for (int i = 0; i < 256; i++) {
        neg[i] = x[i] < 0; /* -0.0 counts as positive, as np.where(blk < 0) */
        mag[i] = fabsf(x[i]);
        sq[i] = mag[i] * mag[i];
    }
    /* parity fix: flip the first smallest magnitude of each odd 8 */
    for (int b = 0; b < 32; b++) {
        int par = 0, am = 0;
        for (int j = 0; j < 8; j++) {
            par ^= neg[8 * b + j];
            if (mag[8 * b + j] < mag[8 * b + am]) am = j;
        }
        if (par) neg[8 * b + am] ^= 1;
    }
    float d32 = sqrtf(pw_sum(sq, 256) / 256.0f) / 20.0f + 1e-12f;
    uint16_t h = f32_to_fp16(d32);
    float d = fp16_to_f32(h);

    for (int ib = 0; ib < 8; ib++) {
        const float *m = mag + 32 * ib;
        uint8_t best_idx[8] = { 0 }, idx[8];
        float best_err = 0, lb[16];
        int best_code = -1, order[16];
        /* The seed tries all 16 codes; most cannot win. Each code's error is
         * at least its per-coordinate lattice error, so codes are tried in
         * order of that bound and skipped once the bound exceeds the best
         * error found (with a relative margin far above float32 rounding).
         * Ties are still resolved towards the lower code, as the seed does. */
        for (int code = 0; code < 16; code++) {
            lb[code] = iq3_lattice_bound(m, d * (0.5f + (float)code) * 0.5f, NULL, simd);
            int p = code;
            while (p > 0 && lb[order[p - 1]] > lb[code]) { order[p] = order[p - 1]; p--; }
            order[p] = code;
        }
        for (int oi = 0; oi < 16; oi++) {
            int code = order[oi];
            if (best_code >= 0 && lb[code] > best_err * 1.0001f) break;
            float db = d * (0.5f + (float)code) * 0.5f;
            float den = db > 1e-20f ? db : 1e-20f;
            float e[32], c[32];
            int cells[8];
            unsigned in, safe;
            for (int j = 0; j < 32; j++) c[j] = m[j] / den;
            iq3_cells32(c, cells, &in, &safe, simd);
            for (int q = 0; q < 8; q++) {
                idx[q] = (uint8_t)nearest_ref(t, c + 4 * q, cells[q], q, in, safe, simd);
                for (int j = 0; j < 4; j++) {
                    float diff = t->g[idx[q]][j] * db - m[4 * q + j];
                    e[4 * q + j] = diff * diff;
                }
            }
            float err = pw_sum(e, 32);
            if (best_code < 0 || err < best_err || (err == best_err && code < best_code)) {
                best_err = err;
                best_code = code;
                memcpy(best_idx, idx, 8);
            }
        }
        memcpy(out->grid + 8 * ib, best_idx, 8);
        uint32_t w = (uint32_t)best_code << 28;
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < 7; j++) w |= (uint32_t)neg[32 * ib + 8 * l + j] << (7 * l + j);
        iq3_block_set_word(out, ib, w);
    }
    iq3_block_set_d(out, h);
}
