/* iq3_search.c: what both IQ3 encoders search with, in its portable
 * flavour: the tables derived from the grid, the candidate-list builder,
 * the cell lookups, the nearest-grid-point searches and the lattice bound
 * (iq3_impl.h has the contracts; iq3_avx2.c the AVX2 twins). Beneath the
 * encoders (iq3_ref.c, iq3_quality.c), which iq3.c drives. */
#include "iq3_impl.h"
#include "ggml_tables.h"

#include <math.h>
#include <string.h>

/* Doubled grid bytes are 4,12,...,52,62: levels 0..7 per coordinate. */
static int level_of_byte(unsigned v) { return v == 62 ? 7 : (int)(v - 4) / 8; }

/* Cell boxes per level, in weight units (see iq3_tables.cand). */
static const float BOX_LO[8] = { 0, 4, 8, 12, 16, 20, 24, 28.5f };
static const float BOX_HI[8] = { 4, 8, 12, 16, 20, 24, 28.5f, IQ3_CAND_CMAX };

/* min over the box of score_i - score_j, score = g2 - 2 c.g. It is linear in
 * c, so each coordinate takes the end that makes it least; every operand is
 * a small multiple of 1/4, so float32 computes it exactly. */
static float min_gap(const iq3_tables *t, int i, int j, const float *lo, const float *hi)
{
    float m = t->g2[i] - t->g2[j];
    for (int k = 0; k < 4; k++) {
        float a = t->g[i][k] - t->g[j][k], x = hi[k] * a, y = lo[k] * a;
        m -= 2.0f * (x > y ? x : y);
    }
    return m;
}

/* For every cell: the point nearest the box centre prunes most of the grid;
 * the few survivors then prune each other. A point stays unless one other
 * point beats it by the margin everywhere in the box, so the lists are exact
 * (a superset of the winners), just not always minimal. */
int iq3_build_candidates(const iq3_tables *t, uint16_t off[4097], uint8_t *cand, int cap)
{
    int n = 0;
    for (int cell = 0; cell < 4096; cell++) {
        float lo[4], hi[4], ce[4];
        for (int k = 0; k < 4; k++) {
            int l = (cell >> (3 * k)) & 7;
            lo[k] = BOX_LO[l];
            hi[k] = BOX_HI[l];
            ce[k] = 0.5f * (lo[k] + hi[k]);
        }
        int js = 0;
        float bs = INFINITY;
        for (int i = 0; i < 256; i++) {
            float sc = t->g2[i] - 2.0f * (ce[0] * t->gt[0][i] + ce[1] * t->gt[1][i] +
                                          ce[2] * t->gt[2][i] + ce[3] * t->gt[3][i]);
            if (sc < bs) { bs = sc; js = i; }
        }
        int surv[256], ns = 0;
        for (int i = 0; i < 256; i++)
            if (i == js || min_gap(t, i, js, lo, hi) < IQ3_CAND_MARGIN) surv[ns++] = i;
        off[cell] = (uint16_t)n;
        int start = n;
        for (int a = 0; a < ns; a++) {
            int dom = 0;
            for (int b = 0; b < ns && !dom; b++)
                dom = b != a && min_gap(t, surv[a], surv[b], lo, hi) >= IQ3_CAND_MARGIN;
            if (!dom && n < cap) cand[n++] = (uint8_t)surv[a];
        }
        /* Cannot happen with this grid; an empty list means "scan all". */
        if (n >= cap) n = start;
    }
    off[4096] = (uint16_t)n;
    return n;
}

void iq3_tables_init(iq3_tables *t)
{
    memset(t, 0, sizeof *t);
    for (int c = 0; c < 4096; c++) t->cell[c] = -1;
    for (int i = 0; i < 256; i++) {
        uint32_t e = ggml_iq3xxs_grid[i];
        int cell = 0;
        float n2 = 0;
        for (int j = 0; j < 4; j++) {
            unsigned b = (e >> (8 * j)) & 0xFF;
            float v = 0.5f * (float)b;
            t->g[i][j] = v;
            t->gt[j][i] = v;
            n2 += v * v; /* small integers: exact in any order */
            cell |= level_of_byte(b) << (3 * j);
        }
        t->g2[i] = n2;
        t->cell[cell] = (int16_t)i;
        for (int j = 0; j < 4; j++)
            if (((cell >> (3 * j)) & 7) == 0) t->low[j][t->n_low[j]++] = (uint8_t)i;
    }
    t->cand_off = iq3_cand_off;
    t->cand = iq3_cand;
}

/* Level boundaries in weight units: midpoints 4,8,...,24 and 28.5 (26|31). */
static int level_of(float c, float *margin)
{
    int l;
    if (c >= 28.5f) l = 7;
    else if (c < 4.0f) l = 0;
    else { l = (int)(c * 0.25f); if (l > 6) l = 6; }
    float lo = l == 0 ? -1e30f : (l == 7 ? 28.5f : 4.0f * (float)l);
    float hi = l == 7 ? 1e30f : (l == 6 ? 28.5f : 4.0f * (float)(l + 1));
    float a = c - lo, b = hi - c;
    *margin = a < b ? a : b;
    return l;
}

int iq3_cell_lookup(const iq3_tables *t, const float c[4], int want_margin)
{
    int cell = 0;
    for (int j = 0; j < 4; j++) {
        float m;
        int l = level_of(c[j], &m);
        /* Another level costs at least 8*margin more; float32 scores of
         * points with c <= 64 are good to ~0.01, so 0.02 leaves room. */
        if (want_margin && (m < 0.02f || c[j] > 64.0f)) return -1;
        cell |= l << (3 * j);
    }
    return t->cell[cell];
}

int iq3_cell_of(const iq3_tables *t, const float c[4], int *on_grid_safe)
{
    int cell = 0, safe = 1;
    for (int j = 0; j < 4; j++) {
        float m;
        if (!(c[j] >= 0.0f && c[j] <= IQ3_CAND_CMAX)) return -1;
        int l = level_of(c[j], &m);
        if (m < 0.02f) safe = 0; /* see iq3_cell_lookup */
        cell |= l << (3 * j);
    }
    if (t->cand_off[cell + 1] == t->cand_off[cell]) return -1;
    *on_grid_safe = safe && t->cell[cell] >= 0;
    return cell;
}

void iq3_cells32_scalar(const float *c, int cell[8], unsigned *in, unsigned *safe)
{
    unsigned vin = 0, vsafe = 0;
    for (int q = 0; q < 8; q++) {
        int code = 0, ok = 1, sf = 1;
        for (int j = 0; j < 4; j++) {
            float m, v = c[4 * q + j];
            int l = level_of(v, &m);
            if (!(v >= 0.0f && v <= IQ3_CAND_CMAX)) ok = 0;
            if (m < 0.02f) sf = 0;
            code |= l << (3 * j);
        }
        cell[q] = code;
        vin |= (unsigned)ok << q;
        vsafe |= (unsigned)(ok && sf) << q;
    }
    *in = vin;
    *safe = vsafe;
}

int iq3_nearest_ref_list(const iq3_tables *t, const float c[4], int cell)
{
    return iq3_nearest_ref_list_body(t, c, cell);
}

int iq3_nearest_w_list(const iq3_tables *t, const float c[4], const float w[4], int cell)
{
    return iq3_nearest_w_among(t, c, w, t->cand + t->cand_off[cell], t->cand_off[cell + 1] - t->cand_off[cell]);
}

int iq3_nearest_w_among(const iq3_tables *t, const float c[4], const float w[4], const uint8_t *p, int n)
{
    int best = p[0];
    float bs = 0;
    for (int q = 0; q < n; q++) {
        int i = p[q];
        float d0 = c[0] - t->g[i][0], d1 = c[1] - t->g[i][1];
        float d2 = c[2] - t->g[i][2], d3 = c[3] - t->g[i][3];
        float s = w[0] * (d0 * d0) + w[1] * (d1 * d1);
        s = s + w[2] * (d2 * d2);
        s = s + w[3] * (d3 * d3);
        if (q == 0 || s < bs) { bs = s; best = i; }
    }
    return best;
}

float iq3_lattice_bound_scalar(const float *m, float db, const float *w)
{
    float den = db > 1e-20f ? db : 1e-20f, acc[8] = { 0 };
    for (int i = 0; i < 32; i++) {
        float e = IQ3_LEVELS[iq3_level(m[i] / den)] * db - m[i];
        acc[i % 8] += (w ? w[i] : 1.0f) * (e * e);
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

int iq3_nearest_ref_scalar(const iq3_tables *t, const float c[4])
{
    int best = 0;
    float bs = 0;
    for (int i = 0; i < 256; i++) {
        float s = c[0] * t->g[i][0];
        s = fmaf(c[1], t->g[i][1], s);
        s = fmaf(c[2], t->g[i][2], s);
        s = fmaf(c[3], t->g[i][3], s);
        float sc = t->g2[i] - (s + s);
        if (i == 0 || sc < bs) { bs = sc; best = i; }
    }
    return best;
}

int iq3_nearest_w_scalar(const iq3_tables *t, const float c[4], const float w[4])
{
    int best = 0;
    float bs = 0;
    for (int i = 0; i < 256; i++) {
        float d0 = c[0] - t->g[i][0], d1 = c[1] - t->g[i][1];
        float d2 = c[2] - t->g[i][2], d3 = c[3] - t->g[i][3];
        float s = w[0] * (d0 * d0) + w[1] * (d1 * d1);
        s = s + w[2] * (d2 * d2);
        s = s + w[3] * (d3 * d3);
        if (i == 0 || s < bs) { bs = s; best = i; }
    }
    return best;
}
