// scuda_impl.cuh: what the CUDA backend's .cu files share: the context
// struct, the checks that turn a CUDA error into one line naming the call or
// kernel, and the per-element weight decoders (the same float expressions as
// kernels.c's scalar decoders and formats/iq3.c, evaluated on the device).
#ifndef STRATA_SCUDA_IMPL_CUH
#define STRATA_SCUDA_IMPL_CUH

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/device/cuda/cuda_backend.h"

struct scuda_ctx {
    int device;
    char name[512];
    cudaStream_t stream, copy_stream;
    cublasHandle_t blas;
    uint32_t *d_iq3_grid;    // 256 entries, ggml's iq3xxs_grid
    float *d_tile;           // prefill dequantisation tile
    size_t tile_floats;
};

// One CUDA runtime call: on failure, "CUDA <what>: <message>" and return -1.
#define SCUDA_CHECK(call, what)                                                           \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            snprintf(err, errlen, "CUDA %s: %s", (what), cudaGetErrorString(e_));          \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)

// After a launch: configuration errors show up here, naming the kernel.
#define SCUDA_LAUNCHED(kernel)                                                            \
    do {                                                                                  \
        cudaError_t e_ = cudaGetLastError();                                              \
        if (e_ != cudaSuccess) {                                                          \
            snprintf(err, errlen, "CUDA kernel %s: %s", (kernel), cudaGetErrorString(e_)); \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)

static inline unsigned scuda_blocks(int64_t n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

// A device-side copy of what a decoder needs from a weight.
struct dweight {
    int form;
    int64_t rows, cols;
    const uint8_t *data;
    size_t row_bytes;
    int code_bits, code_bias, group;
    const float *scales, *offsets, *codebook;
    const uint32_t *grid;
};

static inline dweight scuda_dweight(const scuda_ctx *c, const weight *w)
{
    dweight d;
    d.form = (int)w->form;
    d.rows = w->rows;
    d.cols = w->cols;
    d.data = (const uint8_t *)w->data;
    d.row_bytes = w->form == WF_SCODE ? (size_t)(w->cols * w->code_bits / 8) : w->row_bytes;
    d.code_bits = w->code_bits;
    d.code_bias = w->code_bias;
    d.group = w->group;
    d.scales = w->scales;
    d.offsets = w->offsets;
    d.codebook = w->codebook;
    d.grid = c->d_iq3_grid;
    return d;
}

// Element c of row r. __fmul_rn/__fadd_rn keep the product rounded before
// the offset is added (nvcc would otherwise contract them into an FMA and
// break the bit-exact promise of the canonical forms).
__device__ __forceinline__ float scuda_decode(const dweight &w, int64_t r, int64_t c)
{
    const uint8_t *row = w.data + (size_t)r * w.row_bytes;
    switch (w.form) {
    case WF_P32:
        return ((const float *)row)[c];
    case WF_P16:
        return __half2float(__ushort_as_half(((const uint16_t *)row)[c]));
    case WF_SCODE: {
        const int bits = w.code_bits, per_byte = 8 / bits, mask = (1 << bits) - 1;
        const int code = (row[c / per_byte] >> ((c % per_byte) * bits)) & mask;
        const int64_t g = r * (w.cols / w.group) + c / w.group;
        float v = w.codebook ? w.codebook[code] : (float)(code + w.code_bias);
        v = __fmul_rn(v, w.scales[g]);
        if (w.offsets) v = __fadd_rn(v, w.offsets[g]);
        return v;
    }
    case WF_IQ3: {
        const uint8_t *b = row + (size_t)(c / 256) * 98;
        const int j = (int)(c % 256), ib = j / 32, l = (j % 32) / 8, bit = j % 8;
        const uint32_t word = (uint32_t)b[64 + 4 * ib] | (uint32_t)b[65 + 4 * ib] << 8 |
                              (uint32_t)b[66 + 4 * ib] << 16 | (uint32_t)b[67 + 4 * ib] << 24;
        const float d = __half2float(__ushort_as_half((uint16_t)(b[96] | b[97] << 8)));
        const float db = __fmul_rn(__fmul_rn(d, __fadd_rn(0.5f, (float)(word >> 28))), 0.5f);
        const uint32_t seven = (word >> (7 * l)) & 0x7F;
        const uint32_t signs = seven | (uint32_t)(__popc(seven) & 1) << 7;
        const uint32_t gword = w.grid[b[8 * ib + 2 * l + bit / 4]];
        const float g = 0.5f * (float)((gword >> (8 * (bit % 4))) & 0xFF);
        const float v = (signs >> bit) & 1 ? -g : g;
        return __fmul_rn(v, db);
    }
    default:
        return 0.0f;
    }
}

// Refuses what the device decoders do not handle.
static inline int scuda_form_ok(const weight *w, char *err, size_t errlen)
{
    if (w->form == WF_GGML || w->form >= WF_COUNT) {
        snprintf(err, errlen, "CUDA: weight form %d (native ggml blocks or unknown) is not supported on the GPU", (int)w->form);
        return -1;
    }
    if (w->form == WF_SCODE && !(w->code_bits == 2 || w->code_bits == 4 || w->code_bits == 8)) {
        snprintf(err, errlen, "CUDA: S-form with %d-bit codes", w->code_bits);
        return -1;
    }
    if (w->form == WF_IQ3 && w->cols % 256) {
        snprintf(err, errlen, "CUDA: IQ3 weight with %lld columns (not a multiple of 256)", (long long)w->cols);
        return -1;
    }
    return 0;
}

#endif
