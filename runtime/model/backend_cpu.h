/* backend_cpu.h: what the CPU backend's files share (private to
 * runtime/model/): backend_cpu.c builds the ops table from its own ops and
 * these, the MoE and FFN ops of backend_cpu_moe.c, the Gated DeltaNet
 * layer of backend_cpu_gdn.c and DSA's lightning indexer of
 * backend_cpu_dsa.c; backend_cpu_rows.c holds what they do to one row. */
#ifndef STRATA_BACKEND_CPU_H
#define STRATA_BACKEND_CPU_H

#include "runtime/model/model_impl.h"

int cpu_add_bias(void *c, float *y, const float *bias, int rows, int n);
int cpu_ffn(void *c, const weight *gate, const weight *up, const weight *down, const float *x, int B, float *out);
int cpu_route(void *c, int l, int B, const int **sel);
int cpu_moe(void *c, int l, int B);
int cpu_gate_add(void *c, const weight *router, const float *h, const float *y, int B, int n, float *o);
/* backend_cpu_rows.c: out = x / rms(x) * w (w NULL: no weight), one row of n, as ggml_rms_norm then
 * ggml_mul; out = (x - mean) / sqrt(var + eps) * w + b (w, b NULL: none), as ggml_norm, ggml_mul,
 * ggml_add; v's first n_rot dimensions rotated by the angles' cos|sin table cs (n_rot / 2 each). */
void cpu_rms_row(float *out, const float *x, const float *w, int n, float eps);
void cpu_layer_norm_row(float *out, const float *x, const float *w, const float *b, int n, float eps);
void cpu_rope_head(float *v, const float *cs, int n_rot, rope_kind kind);
/* backend.h's gdn and mul_sigmoid ops. */
int cpu_gdn(void *c, int l, int B, const float *h, float *out);
int cpu_mul_sigmoid(void *c, float *x, const float *g, size_t n);
/* backend.h's indexer op (backend_cpu_dsa.c). */
int cpu_indexer(void *c, int l, int B, int pos0, const float *h, const float *qa);

#endif
