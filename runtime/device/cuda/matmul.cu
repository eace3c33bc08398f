// matmul.cu: Y = X . W^T on the GPU for every engine form the device
// decodes (cuda_backend.h). Decode (one token): a fused decode + dot, one
// warp per output row, lanes striding the columns. Prefill: tiles of W
// decoded to f32 in the context's tile, one cuBLAS sgemm per tile.
#include "runtime/device/cuda/scuda_impl.cuh"

#define MV_WARPS 8

__global__ void scuda_matvec_kernel(dweight w, const float *__restrict__ x, float *__restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (r >= w.rows) return;
    float acc = 0.0f;
    for (int64_t c = lane; c < w.cols; c += 32) acc = fmaf(scuda_decode(w, r, c), x[c], acc);
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = acc;
}

__global__ void scuda_dequant_kernel(dweight w, int64_t r0, int64_t nr, float *__restrict__ dst)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nr * w.cols) return;
    const int64_t r = i / w.cols, c = i % w.cols;
    dst[i] = scuda_decode(w, r0 + r, c);
}

static int launch_dequant(scuda_ctx *c, const dweight &d, int64_t r0, int64_t nr, float *dst, char *err,
                          size_t errlen)
{
    if (nr <= 0) return 0;
    scuda_dequant_kernel<<<scuda_blocks(nr * d.cols, 256), 256, 0, c->stream>>>(d, r0, nr, dst);
    SCUDA_LAUNCHED("scuda_dequant_kernel");
    return 0;
}

extern "C" int scuda_dequant(scuda_ctx *c, const weight *w, int64_t r0, int64_t nr, float *dst, char *err,
                             size_t errlen)
{
    if (scuda_form_ok(w, err, errlen)) return -1;
    if (r0 < 0 || nr < 0 || r0 + nr > w->rows) {
        snprintf(err, errlen, "CUDA dequant: rows %lld..%lld of %lld", (long long)r0, (long long)(r0 + nr),
                 (long long)w->rows);
        return -1;
    }
    return launch_dequant(c, scuda_dweight(c, w), r0, nr, dst, err, errlen);
}

extern "C" int scuda_matmul(scuda_ctx *c, const weight *w, const float *x, float *y, int n, char *err, size_t errlen)
{
    if (scuda_form_ok(w, err, errlen)) return -1;
    if (n <= 0) return 0;
    const dweight d = scuda_dweight(c, w);
    if (n == 1) {
        scuda_matvec_kernel<<<scuda_blocks(w->rows, MV_WARPS), 32 * MV_WARPS, 0, c->stream>>>(d, x, y);
        SCUDA_LAUNCHED("scuda_matvec_kernel");
        return 0;
    }
    int64_t tile_rows = (int64_t)(c->tile_floats / (size_t)w->cols);
    if (tile_rows < 1) {
        snprintf(err, errlen, "CUDA matmul: a %lld-column row does not fit the %zu-float prefill tile",
                 (long long)w->cols, c->tile_floats);
        return -1;
    }
    if (tile_rows > w->rows) tile_rows = w->rows;
    const float one = 1.0f, zero = 0.0f;
    for (int64_t r0 = 0; r0 < w->rows; r0 += tile_rows) {
        const int64_t nr = w->rows - r0 < tile_rows ? w->rows - r0 : tile_rows;
        if (launch_dequant(c, d, r0, nr, c->d_tile, err, errlen)) return -1;
        // column-major view: C (nr x n, ld rows) = A^T (tile: cols x nr) . B (X: cols x n)
        cublasStatus_t s = cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nr, n, (int)w->cols, &one, c->d_tile,
                                       (int)w->cols, x, (int)w->cols, &zero, y + r0, (int)w->rows);
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(err, errlen, "cuBLAS cublasSgemm (prefill tile at row %lld): status %d", (long long)r0, (int)s);
            return -1;
        }
    }
    return 0;
}
