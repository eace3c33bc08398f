/* test_iq3_gptq.c: IQ3 with GPTQ's error feedback (formats/iq3_gptq.c).
 *  - iq3_gptq_factor: u^T u is the inverse of the damped Gram (to 1e-9);
 *    a Gram that is not positive definite even after damping is refused.
 *  - A diagonal factor moves nothing: the bytes are quality mode's, with and
 *    without importance, on 1 and 2 threads.
 *  - On inputs whose columns are correlated (as a model's are), GPTQ's
 *    rows have a smaller error on those inputs, (w - q)^T H (w - q), than
 *    quality mode weighted by H's diagonal (the imatrix), by the margin
 *    printed. */
#include "tests/lib/test_util.h"

#include "formats/iq3.h"

#include <math.h>

static uint64_t rng = 7;
static double gauss(void)
{
    double s = 0;
    for (int i = 0; i < 12; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        s += (double)(rng >> 11) / 9007199254740992.0;
    }
    return s - 6.0;
}

/* G = X^T X of n rows of k correlated features: x = z A + noise */
static float *correlated_gram(int k, int n)
{
    float *a = malloc((size_t)k * k * sizeof *a), *g = calloc((size_t)k * k, sizeof *g);
    double *x = malloc((size_t)k * sizeof *x), *z = malloc((size_t)k * sizeof *z);
    assert_non_null(a);
    assert_non_null(g);
    for (int i = 0; i < k * k; i++) a[i] = (float)(gauss() * (i % k < i / k + 8 ? 0.5 : 0.05));
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < k; i++) z[i] = gauss();
        for (int j = 0; j < k; j++) {
            double s = 0.1 * gauss();
            for (int i = 0; i < k; i++) s += z[i] * a[i * k + j];
            x[j] = s * (1.0 + (j % 5 == 0 ? 3.0 : 0.0));
        }
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) g[i * k + j] += (float)(x[i] * x[j]);
    }
    free(a);
    free(x);
    free(z);
    return g;
}

static void test_factor(void **st)
{
    (void)st;
    enum { K = 40 };
    float *g = correlated_gram(K, 300);
    double *u = malloc((size_t)K * K * sizeof *u);
    char err[256];
    assert_int_equal(iq3_gptq_factor(g, K, 0.01, u, err, sizeof err), 0);
    double mean = 0;
    for (int i = 0; i < K; i++) mean += g[i * K + i];
    mean /= K;
    /* (u^T u) (H + damp) = I */
    double worst = 0;
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            double s = 0;
            for (int p = 0; p < K; p++) {
                double hinv = 0;
                for (int q = 0; q < K; q++) hinv += u[q * K + i] * u[q * K + p];
                double h = 0.5 * ((double)g[p * K + j] + (double)g[j * K + p]) + (p == j ? 0.01 * mean : 0.0);
                s += hinv * h;
            }
            worst = fmax(worst, fabs(s - (i == j)));
        }
    printf("u^T u (H + damp) - I: max %.2g\n", worst);
    assert_true(worst < 1e-9);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < i; j++) assert_true(u[i * K + j] == 0.0);
    /* a negative diagonal is beyond any damping */
    g[3 * K + 3] = -1e9f;
    assert_int_equal(iq3_gptq_factor(g, K, 0.01, u, err, sizeof err), -1);
    assert_non_null(strstr(err, "not positive definite"));
    free(g);
    free(u);
}

static void test_diagonal_is_quality(void **st)
{
    (void)st;
    enum { K = 512, R = 6 };
    float *x = malloc(sizeof(float) * K * R), imp[K];
    double *u = calloc((size_t)K * K, sizeof *u);
    for (int i = 0; i < K * R; i++) x[i] = (float)gauss();
    for (int i = 0; i < K; i++) {
        imp[i] = 1.0f + (float)(i % 7);
        u[(size_t)i * K + i] = 1.0 / (1.0 + i % 3);
    }
    const size_t n = iq3_row_bytes(K) * R;
    uint8_t *a = malloc(n), *b = malloc(n);
    char err[256];
    for (int wi = 0; wi < 2; wi++)
        for (int th = 1; th <= 2; th++) {
            iq3_encode_opts q = { .mode = IQ3_MODE_QUALITY, .n_threads = th, .importance = wi ? imp : NULL };
            iq3_encode_opts g = q;
            g.gptq_u = u;
            assert_int_equal(iq3_encode(x, R, K, &q, a, err, sizeof err), 0);
            assert_int_equal(iq3_encode(x, R, K, &g, b, err, sizeof err), 0);
            assert_memory_equal(a, b, n);
        }
    free(x);
    free(u);
    free(a);
    free(b);
}

/* sum over rows of (w - q)^T G (w - q) */
static double loss(const float *w, const float *q, const float *g, int k, int rows)
{
    double s = 0;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++) {
            const double ei = (double)w[r * k + i] - q[r * k + i];
            for (int j = 0; j < k; j++) s += ei * g[i * k + j] * ((double)w[r * k + j] - q[r * k + j]);
        }
    return s;
}

static void test_gptq_lowers_the_loss(void **st)
{
    (void)st;
    enum { K = 256, R = 32 };
    float *g = correlated_gram(K, 2000);
    float *w = malloc(sizeof(float) * K * R), *qa = malloc(sizeof(float) * K * R), *qb = malloc(sizeof(float) * K * R);
    float imp[K];
    double *u = malloc((size_t)K * K * sizeof *u);
    for (int i = 0; i < K * R; i++) w[i] = (float)gauss();
    for (int i = 0; i < K; i++) imp[i] = g[i * K + i];
    char err[256];
    assert_int_equal(iq3_gptq_factor(g, K, 0.01, u, err, sizeof err), 0);
    const size_t n = iq3_row_bytes(K) * R;
    uint8_t *a = malloc(n), *b = malloc(n);
    iq3_encode_opts q = { .mode = IQ3_MODE_QUALITY, .n_threads = 2, .importance = imp };
    iq3_encode_opts gp = q;
    gp.gptq_u = u;
    assert_int_equal(iq3_encode(w, R, K, &q, a, err, sizeof err), 0);
    assert_int_equal(iq3_encode(w, R, K, &gp, b, err, sizeof err), 0);
    assert_int_equal(iq3_decode(a, R, K, qa, err, sizeof err), 0);
    assert_int_equal(iq3_decode(b, R, K, qb, err, sizeof err), 0);
    const double la = loss(w, qa, g, K, R), lb = loss(w, qb, g, K, R);
    printf("error on the inputs: imatrix-weighted %.4g, GPTQ %.4g (%.2fx)\n", la, lb, lb / la);
    assert_true(lb < 0.8 * la);
    free(g);
    free(w);
    free(qa);
    free(qb);
    free(u);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_factor),
        cmocka_unit_test(test_diagonal_is_quality),
        cmocka_unit_test(test_gptq_lowers_the_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
