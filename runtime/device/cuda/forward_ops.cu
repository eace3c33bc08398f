// forward_ops.cu: the small kernels the GPU forward pass (backend_cuda.c)
// needs beyond ops.cu: activation rounding as the CPU does it for quantized
// weights (ggml's Q8_0 / Q8_K, kernels_q8.c), rotated experts' inputs
// (formats/hadamard.h), bias rows, the MoE gather /
// scatter / weighted combine, the shared expert's sigmoid gate, copies on the
// copy stream, and a device-to-device bandwidth measurement.
#include "runtime/device/cuda/scuda_impl.cuh"

// ------------------------------------------------------------------ activation rounding

// One thread per 32-element block: kscalar_quant_q8_0 then q * d.
__global__ void scuda_act_q8_0_kernel(const float *x, float *out, int64_t nblk)
{
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblk) return;
    const float *xb = x + b * 32;
    float *ob = out + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xb[j]));
    const float db = amax / 127.0f, id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    const float d = __half2float(__float2half_rn(db));
    for (int j = 0; j < 32; j++) {
        const int8_t q = (int8_t)rintf(__fmul_rn(xb[j], id));
        ob[j] = __fmul_rn((float)q, d);
    }
}

// One thread per 256-element block: kscalar_quant_q8_k then q * d.
__global__ void scuda_act_q8_k_kernel(const float *x, float *out, int64_t nblk)
{
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblk) return;
    const float *xb = x + b * 256;
    float *ob = out + b * 256;
    float amax = 0.0f, mx = 0.0f;
    for (int j = 0; j < 256; j++) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) { amax = ax; mx = xb[j]; }
    }
    if (amax == 0.0f) {
        for (int j = 0; j < 256; j++) ob[j] = 0.0f;
        return;
    }
    const float iscale = -127.0f / mx, d = 1.0f / iscale;
    for (int j = 0; j < 256; j++) {
        int v = __float2int_rn(__fmul_rn(iscale, xb[j]));   // round half to even, as nearest_int()
        if (v > 127) v = 127;
        ob[j] = __fmul_rn((float)v, d);
    }
}

extern "C" int scuda_act_round(scuda_ctx *c, int act, const float *x, float *out, int rows, int64_t cols, char *err,
                               size_t errlen)
{
    const int blk = act == WA_Q8_0 ? 32 : act == WA_Q8_K ? 256 : 0;
    if (!blk || cols % blk) {
        snprintf(err, errlen, "CUDA act_round: activation kind %d with %lld columns", act, (long long)cols);
        return -1;
    }
    const int64_t nblk = (int64_t)rows * cols / blk;
    if (nblk <= 0) return 0;
    if (blk == 32) {
        scuda_act_q8_0_kernel<<<scuda_blocks(nblk, 128), 128, 0, c->stream>>>(x, out, nblk);
        SCUDA_LAUNCHED("scuda_act_q8_0_kernel");
    } else {
        scuda_act_q8_k_kernel<<<scuda_blocks(nblk, 128), 128, 0, c->stream>>>(x, out, nblk);
        SCUDA_LAUNCHED("scuda_act_q8_k_kernel");
    }
    return 0;
}

// ------------------------------------------------------------------ Hadamard rotation

// One CUDA block per Hadamard block of b floats, in shared memory: the
// butterflies of formats/hadamard.c (strides 1, 2, ... b/2, a rounded add
// and subtract each), then the product with the same float 1/sqrt(b), so
// the rotated rows are the CPU's bit for bit.
__global__ void scuda_hadamard_kernel(float *x, int64_t b, float scale)
{
    extern __shared__ float sh[];
    float *blk = x + (int64_t)blockIdx.x * b;
    for (int64_t j = threadIdx.x; j < b; j += blockDim.x) sh[j] = blk[j];
    __syncthreads();
    for (int64_t h = 1; h < b; h *= 2) {
        for (int64_t p = threadIdx.x; p < b / 2; p += blockDim.x) {
            const int64_t j = p / h * 2 * h + p % h;
            const float u = sh[j], v = sh[j + h];
            sh[j] = __fadd_rn(u, v);
            sh[j + h] = __fsub_rn(u, v);
        }
        __syncthreads();
    }
    for (int64_t j = threadIdx.x; j < b; j += blockDim.x) blk[j] = __fmul_rn(sh[j], scale);
}

extern "C" int scuda_hadamard(scuda_ctx *c, float *x, int rows, int64_t cols, int64_t b, char *err, size_t errlen)
{
    if (b < 2 || (b & (b - 1)) || cols % b || b > SCUDA_HADAMARD_MAX) {
        snprintf(err, errlen, "CUDA hadamard: blocks of %lld on rows of %lld (a power of two up to %d dividing them)",
                 (long long)b, (long long)cols, SCUDA_HADAMARD_MAX);
        return -1;
    }
    const int64_t nblk = (int64_t)rows * cols / b;
    if (nblk <= 0) return 0;
    const int threads = b / 2 < 256 ? (int)(b / 2) : 256;
    const float scale = (float)(1.0 / sqrt((double)b)); // formats/hadamard.c's factor
    scuda_hadamard_kernel<<<(unsigned)nblk, threads, (size_t)b * sizeof(float), c->stream>>>(x, b, scale);
    SCUDA_LAUNCHED("scuda_hadamard_kernel");
    return 0;
}

// ------------------------------------------------------------------ rows

__global__ void scuda_add_bias_kernel(float *y, const float *bias, int64_t total, int n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) y[i] = __fadd_rn(y[i], bias[i % n]);
}

extern "C" int scuda_add_bias(scuda_ctx *c, float *y, const float *bias, int rows, int n, char *err, size_t errlen)
{
    const int64_t total = (int64_t)rows * n;
    if (total <= 0) return 0;
    scuda_add_bias_kernel<<<scuda_blocks(total, 256), 256, 0, c->stream>>>(y, bias, total, n);
    SCUDA_LAUNCHED("scuda_add_bias_kernel");
    return 0;
}

// Block r copies row idx[r] / div of src into row r of dst.
__global__ void scuda_gather_rows_kernel(const float *src, const int32_t *idx, int div, int n, float *dst)
{
    const float *s = src + (size_t)(idx[blockIdx.x] / div) * n;
    float *d = dst + (size_t)blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
}

extern "C" int scuda_gather_rows(scuda_ctx *c, const float *src, const int32_t *idx, int div, int rows, int n,
                                 float *dst, char *err, size_t errlen)
{
    if (rows <= 0 || n <= 0) return 0;
    if (div < 1) {
        snprintf(err, errlen, "CUDA gather_rows: divisor %d", div);
        return -1;
    }
    scuda_gather_rows_kernel<<<rows, 256, 0, c->stream>>>(src, idx, div, n, dst);
    SCUDA_LAUNCHED("scuda_gather_rows_kernel");
    return 0;
}

// Block r copies row r of src into row idx[r] of dst.
__global__ void scuda_scatter_rows_kernel(const float *src, const int32_t *idx, int n, float *dst)
{
    const float *s = src + (size_t)blockIdx.x * n;
    float *d = dst + (size_t)idx[blockIdx.x] * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
}

extern "C" int scuda_scatter_rows(scuda_ctx *c, const float *src, const int32_t *idx, int rows, int n, float *dst,
                                  char *err, size_t errlen)
{
    if (rows <= 0 || n <= 0) return 0;
    scuda_scatter_rows_kernel<<<rows, 256, 0, c->stream>>>(src, idx, n, dst);
    SCUDA_LAUNCHED("scuda_scatter_rows_kernel");
    return 0;
}

// out[b][i] = sum_j w[b][j] * eo[b*k+j][i], in top-k order, each product rounded.
__global__ void scuda_moe_combine_kernel(const float *eo, const float *w, int k, int n, int64_t total, float *out)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    const int64_t b = t / n, i = t % n;
    float acc = 0.0f;
    for (int j = 0; j < k; j++) acc = __fadd_rn(acc, __fmul_rn(w[b * k + j], eo[(b * k + j) * n + i]));
    out[t] = acc;
}

extern "C" int scuda_moe_combine(scuda_ctx *c, const float *eo, const float *w, int rows, int k, int n, float *out,
                                 char *err, size_t errlen)
{
    const int64_t total = (int64_t)rows * n;
    if (total <= 0) return 0;
    scuda_moe_combine_kernel<<<scuda_blocks(total, 256), 256, 0, c->stream>>>(eo, w, k, n, total, out);
    SCUDA_LAUNCHED("scuda_moe_combine_kernel");
    return 0;
}

// out[b][i] += g_b * x[b][i], g_b = sigmoid(gate[b]) (1 without a gate).
__global__ void scuda_gate_add_kernel(const float *x, const float *gate, int n, int64_t total, float *out)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    const float g = gate ? 1.0f / (1.0f + expf(-gate[t / n])) : 1.0f;
    out[t] = __fadd_rn(out[t], __fmul_rn(g, x[t]));
}

extern "C" int scuda_gate_add(scuda_ctx *c, const float *x, const float *gate, int rows, int n, float *out, char *err,
                              size_t errlen)
{
    const int64_t total = (int64_t)rows * n;
    if (total <= 0) return 0;
    scuda_gate_add_kernel<<<scuda_blocks(total, 256), 256, 0, c->stream>>>(x, gate, n, total, out);
    SCUDA_LAUNCHED("scuda_gate_add_kernel");
    return 0;
}

// ------------------------------------------------------------------ copies

extern "C" int scuda_copy_async(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    if (!bytes) return 0;
    SCUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->copy_stream),
                "cudaMemcpyAsync (copy stream)");
    return 0;
}

extern "C" int scuda_copy_sync(scuda_ctx *c, char *err, size_t errlen)
{
    SCUDA_CHECK(cudaStreamSynchronize(c->copy_stream), "cudaStreamSynchronize (copy stream)");
    return 0;
}

extern "C" int scuda_copy_d2d(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    if (!bytes) return 0;
    SCUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream), "cudaMemcpyAsync (device)");
    return 0;
}

static int measure(scuda_ctx *c, char *a, char *b, size_t bytes, cudaEvent_t e0, cudaEvent_t e1, double *best,
                   char *err, size_t errlen)
{
    for (int rep = 0; rep < 6; rep++) {
        SCUDA_CHECK(cudaEventRecord(e0, c->stream), "cudaEventRecord (bandwidth)");
        SCUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c->stream), "cudaMemcpyAsync (bandwidth)");
        SCUDA_CHECK(cudaEventRecord(e1, c->stream), "cudaEventRecord (bandwidth)");
        SCUDA_CHECK(cudaEventSynchronize(e1), "cudaEventSynchronize (bandwidth)");
        float ms = 0.0f;
        SCUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime (bandwidth)");
        // the first copy warms up; a copy reads and writes every byte
        if (rep > 0 && ms > 0.0f && 2.0 * (double)bytes / (ms * 1e-3) > *best) *best = 2.0 * (double)bytes / (ms * 1e-3);
    }
    return 0;
}

extern "C" int scuda_measure_bandwidth(scuda_ctx *c, size_t bytes, double *bytes_per_s, char *err, size_t errlen)
{
    *bytes_per_s = 0.0;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = -1;
    if (scuda_alloc(c, &a, bytes, err, errlen) || scuda_alloc(c, &b, bytes, err, errlen)) goto out;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        snprintf(err, errlen, "CUDA cudaEventCreate (bandwidth): %s", cudaGetErrorString(cudaGetLastError()));
        goto out;
    }
    if (scuda_memset(c, a, 1, bytes, err, errlen)) goto out;
    rc = measure(c, (char *)a, (char *)b, bytes, e0, e1, bytes_per_s, err, errlen);
out:
    if (e0) (void)cudaEventDestroy(e0);
    if (e1) (void)cudaEventDestroy(e1);
    scuda_dfree(c, a);
    scuda_dfree(c, b);
    return rc;
}
