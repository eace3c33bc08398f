/* iq3_quality.c: the quality-mode block encoder. Same bytes layout as the
 * seed, chosen to minimise the (importance-weighted) squared error that is
 * actually stored:
 *   - the super-scale d is searched over a few candidates derived from the
 *     largest sub-block, instead of fixed at RMS/20 (which leaves typical
 *     sub-blocks on codes 3..4, where one code step is a 25% scale step);
 *   - each sub-block tries the codes near its own ideal scale, skipping those
 *     whose lattice bound already loses;
 *   - the parity flip is priced per weight after quantization, including
 *     re-choosing that weight's group's grid point for the flipped sign, and
 *     the cheapest flip is taken; the code is chosen on the error after flips. */
#include "iq3_impl.h"
#include "fp16.h"

#include <math.h>
#include <string.h>

typedef struct sub_choice {
    float err;
    int code;
    uint8_t idx[8];
    uint8_t neg[32];
} sub_choice;

/* Weighted nearest grid point to c (group q of a sub-block, cells from
 * iq3_cells32): the cell's own point when it is on the grid (per-coordinate
 * rounding is then the optimum for any weights), else the best of the
 * cell's candidate list, else all 256. */
static int nearest_w(const iq3_tables *t, const float c[4], const float w[4], int cell, int q, unsigned in,
                     int simd)
{
    if (t->cell[cell] >= 0) return t->cell[cell];
    /* The lists are exact for equal weights (a scaled plain distance);
     * unequal weights within the 4 can move the optimum off the list. */
    if ((in >> q & 1) && w[0] == w[1] && w[1] == w[2] && w[2] == w[3] &&
        t->cand_off[cell + 1] != t->cand_off[cell])
        return simd ? iq3_nearest_w_list_avx2(t, c, w, cell) : iq3_nearest_w_list(t, c, w, cell);
    return simd ? iq3_nearest_w_avx2(t, c, w) : iq3_nearest_w_scalar(t, c, w);
}

static float group_err(const iq3_tables *t, int idx, const float *m, const float *w, int flip, float db)
{
    float s = 0;
    for (int j = 0; j < 4; j++) {
        float q = t->g[idx][j] * db;
        float e = j == flip ? m[j] + q : m[j] - q;
        s += w[j] * (e * e);
    }
    return s;
}

/* Quantize one 32-weight sub-block at scale db: grid points, cheapest parity
 * flips, total weighted error. Flips only add error, so once the groups'
 * errors before flips reach bound the code cannot win: err = INFINITY. */
static void eval_code(const iq3_tables *t, const float *m, const uint8_t *neg0, const float *w,
                      float db, float bound, int simd, sub_choice *out)
{
    float inv = db > 0 ? 1.0f / db : 0.0f, gerr[8], c[32];
    int cells[8];
    unsigned in, safe;
    memcpy(out->neg, neg0, 32);
    for (int j = 0; j < 32; j++) c[j] = m[j] * inv;
    iq3_cells32(c, cells, &in, &safe, simd);
    float partial = 0;
    for (int q = 0; q < 8; q++) {
        out->idx[q] = (uint8_t)nearest_w(t, c + 4 * q, w + 4 * q, cells[q], q, in, simd);
        gerr[q] = group_err(t, out->idx[q], m + 4 * q, w + 4 * q, -1, db);
        partial += gerr[q];
        if (partial >= bound) { out->err = INFINITY; return; }
    }
    float total = 0;
    for (int o = 0; o < 4; o++) {
        int par = 0;
        for (int j = 0; j < 8; j++) par ^= neg0[8 * o + j];
        float base = gerr[2 * o] + gerr[2 * o + 1];
        if (!par) { total += base; continue; }
        /* One sign of these 8 must lie. Flipping weight j costs its error with
         * the wrong sign, (m + q)^2 instead of (m - q)^2, or less with the
         * group's grid point re-chosen for that sign: first the cell with
         * that coordinate at the smallest level (when that cell is on the
         * grid, its point is the best of all 256), then, unless a lower bound
         * (that coordinate at the smallest level, 2 db, the others at their
         * nearest levels) cannot beat the best flip so far, the weighted
         * nearest to the target with that coordinate negated among the grid
         * points whose coordinate is at the smallest level (t->low: on
         * N(0,1) a scan of all 256 never chose another). This took rel-RMSE
         * on N(0,1) from 0.1788 to 0.1768. */
        float best = INFINITY, le[8], le_sum[2] = { 0, 0 };
        int bj = 0, bidx = 0;
        /* each coordinate's error at its nearest level: what no grid point beats */
        for (int j = 0; j < 8; j++) {
            const int q = 2 * o + j / 4, l = (cells[q] >> (3 * (j % 4))) & 7;
            const float e = m[4 * q + j % 4] - IQ3_LEVELS[l] * db;
            le[j] = w[4 * q + j % 4] * (e * e);
            le_sum[j / 4] += le[j];
        }
        /* first every flip within its cell (cheap), so that the best of
         * them prunes the full scans that follow */
        float ej[8];
        int ij[8], on_grid[8];
        for (int j = 0; j < 8; j++) {
            const int q = 2 * o + j / 4, jj = j % 4;
            int idx = out->idx[q];
            float e = gerr[q] + w[4 * q + jj] * (4.0f * m[4 * q + jj] * (t->g[idx][jj] * db));
            const int alt = t->cell[cells[q] & ~(7 << (3 * jj))];
            on_grid[j] = alt >= 0;
            if (alt >= 0 && alt != idx) {
                const float ea = group_err(t, alt, m + 4 * q, w + 4 * q, jj, db);
                if (ea < e) { e = ea; idx = alt; }
            }
            ej[j] = e + gerr[q ^ 1];
            ij[j] = idx;
            if (ej[j] < best) { best = ej[j]; bj = j; bidx = idx; }
        }
        for (int j = 0; j < 8; j++) {
            /* a point with every coordinate at its nearest level (that one at
             * the smallest) is the best there is, for any weights */
            if (on_grid[j]) continue;
            const int q = 2 * o + j / 4, jj = j % 4;
            const float floor_j = m[4 * q + jj] + 2.0f * db;
            const float lb = w[4 * q + jj] * (floor_j * floor_j) + (le_sum[j / 4] - le[j]) + gerr[q ^ 1];
            if (lb >= best) continue;
            float cf[4] = { c[4 * q], c[4 * q + 1], c[4 * q + 2], c[4 * q + 3] };
            cf[jj] = -cf[jj];
            const int full = simd ? iq3_nearest_w_among_avx2(t, cf, w + 4 * q, t->low[jj], t->n_low[jj])
                                  : iq3_nearest_w_among(t, cf, w + 4 * q, t->low[jj], t->n_low[jj]);
            if (full == ij[j]) continue;
            const float ef = group_err(t, full, m + 4 * q, w + 4 * q, jj, db) + gerr[q ^ 1];
            if (ef < best) { best = ef; bj = j; bidx = full; }
        }
        out->neg[8 * o + bj] ^= 1;
        out->idx[2 * o + bj / 4] = (uint8_t)bidx;
        total += best;
    }
    out->err = total;
}

/* The codes one sub-block tries under super-scale d: its own ideal c0 (the
 * code putting its largest weight at level 27) and the four below it, where
 * the winner usually is (the largest weight then takes level 31 or is
 * clipped), and one above; in order of their lattice bound. lbmin bounds the
 * sub-block's error below. On N(0,1) c0-3..c0+3 gave the same error at 7/6
 * of the work, c0-2..c0+2 was worse by 0.0024 rel-RMSE. */
typedef struct code_plan {
    int n, order[16];
    float lb[16], lbmin;
} code_plan;

static void plan_codes(const float *m, const float *w, float amax, float d, int simd, code_plan *p)
{
    p->n = 0;
    p->lbmin = 0;
    if (d <= 0) return;
    int c0 = (int)lrintf(amax / 27.0f / (0.5f * d) - 0.5f);
    int lo = c0 - 4 < 0 ? 0 : c0 - 4, hi = c0 + 1 > 15 ? 15 : c0 + 1;
    if (lo > hi) lo = hi;
    for (int code = lo; code <= hi; code++) {
        float lb = iq3_lattice_bound(m, d * (0.5f + (float)code) * 0.5f, w, simd);
        int i = p->n++;
        while (i > 0 && p->lb[i - 1] > lb) { p->lb[i] = p->lb[i - 1]; p->order[i] = p->order[i - 1]; i--; }
        p->lb[i] = lb;
        p->order[i] = code;
    }
    p->lbmin = p->lb[0];
}

/* Best code for one sub-block under super-scale d, among those with error
 * below cap (best->code -1 when none is); codes whose lattice bound already
 * loses are skipped. */
static void best_sub(const iq3_tables *t, const float *m, const uint8_t *neg, const float *w,
                     const code_plan *p, float d, float cap, int simd, sub_choice *best)
{
    best->err = cap;
    best->code = -1;
    if (d <= 0) {
        eval_code(t, m, neg, w, 0, INFINITY, simd, best);
        best->code = 0;
        return;
    }
    for (int i = 0; i < p->n; i++) {
        int code = p->order[i];
        if (p->lb[i] >= best->err) break;
        sub_choice c;
        eval_code(t, m, neg, w, d * (0.5f + (float)code) * 0.5f, best->err, simd, &c);
        if (c.err < best->err) { *best = c; best->code = code; }
    }
}

/* Sub-block ib of out (its grid bytes and word) from the choice. */
static void put_sub(iq3_block *out, int ib, const sub_choice *c)
{
    memcpy(out->grid + 8 * ib, c->idx, 8);
    uint32_t wd = (uint32_t)c->code << 28;
    for (int l = 0; l < 4; l++)
        for (int j = 0; j < 7; j++) wd |= (uint32_t)c->neg[8 * l + j] << (7 * l + j);
    iq3_block_set_word(out, ib, wd);
}

void iq3_encode_sub_quality(const iq3_tables *t, const float *x, const float *imp, float d, int simd,
                            iq3_block *out, int ib, float q[32])
{
    float m[32], w[32], amax = 0;
    uint8_t neg[32];
    for (int i = 0; i < 32; i++) {
        neg[i] = x[i] < 0;
        m[i] = fabsf(x[i]);
        w[i] = imp ? imp[i] : 1.0f;
        if (m[i] > amax) amax = m[i];
    }
    code_plan plan;
    plan_codes(m, w, amax, d, simd, &plan);
    sub_choice c;
    best_sub(t, m, neg, w, &plan, d, INFINITY, simd, &c);
    put_sub(out, ib, &c);
    /* the values the block now decodes to: each product exact in float32 */
    const float db = d * (0.5f + (float)c.code) * 0.5f;
    for (int i = 0; i < 32; i++) {
        const float v = t->g[c.idx[i / 4]][i % 4] * db;
        q[i] = c.neg[i] ? -v : v;
    }
}

void iq3_encode_block_quality(const iq3_tables *t, const float *x, const float *imp,
                              iq3_block *out, int simd)
{
    float m[256], w[256], amax[8] = { 0 }, top = 0;
    uint8_t neg[256];
    for (int i = 0; i < 256; i++) {
        neg[i] = x[i] < 0;
        m[i] = fabsf(x[i]);
        w[i] = imp ? imp[i] : 1.0f;
        if (m[i] > amax[i / 32]) amax[i / 32] = m[i];
    }
    for (int ib = 0; ib < 8; ib++) top = amax[ib] > top ? amax[ib] : top;

    /* The largest sub-block should sit near code 15, where code steps are
     * finest; the factors let the error decide how near (three do as well
     * as four did with the code range above). */
    static const float factors[] = { 0.92f, 1.0f, 1.1f };
    sub_choice best[8], cur[8];
    float best_total = INFINITY;
    uint16_t best_h = 0;
    for (size_t f = 0; f < sizeof factors / sizeof *factors; f++) {
        uint16_t h = f32_to_fp16(top / 27.0f / 7.75f * factors[f]);
        if (f > 0 && h == best_h) continue;
        float d = fp16_to_f32(h), total = 0, rest = 0;
        code_plan plan[8];
        for (int ib = 0; ib < 8; ib++) {
            plan_codes(m + 32 * ib, w + 32 * ib, amax[ib], d, simd, &plan[ib]);
            rest += plan[ib].lbmin;
        }
        /* A sub-block only matters while this factor can still win: its
         * error must stay below what the best total leaves after the
         * others' lower bounds. */
        int lost = 0;
        for (int ib = 0; ib < 8 && !lost; ib++) {
            rest -= plan[ib].lbmin;
            float cap = best_total - total - rest;
            best_sub(t, m + 32 * ib, neg + 32 * ib, w + 32 * ib, &plan[ib], d, cap, simd, &cur[ib]);
            if (cur[ib].code < 0) lost = 1;
            else total += cur[ib].err;
        }
        if (!lost && total < best_total) {
            best_total = total;
            best_h = h;
            memcpy(best, cur, sizeof best);
        }
    }
    for (int ib = 0; ib < 8; ib++) put_sub(out, ib, &best[ib]);
    iq3_block_set_d(out, best_h);
}
