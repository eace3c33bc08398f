// matmul.cu: Y = X . W^T on the GPU for every engine form the device
// decodes (cuda_backend.h). Decode (one token): a fused decode + dot, one
// warp per output row (S-forms: 16-byte code loads per lane; IQ3: a
// 32-element sub-block per lane), lanes striding the columns. Prefill: tiles of W
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

// S-forms, one warp per row: each lane takes 16 bytes of codes at a time
// (16, 32 or 64 codes of 8, 4 or 2 bits) and the x values under them, so the
// loads are wide and coalesced and the group index is one division per
// 4-byte word (the generic kernel above pays 64-bit divisions per element).
// Each element is decoded by the same expressions as scuda_decode (the same
// float); only the order of the sum differs. Needs row_bytes % 16 == 0 and
// groups that hold whole 4-byte words (scuda_matmul checks).
template <int BITS>
__global__ void scuda_matvec_scode_kernel(dweight w, const float *__restrict__ x, float *__restrict__ y)
{
    constexpr int CPW = 32 / BITS, MASK = (1 << BITS) - 1;   // codes per 4-byte word
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (r >= w.rows) return;
    const uint4 *row = (const uint4 *)(w.data + (size_t)r * w.row_bytes);
    const int n16 = (int)(w.row_bytes / 16), gpr = (int)(w.cols / w.group);
    const float *sc = w.scales + r * gpr, *of = w.offsets ? w.offsets + r * gpr : nullptr;
    const float *cb = w.codebook;
    float acc = 0.0f;
    for (int i = lane; i < n16; i += 32) {
        const uint4 q = __ldg(row + i);
        const uint32_t wd[4] = { q.x, q.y, q.z, q.w };
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int c0 = (4 * i + k) * CPW, g = c0 / w.group;
            const float s = __ldg(sc + g), o = of ? __ldg(of + g) : 0.0f;
            const float4 *xv = (const float4 *)(x + c0);
#pragma unroll
            for (int j4 = 0; j4 < CPW / 4; j4++) {
                const float4 xx = xv[j4];
                const float xs[4] = { xx.x, xx.y, xx.z, xx.w };
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int code = (int)((wd[k] >> ((4 * j4 + j) * BITS)) & MASK);
                    float v = cb ? __ldg(cb + code) : (float)(code + w.code_bias);
                    v = __fmul_rn(v, s);
                    if (of) v = __fadd_rn(v, o);
                    acc = fmaf(v, xs[j], acc);
                }
            }
        }
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = acc;
}

// IQ3, one warp per row: each lane takes whole 32-element sub-blocks (its
// sign word, the block's scale, 8 grid indices, 32 x values as float4), so
// the word, scale and sign parity are read once per sub-block rather than
// per element. Elements decoded by scuda_decode's expressions (the same
// floats); only the order of the sum differs. Needs x 16-byte aligned.
__global__ void scuda_matvec_iq3_kernel(dweight w, const float *__restrict__ x, float *__restrict__ y)
{
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (r >= w.rows) return;
    const uint8_t *row = w.data + (size_t)r * w.row_bytes;
    const int nsub = (int)(w.cols / 32);
    float acc = 0.0f;
    for (int sb = lane; sb < nsub; sb += 32) {
        const uint8_t *b = row + (size_t)(sb / 8) * 98;
        const int ib = sb % 8;
        const uint32_t word = (uint32_t)b[64 + 4 * ib] | (uint32_t)b[65 + 4 * ib] << 8 |
                              (uint32_t)b[66 + 4 * ib] << 16 | (uint32_t)b[67 + 4 * ib] << 24;
        const float d = __half2float(__ushort_as_half((uint16_t)(b[96] | b[97] << 8)));
        const float db = __fmul_rn(__fmul_rn(d, __fadd_rn(0.5f, (float)(word >> 28))), 0.5f);
        const float4 *xv = (const float4 *)(x + (size_t)sb * 32);
#pragma unroll
        for (int l = 0; l < 4; l++) {
            const uint32_t seven = (word >> (7 * l)) & 0x7F;
            const uint32_t signs = seven | (uint32_t)(__popc(seven) & 1) << 7;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t gword = __ldg(w.grid + b[8 * ib + 2 * l + h]);
                const float4 xx = xv[2 * l + h];
                const float xs[4] = { xx.x, xx.y, xx.z, xx.w };
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const float g = 0.5f * (float)((gword >> (8 * q)) & 0xFF);
                    const float v = (signs >> (4 * h + q)) & 1 ? -g : g;
                    acc = fmaf(__fmul_rn(v, db), xs[q], acc);
                }
            }
        }
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[r] = acc;
}

static bool scode_fast(const dweight &d, const float *x)
{
    const int cpw = d.form == WF_SCODE && d.code_bits > 0 ? 32 / d.code_bits : 0;
    return cpw && d.row_bytes % 16 == 0 && d.group % cpw == 0 && ((uintptr_t)d.data & 15) == 0 &&
           ((uintptr_t)x & 15) == 0;
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
        const unsigned nb = scuda_blocks(w->rows, MV_WARPS), nt = 32 * MV_WARPS;
        if (scode_fast(d, x)) {
            if (d.code_bits == 8) scuda_matvec_scode_kernel<8><<<nb, nt, 0, c->stream>>>(d, x, y);
            else if (d.code_bits == 4) scuda_matvec_scode_kernel<4><<<nb, nt, 0, c->stream>>>(d, x, y);
            else scuda_matvec_scode_kernel<2><<<nb, nt, 0, c->stream>>>(d, x, y);
            SCUDA_LAUNCHED("scuda_matvec_scode_kernel");
            return 0;
        }
        if (d.form == WF_IQ3 && ((uintptr_t)x & 15) == 0) {
            scuda_matvec_iq3_kernel<<<nb, nt, 0, c->stream>>>(d, x, y);
            SCUDA_LAUNCHED("scuda_matvec_iq3_kernel");
            return 0;
        }
        scuda_matvec_kernel<<<nb, nt, 0, c->stream>>>(d, x, y);
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
