/* diag_vecdot_strata.c: a diagnostic (not built by make, not run by CI):
 * strata's integer dot (qdot) of each row of a native ggml-type matrix
 * against each row of an f32 activation, rounded by strata's quantizer,
 * with every kernel table this CPU has, each written as f32,
 * activation-major, to OUT_PREFIX.<table name>.f32; the table names on
 * stdout, one a line.
 *   diag_vecdot_strata TYPE_ID ROWS COLS W.bin X.f32 N_X OUT_PREFIX
 * Built and run by tests/diag/diag_vecdot_llamacpp.sh, which compares
 * these with diag_vecdot_ggml's. */
#include "formats/ggml_types.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/weight.h"

#include "diag_vecdot_io.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 8) { fprintf(stderr, "usage: diag_vecdot_strata TYPE_ID ROWS COLS W.bin X.f32 N_X OUT_PREFIX\n"); return 2; }
    const int type = atoi(argv[1]);
    const long rows = atol(argv[2]), cols = atol(argv[3]), nx = atol(argv[6]);
    const size_t rb = ggml_row_bytes(type, cols);
    if (!rb) { fprintf(stderr, "diag_vecdot_strata: type %d cannot hold rows of %ld\n", type, cols); return 1; }
    weight w = { .form = WF_GGML, .rows = rows, .cols = cols, .ggml_type = type, .act = kernels_ggml_act(type) };
    w.data = vd_slurp("diag_vecdot_strata", argv[4], rb * (size_t)rows);
    char err[256];
    if (weight_check(&w, "diag", err, sizeof err)) { fprintf(stderr, "diag_vecdot_strata: %s\n", err); return 1; }
    if (!kernels_qdot_ok(&w)) { fprintf(stderr, "diag_vecdot_strata: type %d has no integer dot\n", type); return 1; }
    const float *x = vd_slurp("diag_vecdot_strata", argv[5], sizeof(float) * (size_t)(cols * nx));
    int8_t *q = malloc((size_t)cols);
    float *d = malloc(sizeof(float) * (size_t)(cols / 32)), *deq = malloc(sizeof(float) * (size_t)cols);
    float *s1 = malloc(sizeof(float) * (size_t)(cols / 32)); /* Q8_1's block sums (Q4_1, Q5_1) */
    int32_t *s16 = malloc(sizeof(int32_t) * (size_t)(cols / 16));
    float *out = malloc(sizeof(float) * (size_t)(rows * nx));
    const kernels *tabs[KERNELS_MAX];
    const int n_tabs = kernels_runnable(tabs);
    for (int k = 0; k < n_tabs; k++) {
        for (long i = 0; i < nx; i++) {
            qrow a = { w.act, cols, q, d, s16, deq, s1, NULL, NULL };
            qrow_fill(tabs[k], &a, x + i * cols);
            for (long r = 0; r < rows; r++) out[i * rows + r] = tabs[k]->qdot[WF_GGML](&w, r, &a);
        }
        char path[1024];
        snprintf(path, sizeof path, "%s.%s.f32", argv[7], tabs[k]->name);
        if (vd_write("diag_vecdot_strata", path, out, (size_t)(rows * nx))) return 1;
        printf("%s\n", tabs[k]->name);
    }
    return 0;
}
