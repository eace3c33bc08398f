/* backend_cpu_norm.c: the CPU's RMS norm of one row (backend_cpu.h), which
 * the norm op (backend_cpu.c) and the Gated DeltaNet's gated norm
 * (backend_cpu_gdn.c) share: a double sum of squares, one float scale. */
#include "runtime/model/backend_cpu.h"

#include <math.h>

void cpu_rms_row(float *out, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) {
        float v = x[i] * scale;
        out[i] = w ? v * w[i] : v; /* no weight: ggml_rms_norm alone */
    }
}
