/* test_fp16.c: fp16/bf16 conversions, exhaustively where the space allows,
 * against an independent double-precision reference. */
#include "tests/lib/test_util.h"
#include "formats/fp16.h"
#include <math.h>

/* Reference half -> double from the definition, no bit tricks. */
static double ref_half(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = ldexp(m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static void test_half_to_float_all_65536(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_f32((uint16_t)h);
        double r = ref_half((uint16_t)h);
        if (isnan(r)) {
            assert_true(isnan(f));
            assert_true(fp_f32_bits(f) & 0x400000u); /* quiet */
            assert_int_equal((fp_f32_bits(f) >> 13) & 0x1FFu, h & 0x1FFu); /* payload kept */
            /* ggml canonicalises every NaN to the quiet 0x7E00, keeping the sign */
            assert_int_equal(f32_to_fp16(f), (h & 0x8000) | 0x7E00);
        } else {
            assert_true((double)f == r);
            assert_int_equal(signbit(f) != 0, (h >> 15) != 0);
            assert_int_equal(f32_to_fp16(f), h); /* exact round trip, -0 and subnormals included */
        }
    }
}

/* f32 -> f16 rounds to nearest even: check every f32 that lies exactly
 * halfway between two adjacent halves, and just either side of it. */
static void test_float_to_half_ties_to_even(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x7BFF; h++) { /* positive finite, below max */
        double lo = ref_half((uint16_t)h), hi = ref_half((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2); /* exact in f32: 11+1 significant bits */
        assert_true((double)mid == (lo + hi) / 2);
        uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        assert_int_equal(f32_to_fp16(mid), want);
        assert_int_equal(f32_to_fp16(-mid), want | 0x8000);
        assert_int_equal(f32_to_fp16(nextafterf(mid, 0.0f)), h);
        assert_int_equal(f32_to_fp16(nextafterf(mid, INFINITY)), h + 1);
    }
}

static void test_float_to_half_edges(void **state)
{
    (void)state;
    assert_int_equal(f32_to_fp16(65504.0f), 0x7BFF);
    assert_int_equal(f32_to_fp16(65519.99f), 0x7BFF);
    assert_int_equal(f32_to_fp16(65520.0f), 0x7C00);      /* tie rounds up to inf */
    assert_int_equal(f32_to_fp16(1e30f), 0x7C00);
    assert_int_equal(f32_to_fp16(-INFINITY), 0xFC00);
    assert_int_equal(f32_to_fp16(ldexpf(1, -24)), 0x0001);  /* smallest subnormal */
    assert_int_equal(f32_to_fp16(ldexpf(1, -25)), 0x0000);  /* tie to even: 0 */
    assert_int_equal(f32_to_fp16(ldexpf(1.5f, -25)), 0x0001);
    assert_int_equal(f32_to_fp16(ldexpf(3, -25)), 0x0002);  /* 1.5 ulp ties to 2 */
    assert_int_equal(f32_to_fp16(1e-30f), 0x0000);
    assert_int_equal(f32_to_fp16(-1e-30f), 0x8000);
    assert_int_equal(f32_to_fp16(ldexpf(1023.5f, -24)), 0x0400); /* carries into the normals */
    assert_true((f32_to_fp16(NAN) & 0x7FFF) > 0x7C00);
    assert_true((f32_to_fp16(fp_bits_f32(0x7F800001u)) & 0x7FFF) > 0x7C00); /* low-payload NaN stays NaN */
}

static void test_bf16(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = bf16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        assert_int_equal(f32_to_bf16(f), h);
    }
    assert_int_equal(f32_to_bf16(fp_bits_f32(0x3F808000u)), 0x3F80); /* tie, even stays */
    assert_int_equal(f32_to_bf16(fp_bits_f32(0x3F818000u)), 0x3F82); /* tie, odd rounds up */
    assert_int_equal(f32_to_bf16(fp_bits_f32(0x3F808001u)), 0x3F81);
    assert_int_equal(f32_to_bf16(fp_bits_f32(0x7F7FFFFFu)), 0x7F80); /* overflow to inf */
    assert_true(isnan(bf16_to_f32(f32_to_bf16(fp_bits_f32(0x7F800001u)))));
}

/* The F16C row path and the scalar reference agree on every half, and on
 * row lengths that leave a tail. */
static void test_row_paths_agree(void **state)
{
    (void)state;
    uint16_t *h = malloc(65536 * sizeof *h);
    float *a = malloc(65536 * sizeof *a), *b = malloc(65536 * sizeof *b);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int64_t n = 65536; n >= 65530; n--) {
        memset(a, 0, 65536 * sizeof *a);
        memset(b, 0, 65536 * sizeof *b);
        fp16_row_to_f32(h, a, n);
        fp16_row_to_f32_scalar(h, b, n);
        assert_memory_equal(a, b, 65536 * sizeof *a);
    }
    free(h); free(a); free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_to_float_all_65536),
        cmocka_unit_test(test_float_to_half_ties_to_even),
        cmocka_unit_test(test_float_to_half_edges),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_row_paths_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
