/* iq3_gptq.c: IQ3 with GPTQ's error feedback (Frantar et al., "GPTQ:
 * Accurate Post-Training Quantization for Generative Pre-trained
 * Transformers"). The loss is a row's error on the calibration inputs,
 * (w - q)^T H (w - q) with H their Gram; quantizing left to right, each
 * weight's error is cancelled as far as H allows by moving the weights not
 * yet quantized, through U, the upper Cholesky factor of H^-1:
 * w[i+1:] -= (w_i - q_i) / U_ii * U[i, i+1:]. IQ3 chooses 32 weights at a
 * time (a sub-block shares a scale code; a block of 256 its super-scale,
 * taken from quality mode's search on the block as it stands when reached),
 * so a sub-block is chosen on the weights as moved so far, then its 32
 * errors move the rest one by one. U = I moves nothing: quality mode's bytes. */
#include "iq3_impl.h"
#include "fp16.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void iq3_encode_row_gptq(const iq3_tables *t, const float *x, int64_t k, const double *u, const float *imp,
                         uint8_t *out, double *work, int simd)
{
    for (int64_t i = 0; i < k; i++) work[i] = x[i];
    for (int64_t c0 = 0; c0 < k; c0 += IQ3_QK) {
        float xb[IQ3_QK], q[32];
        for (int i = 0; i < IQ3_QK; i++) xb[i] = (float)work[c0 + i];
        iq3_block *o = (iq3_block *)out + c0 / IQ3_QK;
        iq3_encode_block_quality(t, xb, imp ? imp + c0 : NULL, o, simd);
        const float d = fp16_to_f32(iq3_block_d(o));
        for (int ib = 0; ib < IQ3_QK / 32; ib++) {
            /* sub-block 0, not moved yet, is searched again (the same choice) for its 32 values:
             * reading the block's back would need iq3.c's decoder, and iq3.c calls this file */
            const int64_t s0 = c0 + 32 * ib;
            float xs[32];
            for (int j = 0; j < 32; j++) xs[j] = (float)work[s0 + j];
            iq3_encode_sub_quality(t, xs, imp ? imp + s0 : NULL, d, simd, o, ib, q);
            for (int j = 0; j < 32; j++) { /* its errors move the weights to its right */
                const int64_t i = s0 + j;
                const double *ur = u + i * k;
                const double e = (work[i] - (double)q[j]) / ur[i];
                for (int64_t c = i + 1; c < k; c++) work[c] -= e * ur[c];
            }
        }
    }
}

/* H^-1 = U^T U with U upper: with J the order reversal, J H J = L L^T
 * (its lower Cholesky factor) gives H^-1 = (J L^-1 J)^T (J L^-1 J), and
 * J L^-1 J is upper triangular with a positive diagonal: U itself (the
 * factor is unique). One Cholesky and one triangular inverse, k^3 / 2
 * multiply-adds, every inner loop over contiguous memory. */
int iq3_gptq_factor(const float *gram, int64_t k, double damp, double *u, char *err, size_t errlen)
{
    double *a = malloc((size_t)k * (size_t)k * sizeof *a), *xt = malloc((size_t)k * (size_t)k * sizeof *xt);
    if (!a || !xt) {
        free(a);
        free(xt);
        snprintf(err, errlen, "out of memory for a %lld x %lld Hessian", (long long)k, (long long)k);
        return -1;
    }
    double mean = 0;
    for (int64_t i = 0; i < k; i++) mean += gram[i * k + i];
    mean /= (double)k;
    /* a = J H J, symmetrised; a column no input ever reached has no say: unit weight, as GPTQ gives it */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            const int64_t ri = k - 1 - i, rj = k - 1 - j;
            a[i * k + j] = 0.5 * ((double)gram[ri * k + rj] + (double)gram[rj * k + ri]);
        }
    for (int64_t i = 0; i < k; i++) a[i * k + i] += a[i * k + i] == 0 ? 1.0 : damp * mean;
    /* a = L L^T, L in a's lower triangle */
    for (int64_t j = 0; j < k; j++) {
        double s = a[j * k + j];
        for (int64_t p = 0; p < j; p++) s -= a[j * k + p] * a[j * k + p];
        if (!(s > 0)) {
            snprintf(err, errlen, "the Gram is not positive definite at column %lld (after damping %g)",
                     (long long)(k - 1 - j), damp);
            free(a);
            free(xt);
            return -1;
        }
        const double l = sqrt(s);
        a[j * k + j] = l;
        for (int64_t i = j + 1; i < k; i++) {
            double v = a[i * k + j];
            for (int64_t p = 0; p < j; p++) v -= a[i * k + p] * a[j * k + p];
            a[i * k + j] = v / l;
        }
    }
    /* xt[c][i] = (L^-1)[i][c], i >= c: forward substitution, column c of L^-1 as row c of xt */
    for (int64_t c = 0; c < k; c++) {
        double *x = xt + c * k;
        for (int64_t i = 0; i < c; i++) x[i] = 0;
        x[c] = 1.0 / a[c * k + c];
        for (int64_t i = c + 1; i < k; i++) {
            double v = 0;
            for (int64_t p = c; p < i; p++) v -= a[i * k + p] * x[p];
            x[i] = v / a[i * k + i];
        }
    }
    /* U[i][j] = (J L^-1 J)[i][j] = (L^-1)[k-1-i][k-1-j] = xt[k-1-j][k-1-i] */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) u[i * k + j] = j < i ? 0.0 : xt[(k - 1 - j) * k + (k - 1 - i)];
    free(a);
    free(xt);
    return 0;
}
