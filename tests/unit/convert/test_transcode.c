/* test_transcode: every ggml type in ../shared/vectors/quant, put into a GGUF
 * by our writer and read back, transcoded to its pack form and decoded from
 * the planes, equals ggml_dequantize and ggml's own <type>.f32 bit for bit. */
#include "tests/lib/test_util.h"

#include "convert/transcode.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "formats/planes.h"

static const char *const TYPES[] = {
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl",
    "iq4_xs", "iq3_xxs", "iq2_xxs", "iq2_xs", "iq3_s", "iq2_s", "iq1_s", "iq1_m", "bf16", "f16",
    "q2_0", "q1_0", "mxfp4", "nvfp4", "tq1_0", "tq2_0",
};

/* One vector file through GGUF -> transcode -> planes_decode; returns the form. */
static int check_one(const char *type, const char *variant)
{
    char rel[256], rel32[256];
    snprintf(rel, sizeof rel, "vectors/quant/%s%s.bin", type, variant);
    snprintf(rel32, sizeof rel32, "vectors/quant/%s%s.f32", type, variant);
    if (!have_shared(rel)) return -1;
    const ggml_type_row *t = ggml_type_by_name(type);
    assert_non_null(t);
    size_t nbin = 0, n32 = 0;
    uint8_t *bin = slurp_shared(rel, &nbin);
    float *ref = slurp_shared(rel32, &n32);
    assert_non_null(bin);
    assert_non_null(ref);
    const int64_t ne[2] = { 512, 8 };
    assert_int_equal(n32, 8 * 512 * 4);
    assert_int_equal(nbin, ggml_row_bytes(t->id, 512) * 8);

    gguf_writer *w = gguf_writer_new();
    assert_true(gguf_writer_add_tensor(w, "blk.0.attn_q.weight", t->id, 2, ne, bin, nbin) >= 0);
    uint8_t *file = NULL;
    size_t fsize = 0;
    char err[256];
    assert_int_equal(gguf_writer_to_memory(w, &file, &fsize, err, sizeof err), 0);
    gguf_writer_free(w);
    gguf_file *g = gguf_open_memory(file, fsize, rel, err, sizeof err);
    assert_non_null(g);
    const gguf_tensor *gt = gguf_find_tensor(g, "blk.0.attn_q.weight");
    assert_non_null(gt);

    planes_desc d;
    assert_int_equal(transcode_form_for(t->id, &d), 0);
    size_t bytes[PLANE_COUNT];
    assert_int_equal(planes_sizes(&d, 512, 8, bytes), 0);
    uint8_t *plane[PLANE_COUNT] = { 0 };
    for (int k = 0; k < PLANE_COUNT; k++)
        if (bytes[k]) plane[k] = malloc(bytes[k]);
    assert_int_equal(transcode(&d, t->id, gt->data, 512, 8, plane), 0);

    float *dec = malloc(n32), *deq = malloc(n32);
    assert_int_equal(planes_decode(&d, (const uint8_t *const *)plane, 512, 8, dec, err, sizeof err), 0);
    assert_int_equal(ggml_dequantize(t->id, gt->data, deq, 8 * 512), 0);
    if (memcmp(dec, deq, n32) != 0 || memcmp(dec, ref, n32) != 0) {
        for (int i = 0; i < 8 * 512; i++)
            if (memcmp(&dec[i], &ref[i], 4)) {
                fail_msg("%s%s (%s): element %d decodes to %a, ggml says %a", type, variant,
                         pack_form_name(d.form), i, (double)dec[i], (double)ref[i]);
            }
        fail_msg("%s%s: planes decode differs from ggml_dequantize", type, variant);
    }
    printf("  %-8s%-5s -> %-6s bits %d bias %d group %d%s%s\n", type, variant, pack_form_name(d.form),
           d.code_bits, d.code_bias, d.group_elems, d.has_offset ? " +offsets" : "",
           d.codebook ? " IQ4NL" : "");
    int form = d.form;
    for (int k = 0; k < PLANE_COUNT; k++) free(plane[k]);
    free(dec);
    free(deq);
    gguf_close(g);
    free(file);
    free(bin);
    free(ref);
    return form;
}

static void test_every_quant_vector(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vectors/quant/input.f32");
    int n = 0, n_sform = 0;
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++) {
        for (int v = 0; v < 2; v++) {
            const int f = check_one(TYPES[i], v ? ".imat" : "");
            if (f < 0) continue;
            n++;
            n_sform += (f == FORM_S2 || f == FORM_S4 || f == FORM_S8);
        }
    }
    /* 27 types, 5 with only the .imat variant, 9 where both exist */
    assert_true(n >= 49);
    assert_int_equal(n_sform, 20); /* ten S-form types, two variants each */
}

/* The table in DESIGN.md, as the planes carry it. */
static void test_design_table(void **state)
{
    (void)state;
    static const struct { int type; pack_form f; int bits, bias, group, cb, off, s16; } want[] = {
        { GGML_TYPE_Q2_0, FORM_S2, 2, -1, 64, 0, 0, 1 },   { GGML_TYPE_Q4_0, FORM_S4, 4, -8, 32, 0, 0, 1 },
        { GGML_TYPE_Q5_0, FORM_S8, 8, -16, 32, 0, 0, 1 },  { GGML_TYPE_Q8_0, FORM_S8, 8, -128, 32, 0, 0, 1 },
        { GGML_TYPE_IQ4_NL, FORM_S4, 4, 0, 32, 1, 0, 1 },  { GGML_TYPE_IQ4_XS, FORM_S4, 4, 0, 32, 1, 0, 0 },
        { GGML_TYPE_Q3_K, FORM_S4, 4, -4, 16, 0, 0, 0 },   { GGML_TYPE_Q4_K, FORM_S4, 4, 0, 32, 0, 1, 0 },
        { GGML_TYPE_Q5_K, FORM_S8, 8, 0, 32, 0, 1, 0 },    { GGML_TYPE_Q6_K, FORM_S8, 8, -32, 16, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        planes_desc d;
        assert_int_equal(transcode_form_for(want[i].type, &d), 0);
        assert_int_equal(d.form, want[i].f);
        assert_int_equal(d.code_bits, want[i].bits);
        assert_int_equal(d.code_bias, want[i].bias);
        assert_int_equal(d.group_elems, want[i].group);
        assert_int_equal(d.codebook, want[i].cb);
        assert_int_equal(d.has_offset, want[i].off);
        assert_int_equal(d.scales_fp16, want[i].s16);
    }
    planes_desc d;
    assert_int_equal(transcode_form_for(GGML_TYPE_BF16, &d), 0);
    assert_int_equal(d.form, FORM_P32);
    assert_int_equal(transcode_form_for(GGML_TYPE_F16, &d), 0);
    assert_int_equal(d.form, FORM_P16);
    assert_int_equal(d.values_fp16, 1);
    assert_int_equal(transcode_form_for(GGML_TYPE_IQ3_S, &d), 0);
    assert_int_equal(d.form, FORM_NATIVE);
    /* no decoder: refused, never approximated */
    assert_int_equal(transcode_form_for(GGML_TYPE_Q8_1, &d), -1);
    assert_int_equal(transcode_form_for(GGML_TYPE_I32, &d), -1);
}

/* Shapes that do not fit a form are refused rather than truncated. */
static void test_bad_shapes(void **state)
{
    (void)state;
    planes_desc d;
    size_t bytes[PLANE_COUNT];
    assert_int_equal(transcode_form_for(GGML_TYPE_Q4_K, &d), 0);
    assert_int_equal(planes_sizes(&d, 48, 1, bytes), -1);
    assert_int_equal(planes_sizes(&d, 256, 2, bytes), 0);
    assert_int_equal(bytes[PLANE_CODES], 256);
    assert_int_equal(bytes[PLANE_SCALES], 64);
    assert_int_equal(bytes[PLANE_OFFSETS], 64);
    uint8_t src[144] = { 0 };
    uint8_t *plane[PLANE_COUNT] = { 0 };
    assert_int_equal(transcode(&d, GGML_TYPE_Q4_K, src, 100, 1, plane), -1);
    assert_int_equal(transcode(&d, GGML_TYPE_Q5_K, src, 256, 1, plane), -1); /* form/type mismatch */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_quant_vector),
        cmocka_unit_test(test_design_table),
        cmocka_unit_test(test_bad_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
