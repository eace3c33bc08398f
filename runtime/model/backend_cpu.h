/* backend_cpu.h: what the CPU backend's two files share (private to
 * runtime/model/): backend_cpu.c builds the ops table from its own ops and
 * these, the MoE and FFN ops of backend_cpu_moe.c. */
#ifndef STRATA_BACKEND_CPU_H
#define STRATA_BACKEND_CPU_H

#include "runtime/model/model_impl.h"

int cpu_add_bias(void *c, float *y, const float *bias, int rows, int n);
int cpu_ffn(void *c, const weight *gate, const weight *up, const weight *down, const float *x, int B, float *out);
int cpu_route(void *c, int l, int B, const int **sel);
int cpu_moe(void *c, int l, int B);
int cpu_gate_add(void *c, const weight *router, const float *h, const float *y, int B, int n, float *o);

#endif
