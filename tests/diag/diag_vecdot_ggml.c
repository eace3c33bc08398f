/* diag_vecdot_ggml.c: a diagnostic (not built by make, not run by CI):
 * llama.cpp's own integer dot of each row of a ggml-type matrix against
 * each row of an f32 activation, through the CPU backend library named on
 * the command line (its ggml_get_type_traits_cpu: the activation rounded
 * by the type's vec_dot_type from_float, then vec_dot), written as f32,
 * activation-major (out[x * rows + r]).
 *   diag_vecdot_ggml BACKEND.so TYPE_ID ROWS COLS W.bin X.f32 N_X OUT.f32
 * Built and run by tests/diag/diag_vecdot_llamacpp.sh. */
#include "ggml-cpu.h"
#include "ggml.h"
#include "diag_vecdot_io.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 9) { fprintf(stderr, "usage: diag_vecdot_ggml BACKEND.so TYPE_ID ROWS COLS W.bin X.f32 N_X OUT.f32\n"); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "diag_vecdot_ggml: %s\n", dlerror()); return 1; }
    void (*cpu_init)(void) = (void (*)(void))dlsym(h, "ggml_cpu_init");
    const struct ggml_type_traits_cpu *(*traits)(enum ggml_type) =
        (const struct ggml_type_traits_cpu *(*)(enum ggml_type))dlsym(h, "ggml_get_type_traits_cpu");
    if (!cpu_init || !traits) { fprintf(stderr, "diag_vecdot_ggml: %s lacks the CPU traits\n", argv[1]); return 1; }
    cpu_init();
    const enum ggml_type t = (enum ggml_type)atoi(argv[2]);
    const long rows = atol(argv[3]), cols = atol(argv[4]), nx = atol(argv[7]);
    const struct ggml_type_traits_cpu *tt = traits(t), *vt = traits(tt->vec_dot_type);
    if (!tt->vec_dot || !vt->from_float) { fprintf(stderr, "diag_vecdot_ggml: type %d has no vec_dot\n", (int)t); return 1; }
    const size_t rb = ggml_row_size(t, cols), xb = ggml_row_size(tt->vec_dot_type, cols);
    const char *w = vd_slurp("diag_vecdot_ggml", argv[5], rb * (size_t)rows);
    const float *x = vd_slurp("diag_vecdot_ggml", argv[6], sizeof(float) * (size_t)(cols * nx));
    char *xq = malloc(xb);
    float *out = malloc(sizeof(float) * (size_t)(rows * nx));
    for (long i = 0; i < nx; i++) {
        vt->from_float(x + i * cols, xq, cols);
        for (long r = 0; r < rows; r++) tt->vec_dot((int)cols, &out[i * rows + r], 0, w + r * rb, 0, xq, 0, 1);
    }
    if (vd_write("diag_vecdot_ggml", argv[8], out, (size_t)(rows * nx))) return 1;
    return 0;
}
