/* test_kernels.c: every kernel's AVX2 path against the scalar reference on
 * random data (decoders, f32 dots, fused axpy and the quantized dots bit for
 * bit, since every table sums in ggml-cpu's x86 order; the f16 dots within
 * 1e-6 of the sum of |terms|), each sum against a double-precision one, the
 * native ggml integer dots against the S-forms those blocks transcode to
 * (bit for bit), the S-code form against ggml's own Q4_0 decoding, the batched
 * matmul against a double-precision loop, and thread counts 1/2/3 giving the
 * same bits. Skips the AVX2 comparisons (saying so) on a CPU without AVX2. */
#include "tests/lib/test_util.h"

#include "convert/transcode.h"
#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/iq3.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/kfactor.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/pool.h"

#include <math.h>

/* A per-test generator (an LCG): each test seeds its own state. */
static uint32_t rnd_(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static float rndf_(uint64_t *s) { return (float)rnd_(s) / 2147483648.0f * 2.0f - 1.0f; }

static const kernels *simd_or_skip(void)
{
    const kernels *k = kernels_get(1);
    if (k == kernels_scalar()) { printf("SKIP: no AVX2 on this CPU\n"); skip(); }
    return k;
}

/* Every table this CPU runs, scalar first, NULL after the last. */
static int all_tables(const kernels *t[KERNELS_MAX])
{
    const int n = kernels_runnable(t);
    for (int i = n; i < KERNELS_MAX; i++) t[i] = NULL;
    assert_true(n >= 1 && t[0] == kernels_scalar() && t[n - 1] == kernels_get(1));
    return n;
}

/* How many of them have a four-row batch kernel for `form` (qdot4n). */
static int tables_with_qdot4n(const kernels *const t[KERNELS_MAX], int form)
{
    int n = 0;
    for (int i = 0; i < KERNELS_MAX; i++) n += t[i] && t[i]->qdot4n[form];
    return n;
}

static const int sizes[] = { 1, 7, 8, 15, 16, 17, 33, 256, 1000 };

static void test_vector_ops(void **st)
{
    (void)st;
    uint64_t rs = 1;
    const kernels *v = simd_or_skip(), *s = kernels_scalar();
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int n = sizes[si];
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *y1 = malloc(n * sizeof *y1),
              *y2 = malloc(n * sizeof *y2);
        uint16_t *h = malloc(n * sizeof *h), *h2 = malloc(n * sizeof *h2);
        double mag = 0.0, magh = 0.0;
        for (int i = 0; i < n; i++) {
            a[i] = rndf_(&rs) * 4; b[i] = rndf_(&rs);
            h[i] = f32_to_fp16(rndf_(&rs) * 3);
            mag += fabs((double)a[i] * b[i]);
            magh += fabs((double)fp16_to_f32(h[i]) * b[i]);
        }
        /* f32 dots and fused axpy follow ggml's order in every table: same bits */
        const float d1 = v->dot_f32(a, b, n), d2 = s->dot_f32(a, b, n);
        assert_memory_equal(&d1, &d2, sizeof d1);
        double ref = 0.0;
        for (int i = 0; i < n; i++) ref += (double)a[i] * b[i];
        assert_true(fabs(d2 - ref) <= 1e-5 * mag + 1e-30);
        if (n % 8 == 0) {
            const float e1 = v->dot8_f32(a, b, n), e2 = s->dot8_f32(a, b, n);
            assert_memory_equal(&e1, &e2, sizeof e1);
            assert_true(fabs(e2 - ref) <= 1e-5 * mag + 1e-30);
        }
        assert_true(fabs(v->dot_f16(h, b, n) - s->dot_f16(h, b, n)) <= 1e-6 * magh);
        for (int i = 0; i < n; i++) y1[i] = y2[i] = b[i];
        v->axpy_f32(y1, 0.37f, a, n);
        s->axpy_f32(y2, 0.37f, a, n);
        assert_memory_equal(y1, y2, n * sizeof *y1);
        for (int i = 0; i < n; i++) assert_true(y2[i] == fmaf(0.37f, a[i], b[i]));
        /* swiglu: ggml's expf in every table, the same bits; close to a double
         * silu (the polynomial is within 1.5 ulp of e^x); the tail takes libm's */
        float *xin = malloc(n * sizeof *xin);
        for (int i = 0; i < n; i++) {
            xin[i] = (i % 13 == 3) ? (i % 2 ? 150.0f : -150.0f) : (i % 17 == 5 ? 100.0f : rndf_(&rs) * 24.0f);
            y1[i] = y2[i] = xin[i];
        }
        v->swiglu_f32(y1, b, n);
        s->swiglu_f32(y2, b, n);
        assert_memory_equal(y1, y2, n * sizeof *y1);
        for (int i = 0; i < n; i++) {
            const double x = xin[i], ref = x / (1.0 + exp(-x)) * b[i];
            assert_true(fabs(y2[i] - ref) <= 1e-6 * fabs(ref) + 1e-30);
        }
        /* softmax: the same bits in every table, -INFINITY entries give 0, sums to 1 */
        for (int i = 0; i < n; i++) xin[i] = (i % 11 == 7) ? -INFINITY : rndf_(&rs) * 30.0f;
        xin[0] = rndf_(&rs);
        v->softmax_f32(xin, n, y1, -INFINITY);
        s->softmax_f32(xin, n, y2, -INFINITY);
        assert_memory_equal(y1, y2, n * sizeof *y1);
        double tot = 0.0;
        for (int i = 0; i < n; i++) {
            tot += y2[i];
            if (i % 11 == 7 && i) assert_true(y2[i] == 0.0f);
        }
        assert_true(fabs(tot - 1.0) < 1e-5);
        /* with a sink (gpt-oss): the same bits in every table, the rows sum to 1 - its share */
        const float sink = 25.0f;
        v->softmax_f32(xin, n, y1, sink);
        s->softmax_f32(xin, n, y2, sink);
        assert_memory_equal(y1, y2, n * sizeof *y1);
        double mx = sink, den = 0.0, got = 0.0;
        for (int i = 0; i < n; i++) mx = xin[i] > mx ? xin[i] : mx;
        for (int i = 0; i < n; i++) { den += exp((double)xin[i] - mx); got += y2[i]; }
        den += exp((double)sink - mx);
        assert_true(fabs(got - (1.0 - exp((double)sink - mx) / den)) < 1e-5);
        free(xin);
        for (int i = 0; i < n; i++) y1[i] = y2[i] = b[i];
        v->axpy_f16(y1, -1.5f, h, n);
        s->axpy_f16(y2, -1.5f, h, n);
        for (int i = 0; i < n; i++)
            assert_true(fabs(y1[i] - y2[i]) <= 1e-6 * (fabs(b[i]) + fabs(1.5 * fp16_to_f32(h[i]))));
        v->f16_to_f32(h, y1, n);
        s->f16_to_f32(h, y2, n);
        assert_memory_equal(y1, y2, n * sizeof *y1);
        /* wide range: subnormal halves, overflow to inf, exact ties */
        for (int i = 0; i < n; i++) a[i] = ldexpf(rndf_(&rs), (int)(rnd_(&rs) % 44) - 28);
        if (n > 3) { a[0] = 65520.0f; a[1] = 1.0f + 1.0f / 2048; a[2] = -0.0f; }
        v->f32_to_f16(a, h, n);
        s->f32_to_f16(a, h2, n);
        assert_memory_equal(h, h2, n * sizeof *h);
        free(a); free(b); free(y1); free(y2); free(h); free(h2);
    }
}

/* The f16 attention's kernels over several query heads give, in every
 * table, each head's score the bits of its own dot_f16 and each head's sum
 * the bits of axpy_f16 row after row: 1..4 heads, 1..11 rows, every width
 * (whole blocks of 32, of 16, of 8, and a tail). */
static void test_f16_heads(void **st)
{
    (void)st;
    uint64_t rs = 7;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    enum { MAXR = 11, MAXH = 4 };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int n = sizes[si];
        uint16_t *h = malloc((size_t)MAXR * n * sizeof *h);
        const uint16_t *rows[MAXR];
        float *q = malloc((size_t)MAXH * n * sizeof *q), *y1 = malloc((size_t)MAXH * n * sizeof *y1),
              *y2 = malloc((size_t)MAXH * n * sizeof *y2);
        float w[MAXH * MAXR], got[MAXH * MAXR];
        for (int i = 0; i < MAXR * n; i++) h[i] = f32_to_fp16(rndf_(&rs) * 3);
        for (int i = 0; i < MAXH * n; i++) q[i] = rndf_(&rs);
        for (int r = 0; r < MAXR; r++) rows[r] = h + (size_t)((r * 5) % MAXR) * n; /* out of order, one twice */
        for (int i = 0; i < MAXH * MAXR; i++) w[i] = rndf_(&rs);
        for (int t = 0; t < KERNELS_MAX; t++) {
            const kernels *k = tabs[t];
            if (!k) continue;
            for (int nh = 1; nh <= MAXH; nh++)
                for (int nr = 1; nr <= MAXR; nr++) {
                    k->dot_f16_heads(rows, nr, q, nh, n, got, MAXR);
                    for (int g = 0; g < nh; g++)
                        for (int r = 0; r < nr; r++) {
                            const float one = k->dot_f16(rows[r], q + (size_t)g * n, n);
                            assert_memory_equal(&got[g * MAXR + r], &one, sizeof one);
                        }
                    for (int i = 0; i < nh * n; i++) y1[i] = y2[i] = q[i] * 0.5f;
                    k->axpy_f16_heads(y1, nh, w, MAXR, rows, nr, n);
                    for (int g = 0; g < nh; g++)
                        for (int r = 0; r < nr; r++) k->axpy_f16(y2 + (size_t)g * n, w[g * MAXR + r], rows[r], n);
                    assert_memory_equal(y1, y2, (size_t)nh * n * sizeof *y1);
                }
        }
        /* and a score is a sum: the scalar table's against a double */
        for (int r = 0; r < MAXR; r++) {
            double ref = 0.0, mag = 0.0;
            for (int i = 0; i < n; i++) {
                ref += (double)fp16_to_f32(rows[r][i]) * q[i];
                mag += fabs((double)fp16_to_f32(rows[r][i]) * q[i]);
            }
            tabs[0]->dot_f16_heads(&rows[r], 1, q, 1, n, got, 1);
            assert_true(fabs(got[0] - ref) <= 1e-5 * mag + 1e-30);
        }
        free(h); free(q); free(y1); free(y2);
    }
}

/* Random SCODE weights: every code width, with and without codebook and
 * offsets, groups that take the vector path and one that falls back. */
static void test_scode_rows(void **st)
{
    (void)st;
    uint64_t rs = 2;
    const kernels *v = simd_or_skip(), *s = kernels_scalar();
    const int bits[] = { 2, 4, 8 }, groups[] = { 16, 32, 64, 4 };
    float codebook[16];
    for (int i = 0; i < 16; i++) codebook[i] = rndf_(&rs) * 8;
    for (int bi = 0; bi < 3; bi++)
        for (int gi = 0; gi < 4; gi++)
            for (int variant = 0; variant < 3; variant++) {
                if (variant == 1 && bits[bi] != 4) continue; /* codebooks are 16 entries */
                weight w = { .form = WF_SCODE, .rows = 5, .cols = 256, .code_bits = bits[bi],
                             .code_bias = -(1 << (bits[bi] - 1)), .group = groups[gi] };
                const size_t ng = (size_t)(w.rows * w.cols / w.group), nbytes = (size_t)(w.rows * w.cols) * w.code_bits / 8;
                uint8_t *codes = malloc(nbytes);
                float *sc = malloc(ng * sizeof *sc), *of = malloc(ng * sizeof *of);
                for (size_t i = 0; i < nbytes; i++) codes[i] = (uint8_t)rnd_(&rs);
                for (size_t i = 0; i < ng; i++) { sc[i] = rndf_(&rs) * 0.1f; of[i] = rndf_(&rs); }
                w.data = codes;
                w.scales = sc;
                if (variant == 1) { w.codebook = codebook; w.code_bias = 0; }
                if (variant == 2) w.offsets = of;
                char err[128];
                assert_int_equal(weight_check(&w, "t", err, sizeof err), 0);
                float r1[256], r2[256], x[256], scratch[256];
                for (int i = 0; i < 256; i++) x[i] = rndf_(&rs);
                for (int64_t r = 0; r < w.rows; r++) {
                    v->row_f32[WF_SCODE](&w, r, r1);
                    s->row_f32[WF_SCODE](&w, r, r2);
                    assert_memory_equal(r1, r2, sizeof r1);
                    double mag = 0;
                    for (int i = 0; i < 256; i++) mag += fabs((double)r2[i] * x[i]);
                    assert_true(fabs(weight_dot(v, &w, r, x, scratch) - weight_dot(s, &w, r, x, scratch)) <= 1e-6 * mag);
                }
                free(codes); free(sc); free(of);
            }
}

/* The canonical S4 form of a Q4_0 tensor decodes to ggml's floats exactly:
 * codes = the nibbles in element order, bias -8, scale = fp16 d widened. */
static void test_scode_equals_ggml_q4_0(void **st)
{
    (void)st;
    uint64_t rs = 3;
    enum { ROWS = 3, COLS = 128, NB = ROWS * COLS / 32 };
    uint8_t blocks[NB * 18], codes[ROWS * COLS / 2];
    float scales[NB];
    for (int b = 0; b < NB; b++) {
        uint16_t d = f32_to_fp16(rndf_(&rs) * 0.05f);
        memcpy(blocks + b * 18, &d, 2);
        for (int i = 0; i < 16; i++) blocks[b * 18 + 2 + i] = (uint8_t)rnd_(&rs);
        scales[b] = fp16_to_f32(d);
        for (int e = 0; e < 32; e++) {
            uint8_t q = blocks[b * 18 + 2 + (e % 16)];
            int code = e < 16 ? (q & 15) : (q >> 4);
            int idx = b * 32 + e;
            if (idx % 2 == 0) codes[idx / 2] = (uint8_t)code;
            else codes[idx / 2] |= (uint8_t)(code << 4);
        }
    }
    weight w = { .form = WF_SCODE, .rows = ROWS, .cols = COLS, .data = codes, .code_bits = 4,
                 .code_bias = -8, .group = 32, .scales = scales };
    weight g = { .form = WF_GGML, .rows = ROWS, .cols = COLS, .data = blocks, .ggml_type = GGML_TYPE_Q4_0 };
    char err[128];
    assert_int_equal(weight_check(&w, "s4", err, sizeof err), 0);
    assert_int_equal(weight_check(&g, "q4_0", err, sizeof err), 0);
    const kernels *ks[2] = { kernels_scalar(), kernels_get(1) };
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < ROWS; r++) {
            float a[COLS], b[COLS];
            ks[k]->row_f32[WF_SCODE](&w, r, a);
            ks[k]->row_f32[WF_GGML](&g, r, b);
            assert_memory_equal(a, b, sizeof a);
        }
}

static void test_other_rows(void **st)
{
    (void)st;
    uint64_t rs = 4;
    const kernels *v = simd_or_skip(), *s = kernels_scalar();
    enum { R = 4, C = 512 };
    float *f = malloc(R * C * sizeof *f), a[C], b[C];
    uint16_t *h = malloc(R * C * sizeof *h);
    for (int i = 0; i < R * C; i++) { f[i] = rndf_(&rs); h[i] = f32_to_fp16(f[i]); }
    uint8_t *iq = malloc(R * iq3_row_bytes(C));
    char err[128];
    assert_int_equal(iq3_encode(f, R, C, NULL, iq, err, sizeof err), 0);
    float *iqref = malloc(R * C * sizeof *iqref);
    assert_int_equal(iq3_decode(iq, R, C, iqref, err, sizeof err), 0);
    weight ws[3] = {
        { .form = WF_P32, .rows = R, .cols = C, .data = f },
        { .form = WF_P16, .rows = R, .cols = C, .data = h },
        { .form = WF_IQ3, .rows = R, .cols = C, .data = iq },
    };
    for (int k = 0; k < 3; k++) {
        assert_int_equal(weight_check(&ws[k], "w", err, sizeof err), 0);
        for (int r = 0; r < R; r++) {
            v->row_f32[ws[k].form](&ws[k], r, a);
            s->row_f32[ws[k].form](&ws[k], r, b);
            assert_memory_equal(a, b, sizeof a);
            if (ws[k].form == WF_IQ3) assert_memory_equal(a, iqref + r * C, sizeof a);
            if (ws[k].form == WF_P16)
                for (int i = 0; i < C; i++) assert_true(a[i] == fp16_to_f32(h[r * C + i]));
        }
    }
    weight bad = { .form = WF_IQ3, .rows = 1, .cols = 100, .data = iq };
    assert_int_equal(weight_check(&bad, "blk.0.ffn_up_exps", err, sizeof err), -1);
    assert_non_null(strstr(err, "blk.0.ffn_up_exps"));
    free(f); free(h); free(iq); free(iqref);
}

typedef struct counter { int *hits; } counter;

/* ------------------------------------------------------ quantized activations */

/* ggml's quantize_row_q8_0_ref output for input.f32: [fp16 d][32 int8]
 * blocks. Its rule (x / d, ties away) and the x86 one we follow (x * 127 /
 * amax, ties to even) agree on every value of this vector; where they part
 * is tested in test_quant_q8_simd_equals_scalar. */
static void test_quant_q8_0_equals_ggml(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("vectors/quant/q8_0.bin");
    size_t nin = 0, nbin = 0;
    float *x = slurp_shared("vectors/quant/input.f32", &nin);
    uint8_t *ref = slurp_shared("vectors/quant/q8_0.bin", &nbin);
    assert_non_null(x);
    assert_non_null(ref);
    const int64_t n = (int64_t)(nin / 4);
    assert_int_equal(nbin, (size_t)n / 32 * 34);
    const kernels *tabs[2] = { kernels_scalar(), kernels_get(1) };
    int8_t *q = malloc((size_t)n);
    float *d = malloc((size_t)n / 32 * sizeof *d);
    int32_t *s16 = malloc((size_t)n / 16 * sizeof *s16);
    for (int t = 0; t < 2; t++) {
        tabs[t]->quant_q8[WA_Q8_0](x, n, q, d, s16);
        for (int64_t b = 0; b < n / 32; b++) {
            uint16_t h;
            memcpy(&h, ref + b * 34, 2);
            assert_true(fp16_to_f32(h) == d[b]);
            assert_memory_equal(ref + b * 34 + 2, q + b * 32, 32);
        }
    }
    free(x); free(ref); free(q); free(d); free(s16);
}

/* Rows that exercise the rounding rules: exact halves (ties), zero blocks,
 * a block whose largest magnitude is negative or appears twice with both
 * signs, and plain noise. */
static void fill_act(float *x, int64_t n, uint64_t *rs, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = rndf_(rs) * 3.0f; break;
        case 1: x[i] = (float)((int)(rnd_(rs) % 255) - 127) * 0.5f; break;  /* ties after /d */
        case 2: x[i] = i % 512 < 256 ? 0.0f : rndf_(rs); break;
        default: x[i] = rndf_(rs); if (i % 97 == 5) x[i] = -4.0f; if (i % 97 == 9) x[i] = 4.0f; break;
        }
    }
}

static void test_quant_q8_simd_equals_scalar(void **st)
{
    (void)st;
    const kernels *v = simd_or_skip(), *s = kernels_scalar();
    uint64_t rs = 7;
    const int64_t n = 2048;
    float *x = malloc(n * sizeof *x);
    int8_t *q1 = malloc(n), *q2 = malloc(n);
    float *d1 = malloc(n / 32 * sizeof *d1), *d2 = malloc(n / 32 * sizeof *d2);
    int32_t *a1 = malloc(n / 16 * sizeof *a1), *a2 = malloc(n / 16 * sizeof *a2);
    for (int kind = 0; kind < 4; kind++)
        for (int act = WA_Q8_0; act <= WA_Q8_K; act++) {
            fill_act(x, n, &rs, kind);
            const int blk = qrow_block(act);
            s->quant_q8[act](x, n, q1, d1, a1);
            v->quant_q8[act](x, n, q2, d2, a2);
            assert_memory_equal(q1, q2, (size_t)n);
            assert_memory_equal(d1, d2, (size_t)(n / blk) * sizeof *d1);
            assert_memory_equal(a1, a2, (size_t)(n / 16) * sizeof *a1);
            for (int64_t i = 0; i < n; i++) { /* |x - q*d| <= d/2 (+ the fp16 rounding of Q8_0's d) */
                double e = fabs((double)x[i] - (double)q1[i] * d1[i / blk]);
                assert_true(e <= fabs(d1[i / blk]) * (act == WA_Q8_0 ? 0.6 : 0.5) + 1e-6);
            }
            for (int64_t t = 0; t < n / 16; t++) {
                int32_t sum = 0;
                for (int j = 0; j < 16; j++) sum += q1[t * 16 + j];
                assert_int_equal(sum, a1[t]);
            }
        }
    /* Q8_K: the first element of largest magnitude maps to -127 exactly */
    for (int64_t i = 0; i < 256; i++) x[i] = rndf_(&rs);
    x[10] = -2.0f; x[20] = 2.0f;
    s->quant_q8[WA_Q8_K](x, 256, q1, d1, a1);
    assert_int_equal(q1[10], -127);
    assert_int_equal(q1[20], 127);
    assert_true(d1[0] == 1.0f / (-127.0f / -2.0f));
    /* Q8_0 rounds as ggml-cpu's x86 quantize_row_q8_0: ties to even (the
     * _ref rule would give 3, 4, -3) and the multiplier 127/amax, which for
     * some x near a .5 boundary lands on its other side than 1/d does */
    const kernels *tabs[2] = { s, v };
    for (int t = 0; t < 2; t++) {
        for (int64_t i = 0; i < 32; i++) x[i] = 0.0f;
        x[0] = 127.0f; x[1] = 2.5f; x[2] = 3.5f; x[3] = -2.5f; x[4] = 0.5f;
        tabs[t]->quant_q8[WA_Q8_0](x, 32, q1, d1, a1);
        assert_int_equal(q1[0], 127);
        assert_int_equal(q1[1], 2);
        assert_int_equal(q1[2], 4);
        assert_int_equal(q1[3], -2);
        assert_int_equal(q1[4], 0);
        int found = 0;
        for (uint32_t k = 0; k < 100000 && !found; k++) { /* x within ulps of a .5 boundary where the two multipliers disagree */
            const float amax = 100.0f + (float)(k / 600) * 0.0271f;
            const float id86 = 127.0f / amax, idref = 1.0f / (amax / 127.0f);
            float xv = (((float)(k / 6 % 100) + 1.5f) / id86);
            for (int u = 0; u < (int)(k % 6); u++) xv = nextafterf(xv, k % 2 ? 0.0f : 1e9f);
            if (xv >= amax || nearbyintf(xv * id86) == nearbyintf(xv * idref)) continue;
            for (int64_t i = 0; i < 32; i++) x[i] = 0.0f;
            x[0] = amax; x[1] = xv;
            tabs[t]->quant_q8[WA_Q8_0](x, 32, q1, d1, a1);
            assert_int_equal(q1[1], (int)nearbyintf(xv * id86));
            found = 1;
        }
        assert_true(found);
    }
    free(x); free(q1); free(q2); free(d1); free(d2); free(a1); free(a2);
}

typedef struct qform { int bits, bias, group, cb, off, act; const char *what; } qform;

static const float IQ4NL[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

/* Every S-form the pack has (Q2_0, Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS, Q3_K,
 * Q4_K, Q5_K, Q6_K) and IQ3: the integer dot equals the decoded row times
 * the rounded activation (in double) up to float rounding, and AVX2 equals
 * scalar within 1e-6 of the sum of |terms|, and so do AVX-VNNI and the
 * AVX-512 table, which moreover equal AVX2 bit for bit. Rows of 1024 and, where the blocks
 * allow, 1120 (35 units of 32: the eight-unit loop, then a pair, then the
 * odd last unit). The four-row kernels (rows 1, 2 or 3 apart) equal each
 * table's one-row kernel bit for bit. */
static void test_qdot_forms(void **st)
{
    (void)st;
    static const qform forms[] = {
        { 2, -1, 64, 0, 0, WA_Q8_0, "S2 Q2_0" },     { 4, -8, 32, 0, 0, WA_Q8_0, "S4 Q4_0" },
        { 8, -16, 32, 0, 0, WA_Q8_0, "S8 Q5_0" },    { 8, -128, 32, 0, 0, WA_Q8_0, "S8 Q8_0" },
        { 4, 0, 32, 1, 0, WA_Q8_0, "S4cb IQ4_NL" },  { 4, 0, 32, 1, 0, WA_Q8_K, "S4cb IQ4_XS" },
        { 4, -4, 16, 0, 0, WA_Q8_K, "S4 Q3_K" },     { 4, 0, 32, 0, 1, WA_Q8_K, "S4off Q4_K" },
        { 8, 0, 32, 0, 1, WA_Q8_K, "S8off Q5_K" },   { 8, -32, 16, 0, 0, WA_Q8_K, "S8 Q6_K" },
        { 8, 0, 16, 0, 1, WA_Q8_K, "S8off g16" },    { 8, -100, 64, 0, 1, WA_Q8_0, "S8 bias -100 g64" },
        { 0, 0, 0, 0, 0, WA_Q8_K, "IQ3" },
    };
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    uint64_t rs = 11;
    const int64_t R = 10, CMAX = 1120; /* rows enough for qdot4 with strides 1..3 */
    int64_t C = CMAX;
    float *x = malloc(C * sizeof *x), *deq = malloc(C * sizeof *deq), *row = malloc(C * sizeof *row);
    int8_t *q = malloc(C);
    float *d = malloc(C / 32 * sizeof *d);
    int32_t *s16 = malloc(C / 16 * sizeof *s16);
    uint8_t *codes = malloc((size_t)R * C * 2);
    float *sc = malloc((size_t)R * C * sizeof *sc), *of = malloc((size_t)R * C * sizeof *of);
    for (size_t fc = 0; fc < 2 * sizeof forms / sizeof forms[0]; fc++) {
        const qform *f = &forms[fc / 2];
        C = fc % 2 ? CMAX : 1024;
        if (C % qrow_block(f->act) || (f->group && C % f->group)) continue;
        weight w = { 0 };
        w.rows = R; w.cols = C; w.act = f->act;
        if (f->bits == 0) {
            for (int64_t i = 0; i < R * C; i++) x[i % C] = rndf_(&rs), row[i % C] = 0;
            float *src = malloc((size_t)R * C * sizeof *src);
            for (int64_t i = 0; i < R * C; i++) src[i] = rndf_(&rs) * (1 + (i % 5));
            char err[128];
            assert_int_equal(iq3_encode(src, R, C, NULL, codes, err, sizeof err), 0);
            free(src);
            w.form = WF_IQ3; w.data = codes;
        } else {
            w.form = WF_SCODE; w.data = codes; w.code_bits = f->bits; w.code_bias = f->bias; w.group = f->group;
            for (int64_t i = 0; i < R * C * f->bits / 8; i++) codes[i] = (uint8_t)rnd_(&rs);
            for (int64_t g = 0; g < R * C / f->group; g++) { sc[g] = rndf_(&rs) * 0.01f; of[g] = rndf_(&rs) * 0.1f; }
            w.scales = sc;
            w.offsets = f->off ? of : NULL;
            w.codebook = f->cb ? IQ4NL : NULL;
        }
        char err[128];
        assert_int_equal(weight_check(&w, f->what, err, sizeof err), 0);
        assert_true(kernels_qdot_ok(&w));
        for (int kind = 0; kind < 4; kind++) {
            fill_act(x, C, &rs, kind);
            qrow a = { f->act, C, q, d, s16, deq, NULL, NULL, NULL };
            qrow_fill(tabs[0], &a, x);
            for (int64_t r = 0; r < R; r++) {
                tabs[0]->row_f32[w.form](&w, r, row);
                double ref = 0, mag = 0;
                for (int64_t i = 0; i < C; i++) { ref += (double)row[i] * deq[i]; mag += fabs((double)row[i] * deq[i]); }
                const float ys = tabs[0]->qdot[w.form](&w, r, &a);
                if (fabs(ys - ref) > 1e-5 * mag + 1e-30)
                    printf("%s: row %lld kind %d scalar %.9g double %.9g (mag %.3g)\n", f->what, (long long)r, kind, ys, ref, mag);
                assert_true(fabs(ys - ref) <= 1e-5 * mag + 1e-30);
                for (int t = 1; t < KERNELS_MAX; t++) { /* every table sums in ggml's order: same bits */
                    if (!tabs[t]) continue;
                    const float yv = tabs[t]->qdot[w.form](&w, r, &a);
                    if (memcmp(&yv, &ys, sizeof yv))
                        printf("%s (%s): row %lld kind %d %.9g, scalar %.9g\n", f->what, tabs[t]->name, (long long)r,
                               kind, yv, ys);
                    assert_memory_equal(&yv, &ys, sizeof yv);
                }
            }
            /* rows r, r + st, r + 2 st, r + 3 st into y[0], y[st], ...; the
             * places in between are left alone */
            for (int t = 0; t < KERNELS_MAX; t++) {
                const kernels *k = tabs[t];
                if (!k || !k->qdot4[w.form]) continue;
                for (int64_t st = 1; st <= 3; st++)
                    for (int64_t r = 0; r + 3 * st < R; r++) {
                        float y4[12];
                        for (int i = 0; i < 12; i++) y4[i] = -7.0f;
                        k->qdot4[w.form](&w, r, st, &a, y4);
                        for (int64_t i = 0; i < 12; i++) {
                            if (i % st || i / st >= 4) { assert_true(y4[i] == -7.0f); continue; }
                            const float y1 = k->qdot[w.form](&w, r + i, &a);
                            if (memcmp(&y4[i], &y1, sizeof y1))
                                printf("%s (%s): qdot4 stride %lld row %lld %.9g, qdot %.9g\n", f->what, k->name,
                                       (long long)st, (long long)(r + i), y4[i], y1);
                            assert_memory_equal(&y4[i], &y1, sizeof y1);
                        }
                    }
            }
        }
    }
    free(x); free(deq); free(row); free(q); free(d); free(s16); free(codes); free(sc); free(of);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "formats/ggml_tables.h"
#include <immintrin.h>
#include <string.h>
/* The AVX2 IQ3 dot as it was before the iq3dot round (scalar parity loop,
 * one block at a time), kept here as the reference the faster kernels must
 * equal bit for bit: the same integer lanes and the same float steps. */
__attribute__((target("avx2,fma,f16c"))) static float ref_avx2_qdot_iq3(const weight *w, int64_t r, const qrow *a)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    const __m256i sidx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bitsel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i one8 = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < w->cols / IQ3_QK; b++) {
        const uint8_t *blk = row + b * IQ3_BLOCK_BYTES;
        const int8_t *q = a->q + b * IQ3_QK;
        uint16_t dh;
        memcpy(&dh, blk + 96, 2);
        __m256i isum = _mm256_setzero_si256();
        for (int s = 0; s < 8; s++) {
            uint32_t word;
            memcpy(&word, blk + 64 + 4 * s, 4);
            const uint8_t *ix = blk + s * 8;
            __m256i g = _mm256_setr_epi32((int)ggml_iq3xxs_grid[ix[0]], (int)ggml_iq3xxs_grid[ix[1]],
                                          (int)ggml_iq3xxs_grid[ix[2]], (int)ggml_iq3xxs_grid[ix[3]],
                                          (int)ggml_iq3xxs_grid[ix[4]], (int)ggml_iq3xxs_grid[ix[5]],
                                          (int)ggml_iq3xxs_grid[ix[6]], (int)ggml_iq3xxs_grid[ix[7]]);
            uint32_t m = 0;
            for (int k = 0; k < 4; k++) {
                unsigned s7 = (word >> (7 * k)) & 127u, p = s7 ^ (s7 >> 4);
                p ^= p >> 2; p ^= p >> 1;
                m |= (s7 | ((p & 1u) << 7)) << (8 * k);
            }
            __m256i sb = _mm256_shuffle_epi8(_mm256_set1_epi32((int)m), sidx);
            __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(sb, bitsel), bitsel);
            __m256i sq = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(q + s * 32)), _mm256_or_si256(neg, one8));
            __m256i p16 = _mm256_maddubs_epi16(g, sq);
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, _mm256_set1_epi16((short)(2 * (word >> 28) + 1))));
        }
        const float dd = fp16_to_f32(dh) * a->d[b] * 0.125f;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(isum), acc);
    }
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ps(t, _mm_movehdup_ps(t));
    return _mm_cvtss_f32(t);
}
#define HAVE_REF_AVX2_IQ3 1
#endif

/* qdotn[form] of every row of w against 1..KQ_NT_MAX tokens (activation
 * rows of every kind) in every table that has it: each result equal to
 * the table's qdot of that token bit for bit, written with a stride of 2
 * and the gaps left alone. Returns how many results were compared. */
/* KQ_NT_MAX activation rows of w's width and kind, of every fill kind in
 * turn (x is the scratch row); free_acts releases them. */
static void make_acts(const kernels *k, const weight *w, uint64_t *rs, float *x, qrow an[KQ_NT_MAX])
{
    const int64_t C = w->cols;
    for (int i = 0; i < KQ_NT_MAX; i++) {
        /* every other row with Q8_K's sums of 32, the rest without: the
         * kernels that read them give the bits of those that add sum16;
         * likewise with qnib */
        an[i] = (qrow){ w->act, C, malloc(C), malloc(C / 32 * sizeof(float)), malloc(C / 16 * sizeof(int32_t)),
                        malloc(C * sizeof(float)), malloc(C / 32 * sizeof(float)),
                        i % 2 ? NULL : malloc(C / 32 * sizeof(int16_t)),
                        /* the last half with the codes in qnib order too (a batch of up to
                         * half of them has it in every token; more, in some) */
                        i < KQ_NT_MAX / 2 || w->act != WA_Q8_K ? NULL : malloc(C) };
        fill_act(x, C, rs, i % 4);
        qrow_fill(k, &an[i], x);
    }
}

static void free_acts(qrow an[KQ_NT_MAX])
{
    for (int i = 0; i < KQ_NT_MAX; i++) {
        free(an[i].q); free(an[i].d); free(an[i].sum16); free(an[i].deq); free(an[i].s1); free(an[i].sum32); free(an[i].qnib);
    }
}

static int check_qdotn(const kernels *const tabs[KERNELS_MAX], const weight *w, int form, uint64_t *rs, float *x,
                       const char *what)
{
    qrow an[KQ_NT_MAX];
    make_acts(tabs[0], w, rs, x, an);
    int checked = 0;
    for (int k = 0; k < KERNELS_MAX; k++) {
        if (!tabs[k] || !tabs[k]->qdotn[form]) continue;
        for (int64_t r = 0; r < w->rows; r++)
            for (int nt = 1; nt <= KQ_NT_MAX; nt++) {
                float yn[2 * KQ_NT_MAX];
                memset(yn, 0xff, sizeof yn);
                tabs[k]->qdotn[form](w, r, an + (KQ_NT_MAX - nt), nt, yn, 2);
                for (int i = 0; i < nt; i++) {
                    const float y1 = tabs[k]->qdot[form](w, r, &an[KQ_NT_MAX - nt + i]);
                    if (memcmp(&yn[2 * i], &y1, 4))
                        printf("%s qdotn (%s) row %lld nt %d token %d: %.9g, qdot %.9g\n", what, tabs[k]->name,
                               (long long)r, nt, i, yn[2 * i], y1);
                    assert_memory_equal(&yn[2 * i], &y1, 4);
                    uint32_t gap;
                    memcpy(&gap, &yn[2 * i + 1], 4);
                    assert_int_equal(gap, 0xffffffffu);
                    checked++;
                }
            }
    }
    free_acts(an);
    return checked;
}

/* IQ3 on raw random blocks (every grid index, sign pattern and sub-scale
 * code, not only what the encoder writes), with d drawn from +-0, small,
 * negative, subnormal and large fp16 values, rows of 1 to 9 blocks: every
 * table's qdot within 1e-6 (of the sum of |terms|) of scalar's, the SIMD
 * tables' qdot (AVX2, AVX-VNNI, AVX-512) equal to the pre-iq3dot AVX2
 * kernel bit for bit (rows of two blocks take every grid index), and every
 * qdot4 and every qdotn (1..KQ_NT_MAX tokens) equal to its table's qdot
 * bit for bit. */
static void test_qdot_iq3_random_blocks(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    static const float dvals[] = { 0.0f, -0.0f, 1.0f / 64, -1.0f / 64, 3.5f, -1000.0f, 6.0e-8f, -2.0e-5f, 65504.0f };
    uint64_t rs = 23;
    const int64_t R = 6, CMAX = 9 * 256;
    uint8_t *blocks = malloc((size_t)R * iq3_row_bytes(CMAX));
    float *x = malloc(CMAX * sizeof *x), *deq = malloc(CMAX * sizeof *deq), *row = malloc(CMAX * sizeof *row);
    int8_t *q = malloc(CMAX);
    float *d = malloc(CMAX / 256 * sizeof *d);
    int32_t *s16 = malloc(CMAX / 16 * sizeof *s16);
    for (int64_t nb = 1; nb <= 9; nb += (nb < 2 ? 1 : 3)) {
        const int64_t C = nb * 256;
        const size_t rb = iq3_row_bytes(C);
        for (size_t i = 0; i < R * rb; i++) blocks[i] = (uint8_t)rnd_(&rs);
        for (size_t b = 0; b < R * rb / IQ3_BLOCK_BYTES; b++) {
            const uint16_t dh = f32_to_fp16(dvals[rnd_(&rs) % (sizeof dvals / sizeof dvals[0])]);
            memcpy(blocks + b * IQ3_BLOCK_BYTES + 96, &dh, 2);
        }
        if (nb == 1) /* all signs set with the largest sub-scale, all clear with the smallest */
            for (int s = 0; s < 8; s++) {
                const uint32_t wd = s & 1 ? 0xffffffffu : 0;
                memcpy(blocks + 64 + 4 * s, &wd, 4);
            }
        if (nb == 2) /* rows 0 and 1 hold every grid index 0..255 once */
            for (int64_t r = 0; r < R; r++)
                for (int64_t b = 0; b < nb; b++)
                    for (int i = 0; i < 64; i++)
                        blocks[r * rb + b * IQ3_BLOCK_BYTES + i] = (uint8_t)(r * 128 + b * 64 + i);
        weight w = { 0 };
        w.form = WF_IQ3; w.rows = R; w.cols = C; w.data = blocks; w.act = WA_Q8_K;
        char err[128];
        assert_int_equal(weight_check(&w, "iq3 random", err, sizeof err), 0);
        assert_true(kernels_qdot_ok(&w));
        for (int kind = 0; kind < 4; kind++) {
            fill_act(x, C, &rs, kind);
            qrow a = { WA_Q8_K, C, q, d, s16, deq, NULL, NULL, NULL };
            qrow_fill(tabs[0], &a, x);
            for (int64_t r = 0; r < R; r++) {
                tabs[0]->row_f32[WF_IQ3](&w, r, row);
                double mag = 0;
                for (int64_t i = 0; i < C; i++) mag += fabs((double)row[i] * deq[i]);
                const float ys = tabs[0]->qdot[WF_IQ3](&w, r, &a);
                for (int t = 1; t < KERNELS_MAX; t++) {
                    if (!tabs[t]) continue;
                    const float yv = tabs[t]->qdot[WF_IQ3](&w, r, &a);
                    if (memcmp(&yv, &ys, sizeof yv))
                        printf("IQ3 random (%s): C %lld row %lld kind %d %.9g scalar %.9g\n", tabs[t]->name,
                               (long long)C, (long long)r, kind, yv, ys);
                    assert_memory_equal(&yv, &ys, sizeof yv);
                    assert_true(fabs(yv - ys) <= 1e-6 * mag + 1e-30);
#ifdef HAVE_REF_AVX2_IQ3
                    const float yr = ref_avx2_qdot_iq3(&w, r, &a);
                    if (memcmp(&yr, &yv, sizeof yr))
                        printf("IQ3 random (%s): C %lld row %lld kind %d %.9g, old AVX2 %.9g\n", tabs[t]->name,
                               (long long)C, (long long)r, kind, yv, yr);
                    assert_memory_equal(&yr, &yv, sizeof yr);
#endif
                }
            }
            for (int t = 0; t < KERNELS_MAX; t++) {
                if (!tabs[t] || !tabs[t]->qdot4[WF_IQ3]) continue;
                for (int64_t r = 0; r + 4 <= R; r++) {
                    float y4[4];
                    tabs[t]->qdot4[WF_IQ3](&w, r, 1, &a, y4);
                    for (int i = 0; i < 4; i++) {
                        const float y1 = tabs[t]->qdot[WF_IQ3](&w, r + i, &a);
                        assert_memory_equal(&y4[i], &y1, sizeof y1);
                    }
                }
            }
        }
        /* qdotn: one row against 1..KQ_NT_MAX tokens; the scalar table has it */
        assert_true(check_qdotn(tabs, &w, WF_IQ3, &rs, x, "IQ3 random") > 0);
    }
    free(blocks); free(x); free(deq); free(row); free(q); free(d); free(s16);
}

/* Shapes the integer kernels do not take fall back to the decoded row. */
/* ggml's 6-bit scale and min of K-quant sub-block j (its get_scale_min_k4). */
static void k4_scale_min(int j, const uint8_t *s, int *sc, int *m)
{
    if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
    else { *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4); *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4); }
}

/* ggml's own Q8_0, Q4_K, Q5_K and Q6_K rows (vectors/quant, 8 x 512), multiplied
 * natively (qdot[WF_GGML]) and as the S-form the pack transcodes them to
 * (codes, f32 scale = d * sc, offset = -dmin * m for Q4_K/Q5_K; K-quants get their
 * factors back through kfactor_build): every table, bit for bit equal. The
 * S-form without factors sums per group and may differ in the last bits;
 * that it is a different order is what the factors are for. */
/* Every table's qdot4 of a form (where it has one: MXFP4's four-row
 * kernels for native blocks; S-forms' S8 and K-quant ones) gives the scalar
 * qdot's bits for rows r + k * stride, with stride 1 and 2 over the
 * weight's rows (a multiple of 8). */
static void check_qdot4(const kernels *const tabs[KERNELS_MAX], const weight *w, wform form, const qrow *a)
{
    for (int k = 1; k < KERNELS_MAX; k++) {
        if (!tabs[k] || !tabs[k]->qdot4[form]) continue;
        for (int stride = 1; stride <= 2; stride++)
            for (int64_t r0 = 0; r0 + 3 * stride < w->rows; r0 += stride == 1 ? 4 : 1) {
                if (stride == 2 && r0 % 4 > 1) continue;
                float y[8];
                tabs[k]->qdot4[form](w, r0, stride, a, y);
                for (int i = 0; i < 4; i++) {
                    const float ref = tabs[0]->qdot[form](w, r0 + i * stride, a);
                    assert_memory_equal(&y[i * stride], &ref, 4);
                }
            }
    }
}

/* Every row of the native weight w against the activation a: the scalar
 * table's qdot within 1e-5 of the sum of |terms| of the decoded row times
 * the rounded activation (where the float sums cannot overflow: MXFP4's
 * large exponents do, as in ggml; with Q8_1 activations each block's min m
 * meets the block's s, ggml's fp16 sum, not the sum of its values), every
 * other table's qdot its bits, then check_qdot4. row: w->cols floats of
 * scratch. */
static void check_native_rows(const kernels *const tabs[KERNELS_MAX], const weight *w, const qrow *a, float *row, const char *what)
{
    for (int64_t r = 0; r < w->rows; r++) {
        const float ys = tabs[0]->qdot[WF_GGML](w, r, a);
        tabs[0]->row_f32[WF_GGML](w, r, row);
        double dref = 0, mag = 0;
        for (int64_t i = 0; i < w->cols; i++) {
            dref += (double)row[i] * a->deq[i];
            mag += fabs((double)row[i] * a->deq[i]);
        }
        if (a->kind == WA_Q8_1) /* Q4_1, Q5_1: m is the fp16 after d at the block's start */
            for (int64_t b = 0; b < w->cols / 32; b++) {
                const uint8_t *blk = (const uint8_t *)w->data + (size_t)r * w->row_bytes + (size_t)b * w->row_bytes / (size_t)(w->cols / 32);
                uint16_t mh;
                memcpy(&mh, blk + 2, 2);
                double vs = 0;
                for (int i = 0; i < 32; i++) vs += a->deq[b * 32 + i];
                dref += (double)fp16_to_f32(mh) * (a->s1[b] - vs);
            }
        if (mag < 1e30) assert_true(fabs(ys - dref) <= 1e-5 * mag + 1e-30);
        for (int k = 1; k < KERNELS_MAX; k++) {
            if (!tabs[k]) continue;
            const float yv = tabs[k]->qdot[WF_GGML](w, r, a);
            if (memcmp(&yv, &ys, sizeof yv))
                printf("%s (%s): C %lld row %lld: %.9g, scalar %.9g\n", what, tabs[k]->name, (long long)w->cols,
                       (long long)r, yv, ys);
            assert_memory_equal(&yv, &ys, sizeof yv);
        }
    }
    check_qdot4(tabs, w, WF_GGML, a);
}

/* qdot4n[form] of rows r0..r0 + 3 (r0 = 0, 1, 4, ...: aligned and not)
 * against 1..KQ_NT_MAX tokens in every table that has it: each result the
 * scalar qdot of that row and token bit for bit, written with a token
 * stride of 2 x rows and the gaps left alone; returns how many were
 * compared (0 when no table took the weight). */
static int check_qdot4n(const kernels *const tabs[KERNELS_MAX], const weight *w, int form, uint64_t *rs, float *x)
{
    const int64_t R = w->rows;
    qrow an[KQ_NT_MAX];
    make_acts(tabs[0], w, rs, x, an);
    float *yn = malloc((size_t)(2 * R * KQ_NT_MAX) * sizeof *yn);
    int checked = 0;
    for (int k = 0; k < KERNELS_MAX; k++) {
        if (!tabs[k] || !tabs[k]->qdot4n[form]) continue;
        for (int64_t r0 = 0; r0 + 4 <= R; r0 += r0 == 0 ? 1 : r0 == 1 ? 3 : 4)
            for (int nt = 1; nt <= KQ_NT_MAX; nt++) {
                memset(yn, 0xff, (size_t)(2 * R * KQ_NT_MAX) * sizeof *yn);
                const qrow *at = an + (KQ_NT_MAX - nt);
                if (!tabs[k]->qdot4n[form](w, r0, at, nt, yn + r0, 2 * R)) continue;
                for (int t = 0; t < nt; t++)
                    for (int64_t i = 0; i < 2 * R; i++) {
                        float *got = &yn[t * 2 * R + i];
                        if (i >= r0 && i < r0 + 4) {
                            const float y1 = tabs[0]->qdot[form](w, i, &at[t]);
                            if (memcmp(got, &y1, 4))
                                printf("qdot4n (%s) rows %lld.. nt %d row %lld token %d: %.9g, qdot %.9g\n",
                                       tabs[k]->name, (long long)r0, nt, (long long)i, t, *got, y1);
                            assert_memory_equal(got, &y1, 4);
                            checked++;
                        } else {
                            uint32_t gap;
                            memcpy(&gap, got, 4);
                            assert_int_equal(gap, 0xffffffffu);
                        }
                    }
            }
    }
    free(yn);
    free_acts(an);
    return checked;
}

/* The S8 four-row batch kernel on random Q8_0-shaped rows longer than its
 * chunk of scale products (75 units: one chunk of 64 and 11 more, neither
 * a multiple of 16), with zero, negative and large scales: the scalar
 * qdot's bits for every row and token. */
static void test_qdot4n_s8_random(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    const int64_t R = 9, C = 75 * 32;
    uint64_t rs = 4242;
    uint8_t *codes = malloc((size_t)(R * C));
    float *sc = malloc((size_t)(R * C / 32) * sizeof *sc), *x = malloc((size_t)C * sizeof *x);
    for (int64_t i = 0; i < R * C; i++) codes[i] = (uint8_t)(rnd_(&rs) >> 8);
    for (int64_t i = 0; i < R * C / 32; i++) {
        const int kind = (int)(i % 7);
        sc[i] = kind == 0 ? 0.0f : kind == 1 ? -1.5e-3f : kind == 2 ? 3.0e4f : rndf_(&rs) * 0.02f;
    }
    weight w = { .form = WF_SCODE, .rows = R, .cols = C, .data = codes, .act = WA_Q8_0, .group = 32,
                 .scales = sc, .code_bits = 8, .code_bias = -128 };
    char err[128];
    assert_int_equal(weight_check(&w, "S8", err, sizeof err), 0);
    const int n4 = check_qdot4n(tabs, &w, WF_SCODE, &rs, x);
    /* r0 = 0, 1, 4 in each table that has the kernel */
    assert_int_equal(n4, tables_with_qdot4n(tabs, WF_SCODE) * 3 * 4 * (KQ_NT_MAX * (KQ_NT_MAX + 1) / 2));
    free(codes); free(sc); free(x);
}

/* Random scales (and offsets) of a K-quant S-form of style 4, 5 or 6 in
 * ng groups that factor exactly: per super-block an fp16 d and dmin, per
 * group an integer multiple of each (Q6_K: -128..127, no offsets used). */
static void kq_random_factors(int style, int ng, uint64_t *rs, float *sc, float *off)
{
    const int per_sb = style == 6 || style == 3 ? 16 : 8;
    for (int g = 0; g < ng; g += per_sb) {
        const float d = fp16_to_f32(f32_to_fp16(1e-3f + 1e-2f * (rndf_(rs) + 1.0f)));
        const float dmin = fp16_to_f32(f32_to_fp16(1e-3f + 5e-3f * (rndf_(rs) + 1.0f)));
        for (int j = 0; j < per_sb; j++) {
            const int k = style == 6 ? (int)(rnd_(rs) >> 9) % 256 - 128
                          : style == 3 ? (int)(rnd_(rs) >> 9) % 64 - 32 : (int)(rnd_(rs) >> 9) % 64;
            sc[g + j] = d * (float)k;
            off[g + j] = -(dmin * (float)((rnd_(rs) >> 9) % 64));
        }
    }
}

/* K-quant S-forms with their factors (Q3_K, Q4_K, Q5_K and Q6_K shapes, random
 * codes and factors that factor exactly) in rows of eleven super-blocks:
 * the four-row kernels (qdot4, which the AVX-512 table runs side by side,
 * the factors of eight super-blocks at a time and the last three alone)
 * give every row the scalar qdot's bits, for adjacent rows and rows a
 * stride apart, against activations of every kind. */
static void test_kq_four_rows(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    const int64_t R = 9, C = 11 * 256;
    uint64_t rs = 2417;
    float *x = malloc((size_t)C * sizeof *x);
    for (int style = 3; style <= 6; style++) {
        const int mins = style == 4 || style == 5, group = mins ? 32 : 16, bits = style <= 4 ? 4 : 8;
        const int ng = (int)(R * C / group);
        uint8_t *codes = calloc((size_t)(R * C * bits / 8), 1);
        float *sc = malloc((size_t)ng * sizeof *sc), *off = malloc((size_t)ng * sizeof *off);
        for (int64_t e = 0; e < R * C; e++) {
            const unsigned c = (unsigned)(rnd_(&rs) >> 7) % (style == 3 ? 8u : style == 4 ? 16u : style == 5 ? 32u : 64u);
            if (bits == 4) codes[e / 2] |= (uint8_t)(c << (4 * (e % 2)));
            else codes[e] = (uint8_t)c;
        }
        kq_random_factors(style, ng, &rs, sc, off);
        weight w = { .form = WF_SCODE, .rows = R, .cols = C, .data = codes, .act = WA_Q8_K, .group = group,
                     .scales = sc, .offsets = mins ? off : NULL, .code_bits = bits,
                     .code_bias = style == 6 ? -32 : style == 3 ? -4 : 0 };
        char err[128];
        assert_int_equal(weight_check(&w, "K-quant", err, sizeof err), 0);
        kfactor kf;
        void *mem = malloc(kfactor_bytes(&w));
        assert_int_equal(kfactor_build(&w, mem, &kf, 0), 1);
        assert_int_equal(kf.style, style);
        w.kf = &kf;
        qrow an[KQ_NT_MAX];
        make_acts(tabs[0], &w, &rs, x, an);
        for (int t = 0; t < KQ_NT_MAX; t++) check_qdot4(tabs, &w, WF_SCODE, &an[t]); /* with and without qnib */
        free_acts(an);
        free(mem); free(codes); free(sc); free(off);
    }
    free(x);
}

/* K-quant S-forms with their factors (Q3_K, Q4_K, Q5_K and Q6_K shapes),
 * their codes split (kq_split_rows: halves of low nibbles and bit planes, as
 * the loader holds resident experts): every table's qdot, qdot4, qdotn and
 * row_f32 give the bits the scalar kernels give on the codes as the pack
 * holds them; the split reads 128, 160 or 192 bytes per 256 codes. An
 * 8-bit code that does not fit the bits is refused and left as it was. */
static void test_kq_split(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    const int64_t R = 9, C = 11 * 256;
    uint64_t rs = 9091;
    float *x = malloc((size_t)C * sizeof *x), *ref = malloc((size_t)C * sizeof *ref), *got = malloc((size_t)C * sizeof *got);
    for (int style = 3; style <= 6; style++) {
        const int mins = style == 4 || style == 5, group = mins ? 32 : 16, ng = (int)(R * C / group);
        const int bits = style <= 4 ? 4 : 8, want = style <= 4 ? 4 : style;
        const size_t nbytes = (size_t)(R * C * bits / 8), sbb = 128 + 32 * (size_t)(want - 4);
        uint8_t *codes = calloc(nbytes, 1), *split = malloc(nbytes), flat[256];
        float *sc = malloc((size_t)ng * sizeof *sc), *off = malloc((size_t)ng * sizeof *off);
        for (int64_t e = 0; e < R * C; e++) {
            const unsigned c = (unsigned)(rnd_(&rs) >> 7) % (style == 3 ? 8u : style == 4 ? 16u : style == 5 ? 32u : 64u);
            if (bits == 4) codes[e / 2] |= (uint8_t)(c << (4 * (e % 2)));
            else codes[e] = (uint8_t)c;
        }
        kq_random_factors(style, ng, &rs, sc, off);
        weight w = { .form = WF_SCODE, .rows = R, .cols = C, .data = codes, .act = WA_Q8_K, .group = group,
                     .scales = sc, .offsets = mins ? off : NULL, .code_bits = bits,
                     .code_bias = style == 6 ? -32 : style == 3 ? -4 : 0 };
        char err[128];
        assert_int_equal(weight_check(&w, "K-quant", err, sizeof err), 0);
        kfactor kf;
        void *mem = malloc(kfactor_bytes(&w));
        assert_int_equal(kfactor_build(&w, mem, &kf, 0), 1);
        assert_int_equal(kq_split_bits(&w), want);
        weight wn = w; /* without its factors: not split, nothing written */
        memcpy(split, codes, nbytes);
        wn.data = split;
        assert_int_equal(kq_split_rows(&wn, split), 0);
        assert_memory_equal(split, codes, nbytes);
        w.kf = &kf;
        /* the split weight's factors as records (what the loader builds for
         * a weight it splits), in memory of their own: the same values */
        kfactor kr;
        void *mem_r = malloc(kfactor_bytes(&w));
        assert_int_equal(kfactor_build(&w, mem_r, &kr, 1), 1);
        assert_ptr_equal(kr.rec, mem_r);
        assert_null(kr.d);
        for (int64_t sb = 0; sb < R * C / 256; sb++) {
            assert_int_equal(kf_d(&kr, sb), kf_d(&kf, sb));
            assert_memory_equal(kf_sc(&kr, sb), kf_sc(&kf, sb), (size_t)kf_per_sb(style));
            if (mins) {
                assert_int_equal(kf_dmin(&kr, sb), kf_dmin(&kf, sb));
                assert_memory_equal(kf_m(&kr, sb), kf_m(&kf, sb), 8);
            }
        }
        weight ws = w;
        ws.data = split;
        ws.kf = &kr;
        if (bits == 8) { /* a code past the bits: refused, nothing written */
            memcpy(split, codes, nbytes);
            split[R * C - 1] = (uint8_t)(1u << style);
            assert_int_equal(kq_split_rows(&ws, split), 0);
            assert_int_equal(ws.code_split, 0);
            assert_int_equal(split[0], codes[0]);
        }
        memcpy(split, codes, nbytes);
        assert_int_equal(kq_split_rows(&ws, split), 1);
        assert_int_equal(ws.code_split, want);
        assert_int_equal(ws.row_bytes, (size_t)(C / 256) * sbb);
        assert_int_equal(kq_split_bits(&ws), 0); /* split once */
        weight wc = ws;
        assert_int_equal(weight_check(&wc, "split", err, sizeof err), 0);
        assert_int_equal(wc.row_bytes, ws.row_bytes);
        uint8_t un[256];
        kq_unsplit(split + 3 * sbb, want, un);
        for (int e = 0; e < 256; e++) flat[e] = bits == 4 ? (uint8_t)(codes[3 * 128 + e / 2] >> (4 * (e % 2)) & 15) : codes[3 * 256 + e];
        assert_memory_equal(un, flat, 256);
        qrow an[KQ_NT_MAX];
        make_acts(tabs[0], &w, &rs, x, an);
        for (int k = 0; k < KERNELS_MAX; k++) {
            if (!tabs[k]) continue;
            for (int64_t r = 0; r < R; r++) {
                for (int t = 0; t < KQ_NT_MAX; t++) {
                    const float y0 = tabs[0]->qdot[WF_SCODE](&w, r, &an[t]), y1 = tabs[k]->qdot[WF_SCODE](&ws, r, &an[t]);
                    assert_memory_equal(&y1, &y0, 4);
                }
                float yn[KQ_NT_MAX];
                tabs[k]->qdotn[WF_SCODE](&ws, r, an, KQ_NT_MAX, yn, 1);
                for (int t = 0; t < KQ_NT_MAX; t++) {
                    const float y0 = tabs[0]->qdot[WF_SCODE](&w, r, &an[t]);
                    assert_memory_equal(&yn[t], &y0, 4);
                }
                tabs[0]->row_f32[WF_SCODE](&w, r, ref);
                tabs[k]->row_f32[WF_SCODE](&ws, r, got);
                assert_memory_equal(got, ref, (size_t)C * sizeof *ref);
            }
            /* four rows at once, adjacent and a stride apart (decode's four
             * streams: the AVX-512 kernel meets them super-block by
             * super-block) */
            if (tabs[k]->qdot4[WF_SCODE])
                for (int64_t stride = 1; stride <= 2; stride++)
                    for (int64_t r0 = 0; r0 + 3 * stride < R; r0++) {
                        float y[4 * 2];
                        tabs[k]->qdot4[WF_SCODE](&ws, r0, stride, &an[1], y);
                        for (int i = 0; i < 4; i++) {
                            const float y0 = tabs[0]->qdot[WF_SCODE](&w, r0 + i * stride, &an[1]);
                            assert_memory_equal(&y[i * stride], &y0, 4);
                        }
                    }
        }
        free_acts(an);
        free(mem); free(mem_r); free(codes); free(split); free(sc); free(off);
    }
    /* only the tables whose K-quant kernels read the split as it lies ask
     * the loader for it (the others write each super-block out first) */
    assert_int_equal(kernels_scalar()->reads_split, 0);
    for (int k = 0; k < KERNELS_MAX; k++)
        if (tabs[k] && !strstr(tabs[k]->name, "vnni512")) assert_int_equal(tabs[k]->reads_split, 0);
    /* a 2-bit weight has nothing to split */
    weight w2 = { .form = WF_SCODE, .code_bits = 2 };
    assert_int_equal(kq_split_bits(&w2), 0);
    free(x); free(ref); free(got);
}

/* A Q8_0-shaped S8 weight that also has its scales as fp16 (scales_h, as
 * the loader gives experts whose pack stores them so) gives the same bits
 * in every table's qdot and qdot4 (the AVX-512 VNNI kernel reads the fp16
 * copy), and a decode reads 2 bytes a group for them instead of 4. */
static void test_s8_fp16_scales(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    const int64_t R = 12, C = 21 * 32; /* units in groups of 8 and a tail of 5 */
    uint64_t rs = 515;
    uint8_t *codes = malloc((size_t)(R * C));
    float *sc = malloc((size_t)(R * C / 32) * sizeof *sc), *x = malloc((size_t)C * sizeof *x);
    uint16_t *sh = malloc((size_t)(R * C / 32) * sizeof *sh);
    for (int64_t i = 0; i < R * C; i++) codes[i] = (uint8_t)(rnd_(&rs) >> 8);
    for (int64_t i = 0; i < R * C / 32; i++) {
        sh[i] = f32_to_fp16(i % 5 == 0 ? 6.0e4f : rndf_(&rs) * 0.02f);
        sc[i] = fp16_to_f32(sh[i]);
    }
    weight w = { .form = WF_SCODE, .rows = R, .cols = C, .data = codes, .act = WA_Q8_0, .group = 32,
                 .scales = sc, .code_bits = 8, .code_bias = -128 };
    char err[128];
    assert_int_equal(weight_check(&w, "S8", err, sizeof err), 0);
    weight wh = w;
    wh.scales_h = sh;
    assert_int_equal(weight_read_bytes(&wh), weight_read_bytes(&w) - (size_t)(R * C / 32) * 2);
    qrow an[KQ_NT_MAX];
    make_acts(tabs[0], &w, &rs, x, an);
    for (int k = 0; k < KERNELS_MAX; k++) {
        if (!tabs[k]) continue;
        for (int64_t stride = 1; stride <= 3; stride++)
            for (int64_t r0 = 0; r0 + 3 * stride < R; r0++) {
                float y[4 * 3], yh[4 * 3];
                tabs[k]->qdot4[WF_SCODE](&w, r0, stride, &an[0], y);
                tabs[k]->qdot4[WF_SCODE](&wh, r0, stride, &an[0], yh);
                for (int q = 0; q < 4; q++) {
                    assert_memory_equal(&y[q * stride], &yh[q * stride], sizeof *y);
                    const float one = tabs[k]->qdot[WF_SCODE](&wh, r0 + q * stride, &an[0]);
                    assert_memory_equal(&y[q * stride], &one, sizeof one);
                }
            }
    }
    free_acts(an);
    free(codes); free(sc); free(sh); free(x);
}

static void test_native_equals_sform(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("vectors/quant/q5_K.bin");
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    const char *names[6] = { "vectors/quant/q8_0.bin", "vectors/quant/q4_K.bin", "vectors/quant/q5_K.bin",
                             "vectors/quant/q6_K.bin", "vectors/quant/q3_K.bin", "vectors/quant/iq4_xs.bin" };
    const int types[6] = { GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_XS };
    const int64_t R = 8, C = 512;
    uint64_t rs = 99;
    float x[512], deq[512], d[512 / 32], s1[512 / 32];
    int8_t q[512];
    int32_t s16[512 / 16];
    float cbf[16];
    for (int k = 0; k < 16; k++) cbf[k] = (float)ggml_kvalues_iq4nl[k];
    for (int t = 0; t < 6; t++) {
        size_t nb = 0;
        uint8_t *blocks = slurp_shared(names[t], &nb);
        assert_non_null(blocks);
        weight nat = { .form = WF_GGML, .rows = R, .cols = C, .data = blocks, .ggml_type = types[t],
                       .act = kernels_ggml_act(types[t]) };
        char err[128];
        assert_int_equal(weight_check(&nat, "native", err, sizeof err), 0);
        assert_int_equal(nb, nat.row_bytes * R);
        assert_true(kernels_qdot_ok(&nat));
        uint8_t *codes = calloc((size_t)(R * C), 1);
        float *sc = malloc(R * C / 16 * sizeof *sc), *off = malloc(R * C / 32 * sizeof *off);
        weight sf = { .form = WF_SCODE, .rows = R, .cols = C, .data = codes, .act = nat.act, .group = 32, .scales = sc };
        if (t >= 4) { /* Q3_K and IQ4_XS as the pack holds them (convert/transcode.c): S4 with f32 scales,
                       * Q3_K's per 16 with bias -4, IQ4_XS's per 32 with the IQ4_NL codebook */
            planes_desc pd;
            size_t pb[PLANE_COUNT];
            assert_int_equal(transcode_form_for(types[t], &pd), 0);
            assert_int_equal(planes_sizes(&pd, C, R, pb), 0);
            uint8_t *pl[PLANE_COUNT] = { 0 };
            for (int k = 0; k < PLANE_COUNT; k++) pl[k] = pb[k] ? malloc(pb[k]) : NULL;
            assert_int_equal(transcode(&pd, types[t], blocks, C, R, pl), 0);
            assert_int_equal(pb[PLANE_SCALES], (size_t)(R * C / pd.group_elems) * sizeof *sc);
            memcpy(codes, pl[PLANE_CODES], pb[PLANE_CODES]);
            memcpy(sc, pl[PLANE_SCALES], pb[PLANE_SCALES]);
            for (int k = 0; k < PLANE_COUNT; k++) free(pl[k]);
            sf.code_bits = pd.code_bits; sf.code_bias = pd.code_bias; sf.group = pd.group_elems;
            if (pd.codebook) sf.codebook = cbf;
        }
        for (int64_t r = 0; r < R && t < 4; r++) {
            const uint8_t *row = blocks + r * nat.row_bytes;
            if (t == 0) {
                sf.code_bits = 8; sf.code_bias = -128;
                for (int64_t b = 0; b < C / 32; b++) {
                    uint16_t h; memcpy(&h, row + b * 34, 2);
                    sc[r * (C / 32) + b] = fp16_to_f32(h);
                    for (int e = 0; e < 32; e++) codes[r * C + b * 32 + e] = (uint8_t)((int8_t)row[b * 34 + 2 + e] + 128);
                }
                continue;
            }
            if (t == 3) { /* Q6_K: ql[128] qh[64] int8 scales[16] fp16 d per 256 */
                sf.code_bits = 8; sf.code_bias = -32; sf.group = 16;
                for (int64_t i = 0; i < C / 256; i++) {
                    const uint8_t *blk = row + i * 210, *ql = blk, *qh = blk + 128;
                    const int8_t *s8 = (const int8_t *)(blk + 192);
                    uint16_t hd; memcpy(&hd, blk + 208, 2);
                    for (int k = 0; k < 16; k++) sc[r * (C / 16) + i * 16 + k] = fp16_to_f32(hd) * (float)s8[k];
                    uint8_t *cd = codes + r * C + i * 256;
                    for (int n = 0; n < 2; n++)
                        for (int l = 0; l < 32; l++) {
                            const uint8_t *L = ql + 64 * n, *H = qh + 32 * n;
                            cd[128 * n + l] = (uint8_t)((L[l] & 15) | ((H[l] & 3) << 4));
                            cd[128 * n + l + 32] = (uint8_t)((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4));
                            cd[128 * n + l + 64] = (uint8_t)((L[l] >> 4) | (((H[l] >> 4) & 3) << 4));
                            cd[128 * n + l + 96] = (uint8_t)((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4));
                        }
                }
                continue;
            }
            sf.code_bits = t == 1 ? 4 : 8; sf.code_bias = 0; sf.offsets = off;
            const size_t bb = t == 1 ? 144 : 176;
            for (int64_t i = 0; i < C / 256; i++) {
                const uint8_t *blk = row + i * bb, *qh = blk + 16, *qs = t == 1 ? blk + 16 : blk + 48;
                uint16_t hd, hm; memcpy(&hd, blk, 2); memcpy(&hm, blk + 2, 2);
                for (int j = 0; j < 8; j++) {
                    int s6, m6;
                    k4_scale_min(j, blk + 4, &s6, &m6);
                    sc[r * (C / 32) + i * 8 + j] = fp16_to_f32(hd) * (float)s6;
                    off[r * (C / 32) + i * 8 + j] = -(fp16_to_f32(hm) * (float)m6);
                }
                for (int j = 0; j < 4; j++)
                    for (int l = 0; l < 32; l++) {
                        int lo = qs[32 * j + l] & 15, hi = qs[32 * j + l] >> 4;
                        if (t == 2) { lo += ((qh[l] >> (2 * j)) & 1) << 4; hi += ((qh[l] >> (2 * j + 1)) & 1) << 4; }
                        const int64_t e0 = r * C + i * 256 + 64 * j + l;
                        if (t == 1) {
                            codes[e0 / 2] |= (uint8_t)(lo << (4 * (e0 % 2)));
                            codes[(e0 + 32) / 2] |= (uint8_t)(hi << (4 * ((e0 + 32) % 2)));
                        } else {
                            codes[e0] = (uint8_t)lo;
                            codes[e0 + 32] = (uint8_t)hi;
                        }
                    }
            }
        }
        assert_int_equal(weight_check(&sf, "S-form", err, sizeof err), 0);
        kfactor kf;
        void *mem = NULL;
        if (t > 0) {
            mem = malloc(kfactor_bytes(&sf));
            assert_int_equal(kfactor_build(&sf, mem, &kf, 0), 1);
            const size_t full = weight_bytes(&sf);
            sf.kf = &kf;
            /* decode reads the codes and the factors, not the f32 planes */
            const size_t n = (size_t)R * C, groups = n / (size_t)sf.group;
            assert_int_equal(weight_read_bytes(&sf), (size_t)R * sf.row_bytes + groups * (kf.m ? 2 : 1) +
                                                         n / 256 * 2 * (kf.dmin ? 2 : 1));
            assert_true(weight_read_bytes(&sf) < full);
        }
        assert_true(kernels_qdot_ok(&sf));
        /* the K-quants' codes split as the loader holds resident ones
         * (kq_split_rows: nibbles and bit planes): the same bits */
        weight sp = sf;
        uint8_t *spc = NULL;
        kfactor kr;
        void *mem_r = NULL;
        if (t > 0 && kq_split_bits(&sf)) {
            spc = malloc((size_t)R * sf.row_bytes);
            memcpy(spc, codes, (size_t)R * sf.row_bytes);
            sp.data = spc;
            assert_int_equal(kq_split_rows(&sp, spc), 1);
            mem_r = malloc(kfactor_bytes(&sf));
            assert_int_equal(kfactor_build(&sf, mem_r, &kr, 1), 1);
            sp.kf = &kr;
        }
        assert_true((spc != NULL) == (t > 0));
        for (int kind = 0; kind < 4; kind++) {
            fill_act(x, C, &rs, kind);
            int16_t s32[512 / 32];
            int8_t nib[512];
            /* with and without sums of 32, and without and with the codes in qnib order */
            qrow a = { nat.act, C, q, d, s16, deq, NULL, kind % 2 ? NULL : s32, kind < 2 ? NULL : nib };
            qrow_fill(tabs[0], &a, x);
            for (int64_t r = 0; r < R; r++) {
                const float ref = tabs[0]->qdot[WF_GGML](&nat, r, &a);
                for (int k = 0; k < KERNELS_MAX; k++) {
                    if (!tabs[k]) continue;
                    const float yn = tabs[k]->qdot[WF_GGML](&nat, r, &a), ys = tabs[k]->qdot[WF_SCODE](&sf, r, &a);
                    if (memcmp(&yn, &ref, 4) || memcmp(&ys, &ref, 4))
                        printf("%s row %lld kind %d (%s): native %.9g S-form %.9g scalar native %.9g\n", names[t],
                               (long long)r, kind, tabs[k]->name, yn, ys, ref);
                    assert_memory_equal(&yn, &ref, 4);
                    assert_memory_equal(&ys, &ref, 4);
                    if (spc) {
                        const float yp = tabs[k]->qdot[WF_SCODE](&sp, r, &a);
                        assert_memory_equal(&yp, &ref, 4);
                    }
                }
            }
            check_qdot4(tabs, &sf, WF_SCODE, &a);
            if (spc) check_qdot4(tabs, &sp, WF_SCODE, &a);
        }
        /* the eight rows as one row of 8 x C (the blocks, codes and factor
         * planes lie row after row): a row of 16 super-blocks, as long as a
         * real model's rows and not just two, the same bits in every table */
        if (t > 0) {
            const int64_t W = R * C;
            weight wn = nat, ws = sf;
            wn.rows = ws.rows = 1;
            wn.cols = ws.cols = W;
            wn.row_bytes = ws.row_bytes = 0;
            assert_int_equal(weight_check(&wn, "native", err, sizeof err), 0);
            assert_int_equal(weight_check(&ws, "S-form", err, sizeof err), 0);
            float *wx = malloc((size_t)W * sizeof *wx), *wdeq = malloc((size_t)W * sizeof *wdeq),
                  *wd = malloc((size_t)W / 32 * sizeof *wd);
            int8_t *wq = malloc((size_t)W);
            int32_t *ws16 = malloc((size_t)W / 16 * sizeof *ws16);
            fill_act(wx, W, &rs, 0);
            qrow a = { nat.act, W, wq, wd, ws16, wdeq, NULL, NULL, NULL };
            qrow_fill(tabs[0], &a, wx);
            const float ref = tabs[0]->qdot[WF_GGML](&wn, 0, &a);
            for (int k = 0; k < KERNELS_MAX; k++) {
                if (!tabs[k]) continue;
                const float ys = tabs[k]->qdot[WF_SCODE](&ws, 0, &a);
                assert_memory_equal(&ys, &ref, 4);
            }
            free(wx); free(wdeq); free(wd); free(wq); free(ws16);
        }
        /* a batch takes qdotn for K-quant S-forms (shared code values and
         * scales), qdot4 for the rest; qdotn of 1..KQ_NT_MAX tokens is the
         * table's qdot of each, bit for bit */
        for (int k = 0; k < KERNELS_MAX; k++)
            if (tabs[k]) assert_int_equal(kernels_qdotn_ok(tabs[k], &sf), t > 0);
        if (t > 0) assert_true(check_qdotn(tabs, &sf, WF_SCODE, &rs, x, names[t]) > 0);
        if (spc) assert_true(check_qdotn(tabs, &sp, WF_SCODE, &rs, x, names[t]) > 0);
        /* four rows against a batch (qdot4n): AVX-512 VNNI takes the
         * Q8_0-shaped S8 rows, bit for bit its qdot's; no table takes the
         * K-quant S-forms (qdotn shares their decoding instead) */
        {
            const int want = t == 0 ? tables_with_qdot4n(tabs, WF_SCODE) : 0;
            const int n4 = check_qdot4n(tabs, &sf, WF_SCODE, &rs, x);
            assert_int_equal(n4, want * 3 * 4 * (KQ_NT_MAX * (KQ_NT_MAX + 1) / 2)); /* r0 = 0, 1, 4 */
        }
        free(mem); free(codes); free(sc); free(off); free(blocks); free(spc); free(mem_r);
    }
    /* IQ2_S, Q2_K, IQ2_XXS, IQ2_XS, IQ3_S, IQ1_S and IQ1_M (AVX2 kernels),
     * IQ3_XXS, MXFP4 (gpt-oss's experts) and NVFP4 and Q1_0 (with Q8_0
     * activations), TQ1_0 and TQ2_0, Q4_1 and Q5_1 (Q8_1) natively: every
     * table the same bits, near the decoded row times the rounded activation */
    enum { N_IQ = 15 };
    const char *iq[N_IQ] = { "vectors/quant/iq2_s.bin",         "vectors/quant/iq3_xxs.bin",
                             "vectors/quant/mxfp4.bin",         "vectors/quant/q2_K.bin",
                             "vectors/quant/iq2_xxs.imat.bin",  "vectors/quant/iq2_xs.imat.bin",
                             "vectors/quant/iq3_s.bin",         "vectors/quant/iq1_s.imat.bin",
                             "vectors/quant/iq1_m.bin",         "vectors/quant/nvfp4.bin",
                             "vectors/quant/q1_0.bin",          "vectors/quant/tq1_0.bin",
                             "vectors/quant/tq2_0.bin",         "vectors/quant/q4_1.bin",
                             "vectors/quant/q5_1.bin" };
    const int iqt[N_IQ] = { GGML_TYPE_IQ2_S,  GGML_TYPE_IQ3_XXS, GGML_TYPE_MXFP4, GGML_TYPE_Q2_K,  GGML_TYPE_IQ2_XXS,
                            GGML_TYPE_IQ2_XS, GGML_TYPE_IQ3_S,   GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M, GGML_TYPE_NVFP4,
                            GGML_TYPE_Q1_0,   GGML_TYPE_TQ1_0,   GGML_TYPE_TQ2_0, GGML_TYPE_Q4_1,  GGML_TYPE_Q5_1 };
    const int iqa[N_IQ] = { WA_Q8_K, WA_Q8_K, WA_Q8_0, WA_Q8_K, WA_Q8_K, WA_Q8_K, WA_Q8_K, WA_Q8_K,
                            WA_Q8_K, WA_Q8_0, WA_Q8_0, WA_Q8_K, WA_Q8_K, WA_Q8_1, WA_Q8_1 };
    float row[512];
    for (int t = 0; t < N_IQ; t++) {
        size_t nb = 0;
        uint8_t *blocks = slurp_shared(iq[t], &nb);
        assert_non_null(blocks);
        weight nat = { .form = WF_GGML, .rows = R, .cols = C, .data = blocks, .ggml_type = iqt[t], .act = iqa[t] };
        char err[128];
        assert_int_equal(weight_check(&nat, "native", err, sizeof err), 0);
        assert_int_equal(nb, nat.row_bytes * R);
        for (int kind = 0; kind < 4; kind++) {
            fill_act(x, C, &rs, kind);
            qrow a = { iqa[t], C, q, d, s16, deq, s1, NULL, NULL };
            qrow_fill(tabs[0], &a, x);
            check_native_rows(tabs, &nat, &a, row, iq[t]);
        }
        /* one block fewer a row (an odd count: the last block after the pairs), the same bits */
        assert_int_equal(kernels_ggml_act(iqt[t]), iqa[t]);
        weight odd = nat;
        odd.cols = C - ggml_type_info(iqt[t])->blck;
        odd.row_bytes = 0;
        assert_int_equal(weight_check(&odd, "native", err, sizeof err), 0);
        for (int64_t r = 0; r < R; r++) {
            qrow a = { iqa[t], odd.cols, q, d, s16, deq, s1, NULL, NULL };
            qrow_fill(tabs[0], &a, x);
            const float ref = tabs[0]->qdot[WF_GGML](&odd, r, &a);
            for (int k = 1; k < KERNELS_MAX; k++)
                if (tabs[k]) {
                    const float y = tabs[k]->qdot[WF_GGML](&odd, r, &a);
                    assert_memory_equal(&y, &ref, 4);
                }
            if (r == 0) check_qdot4(tabs, &odd, WF_GGML, &a);
        }
        /* a batch shares the IQ types' and Q2_K's codes, signs and scales, MXFP4's values and
         * scales, across tokens (qdotn), the same bits */
        for (int k = 0; k < KERNELS_MAX; k++)
            if (tabs[k])
                assert_int_equal(kernels_qdotn_ok(tabs[k], &nat), iqt[t] != GGML_TYPE_IQ3_XXS);
        assert_true(check_qdotn(tabs, &nat, WF_GGML, &rs, x, iq[t]) > 0);
        free(blocks);
    }
}

/* Native MXFP4 rows of random bytes (every E8M0 exponent from 0 to 254
 * occurs, with codes of every nibble), 1..9 blocks a row (odd counts end
 * on the pairless block): every SIMD table's qdot and qdot4 (stride 1 and
 * 2) and qdotn (1..KQ_NT_MAX tokens) give the scalar qdot's bits, and the
 * scalar qdot is within 1e-5 of
 * the sum of |terms| of the decoded row times the rounded activation. */
static void test_qdot_mxfp4_random_blocks(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    uint64_t rs = 41;
    const int64_t R = 8, CMAX = 9 * 32;
    uint8_t *blocks = malloc((size_t)R * (CMAX / 32) * 17);
    float x[9 * 32], deq[9 * 32], row[9 * 32], d[9];
    int8_t q[9 * 32];
    int32_t s16[9 * 32 / 16];
    int next_e = 0;
    for (int64_t nb = 1; nb <= 9; nb++) {
        const int64_t C = nb * 32;
        for (size_t i = 0; i < (size_t)(R * nb * 17); i++) blocks[i] = (uint8_t)rnd_(&rs);
        for (int64_t b = 0; b < R * nb; b++) { /* exponents in turn, so every one is met */
            blocks[b * 17] = (uint8_t)next_e;
            next_e = (next_e + 7) % 255;
        }
        weight w = { .form = WF_GGML, .rows = R, .cols = C, .data = blocks, .ggml_type = GGML_TYPE_MXFP4,
                     .act = WA_Q8_0 };
        char err[128];
        assert_int_equal(weight_check(&w, "mxfp4 random", err, sizeof err), 0);
        for (int kind = 0; kind < 4; kind++) {
            fill_act(x, C, &rs, kind);
            qrow a = { WA_Q8_0, C, q, d, s16, deq, NULL, NULL, NULL };
            qrow_fill(tabs[0], &a, x);
            check_native_rows(tabs, &w, &a, row, "MXFP4 random");
        }
        /* qdotn: one row against 1..KQ_NT_MAX tokens, each the table's qdot bits */
        assert_true(check_qdotn(tabs, &w, WF_GGML, &rs, x, "MXFP4 random") > 0);
    }
    free(blocks);
}

/* NVFP4, Q1_0, TQ1_0, TQ2_0, Q4_1, Q5_1, IQ2_XXS, IQ2_XS, IQ2_S and IQ3_S rows of random bytes
 * (every UE4M3 scale byte, sign pattern, code, IQ2 grid index in turn and TQ byte,
 * trits of bytes the encoder never writes included), their fp16 d (and m)
 * drawn finite, 1..5
 * blocks a row: every SIMD
 * table's qdot, qdot4 and qdotn (1..KQ_NT_MAX tokens) give the scalar
 * qdot's bits, and the scalar qdot is within 1e-5 of the sum of |terms| of
 * the decoded row times the rounded activation. */
static void test_qdot_small_native_random_blocks(void **st)
{
    (void)st;
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    if (!tabs[1]) printf("SKIP (SIMD half): no AVX2 on this CPU\n");
    /* IQ2_XXS, IQ2_XS, IQ2_S, IQ3_S: every grid index in turn (ggml's own rows need not have them
     * all), which the AVX-512 dots look up from tables of codes of their own; IQ1_S and IQ1_M:
     * random grid indices, scales and delta signs (random bytes), a finite d where each keeps it */
    enum { NTYPES = 12 };
    static const int types[NTYPES] = { GGML_TYPE_NVFP4,   GGML_TYPE_Q1_0,   GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0,
                                       GGML_TYPE_Q4_1,    GGML_TYPE_Q5_1,   GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
                                       GGML_TYPE_IQ2_S,   GGML_TYPE_IQ3_S,  GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M };
    uint64_t rs = 97;
    enum { R = 8, NBMAX = 5, CMAX = NBMAX * 256 };
    float x[CMAX], deq[CMAX], row[CMAX], d[CMAX / 32], s1[CMAX / 32];
    int8_t q[CMAX];
    int32_t s16[CMAX / 16];
    for (int t = 0; t < NTYPES; t++) {
        const ggml_type_row *ti = ggml_type_info(types[t]);
        uint8_t *blocks = malloc((size_t)R * NBMAX * 256 / (size_t)ti->blck * ti->bytes);
        int next_s = 0;
        for (int64_t nb = 1; nb <= NBMAX; nb++) {
            const int64_t C = nb * ti->blck, nblk = R * nb;
            for (size_t i = 0; i < (size_t)nblk * ti->bytes; i++) blocks[i] = (uint8_t)rnd_(&rs);
            for (int64_t b = 0; b < nblk; b++) {
                uint8_t *blk = blocks + (size_t)b * ti->bytes;
                /* a finite fp16 d, sign and exponent drawn (2^-14 .. 2^5) */
                const uint16_t dh = (uint16_t)((rnd_(&rs) & 0x83ffu) | (uint16_t)((1 + rnd_(&rs) % 20) << 10));
                if (types[t] == GGML_TYPE_NVFP4)
                    for (int k = 0; k < 4; k++) blk[k] = (uint8_t)(next_s++ % 256); /* every scale byte in turn */
                else if (types[t] == GGML_TYPE_Q1_0) memcpy(blk, &dh, 2);
                else if (types[t] == GGML_TYPE_IQ2_XXS) { /* d, then every grid index in turn */
                    memcpy(blk, &dh, 2);
                    for (int s = 0; s < 8; s++)
                        for (int j = 0; j < 4; j++) blk[2 + 8 * s + j] = (uint8_t)(next_s++ % 256);
                } else if (types[t] == GGML_TYPE_IQ2_XS) { /* 9-bit indices in turn under random signs */
                    memcpy(blk, &dh, 2);
                    for (int j = 0; j < 32; j++) {
                        const unsigned v = (unsigned)(next_s++ % 512);
                        blk[2 + 2 * j] = (uint8_t)v;
                        blk[3 + 2 * j] = (uint8_t)((blk[3 + 2 * j] & 0xfe) | (v >> 8));
                    }
                } else if (types[t] == GGML_TYPE_IQ2_S || types[t] == GGML_TYPE_IQ3_S) {
                    /* indices in turn: qs[g] their low 8 bits, the hb bits above them in qh
                     * (IQ2_S: 32 indices of 10 bits, IQ3_S: 64 of 9) */
                    const int n = types[t] == GGML_TYPE_IQ2_S ? 32 : 64, hb = types[t] == GGML_TYPE_IQ2_S ? 2 : 1;
                    memcpy(blk, &dh, 2);
                    uint8_t *qh = blk + 2 + 64;
                    memset(qh, 0, 8);
                    for (int g = 0; g < n; g++) {
                        const unsigned v = (unsigned)(next_s++ % (256 << hb));
                        blk[2 + g] = (uint8_t)v;
                        qh[g * hb / 8] = (uint8_t)(qh[g * hb / 8] | (v >> 8) << (g * hb % 8));
                    }
                }
                else if (types[t] == GGML_TYPE_IQ1_S) memcpy(blk, &dh, 2);
                else if (types[t] == GGML_TYPE_IQ1_M) { /* d in the top nibbles of the four scale words */
                    uint16_t sc[4];
                    memcpy(sc, blk + 48, 8);
                    for (int k = 0; k < 4; k++) sc[k] = (uint16_t)((sc[k] & 0x0fffu) | ((dh >> (4 * k)) & 0xfu) << 12);
                    memcpy(blk + 48, sc, 8);
                }
                else if (types[t] == GGML_TYPE_Q4_1 || types[t] == GGML_TYPE_Q5_1) { /* d, then m */
                    const uint16_t mh = (uint16_t)((rnd_(&rs) & 0x83ffu) | (uint16_t)((1 + rnd_(&rs) % 20) << 10));
                    memcpy(blk, &dh, 2);
                    memcpy(blk + 2, &mh, 2);
                }
                else memcpy(blk + ti->bytes - 2, &dh, 2);
            }
            const int act = kernels_ggml_act(types[t]);
            weight w = { .form = WF_GGML, .rows = R, .cols = C, .data = blocks, .ggml_type = types[t], .act = act };
            char err[128];
            assert_int_equal(weight_check(&w, ti->name, err, sizeof err), 0);
            assert_true(kernels_qdot_ok(&w));
            for (int kind = 0; kind < 4; kind++) {
                fill_act(x, C, &rs, kind);
                qrow a = { act, C, q, d, s16, deq, s1, NULL, NULL };
                qrow_fill(tabs[0], &a, x);
                check_native_rows(tabs, &w, &a, row, ti->name);
            }
            for (int k = 0; k < KERNELS_MAX; k++)
                if (tabs[k]) assert_true(kernels_qdotn_ok(tabs[k], &w));
            assert_true(check_qdotn(tabs, &w, WF_GGML, &rs, x, ti->name) > 0);
        }
        free(blocks);
    }
}

/* ggml's own dots (Debian's libggml-cpu 0.27, haswell build: the x86 AVX2
 * vec_dot_q4_K_q8_K / q5_K_q8_K) on ggml's rows of two super-blocks
 * (vectors/quant, 8 x 512) against x[i] = ((37 i) mod 101 - 50) / 16, as
 * bits. Rows of one super-block (all tinymoe has) cannot tell whether the
 * Q5_K mins are added to their running sum fused or not; two can: ggml's
 * build fuses them. Every table, native blocks. (Q6_K is left out: 0.7.0's
 * AVX2 Q6_K dot is newer than the reference's and splits its lanes
 * differently: docs/runtime.md.)
 * Q4_1 and Q5_1 (llama.cpp 0.7.0's vec_dot_q4_1_q8_1 / q5_1_q8_1 after its
 * quantize_row_q8_1, haswell and zen4 builds alike) likewise: the Q8_1
 * block sums (the scale before its fp16 rounding times the codes' sum,
 * then rounded to fp16) and the mins' fused running sum decide their last
 * bits. */
static void test_ggml_own_dots(void **st)
{
    (void)st;
    static const struct {
        const char *file;
        int type, act;
        uint32_t want[8];
    } cases[4] = {
        { "vectors/quant/q4_K.bin", GGML_TYPE_Q4_K, WA_Q8_K,
          { 0x4177e52e, 0xbe8d2770, 0x4172510e, 0xc0b81068, 0x3f34262e, 0x40671fdc, 0x3787f972, 0x43b1e9d6 } },
        { "vectors/quant/q5_K.bin", GGML_TYPE_Q5_K, WA_Q8_K,
          { 0x4174045c, 0xbeb9929e, 0x414b3b98, 0xc12e282d, 0x3f6f4c4c, 0x4012b193, 0x3789ac18, 0x43a49769 } },
        { "vectors/quant/q4_1.bin", GGML_TYPE_Q4_1, WA_Q8_1,
          { 0x4157d213, 0xbeac0f9e, 0x41837b20, 0xc09c0c26, 0x3ed027d8, 0xbf159c68, 0xb757e62e, 0x43b4bbca } },
        { "vectors/quant/q5_1.bin", GGML_TYPE_Q5_1, WA_Q8_1,
          { 0x418aad30, 0xbead8838, 0x415c7978, 0xc15a4c31, 0x3f8ae7c6, 0x3ffc4394, 0xb6188360, 0x43aa1eca } },
    };
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    enum { R = 8, C = 512 };
    float x[C], deq[C], d[C / 32], s1[C / 32];
    int8_t q[C];
    int32_t s16[C / 16];
    for (int i = 0; i < C; i++) x[i] = (float)((i * 37) % 101 - 50) / 16.0f;
    for (int t = 0; t < 4; t++) {
        SKIP_UNLESS_SHARED(cases[t].file);
        size_t nb = 0;
        uint8_t *blocks = slurp_shared(cases[t].file, &nb);
        assert_non_null(blocks);
        weight w = { .form = WF_GGML, .rows = R, .cols = C, .data = blocks, .ggml_type = cases[t].type,
                     .act = cases[t].act };
        char err[128];
        assert_int_equal(weight_check(&w, "native", err, sizeof err), 0);
        assert_int_equal(kernels_ggml_act(cases[t].type), cases[t].act);
        for (int k = 0; k < KERNELS_MAX; k++) {
            if (!tabs[k]) continue;
            qrow a = { cases[t].act, C, q, d, s16, deq, s1, NULL, NULL };
            qrow_fill(tabs[k], &a, x);
            for (int r = 0; r < R; r++) {
                const float y = tabs[k]->qdot[WF_GGML](&w, r, &a);
                uint32_t bits;
                memcpy(&bits, &y, 4);
                if (bits != cases[t].want[r])
                    printf("%s row %d (%s): 0x%08x, ggml 0x%08x\n", cases[t].file, r, tabs[k]->name, bits,
                           cases[t].want[r]);
                assert_int_equal(bits, cases[t].want[r]);
            }
        }
        free(blocks);
    }
}

static void test_qdot_refusals(void **st)
{
    (void)st;
    float sc[64] = { 0 }, cb[16] = { 0.5f };
    uint8_t codes[512] = { 0 };
    weight w = { .form = WF_SCODE, .rows = 1, .cols = 256, .data = codes, .code_bits = 4, .code_bias = 120,
                 .group = 32, .scales = sc, .act = WA_Q8_0 };
    assert_false(kernels_qdot_ok(&w));          /* codes + bias pass 127 */
    w.code_bias = -8; w.group = 8;
    assert_false(kernels_qdot_ok(&w));          /* groups of 8 */
    w.group = 32; w.codebook = cb;
    assert_false(kernels_qdot_ok(&w));          /* codebook not integral */
    w.codebook = NULL; w.act = WA_F32;
    assert_false(kernels_qdot_ok(&w));
    w.act = WA_Q8_K; w.cols = 96;
    assert_false(kernels_qdot_ok(&w));          /* not whole Q8_K blocks */
    assert_int_equal(kernels_ggml_act(GGML_TYPE_Q4_K), WA_Q8_K);
    assert_int_equal(kernels_ggml_act(GGML_TYPE_Q4_0), WA_Q8_0);
    assert_int_equal(kernels_ggml_act(GGML_TYPE_BF16), WA_F32);
    assert_int_equal(kernels_ggml_act(GGML_TYPE_NVFP4), WA_Q8_0); /* as ggml's vec_dot_type */
    assert_int_equal(kernels_ggml_act(GGML_TYPE_Q1_0), WA_Q8_0);
    assert_int_equal(kernels_ggml_act(GGML_TYPE_TQ1_0), WA_Q8_K);
}

static void count_task(void *arg, int task, int thread)
{
    (void)thread;
    __atomic_fetch_add(&((counter *)arg)->hits[task], 1, __ATOMIC_RELAXED);
}

typedef struct idle_counter { int *calls; int n_threads; } idle_counter;

static void count_idle(void *arg, int thread, int n_threads)
{
    idle_counter *c = arg;
    __atomic_fetch_add(&c->calls[thread], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->n_threads, n_threads, __ATOMIC_RELAXED);
}

static void test_pool(void **st)
{
    (void)st;
    for (int t = 1; t <= 4; t++) {
        pool *p = pool_create(t);
        assert_non_null(p);
        /* fewer tasks than threads (empty ranges), uneven splits, many */
        static const int counts[] = { 1, 2, 3, 5, 7, 1000 };
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
            int hits[1000] = { 0 };
            counter c = { hits };
            for (int rep = 0; rep < 20; rep++) pool_run(p, counts[k], count_task, &c);
            for (int i = 0; i < 1000; i++) assert_int_equal(hits[i], i < counts[k] ? 20 : 0);
            /* pool_run_then: the same tasks, and idle once per thread of the run */
            int idle[5] = { 0 };
            memset(hits, 0, sizeof hits);
            idle_counter ic = { idle, 0 };
            pool_run_then(p, counts[k], count_task, &c, count_idle, &ic);
            for (int i = 0; i < 1000; i++) assert_int_equal(hits[i], i < counts[k] ? 1 : 0);
            const int ran = counts[k] == 1 ? 1 : t;
            assert_int_equal(ic.n_threads, ran);
            for (int i = 0; i < 5; i++) assert_int_equal(idle[i], i < ran ? 1 : 0);
        }
        pool_free(p);
    }
}

/* mm_mul (mat-vec and batched) against a double loop, on every thread count. */
static void test_matmul(void **st)
{
    (void)st;
    uint64_t rs = 5;
    enum { R = 150, C = 96, B = 5 };
    uint16_t *h = malloc(R * C * sizeof *h);
    float *x = malloc(B * C * sizeof *x), *w32 = malloc(R * C * sizeof *w32);
    for (int i = 0; i < R * C; i++) { h[i] = f32_to_fp16(rndf_(&rs)); w32[i] = fp16_to_f32(h[i]); }
    for (int i = 0; i < B * C; i++) x[i] = rndf_(&rs);
    weight ws[2] = { { .form = WF_P16, .rows = R, .cols = C, .data = h },
                     { .form = WF_P32, .rows = R, .cols = C, .data = w32 } };
    char err[64];
    float *base = NULL;
    for (int simd = 0; simd < 2; simd++)
        for (int k = 0; k < 2; k++) {
            assert_int_equal(weight_check(&ws[k], "w", err, sizeof err), 0);
            for (int t = 1; t <= 3; t++) {
                pool *p = pool_create(t);
                mm_ctx c = { kernels_get(simd), p, malloc((size_t)t * MM_TILE * C * sizeof(float)), MM_TILE * C, NULL, 0, 0, 0 };
                float y[B * R], yv[R];
                mm_mul(&c, &ws[k], x, B, y);
                mm_mul(&c, &ws[k], x + 2 * C, 1, yv);
                for (int b = 0; b < B; b++)
                    for (int r = 0; r < R; r++) {
                        double ref = 0, mag = 0;
                        for (int i = 0; i < C; i++) {
                            ref += (double)w32[r * C + i] * x[b * C + i];
                            mag += fabs((double)w32[r * C + i] * x[b * C + i]);
                        }
                        assert_true(fabs(y[b * R + r] - ref) <= 1e-5 * mag);
                        if (b == 2) assert_true(fabs(yv[r] - ref) <= 1e-5 * mag);
                    }
                /* same form + kernels: identical bits on any thread count */
                if (t == 1) { free(base); base = malloc(sizeof y + sizeof yv); memcpy(base, y, sizeof y); memcpy(base + B * R, yv, sizeof yv); }
                else { assert_memory_equal(base, y, sizeof y); assert_memory_equal(base + B * R, yv, sizeof yv); }
                free(c.scratch);
                pool_free(p);
            }
        }
    free(base); free(h); free(x); free(w32);
}

/* mm_mul2 (gate and up as one job) gives the bits of two mm_mul calls, on
 * both kernel tables and every thread count; rows not a multiple of the
 * task size or of four, so the tails run too. mm_mul itself (tasks read as
 * four streams of rows, the rest one by one) equals the table's one-row
 * qdot on every row. */
static void test_matmul2_equals_two(void **st)
{
    (void)st;
    uint64_t rs = 11;
    enum { R = 201, C = 256 };
    uint8_t *codes = malloc(2 * R * C);
    float *sc = malloc(2 * R * (C / 32) * sizeof *sc), *x = malloc(C * sizeof *x);
    for (int i = 0; i < 2 * R * C; i++) codes[i] = (uint8_t)(rndf_(&rs) * 127.0f + 128.0f);
    for (int i = 0; i < 2 * R * (C / 32); i++) sc[i] = 0.01f + 0.001f * rndf_(&rs);
    for (int i = 0; i < C; i++) x[i] = rndf_(&rs);
    weight w[2];
    char err[64];
    for (int k = 0; k < 2; k++) {
        w[k] = (weight){ .form = WF_SCODE, .rows = R, .cols = C, .data = codes + k * R * C, .act = WA_Q8_0,
                         .code_bits = 8, .code_bias = -128, .group = 32, .scales = sc + k * R * (C / 32) };
        assert_int_equal(weight_check(&w[k], "w", err, sizeof err), 0);
    }
    void *qbuf = malloc(MM_QBUF_BYTES(1, C));
    for (int simd = 0; simd < 2; simd++)
        for (int t = 1; t <= 3; t++) {
            pool *p = pool_create(t);
            mm_ctx c = { kernels_get(simd), p, malloc((size_t)t * MM_TILE * C * sizeof(float)), MM_TILE * C,
                         qbuf, MM_QBUF_BYTES(1, C), 0, 0 };
            float y0[R], y1[R], z0[R], z1[R];
            mm_mul(&c, &w[0], x, 1, y0);
            mm_mul(&c, &w[1], x, 1, y1);
            mm_mul2(&c, &w[0], &w[1], x, 1, z0, z1);
            assert_memory_equal(y0, z0, sizeof y0);
            assert_memory_equal(y1, z1, sizeof y1);
            int8_t q[C];
            float d[C / 32], deq[C];
            int32_t s16[C / 16];
            qrow a = { WA_Q8_0, C, q, d, s16, deq, NULL, NULL, NULL };
            qrow_fill(c.k, &a, x);
            for (int r = 0; r < R; r++) {
                const float e0 = c.k->qdot[WF_SCODE](&w[0], r, &a), e1 = c.k->qdot[WF_SCODE](&w[1], r, &a);
                assert_memory_equal(&y0[r], &e0, sizeof e0);
                assert_memory_equal(&y1[r], &e1, sizeof e1);
            }
            free(c.scratch);
            pool_free(p);
        }
    free(qbuf); free(codes); free(sc); free(x);
}

/* mm_mulv (several mat-vecs as one job) gives the bits of one mm_mul per
 * item: S8 and S4 weights of other shapes, activations shared and not, a
 * float weight in the list (the whole list then falls back to mm_mul), on
 * every kernel table the CPU has and 1-3 threads; rows not a multiple of
 * the chunk or of four. */
static void test_matmulv_equals_each(void **st)
{
    (void)st;
    uint64_t rs = 13;
    enum { RA = 201, RB = 67, RC = 130, RD = 50, C = 256, C2 = 512 };
    uint8_t *ca = malloc(RA * C), *cb = malloc(RB * C), *cc = malloc(RC * C2 / 2);
    float *sa = malloc(RA * (C / 32) * sizeof *sa), *sb = malloc(RB * (C / 32) * sizeof *sb);
    float *scc = malloc(RC * (C2 / 32) * sizeof *scc), *wd = malloc(RD * C * sizeof *wd);
    float *x1 = malloc(C * sizeof *x1), *x2 = malloc(C * sizeof *x2), *x3 = malloc(C2 * sizeof *x3);
    for (int i = 0; i < RA * C; i++) ca[i] = (uint8_t)rnd_(&rs);
    for (int i = 0; i < RB * C; i++) cb[i] = (uint8_t)rnd_(&rs);
    for (int i = 0; i < RC * C2 / 2; i++) cc[i] = (uint8_t)rnd_(&rs);
    for (int i = 0; i < RA * (C / 32); i++) sa[i] = 0.01f + 0.001f * rndf_(&rs);
    for (int i = 0; i < RB * (C / 32); i++) sb[i] = 0.01f + 0.001f * rndf_(&rs);
    for (int i = 0; i < RC * (C2 / 32); i++) scc[i] = 0.01f + 0.001f * rndf_(&rs);
    for (int i = 0; i < RD * C; i++) wd[i] = rndf_(&rs);
    for (int i = 0; i < C; i++) { x1[i] = rndf_(&rs); x2[i] = rndf_(&rs); }
    for (int i = 0; i < C2; i++) x3[i] = rndf_(&rs);
    weight w[4] = {
        { .form = WF_SCODE, .rows = RA, .cols = C, .data = ca, .act = WA_Q8_0, .code_bits = 8, .code_bias = -128,
          .group = 32, .scales = sa },
        { .form = WF_SCODE, .rows = RB, .cols = C, .data = cb, .act = WA_Q8_0, .code_bits = 8, .code_bias = -128,
          .group = 32, .scales = sb },
        { .form = WF_SCODE, .rows = RC, .cols = C2, .data = cc, .act = WA_Q8_0, .code_bits = 4, .code_bias = -8,
          .group = 32, .scales = scc },
        { .form = WF_P32, .rows = RD, .cols = C, .data = wd },
    };
    char err[64];
    for (int k = 0; k < 4; k++) assert_int_equal(weight_check(&w[k], "w", err, sizeof err), 0);
    const kernels *tabs[KERNELS_MAX];
    all_tables(tabs);
    enum { NL = 3, NI = 4 };
    const int len[NL] = { 4, 3, 3 };
    const int wi[NL][NI] = { { 0, 1, 2, 0 }, { 0, 1, 2 }, { 1, 3, 0 } };
    const float *xs[NL][NI] = { { x1, x1, x3, x2 }, { x2, x1, x3 }, { x1, x2, x1 } };
    void *qbuf = malloc(MM_QBUF_BYTES(4, C2));
    for (int tb = 0; tb < 4; tb++) {
        if (!tabs[tb]) continue;
        for (int t = 1; t <= 3; t++) {
            pool *p = pool_create(t);
            mm_ctx c = { tabs[tb], p, malloc((size_t)t * MM_TILE * C2 * sizeof(float)), MM_TILE * C2, qbuf,
                         MM_QBUF_BYTES(4, C2), 0, 0 };
            for (int l = 0; l < NL; l++) {
                float y[NI][RA], z[NI][RA];
                mm_vec v[NI];
                for (int i = 0; i < len[l]; i++) {
                    mm_mul(&c, &w[wi[l][i]], xs[l][i], 1, y[i]);
                    v[i] = (mm_vec){ &w[wi[l][i]], xs[l][i], z[i] };
                }
                mm_mulv(&c, v, len[l]);
                for (int i = 0; i < len[l]; i++) assert_memory_equal(y[i], z[i], (size_t)w[wi[l][i]].rows * sizeof(float));
            }
            free(c.scratch);
            pool_free(p);
        }
    }
    free(qbuf); free(ca); free(cb); free(cc); free(sa); free(sb); free(scc); free(wd); free(x1); free(x2); free(x3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_ops),
        cmocka_unit_test(test_f16_heads),
        cmocka_unit_test(test_scode_rows),
        cmocka_unit_test(test_scode_equals_ggml_q4_0),
        cmocka_unit_test(test_other_rows),
        cmocka_unit_test(test_quant_q8_0_equals_ggml),
        cmocka_unit_test(test_quant_q8_simd_equals_scalar),
        cmocka_unit_test(test_qdot_forms),
        cmocka_unit_test(test_qdot_iq3_random_blocks),
        cmocka_unit_test(test_native_equals_sform),
        cmocka_unit_test(test_qdot4n_s8_random),
        cmocka_unit_test(test_kq_four_rows),
        cmocka_unit_test(test_kq_split),
        cmocka_unit_test(test_s8_fp16_scales),
        cmocka_unit_test(test_qdot_mxfp4_random_blocks),
        cmocka_unit_test(test_qdot_small_native_random_blocks),
        cmocka_unit_test(test_ggml_own_dots),
        cmocka_unit_test(test_qdot_refusals),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul2_equals_two),
        cmocka_unit_test(test_matmulv_equals_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
