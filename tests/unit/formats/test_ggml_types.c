/* test_ggml_types.c: the ggml type table and every row decoder, checked bit
 * for bit against ggml's own dequantization in ../shared/vectors/quant
 * (<type>.bin -> <type>.f32, and the .imat variants: 8 rows x 512). */
#include "tests/lib/test_util.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_types.h"

#define VEC_DIR "vectors/quant/"
#define VEC_ROWS 8
#define VEC_COLS 512
#define GUARD 16 /* floats after each decoded row that must stay untouched */

/* ---- table --------------------------------------------------------------- */

static int removed_id(int id)
{
    return id == 4 || id == 5 || (id >= 31 && id <= 33) || (id >= 36 && id <= 38);
}

static void test_removed_and_out_of_range_ids(void **state)
{
    (void)state;
    for (int id = -3; id < GGML_TYPE_COUNT + 5; id++) {
        const ggml_type_row *t = ggml_type_info(id);
        if (id < 0 || id >= GGML_TYPE_COUNT || removed_id(id)) {
            assert_null(t);
            assert_int_equal(ggml_row_bytes(id, 256), 0);
        } else {
            assert_non_null(t);
            assert_int_equal(t->id, id);
            assert_true(t->blck > 0 && t->bytes > 0);
        }
    }
    assert_null(ggml_type_info(43));
    assert_null(ggml_type_info(1000));
}

static void test_names(void **state)
{
    (void)state;
    for (int id = 0; id < GGML_TYPE_COUNT; id++) {
        const ggml_type_row *t = ggml_type_info(id);
        if (!t) continue;
        assert_ptr_equal(ggml_type_by_name(t->name), t);
    }
    assert_int_equal(ggml_type_by_name("q4_K")->id, GGML_TYPE_Q4_K);
    assert_int_equal(ggml_type_by_name("Q4_K")->id, GGML_TYPE_Q4_K);
    assert_int_equal(ggml_type_by_name("IQ3_XXS")->id, GGML_TYPE_IQ3_XXS);
    assert_int_equal(ggml_type_by_name("bf16")->id, GGML_TYPE_BF16);
    assert_null(ggml_type_by_name("q4_2"));
    assert_null(ggml_type_by_name(""));
    assert_null(ggml_type_by_name("q4_K "));
}

static void test_row_bytes(void **state)
{
    (void)state;
    assert_int_equal(ggml_row_bytes(GGML_TYPE_F32, 7), 28);
    assert_int_equal(ggml_row_bytes(GGML_TYPE_Q4_0, 512), 288);
    assert_int_equal(ggml_row_bytes(GGML_TYPE_Q4_K, 512), 288);
    assert_int_equal(ggml_row_bytes(GGML_TYPE_IQ3_XXS, 4096), 16 * 98);
    assert_int_equal(ggml_row_bytes(GGML_TYPE_NVFP4, 128), 72);
    assert_int_equal(ggml_row_bytes(GGML_TYPE_Q4_K, 100), 0); /* not whole blocks */
    assert_int_equal(ggml_row_bytes(GGML_TYPE_Q4_K, -256), 0);
    assert_int_equal(ggml_row_bytes(GGML_TYPE_Q4_K, 0), 0);
}

/* The table and the structs are two statements of one layout. */
static void test_block_structs_match_table(void **state)
{
    (void)state;
    static const struct { int id; size_t size, blck; } b[] = {
        { GGML_TYPE_Q4_0, sizeof(block_q4_0), QK4_0 },       { GGML_TYPE_Q4_1, sizeof(block_q4_1), QK4_1 },
        { GGML_TYPE_Q5_0, sizeof(block_q5_0), QK5_0 },       { GGML_TYPE_Q5_1, sizeof(block_q5_1), QK5_1 },
        { GGML_TYPE_Q8_0, sizeof(block_q8_0), QK8_0 },       { GGML_TYPE_Q8_1, sizeof(block_q8_1), QK8_0 },
        { GGML_TYPE_Q2_K, sizeof(block_q2_K), QK_K },        { GGML_TYPE_Q3_K, sizeof(block_q3_K), QK_K },
        { GGML_TYPE_Q4_K, sizeof(block_q4_K), QK_K },        { GGML_TYPE_Q5_K, sizeof(block_q5_K), QK_K },
        { GGML_TYPE_Q6_K, sizeof(block_q6_K), QK_K },        { GGML_TYPE_Q8_K, sizeof(block_q8_K), QK_K },
        { GGML_TYPE_IQ2_XXS, sizeof(block_iq2_xxs), QK_K },  { GGML_TYPE_IQ2_XS, sizeof(block_iq2_xs), QK_K },
        { GGML_TYPE_IQ3_XXS, sizeof(block_iq3_xxs), QK_K },  { GGML_TYPE_IQ1_S, sizeof(block_iq1_s), QK_K },
        { GGML_TYPE_IQ4_NL, sizeof(block_iq4_nl), QK4_NL },  { GGML_TYPE_IQ3_S, sizeof(block_iq3_s), QK_K },
        { GGML_TYPE_IQ2_S, sizeof(block_iq2_s), QK_K },      { GGML_TYPE_IQ4_XS, sizeof(block_iq4_xs), QK_K },
        { GGML_TYPE_IQ1_M, sizeof(block_iq1_m), QK_K },      { GGML_TYPE_TQ1_0, sizeof(block_tq1_0), QK_K },
        { GGML_TYPE_TQ2_0, sizeof(block_tq2_0), QK_K },      { GGML_TYPE_MXFP4, sizeof(block_mxfp4), QK_MXFP4 },
        { GGML_TYPE_NVFP4, sizeof(block_nvfp4), QK_NVFP4 },  { GGML_TYPE_Q1_0, sizeof(block_q1_0), QK1_0 },
        { GGML_TYPE_Q2_0, sizeof(block_q2_0), QK2_0 },
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        const ggml_type_row *t = ggml_type_info(b[i].id);
        assert_non_null(t);
        assert_int_equal(t->bytes, b[i].size);
        assert_int_equal(t->blck, b[i].blck);
    }
}

/* Every row names the activation its CPU dot rounds to, and it is one the
 * runtime has (Q8_0, Q8_K, Q8_1) or float; a few rows as ggml-cpu has them. */
static void test_act_column(void **state)
{
    (void)state;
    for (int id = 0; id < GGML_TYPE_COUNT; id++) {
        const ggml_type_row *t = ggml_type_info(id);
        if (!t) continue;
        assert_true(t->act == GGML_TYPE_F32 || t->act == GGML_TYPE_Q8_0 || t->act == GGML_TYPE_Q8_K ||
                    t->act == GGML_TYPE_Q8_1);
    }
    assert_int_equal(ggml_type_info(GGML_TYPE_Q8_0)->act, GGML_TYPE_Q8_0);
    assert_int_equal(ggml_type_info(GGML_TYPE_MXFP4)->act, GGML_TYPE_Q8_0);
    assert_int_equal(ggml_type_info(GGML_TYPE_Q4_K)->act, GGML_TYPE_Q8_K);
    assert_int_equal(ggml_type_info(GGML_TYPE_IQ3_XXS)->act, GGML_TYPE_Q8_K);
    assert_int_equal(ggml_type_info(GGML_TYPE_F16)->act, GGML_TYPE_F32);
    assert_int_equal(ggml_type_info(GGML_TYPE_Q4_1)->act, GGML_TYPE_Q8_1);
    assert_int_equal(ggml_type_info(GGML_TYPE_Q5_1)->act, GGML_TYPE_Q8_1);
    assert_int_equal(ggml_type_info(GGML_TYPE_NVFP4)->act, GGML_TYPE_Q8_0);
    assert_int_equal(ggml_type_info(GGML_TYPE_Q1_0)->act, GGML_TYPE_Q8_0);
    assert_int_equal(ggml_type_info(GGML_TYPE_TQ2_0)->act, GGML_TYPE_Q8_K);
}

static void test_dequantize_refusals(void **state)
{
    (void)state;
    uint8_t src[sizeof(block_q4_0) * 2] = { 0 };
    float dst[64];
    assert_int_equal(ggml_dequantize(GGML_TYPE_Q4_0, src, dst, 31), -1); /* not a whole block */
    assert_int_equal(ggml_dequantize(GGML_TYPE_Q8_1, src, dst, 32), -1); /* no decoder in ggml */
    assert_int_equal(ggml_dequantize(GGML_TYPE_I32, src, dst, 4), -1);
    assert_int_equal(ggml_dequantize(4, src, dst, 32), -1);              /* removed id */
    assert_int_equal(ggml_dequantize(GGML_TYPE_COUNT, src, dst, 32), -1);
    assert_int_equal(ggml_dequantize(GGML_TYPE_Q4_0, src, dst, 64), 0);
    for (int i = 0; i < 64; i++) assert_true(dst[i] == 0.0f); /* d = +0 */
}

/* Q8_K has no vector file (ggml only quantizes activations to it): check
 * d * q against exact products. */
static void test_q8_K_by_hand(void **state)
{
    (void)state;
    block_q8_K b;
    memset(&b, 0, sizeof b);
    b.d = 0.375f;
    for (int j = 0; j < QK_K; j++) b.qs[j] = (int8_t)(j - 128);
    float y[QK_K];
    assert_int_equal(ggml_dequantize(GGML_TYPE_Q8_K, &b, y, QK_K), 0);
    for (int j = 0; j < QK_K; j++) assert_true(y[j] == 0.375f * (float)(j - 128));
}

/* ---- reference vectors ------------------------------------------------------ */

/* Index of the first float whose bits differ, or -1. Bits, not ==: -0 vs +0
 * and NaN payloads count. */
static int64_t first_bit_diff(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
    return -1;
}

/* The comparison itself must catch one ulp. */
static void test_compare_catches_one_ulp(void **state)
{
    (void)state;
    float a[4] = { 1.0f, -2.5f, 0.0f, 3.0e-40f }, b[4];
    memcpy(b, a, sizeof a);
    assert_int_equal(first_bit_diff(a, b, 4), -1);
    for (int i = 0; i < 4; i++) {
        memcpy(b, a, sizeof a);
        uint32_t u;
        memcpy(&u, &b[i], 4);
        u += 1;
        memcpy(&b[i], &u, 4);
        assert_int_equal(first_bit_diff(a, b, 4), i);
    }
    memcpy(b, a, sizeof a);
    b[2] = -0.0f; /* equal as floats, different bits */
    assert_int_equal(first_bit_diff(a, b, 4), 2);
}

/* Decode one vector file pair through ggml_dequantize, row by row, into a
 * guarded buffer. Returns 1 when the pair exists and matched, 0 when absent;
 * fails the test on any difference. */
static int check_pair(const ggml_type_row *t, const char *variant)
{
    char bin_rel[256], f32_rel[256];
    snprintf(bin_rel, sizeof bin_rel, VEC_DIR "%s%s.bin", t->name, variant);
    snprintf(f32_rel, sizeof f32_rel, VEC_DIR "%s%s.f32", t->name, variant);
    if (!have_shared(bin_rel)) return 0;

    size_t nbin = 0, nf32 = 0;
    uint8_t *bin = slurp_shared(bin_rel, &nbin);
    float *want = slurp_shared(f32_rel, &nf32);
    assert_non_null(bin);
    assert_non_null(want);
    const size_t row_bytes = ggml_row_bytes(t->id, VEC_COLS);
    assert_int_equal(nbin, VEC_ROWS * row_bytes);
    assert_int_equal(nf32, VEC_ROWS * VEC_COLS * sizeof(float));

    float got[VEC_COLS + GUARD];
    int bad = 0;
    for (int r = 0; r < VEC_ROWS; r++) {
        for (int g = 0; g < GUARD; g++) got[VEC_COLS + g] = 12345.0f;
        assert_int_equal(ggml_dequantize(t->id, bin + r * row_bytes, got, VEC_COLS), 0);
        for (int g = 0; g < GUARD; g++) assert_true(got[VEC_COLS + g] == 12345.0f);
        const float *w = want + (size_t)r * VEC_COLS;
        int64_t c = first_bit_diff(got, w, VEC_COLS);
        if (c >= 0) {
            uint32_t gb, wb;
            memcpy(&gb, &got[c], 4);
            memcpy(&wb, &w[c], 4);
            printf("MISMATCH %s%s row %d col %lld: got %.9g (0x%08x) want %.9g (0x%08x)\n", t->name, variant,
                   r, (long long)c, got[c], gb, w[c], wb);
            bad++;
        }
    }
    free(bin);
    free(want);
    assert_int_equal(bad, 0);
    return 1;
}

/* state: the type name (as in the vector file names). */
static void test_vectors(void **state)
{
    const char *name = *state;
    SKIP_UNLESS_SHARED(VEC_DIR "manifest.txt");
    const ggml_type_row *t = ggml_type_by_name(name);
    assert_non_null(t);
    assert_string_equal(t->name, name); /* exact ggml spelling, not just case-insensitive */
    assert_non_null(t->to_f32);
    int n = check_pair(t, "") + check_pair(t, ".imat");
    if (n == 0) {
        printf("SKIP %s: no vectors for %s\n", __func__, name);
        skip();
    }
}

/* Every line of the manifest names a type we decode, with the same block
 * geometry, so a type added to the vectors cannot go untested silently. */
static void test_manifest_covered(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED(VEC_DIR "manifest.txt");
    char *text = slurp_shared(VEC_DIR "manifest.txt", NULL);
    assert_non_null(text);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char name[32], variant[16];
        int id;
        long blck, tsize, rbytes, bbytes;
        assert_int_equal(sscanf(line, "%31s %d %ld %ld %ld %15s %ld", name, &id, &blck, &tsize, &rbytes, variant, &bbytes), 7);
        const ggml_type_row *t = ggml_type_info(id);
        assert_non_null(t);
        assert_string_equal(t->name, name);
        assert_int_equal(t->blck, blck);
        assert_int_equal(t->bytes, tsize);
        assert_int_equal(ggml_row_bytes(id, VEC_COLS), rbytes);
        assert_int_equal(VEC_ROWS * rbytes, bbytes);
        assert_non_null(t->to_f32);
        lines++;
    }
    free(text);
    assert_true(lines >= 50);
}

#define VT(NAME) cmocka_unit_test_prestate(test_vectors, (void *)NAME)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_removed_and_out_of_range_ids),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_row_bytes),
        cmocka_unit_test(test_block_structs_match_table),
        cmocka_unit_test(test_act_column),
        cmocka_unit_test(test_dequantize_refusals),
        cmocka_unit_test(test_q8_K_by_hand),
        cmocka_unit_test(test_compare_catches_one_ulp),
        cmocka_unit_test(test_manifest_covered),
        VT("f16"),    VT("bf16"),    VT("q4_0"),   VT("q4_1"),    VT("q5_0"),   VT("q5_1"),
        VT("q8_0"),   VT("q2_K"),    VT("q3_K"),   VT("q4_K"),    VT("q5_K"),   VT("q6_K"),
        VT("iq4_nl"), VT("iq4_xs"),  VT("iq3_xxs"), VT("iq3_s"),  VT("iq2_xxs"), VT("iq2_xs"),
        VT("iq2_s"),  VT("iq1_s"),   VT("iq1_m"),  VT("q2_0"),    VT("q1_0"),   VT("mxfp4"),
        VT("nvfp4"),  VT("tq1_0"),   VT("tq2_0"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
