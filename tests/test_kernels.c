/* test_kernels.c: every kernel's AVX2 path against the scalar reference on
 * random data (decoders exactly, float sums within 1e-6 of the sum of
 * |terms|), the S-code form against ggml's own Q4_0 decoding, the batched
 * matmul against a double-precision loop, and thread counts 1/2/3 giving the
 * same bits. Skips the AVX2 comparisons (saying so) on a CPU without AVX2. */
#include "test_util.h"

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/iq3.h"
#include "runtime/kernels.h"
#include "runtime/matmul.h"
#include "runtime/pool.h"

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
        assert_true(fabs(v->dot_f32(a, b, n) - s->dot_f32(a, b, n)) <= 1e-6 * mag);
        assert_true(fabs(v->dot_f16(h, b, n) - s->dot_f16(h, b, n)) <= 1e-6 * magh);
        for (int i = 0; i < n; i++) y1[i] = y2[i] = b[i];
        v->axpy_f32(y1, 0.37f, a, n);
        s->axpy_f32(y2, 0.37f, a, n);
        for (int i = 0; i < n; i++) assert_true(fabs(y1[i] - y2[i]) <= 1e-6 * (fabs(b[i]) + fabs(0.37 * a[i])));
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
static void count_task(void *arg, int task, int thread)
{
    (void)thread;
    __atomic_fetch_add(&((counter *)arg)->hits[task], 1, __ATOMIC_RELAXED);
}

static void test_pool(void **st)
{
    (void)st;
    for (int t = 1; t <= 4; t++) {
        pool *p = pool_create(t);
        assert_non_null(p);
        int hits[1000] = { 0 };
        counter c = { hits };
        for (int rep = 0; rep < 20; rep++) pool_run(p, 1000, count_task, &c);
        for (int i = 0; i < 1000; i++) assert_int_equal(hits[i], 20);
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
                mm_ctx c = { kernels_get(simd), p, malloc((size_t)t * MM_TILE * C * sizeof(float)), MM_TILE * C };
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_ops),
        cmocka_unit_test(test_scode_rows),
        cmocka_unit_test(test_scode_equals_ggml_q4_0),
        cmocka_unit_test(test_other_rows),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_matmul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
