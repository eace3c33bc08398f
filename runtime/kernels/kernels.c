/* kernels.c: the scalar primitives and row decoders, the reference every
 * faster path is tested against (kernel_table.c puts them in the scalar
 * table, beneath every other). Written to be read: one loop per primitive,
 * sums taken left to right, decoders that spell out each form's formula. */
#include "runtime/kernels/kernels_impl.h"

#include "runtime/kernels/ggml_order.h"

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/iq3.h"

#include <math.h>
#include <string.h>

/* ggml-cpu's x86 ggml_vec_dot_f32 order (the AVX2 table runs it in
 * vectors): 32 float lanes, element i into lane i % 32 by fused
 * multiply-add, the four 8-lane vectors folded (0+2, 1+3, then 0+1), the
 * 8 lanes as (0+4 + 1+5) + (2+6 + 3+7), then the tail past the last 32
 * one product at a time (ggml's sumf += x*y: its build fuses a*b - c*d
 * expressions, as in RoPE, but not such loop-carried chains; stories260K,
 * whose head_dim 8 and n_ff 172 are all tail, is bit for bit so). */
float kscalar_dot_f32(const float *a, const float *b, int64_t n)
{
    float l[32] = { 0 };
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32)
        for (int k = 0; k < 32; k++) l[k] = fmaf(a[i + k], b[i + k], l[k]);
    float s = ggml_order_fold32(l);
    for (int64_t i = np; i < n; i++) s += a[i] * b[i];
    return s;
}

float kscalar_dot_f16(const uint16_t *a, const float *b, int64_t n)
{
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += fp16_to_f32(a[i]) * b[i];
    return s;
}

/* llamafile tinyBLAS's order for an f32 batch (n % 8 == 0): element i into
 * lane i % 8 by fused multiply-add, then the 8 lanes' horizontal sum. */
float kscalar_dot8_f32(const float *a, const float *b, int64_t n)
{
    float l[8] = { 0 };
    for (int64_t i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) l[k] = fmaf(a[i + k], b[i + k], l[k]);
    return ggml_order_hsum8(l);
}

/* y += a * x, each element one fused multiply-add (as the AVX2 table). */
void kscalar_gemm8_f32(const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb, int64_t n, float *C,
                      int64_t ldc, int64_t k)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) C[j * ldc + i] = kscalar_dot8_f32(A + i * lda, B + j * ldb, k);
}

void kscalar_swiglu_f32(float *x, const float *g, int64_t n)
{
    const int64_t nv = n & ~(int64_t)7;
    for (int64_t i = 0; i < nv; i++) x[i] = ggml_order_silu(x[i]) * g[i];
    for (int64_t i = nv; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i])) * g[i];
}

void kscalar_softmax_f32(const float *x, int64_t n, float *y, float sink) { ggml_order_softmax(x, (int)n, y, sink); }

void kscalar_axpy_f32(float *y, float a, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

void kscalar_axpy_f16(float *y, float a, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += a * fp16_to_f32(x[i]);
}

void kscalar_dot_f16_heads(const uint16_t *const *a, int rows, const float *b, int nb, int64_t n, float *out,
                           int64_t ostride)
{
    for (int h = 0; h < nb; h++)
        for (int i = 0; i < rows; i++) out[h * ostride + i] = kscalar_dot_f16(a[i], b + h * n, n);
}

void kscalar_axpy_f16_heads(float *y, int ny, const float *w, int64_t wstride, const uint16_t *const *x, int rows,
                            int64_t n)
{
    for (int h = 0; h < ny; h++)
        for (int i = 0; i < rows; i++) kscalar_axpy_f16(y + h * n, w[h * wstride + i], x[i], n);
}

void kscalar_f16_to_f32(const uint16_t *src, float *dst, int64_t n) { fp16_row_to_f32(src, dst, n); }

void kscalar_f32_to_f16(const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = f32_to_fp16(src[i]);
}

void kscalar_row_p32(const weight *w, int64_t r, float *dst)
{
    memcpy(dst, (const uint8_t *)w->data + (size_t)r * w->row_bytes, (size_t)w->cols * sizeof(float));
}

void kscalar_row_p16(const weight *w, int64_t r, float *dst)
{
    const void *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    fp16_row_to_f32(row, dst, w->cols);
}

/* The scale multiply and the offset add are separate statements so that no
 * compiler fuses them into an FMA: ggml rounds the product first, and the
 * canonical form promises the same floats bit for bit. */
void kscalar_row_scode(const weight *w, int64_t r, float *dst)
{
    const uint8_t *codes = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const int bits = w->code_bits, per_byte = 8 / bits, mask = (1 << bits) - 1;
    const int64_t g0 = r * (w->cols / w->group);
    uint8_t split[256]; /* a split super-block's codes (weight.h: code_split) */
    const uint8_t *sbc = NULL;
    for (int64_t c = 0; c < w->cols; c++) {
        if (w->code_split && c % 256 == 0) sbc = kq_sb_codes(w, codes, c / 256, split);
        int code = sbc ? sbc[c % 256] : (codes[c / per_byte] >> ((c % per_byte) * bits)) & mask;
        int64_t g = g0 + c / w->group;
        float v = w->codebook ? w->codebook[code] : (float)(code + w->code_bias);
        v = v * w->scales[g];
        if (w->offsets) v = v + w->offsets[g];
        dst[c] = v;
    }
}

void kscalar_row_ggml(const weight *w, int64_t r, float *dst)
{
    ggml_dequantize(w->ggml_type, (const uint8_t *)w->data + (size_t)r * w->row_bytes, dst, w->cols);
}

void kscalar_row_iq3(const weight *w, int64_t r, float *dst)
{
    char err[8]; /* cols was checked when the model was built: cannot fail */
    iq3_decode((const uint8_t *)w->data + (size_t)r * w->row_bytes, 1, w->cols, dst, err, sizeof err);
}

float weight_dot(const kernels *k, const weight *w, int64_t r, const float *x, float *scratch)
{
    const void *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    switch (w->form) {
    case WF_P32: return k->dot_f32(row, x, w->cols);
    case WF_P16: return k->dot_f16(row, x, w->cols);
    default:
        k->row_f32[w->form](w, r, scratch);
        return k->dot_f32(scratch, x, w->cols);
    }
}
