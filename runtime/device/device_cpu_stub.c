/* device_cpu_stub.c: device.h in the CPU-only build (bin/strata). The CUDA
 * build links runtime/device/cuda/backend_cuda.c instead of this file. */
#include "runtime/device/device.h"

#include <stdio.h>
#include <string.h>

bool device_cuda_built(void) { return false; }

int device_attach(model *m, const device_opts *o, char *note, size_t notelen, char *err, size_t errlen)
{
    (void)m;
    if (notelen) note[0] = 0;
    if (o && o->kind == DEVICE_CUDA) {
        snprintf(err, errlen, "this strata was built without CUDA (make strata-cuda)");
        return -1;
    }
    if (o && o->kind == DEVICE_AUTO && o->kind_given)
        snprintf(note, notelen, "--device auto: this strata was built without CUDA; running on the CPU");
    return 0;
}

void device_get_stats(const model *m, device_stats *out)
{
    (void)m;
    memset(out, 0, sizeof *out);
    out->miss = "";
}
