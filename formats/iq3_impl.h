/* iq3_impl.h: internals shared by the iq3 codec files (not a public API).
 *
 * Contract: iq3_tables is derived from ggml_iq3xxs_grid by iq3_tables_init()
 * into caller-owned memory and is read-only afterwards, so one instance is
 * shared by every encoder thread. The candidate lists it points to are const
 * data compiled in (iq3_cand.c, written by iq3_cand_gen_main.c from
 * iq3_build_candidates(); test_iq3 rebuilds them and compares). The nearest-grid functions come in a scalar
 * and an AVX2 flavour that return the same index for the same input; the
 * block encoders take the flavour as a flag and are otherwise one code path,
 * which is why scalar and AVX2 output agree byte for byte. */
#ifndef STRATA_IQ3_IMPL_H
#define STRATA_IQ3_IMPL_H

#include "iq3.h"

#include <math.h>
#include <stdint.h>

#define IQ3_CAND_CAP    32768 /* the lists hold 31656 entries in all */
#define IQ3_CAND_MARGIN 0.05f
#define IQ3_CAND_CMAX   64.0f /* coordinates above this take the full scan */

#define IQ3_CAND_PAD 8 /* vector loads may run past the last list */

typedef struct iq3_tables {
    _Alignas(32) float gt[4][256]; /* grid transposed, weight units (byte / 2) */
    _Alignas(32) float g2[256];    /* squared norm of each grid point */
    _Alignas(16) float g[256][4];
    int16_t cell[4096]; /* per-coordinate level cell -> grid index, -1 off grid */
    /* Exact candidate lists: for the cell with per-coordinate levels
     * (l0,l1,l2,l3) = cell bits 3j..3j+2, cand[cand_off[cell] .. cand_off[cell+1])
     * holds, in increasing index order, every grid point that is not beaten
     * by a margin of IQ3_CAND_MARGIN by one other point over the whole of the
     * cell's box (level 0 [0,4], 1..5 [4l,4l+4], 6 [24,28.5], 7 [28.5,64]).
     * The float32 scores of the seed's search are good to ~0.006 there, so
     * the float32 argmin, ties included, is always on the list. */
    const uint16_t *cand_off;  /* [4097]: iq3_cand_off */
    const uint8_t *cand;       /* iq3_cand, IQ3_CAND_PAD readable past the end */
    /* low[j][0 .. n_low[j]): the grid points whose coordinate j is at the
     * smallest level, in index order: where quality mode looks for a group's
     * point when a parity flip makes coordinate j's target negative. */
    uint8_t low[4][256 + IQ3_CAND_PAD];
    int n_low[4];
} iq3_tables;


/* The compiled-in lists (iq3_cand.c, generated; do not edit by hand). */
extern const uint16_t iq3_cand_off[4097];
extern const uint8_t iq3_cand[];

/* Fills everything but the lists from the grid and points at the
 * compiled-in lists. Cheap (no search), so callers may build it per call. */
void iq3_tables_init(iq3_tables *t);

/* Builds the candidate lists described above from t's grid into off/cand
 * (cand holds cap entries); returns the number of entries. This is the
 * generator's code, and the test's check that iq3_cand.c is still right. */
int iq3_build_candidates(const iq3_tables *t, uint16_t off[4097], uint8_t *cand, int cap);

/* The value of each level in grid units (the grid bytes halved). */
static const float IQ3_LEVELS[8] = { 2, 6, 10, 14, 18, 22, 26, 31 };

/* Per-coordinate level (0..7) of c in weight units: the nearest of
 * 2,6,...,26,31, boundaries 4,8,...,24 and 28.5; negative c is level 0. */
static inline int iq3_level(float c)
{
    if (c >= 28.5f) return 7;
    if (c < 4.0f) return 0;
    int l = (int)(c * 0.25f);
    return l > 6 ? 6 : l;
}

/* Cell code of c: level of coordinate j in bits 3j..3j+2. */
static inline int iq3_cell_code(const float c[4])
{
    return iq3_level(c[0]) | iq3_level(c[1]) << 3 | iq3_level(c[2]) << 6 | iq3_level(c[3]) << 9;
}

/* Seed-exact nearest: argmin over i of g2[i] - 2*(c . g[i]) in float32 with
 * the dot product as an fma chain (what the BLAS behind numpy's `c @ g.T`
 * does), first minimum wins. */
int iq3_nearest_ref_scalar(const iq3_tables *t, const float c[4]);
int iq3_nearest_ref_avx2(const iq3_tables *t, const float c[4]);
/* argmin of sum_j w[j] * (c[j] - g[i][j])^2 over the n points of list
 * (in list order), first minimum wins. */
int iq3_nearest_w_among(const iq3_tables *t, const float c[4], const float w[4], const uint8_t *list, int n);
/* Its AVX2 twin (the same answer); list must be readable 8 bytes past n. */
int iq3_nearest_w_among_avx2(const iq3_tables *t, const float c[4], const float w[4], const uint8_t *list, int n);
/* argmin of sum_j w[j] * (c[j] - g[i][j])^2, first minimum wins. */
int iq3_nearest_w_scalar(const iq3_tables *t, const float c[4], const float w[4]);
int iq3_nearest_w_avx2(const iq3_tables *t, const float c[4], const float w[4]);

/* Grid index of the per-coordinate nearest lattice cell when that cell is a
 * grid point (then it is the nearest grid point), else -1. With want_margin
 * it also returns -1 when some coordinate sits so close to a rounding
 * boundary, or so far out, that float32 rounding could change the winner. */
int iq3_cell_lookup(const iq3_tables *t, const float c[4], int want_margin);

/* The cell of c for the candidate lists, or -1 when some coordinate is
 * outside [0, IQ3_CAND_CMAX] (or the cell has no list): then scan all 256.
 * *on_grid_safe: the cell is a grid point and no coordinate is within 0.02
 * of a rounding boundary, so that point is the seed's float32 argmin. */
int iq3_cell_of(const iq3_tables *t, const float c[4], int *on_grid_safe);
/* The searches above restricted to a cell's candidate list; same operations
 * per point, first minimum in index order, hence the same answer. */
int iq3_nearest_ref_list(const iq3_tables *t, const float c[4], int cell);
int iq3_nearest_ref_list_avx2(const iq3_tables *t, const float c[4], int cell);
/* The body of both: fmaf is one correctly rounded operation either way, a
 * library call in the portable build and one instruction in the AVX2 one. */
static inline int iq3_nearest_ref_list_body(const iq3_tables *t, const float c[4], int cell)
{
    const uint8_t *p = t->cand + t->cand_off[cell];
    int n = t->cand_off[cell + 1] - t->cand_off[cell], best = p[0];
    float bs = 0;
    for (int q = 0; q < n; q++) {
        int i = p[q];
        float s = c[0] * t->g[i][0];
        s = fmaf(c[1], t->g[i][1], s);
        s = fmaf(c[2], t->g[i][2], s);
        s = fmaf(c[3], t->g[i][3], s);
        float sc = t->g2[i] - (s + s);
        if (q == 0 || sc < bs) { bs = sc; best = i; }
    }
    return best;
}
int iq3_nearest_w_list(const iq3_tables *t, const float c[4], const float w[4], int cell);
int iq3_nearest_w_list_avx2(const iq3_tables *t, const float c[4], const float w[4], int cell);

/* Cells of the 8 groups of 4 in 32 coordinates at once: cell[q] the cell
 * code of c[4q..4q+3] (as iq3_cell_code); bit q of *in set when all four are
 * in [0, IQ3_CAND_CMAX], bit q of *safe when also none is within 0.02 of a
 * rounding boundary (iq3_cell_of's on_grid_safe, before the on-grid test).
 * The AVX2 twin does the same exact float operations. */
void iq3_cells32_scalar(const float *c, int cell[8], unsigned *in, unsigned *safe);
void iq3_cells32_avx2(const float *c, int cell[8], unsigned *in, unsigned *safe);
static inline void iq3_cells32(const float *c, int cell[8], unsigned *in, unsigned *safe, int simd)
{
    if (simd) iq3_cells32_avx2(c, cell, in, safe);
    else iq3_cells32_scalar(c, cell, in, safe);
}

/* Sum over 32 magnitudes m of w * (m - L*db)^2 with L the nearest grid level
 * (2,6,...,26,31): a lower bound on the error of any grid choice at db.
 * w NULL means ones. Summed in 8 lanes (i % 8), then pairwise, so the AVX2
 * flavour returns the same float. */
float iq3_lattice_bound_scalar(const float *m, float db, const float *w);
float iq3_lattice_bound_avx2(const float *m, float db, const float *w);
static inline float iq3_lattice_bound(const float *m, float db, const float *w, int simd)
{
    return simd ? iq3_lattice_bound_avx2(m, db, w) : iq3_lattice_bound_scalar(m, db, w);
}

/* One block -> 256 floats with d the block's decoded fp16 scale; the same
 * bits as the scalar decode in iq3.c. Only called when the CPU has AVX2. */
void iq3_decode_block_avx2(const iq3_block *b, float d, float *y);
/* nb blocks -> nb*256 floats; simd 0 forces the scalar decode (what
 * iq3_decode does on a CPU without AVX2), so tests can compare the two. */
void iq3_decode_blocks(const uint8_t *in, int64_t nb, float *out, int simd);

/* One 256-weight block -> one iq3_block. */
void iq3_encode_block_ref(const iq3_tables *t, const float *x, iq3_block *out, int simd);
void iq3_encode_block_quality(const iq3_tables *t, const float *x, const float *imp,
                              iq3_block *out, int simd);
/* Quality mode's choice for one 32-weight sub-block (x, imp: its 32) under
 * super-scale d, written as sub-block ib of out; q gets the 32 values it
 * decodes to. Under the d the block search chose, the choice that search
 * made. */
void iq3_encode_sub_quality(const iq3_tables *t, const float *x, const float *imp, float d, int simd,
                            iq3_block *out, int ib, float q[32]);
/* GPTQ over one row of k (iq3.h: iq3_encode_opts.gptq_u); work: k doubles. */
void iq3_encode_row_gptq(const iq3_tables *t, const float *x, int64_t k, const double *u, const float *imp,
                         uint8_t *out, double *work, int simd);

#endif
