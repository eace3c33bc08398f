/* test_hadamard.c: the block Hadamard rotation of rotated experts
 * (formats/hadamard.h).
 *  - hadamard_rows is H x / sqrt(B) blockwise, H the Sylvester matrix
 *    written out by its definition ((-1)^popcount(i & j)), to 1e-6; it is
 *    its own inverse and keeps the norm.
 *  - hadamard_gram gives R G R^T, the Gram of the rotated rows (to 1e-4 of
 *    its largest element).
 *  - parse and default block: what is accepted and what is refused.
 *  - What rotation is for: rows with a few large weights (heavy tails, as a
 *    trained model's outlier columns) are stored with a smaller error after
 *    rotation (measured back in the model's basis), while Gaussian rows gain
 *    nothing, by the margins printed. */
#include "tests/lib/test_util.h"

#include "formats/hadamard.h"
#include "formats/iq3.h"

#include <math.h>

static uint64_t rng = 11;
static double unif(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
    double s = 0;
    for (int i = 0; i < 12; i++) s += unif();
    return s - 6.0;
}

static void test_rows_are_the_matrix(void **state)
{
    (void)state;
    const int64_t k = 512;
    const int64_t blocks[] = { 2, 8, 64, 512 };
    float x[512], y[512];
    for (size_t t = 0; t < sizeof blocks / sizeof *blocks; t++) {
        const int64_t b = blocks[t];
        for (int i = 0; i < k; i++) x[i] = y[i] = (float)gauss();
        hadamard_rows(y, 1, k, b);
        double n0 = 0, n1 = 0;
        for (int64_t i = 0; i < k; i++) {
            const int64_t b0 = i / b * b;
            double s = 0;
            for (int64_t j = 0; j < b; j++) s += (__builtin_popcountll((uint64_t)((i - b0) & j)) & 1 ? -1.0 : 1.0) * x[b0 + j];
            s /= sqrt((double)b);
            assert_true(fabs(s - y[i]) < 1e-5);
            n0 += (double)x[i] * x[i];
            n1 += (double)y[i] * y[i];
        }
        assert_true(fabs(n0 - n1) < 1e-4 * n0);
        hadamard_rows(y, 1, k, b); /* its own inverse */
        for (int i = 0; i < k; i++) assert_true(fabs(y[i] - x[i]) < 1e-5);
    }
}

static void test_gram(void **state)
{
    (void)state;
    const int k = 64, n = 200, b = 16;
    float *x = malloc((size_t)n * k * sizeof *x), *g = calloc((size_t)k * k, sizeof *g),
          *gr = calloc((size_t)k * k, sizeof *gr);
    assert_non_null(x);
    assert_non_null(g);
    assert_non_null(gr);
    for (int i = 0; i < n * k; i++) x[i] = (float)(gauss() * (i % k == 5 ? 8.0 : 1.0));
    for (int r = 0; r < n; r++)
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) g[i * k + j] += x[r * k + i] * x[r * k + j];
    hadamard_gram(g, k, b);
    hadamard_rows(x, n, k, b);
    float top = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) gr[i * k + j] += x[r * k + i] * x[r * k + j];
    for (int i = 0; i < k * k; i++) top = fabsf(gr[i]) > top ? fabsf(gr[i]) : top;
    for (int i = 0; i < k * k; i++) assert_true(fabsf(g[i] - gr[i]) < 1e-4f * top);
    free(x);
    free(g);
    free(gr);
}

static void test_parse(void **state)
{
    (void)state;
    int64_t b = -5;
    assert_int_equal(hadamard_parse("hadamard", &b), 0);
    assert_int_equal(b, 0);
    assert_int_equal(hadamard_parse("hadamard:128", &b), 0);
    assert_int_equal(b, 128);
    const char *bad[] = { "hadamard:", "hadamard:3", "hadamard:1", "hadamard:0", "hadamard:-4", "hadamard:64x",
                          "walsh", "hadamard:4096:2", "" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_int_equal(hadamard_parse(bad[i], &b), -1);
    assert_int_equal(hadamard_default_block(7168), 1024);
    assert_int_equal(hadamard_default_block(4096), 4096);
    assert_int_equal(hadamard_default_block(1536), 512);
    assert_true(hadamard_block_ok(1536, 512));
    assert_false(hadamard_block_ok(1536, 1024));
    assert_false(hadamard_block_ok(256, 3));
    assert_false(hadamard_block_ok(256, 1));
}

/* rel-RMSE of rows x stored in IQ3, directly or rotated by blocks of b (the
 * decoded rows rotated back) */
static double stored_error(const float *x, int rows, int k, int64_t b)
{
    float *w = malloc((size_t)rows * k * sizeof *w), *d = malloc((size_t)rows * k * sizeof *d);
    uint8_t *q = malloc((size_t)rows * iq3_row_bytes(k));
    char err[200];
    assert_non_null(w);
    assert_non_null(d);
    assert_non_null(q);
    memcpy(w, x, (size_t)rows * k * sizeof *w);
    if (b) hadamard_rows(w, rows, k, b);
    assert_int_equal(iq3_encode(w, rows, k, NULL, q, err, sizeof err), 0);
    assert_int_equal(iq3_decode(q, rows, k, d, err, sizeof err), 0);
    if (b) hadamard_rows(d, rows, k, b);
    double e = 0, n = 0;
    for (int i = 0; i < rows * k; i++) {
        e += ((double)d[i] - x[i]) * ((double)d[i] - x[i]);
        n += (double)x[i] * x[i];
    }
    free(w);
    free(d);
    free(q);
    return sqrt(e / n);
}

static void test_rotation_tames_outliers(void **state)
{
    (void)state;
    const int rows = 32, k = 1024;
    float *x = malloc((size_t)rows * k * sizeof *x);
    assert_non_null(x);
    /* a few columns 10x the others, and a Laplace-like tail */
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++) {
            const double l = -log(unif() + 1e-12) * (unif() < 0.5 ? -1.0 : 1.0);
            x[r * k + i] = (float)(l * (i % 97 == 3 ? 10.0 : 1.0));
        }
    const double plain = stored_error(x, rows, k, 0), rot = stored_error(x, rows, k, 1024);
    printf("outlier rows: rel-RMSE %.4f unrotated, %.4f rotated (%.2fx)\n", plain, rot, rot / plain);
    assert_true(rot < 0.8 * plain);
    for (int i = 0; i < rows * k; i++) x[i] = (float)gauss();
    const double gp = stored_error(x, rows, k, 0), gr = stored_error(x, rows, k, 1024);
    printf("Gaussian rows: rel-RMSE %.4f unrotated, %.4f rotated\n", gp, gr);
    assert_true(fabs(gr - gp) < 0.02 * gp);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_are_the_matrix),
        cmocka_unit_test(test_gram),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_rotation_tames_outliers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
