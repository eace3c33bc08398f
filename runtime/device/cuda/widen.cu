// widen.cu: engine-form widening on the GPU: fp16 scale planes -> f32, and
// bf16 -> f32. Exact conversions (the loader's rule: engine form differs from
// pack form only by exact widening). Every launch is checked and a failure
// names the kernel.
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>

__global__ void strata_widen_fp16_kernel(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __half2float(__ushort_as_half(src[i]));
}

__global__ void strata_widen_bf16_kernel(const uint16_t *src, float *dst, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __uint_as_float((uint32_t)src[i] << 16);
}

static int launch_check(const char *kernel, char *err, size_t errlen)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "CUDA kernel %s: %s", kernel, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

extern "C" int strata_cuda_widen(int is_bf16, const uint16_t *src, float *dst, int64_t n,
                                 cudaStream_t stream, char *err, size_t errlen)
{
    if (n <= 0) return 0;
    const int threads = 256;
    unsigned blocks = (unsigned)((n + threads - 1) / threads);
    if (is_bf16) {
        strata_widen_bf16_kernel<<<blocks, threads, 0, stream>>>(src, dst, n);
        return launch_check("strata_widen_bf16_kernel", err, errlen);
    }
    strata_widen_fp16_kernel<<<blocks, threads, 0, stream>>>(src, dst, n);
    return launch_check("strata_widen_fp16_kernel", err, errlen);
}
