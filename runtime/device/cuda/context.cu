// context.cu: the CUDA backend's context (cuda_backend.h): device, streams,
// cuBLAS, the IQ3 grid in device memory, memory helpers, and the expert-slot
// device that the expert cache (expert_cache.h) drives.
#include "runtime/device/cuda/scuda_impl.cuh"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "formats/ggml_tables.h"
}

extern "C" int strata_cuda_widen(int is_bf16, const uint16_t *src, float *dst, int64_t n, cudaStream_t stream,
                                 char *err, size_t errlen);

static const char *blas_status(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "alloc failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "arch mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

static int create_parts(scuda_ctx *c, int device, size_t tile_bytes, char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    /* Without a driver the runtime answers "CUDA driver version is
     * insufficient for CUDA runtime version", which sends the user to
     * upgrade a driver they do not have: say what is missing instead. */
    int drv = 0;
    if (e == cudaErrorInsufficientDriver && (cudaDriverGetVersion(&drv) != cudaSuccess || drv == 0)) {
        snprintf(err, errlen, "no NVIDIA driver found (--device cuda needs one; --device cpu runs without)");
        return -1;
    }
    if (e == cudaErrorInsufficientDriver) {
        int rt = 0;
        cudaRuntimeGetVersion(&rt);
        snprintf(err, errlen, "the NVIDIA driver supports CUDA %d.%d, this strata-cuda was built with CUDA %d.%d: "
                 "update the driver or use --device cpu", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
        return -1;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        snprintf(err, errlen, "no NVIDIA GPU found (the driver sees no CUDA device; --device cpu runs without)");
        return -1;
    }
    if (e != cudaSuccess) {
        snprintf(err, errlen, "no CUDA device: %s", cudaGetErrorString(e));
        return -1;
    }
    if (device >= n) {
        snprintf(err, errlen, "no CUDA device %d (%d present)", device, n);
        return -1;
    }
    c->device = device;
    SCUDA_CHECK(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop;
    SCUDA_CHECK(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    snprintf(c->name, sizeof c->name, "%.200s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
             (double)prop.totalGlobalMem / (1 << 30));
    SCUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "cudaStreamCreate (compute)");
    SCUDA_CHECK(cudaStreamCreateWithFlags(&c->copy_stream, cudaStreamNonBlocking), "cudaStreamCreate (copy)");
    cublasStatus_t bs = cublasCreate(&c->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        c->blas = NULL;
        snprintf(err, errlen, "cuBLAS cublasCreate: %s", blas_status(bs));
        return -1;
    }
    bs = cublasSetStream(c->blas, c->stream);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuBLAS cublasSetStream: %s", blas_status(bs));
        return -1;
    }
    // products in full f32: no TF32 tensor-core rounding of the inputs
    bs = cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuBLAS cublasSetMathMode: %s", blas_status(bs));
        return -1;
    }
    SCUDA_CHECK(cudaMalloc((void **)&c->d_iq3_grid, sizeof ggml_iq3xxs_grid), "cudaMalloc (IQ3 grid)");
    SCUDA_CHECK(cudaMemcpy(c->d_iq3_grid, ggml_iq3xxs_grid, sizeof ggml_iq3xxs_grid, cudaMemcpyHostToDevice),
                "cudaMemcpy (IQ3 grid)");
    c->tile_floats = (tile_bytes ? tile_bytes : (size_t)64 << 20) / sizeof(float);
    SCUDA_CHECK(cudaMalloc((void **)&c->d_tile, c->tile_floats * sizeof(float)), "cudaMalloc (prefill tile)");
    return 0;
}

extern "C" scuda_ctx *scuda_create(int device, size_t tile_bytes, char *err, size_t errlen)
{
    scuda_ctx *c = (scuda_ctx *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "CUDA: out of host memory");
        return NULL;
    }
    if (create_parts(c, device < 0 ? 0 : device, tile_bytes, err, errlen)) {
        scuda_free(c);
        return NULL;
    }
    return c;
}

extern "C" void scuda_free(scuda_ctx *c)
{
    if (!c) return;
    // teardown: errors here have no one to report to; the process is leaving the GPU
    if (c->blas) (void)cublasDestroy(c->blas);
    if (c->d_tile) (void)cudaFree(c->d_tile);
    if (c->d_iq3_grid) (void)cudaFree(c->d_iq3_grid);
    if (c->copy_stream) (void)cudaStreamDestroy(c->copy_stream);
    if (c->stream) (void)cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" const char *scuda_device_name(const scuda_ctx *c) { return c->name; }

extern "C" int scuda_mem_info(scuda_ctx *c, uint64_t *free_bytes, uint64_t *total_bytes, char *err, size_t errlen)
{
    size_t f = 0, t = 0;
    SCUDA_CHECK(cudaSetDevice(c->device), "cudaSetDevice");
    SCUDA_CHECK(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    *free_bytes = f;
    *total_bytes = t;
    return 0;
}

extern "C" int scuda_alloc(scuda_ctx *c, void **p, size_t bytes, char *err, size_t errlen)
{
    (void)c;
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "CUDA cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
        *p = NULL;
        return -1;
    }
    return 0;
}

extern "C" void scuda_dfree(scuda_ctx *c, void *p)
{
    (void)c;
    if (p) (void)cudaFree(p);
}

extern "C" int scuda_upload(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    SCUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream), "cudaMemcpyAsync (upload)");
    SCUDA_CHECK(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize (upload)");
    return 0;
}

extern "C" int scuda_download(scuda_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    SCUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync (download)");
    SCUDA_CHECK(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize (download)");
    return 0;
}

extern "C" int scuda_memset(scuda_ctx *c, void *dst, int value, size_t bytes, char *err, size_t errlen)
{
    SCUDA_CHECK(cudaMemsetAsync(dst, value, bytes, c->stream), "cudaMemsetAsync");
    return 0;
}

extern "C" int scuda_sync(scuda_ctx *c, char *err, size_t errlen)
{
    SCUDA_CHECK(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize (compute stream)");
    return 0;
}

extern "C" int scuda_host_register(scuda_ctx *c, void *p, size_t bytes, char *err, size_t errlen)
{
    (void)c;
    SCUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterReadOnly), "cudaHostRegister");
    return 0;
}

extern "C" int scuda_host_unregister(scuda_ctx *c, void *p, char *err, size_t errlen)
{
    (void)c;
    SCUDA_CHECK(cudaHostUnregister(p), "cudaHostUnregister");
    return 0;
}

extern "C" int scuda_widen(scuda_ctx *c, int is_bf16, const uint16_t *src, float *dst, int64_t n, char *err,
                           size_t errlen)
{
    return strata_cuda_widen(is_bf16, src, dst, n, c->stream, err, errlen);
}

// ------------------------------------------------------------ expert slots

static int slots_alloc(void *ctx, int n_slots, size_t slot_bytes, char *err, size_t errlen)
{
    scuda_slots *s = (scuda_slots *)ctx;
    if (s->base) {
        snprintf(err, errlen, "CUDA expert slots: already allocated");
        return -1;
    }
    void *p = NULL;
    if (scuda_alloc(s->c, &p, (size_t)n_slots * slot_bytes, err, errlen)) return -1;
    s->base = (uint8_t *)p;
    s->n_slots = n_slots;
    s->slot_bytes = slot_bytes;
    return 0;
}

static int slots_copy(void *ctx, int slot, int64_t expert, size_t bytes, char *err, size_t errlen)
{
    scuda_slots *s = (scuda_slots *)ctx;
    if (slot < 0 || slot >= s->n_slots || bytes > s->slot_bytes) {
        snprintf(err, errlen, "CUDA expert slots: slot %d of %d, %zu bytes into %zu", slot, s->n_slots, bytes,
                 s->slot_bytes);
        return -1;
    }
    const void *src = s->host_of(s->host_ctx, expert);
    if (!src) {
        snprintf(err, errlen, "CUDA expert slots: no host bytes for expert %lld", (long long)expert);
        return -1;
    }
    SCUDA_CHECK(cudaMemcpyAsync(s->base + (size_t)slot * s->slot_bytes, src, bytes, cudaMemcpyHostToDevice,
                                s->c->copy_stream),
                "cudaMemcpyAsync (expert refill)");
    return 0;
}

static int slots_sync(void *ctx, char *err, size_t errlen)
{
    scuda_slots *s = (scuda_slots *)ctx;
    SCUDA_CHECK(cudaStreamSynchronize(s->c->copy_stream), "cudaStreamSynchronize (expert refill stream)");
    return 0;
}

extern "C" ec_device scuda_slots_device(scuda_slots *s)
{
    ec_device d;
    d.ctx = s;
    d.alloc = slots_alloc;
    d.copy = slots_copy;
    d.sync = slots_sync;
    return d;
}

extern "C" void *scuda_slot_ptr(const scuda_slots *s, int slot)
{
    return slot >= 0 && slot < s->n_slots ? s->base + (size_t)slot * s->slot_bytes : NULL;
}

extern "C" void scuda_slots_free(scuda_slots *s)
{
    if (s->base) (void)cudaFree(s->base);
    s->base = NULL;
    s->n_slots = 0;
}
