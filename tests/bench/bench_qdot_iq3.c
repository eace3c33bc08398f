/* bench_qdot_iq3.c: in-cache single-thread speed of the IQ3 integer dot
 * (qdot[WF_IQ3], and qdot4[WF_IQ3] where a table has one) in every kernel
 * table the CPU has, in G weights/s, beside the scalar kernel as the
 * baseline (ratio = table / scalar, measured in the same run), and the
 * Q8_0-shaped S8 dot of the same shape for scale; and qdotn[WF_IQ3] (one
 * row against 8 tokens, what a prefill runs) in G weight-token products/s
 * beside the same table's qdot. 256 rows x 2048 columns
 * (200 KB of IQ3 blocks: L2-resident), random grid indices, signs and
 * sub-scales, d = 1/64; the median of 9 timings of whole passes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fp16.h"
#include "formats/iq3.h"
#include "runtime/kernels/kernels.h"
#include "tests/bench/bench_util.h"

#define ROWS 256
#define COLS 2048
#define REPS 9

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

static volatile float sink;

/* Median G weights/s of REPS passes of `passes` sweeps over all rows. */
static double time_rows(const kernels *k, const weight *w, const qrow *a, int four, int passes)
{
    double v[REPS];
    float y[ROWS * KQ_NT_MAX];
    const int nt = four == 2 ? KQ_NT_MAX : 1;
    for (int rep = 0; rep < REPS; rep++) {
        const double t0 = bench_now();
        for (int p = 0; p < passes; p++) {
            if (four == 2)
                for (int64_t r = 0; r < ROWS; r++) k->qdotn[w->form](w, r, a, KQ_NT_MAX, y + r, ROWS);
            else if (four)
                for (int64_t r = 0; r < ROWS; r += 4) k->qdot4[w->form](w, r, 1, a, y + r);
            else
                for (int64_t r = 0; r < ROWS; r++) y[r] = k->qdot[w->form](w, r, a);
            sink = y[p % ROWS];
        }
        v[rep] = (double)passes * ROWS * COLS * nt / (bench_now() - t0) / 1e9;
    }
    return bench_median(v, REPS);
}

int main(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    const size_t rb = iq3_row_bytes(COLS);
    uint8_t *iq = malloc(ROWS * rb), *s8 = malloc((size_t)ROWS * COLS);
    float *sc = malloc((size_t)ROWS * COLS / 32 * sizeof *sc), *x = malloc(COLS * sizeof *x);
    int8_t *q = malloc(COLS);
    float *d = malloc(COLS / 32 * sizeof *d), *deq = malloc(COLS * sizeof *deq);
    int32_t *s16 = malloc(COLS / 16 * sizeof *s16);
    if (!iq || !s8 || !sc || !x || !q || !d || !deq || !s16) { printf("out of memory\n"); return 1; }
    for (size_t i = 0; i < ROWS * rb; i++) iq[i] = (uint8_t)rnd(&s);
    const uint16_t dh = f32_to_fp16(1.0f / 64);
    for (size_t b = 0; b < ROWS * rb / IQ3_BLOCK_BYTES; b++) memcpy(iq + b * IQ3_BLOCK_BYTES + 96, &dh, 2);
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++) s8[i] = (uint8_t)rnd(&s);
    for (size_t i = 0; i < (size_t)ROWS * COLS / 32; i++) sc[i] = 0.001f * (float)(rnd(&s) % 100);
    for (int i = 0; i < COLS; i++) x[i] = (float)((int64_t)(rnd(&s) % 2001) - 1000) / 1000.0f;

    weight wi = { 0 }, ws = { 0 };
    wi.form = WF_IQ3; wi.rows = ROWS; wi.cols = COLS; wi.data = iq; wi.act = WA_Q8_K;
    ws.form = WF_SCODE; ws.rows = ROWS; ws.cols = COLS; ws.data = s8; ws.act = WA_Q8_0;
    ws.code_bits = 8; ws.code_bias = -128; ws.group = 32; ws.scales = sc;
    char err[256];
    if (weight_check(&wi, "iq3", err, sizeof err) || weight_check(&ws, "s8", err, sizeof err)) {
        printf("%s\n", err);
        return 1;
    }
    const kernels *tabs[KERNELS_MAX];
    const int n_tabs = kernels_runnable(tabs);
    qrow ak = { WA_Q8_K, COLS, q, d, s16, deq, NULL, NULL, NULL };
    int8_t *q0 = malloc(COLS);
    float *d0 = malloc(COLS / 32 * sizeof *d0), *deq0 = malloc(COLS * sizeof *deq0);
    int32_t *s160 = malloc(COLS / 16 * sizeof *s160);
    qrow a0 = { WA_Q8_0, COLS, q0, d0, s160, deq0, NULL, NULL, NULL };
    qrow_fill(tabs[0], &ak, x);
    qrow_fill(tabs[0], &a0, x);
    qrow an[KQ_NT_MAX]; /* qdotn's tokens: the same row, its own copy each */
    int8_t *qn = malloc((size_t)KQ_NT_MAX * COLS);
    if (!q0 || !d0 || !deq0 || !s160 || !qn) { printf("out of memory\n"); return 1; }
    for (int t = 0; t < KQ_NT_MAX; t++) {
        memcpy(qn + (size_t)t * COLS, q, COLS);
        an[t] = ak;
        an[t].q = qn + (size_t)t * COLS;
    }
    printf("in-cache qdot, 1 thread, %d x %d (IQ3 %.0f KB, S8 %.0f KB), median of %d, G weights/s:\n", ROWS, COLS,
           ROWS * rb / 1e3, (double)ROWS * COLS / 1e3, REPS);
    double base_iq3 = 0, base_s8 = 0;
    for (int t = 0; t < n_tabs; t++) {
        const kernels *k = tabs[t];
        const int passes = t == 0 ? 4 : 40;
        const double g1 = time_rows(k, &wi, &ak, 0, passes);
        const double g4 = k->qdot4[WF_IQ3] ? time_rows(k, &wi, &ak, 1, passes) : 0;
        const double gs = time_rows(k, &ws, &a0, k->qdot4[WF_SCODE] != NULL, passes);
        if (t == 0) { base_iq3 = g1; base_s8 = gs; }
        printf("  %-24s IQ3 qdot %6.2f (%5.1f x scalar)", k->name, g1, g1 / base_iq3);
        if (g4 > 0) printf("  qdot4 %6.2f (%5.1f x)", g4, g4 / base_iq3);
        else printf("  qdot4   none          ");
        printf("   S8 %s %6.2f (%5.1f x scalar)", k->qdot4[WF_SCODE] ? "qdot4" : "qdot ", gs, gs / base_s8);
        if (k->qdotn[WF_IQ3]) {
            const double gn = time_rows(k, &wi, an, 2, passes);
            printf("   IQ3 qdotn x%d %6.2f (%4.1f x its qdot)", KQ_NT_MAX, gn, gn / g1);
        }
        printf("\n");
    }
    free(iq); free(s8); free(sc); free(x); free(q); free(d); free(deq); free(s16);
    free(q0); free(d0); free(deq0); free(s160); free(qn);
    return 0;
}
