/* backend_cpu.h: what the CPU backend's files share (private to
 * runtime/model/): backend_cpu.c builds the ops table from its own ops and
 * these, the MoE and FFN ops of backend_cpu_moe.c and the Gated DeltaNet
 * layer of backend_cpu_gdn.c. */
#ifndef STRATA_BACKEND_CPU_H
#define STRATA_BACKEND_CPU_H

#include "runtime/model/model_impl.h"

int cpu_add_bias(void *c, float *y, const float *bias, int rows, int n);
int cpu_ffn(void *c, const weight *gate, const weight *up, const weight *down, const float *x, int B, float *out);
int cpu_route(void *c, int l, int B, const int **sel);
int cpu_moe(void *c, int l, int B);
int cpu_gate_add(void *c, const weight *router, const float *h, const float *y, int B, int n, float *o);
/* out = x / rms(x) * w (w NULL: no weight), one row of n, as ggml_rms_norm then ggml_mul. */
void cpu_rms_row(float *out, const float *x, const float *w, int n, float eps);
/* backend.h's gdn and mul_sigmoid ops. */
int cpu_gdn(void *c, int l, int B, const float *h, float *out);
int cpu_mul_sigmoid(void *c, float *x, const float *g, size_t n);

#endif
