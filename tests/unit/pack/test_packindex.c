/* test_packindex.c: packindex_run() on hostile and hand-made manifests.
 *
 * Every refusal must be exactly one line naming the problem, exit status 1,
 * nothing on the summary stream, and no file but the manifest left in the
 * pack dir (no index, no temporary). The seed-vector comparison is
 * tests/e2e/e2e_packindex.sh; this suite covers what the vectors do not. */
#include "tests/lib/test_util.h"

#include <dirent.h>
#include <unistd.h>

#include "pack/packindex.h"

typedef struct result {
    int rc;
    char *out, *err;
    size_t out_len, err_len;
    char *dir;
} result;

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
    assert_int_equal(fclose(fp), 0);
}

/* Runs packindex on a fresh pack dir holding `manifest`; out_path NULL is
 * the default <dir>/index.txt, else a path relative to the dir. */
static result run_on(const char *manifest, const char *out_rel)
{
    result r;
    memset(&r, 0, sizeof r);
    r.dir = make_scratch_dir();
    assert_non_null(r.dir);
    char path[4096], outp[4096];
    snprintf(path, sizeof path, "%s/manifest.json", r.dir);
    write_text(path, manifest);
    if (out_rel) snprintf(outp, sizeof outp, "%s/%s", r.dir, out_rel);
    FILE *out = open_memstream(&r.out, &r.out_len);
    FILE *err = open_memstream(&r.err, &r.err_len);
    assert_non_null(out);
    assert_non_null(err);
    r.rc = packindex_run(r.dir, out_rel ? outp : NULL, out, err);
    fclose(out);
    fclose(err);
    return r;
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void cleanup(result *r)
{
    DIR *d = opendir(r->dir);
    if (d) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", r->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(r->dir);
    free(r->dir);
    free(r->out);
    free(r->err);
}

/* The refusal contract, with `want` a substring of the one line. */
static void expect_refusal(const char *manifest, const char *want)
{
    result r = run_on(manifest, NULL);
    if (r.rc != 1 || !strstr(r.err, want)) printf("got rc %d, stderr: %s", r.rc, r.err);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, want));
    assert_true(r.err_len > 1);
    assert_int_equal(r.err[r.err_len - 1], '\n');
    assert_null(memchr(r.err, '\n', r.err_len - 1)); /* exactly one line */
    assert_int_equal(r.out_len, 0);
    assert_int_equal(dir_entries(r.dir), 1); /* the manifest, nothing else */
    cleanup(&r);
}

/* A well-formed Q4_0 tensor [256, 4] (codes 512, fp16 scales 64); the
 * hostile cases below are variations of it. */
#define Q4_0_X(name, shape, st, bits, extra)                                    \
    "\"" name "\": {\"file\": \"dense.bin\", \"shape\": " shape ", "          \
    "\"elements\": 1024, \"source_type\": " st ", \"code_bits\": " bits ", "    \
    "\"code_bias\": -8, \"group_elems\": 32, \"scales_fp16\": true, " extra     \
    "\"codes\": {\"offset\": 0, \"bytes\": 512}, "                              \
    "\"scales\": {\"offset\": 512, \"bytes\": 64}}"
#define Q4_0(name, extra) Q4_0_X(name, "[256, 4]", "\"Q4_0\"", "4", extra)

/* ------------------------------------------------------------ malformed */

static void test_json_error_names_line_and_column(void **state)
{
    (void)state;
    expect_refusal("{\n  \"tensors\": {\n    \"a\": ,\n  }\n}\n", "line 3, column");
    expect_refusal("{\n  \"tensors\": {\n    \"a\": ,\n  }\n}\n", "manifest.json: invalid JSON");
    expect_refusal("{\"tensors\": {", "invalid JSON at line 1");
    expect_refusal("{\"tensors\": {}} trailing", "invalid JSON at line 1, column");
    expect_refusal("", "invalid JSON");
    expect_refusal("{\"tensors\": {\"a\": NaN}}", "invalid JSON");
}

static void test_duplicate_tensor_refused(void **state)
{
    (void)state;
    expect_refusal("{\"tensors\": {\n" Q4_0("w", "") ",\n" Q4_0("w", "") "}}", "line 3");
}

static void test_structure(void **state)
{
    (void)state;
    expect_refusal("[1, 2]", "top level is not a JSON object");
    expect_refusal("{\"align\": 64}", "no `tensors` object");
    expect_refusal("{\"tensors\": []}", "`tensors` is not an object");
    expect_refusal("{\"tensors\": {\"w\": 5}}", "w: the tensor entry is not an object");
    expect_refusal("{\"align\": 0, \"tensors\": {}}", "`align` 0 is not a positive alignment");
    expect_refusal("{\"align\": -64, \"tensors\": {}}", "`align` -64 is not a positive alignment");
    expect_refusal("{\"align\": \"64\", \"tensors\": {}}", "`align` is not an integer");
}

static void test_missing_keys(void **state)
{
    (void)state;
    expect_refusal("{\"tensors\": {\"w\": {\"shape\": [4]}}}", "unknown file None for w");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"source_type\": \"F32\", "
                   "\"elements\": 4, \"shape\": [4], \"values\": {\"bytes\": 16}}}}",
                   "w: `values.offset` is missing");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"source_type\": \"F32\", "
                   "\"elements\": 4, \"shape\": [4], \"values\": {\"offset\": 0}}}}",
                   "w: `values.bytes` is missing");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [4]}}}",
                   "w: neither a `values` plane nor any of codes/scales/offsets");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4], \"elements\": 1024, "
                   "\"source_type\": \"Q8_0\", \"code_bits\": 8, \"group_elems\": 32, "
                   "\"codes\": {\"offset\": 0, \"bytes\": 1024}}}}",
                   "w: no `scales` plane");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4], \"elements\": 1024, "
                   "\"source_type\": \"Q8_0\", \"code_bits\": 8, \"group_elems\": 32, "
                   "\"codes\": {\"bytes\": 1024}, \"scales\": {\"offset\": 1024, \"bytes\": 128}}}}",
                   "w: `codes.offset` is missing");
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_refusal("{\"tensors\": {\"w\": {\"file\": 5}}}", "unknown file 5 for w");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"it's\"}}}", "unknown file \"it's\" for w");
    expect_refusal("{\"tensors\": {" Q4_0_X("w", "\"256x4\"", "\"Q4_0\"", "4", "") "}}", "w: `shape` is not an array");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4.0]}}}",
                   "w: `shape` is not an array of integers");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"elements\": \"1024\"}}}",
                   "w: `elements` is not an integer");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"source_type\": 7}}}",
                   "w: `source_type` is not a string");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"values\": [0, 16]}}}",
                   "w: `values` is not an object");
    expect_refusal("{\"tensors\": {" Q4_0("w", "\"offsets\": 5, ") "}}", "w: plane `offsets` is not an object");
    expect_refusal("{\"tensors\": {" Q4_0("w", "\"has_offset\": 1, ") "}}", "w: `has_offset` is not true or false");
    expect_refusal("{\"tensors\": {" Q4_0("w", "\"codebook\": 1, ") "}}", "w: `codebook` is not a string");
}

static void test_huge_numbers(void **state)
{
    (void)state;
    /* beyond int64: jansson's own refusal, still with a position */
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"elements\": 99999999999999999999}}}",
                   "invalid JSON at line 1, column");
    /* fits int64, but the size arithmetic would wrap */
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4], "
                   "\"elements\": 9223372036854775807, \"source_type\": \"Q8_0\", \"code_bits\": 8, "
                   "\"group_elems\": 32, \"codes\": {\"offset\": 0, \"bytes\": 1024}, "
                   "\"scales\": {\"offset\": 1024, \"bytes\": 128}}}}",
                   "w: sizes overflow 64-bit arithmetic");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4], "
                   "\"elements\": 1024, \"source_type\": \"Q8_0\", \"code_bits\": 8, \"group_elems\": 32, "
                   "\"codes\": {\"offset\": 9223372036854775000, \"bytes\": 1024}, "
                   "\"scales\": {\"offset\": 1024, \"bytes\": 128}}}}",
                   "w: sizes overflow 64-bit arithmetic");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [4294967296, 4294967296, 4]}}}",
                   "w: sizes overflow 64-bit arithmetic");
    expect_refusal("{\"align\": 9223372036854775807, \"tensors\": {\"w\": {\"file\": \"dense.bin\", "
                   "\"shape\": [4], \"elements\": 4, \"source_type\": \"F32\", "
                   "\"values\": {\"offset\": 0, \"bytes\": 16}}}}",
                   "w: sizes overflow 64-bit arithmetic");
}

static void test_negative_sizes(void **state)
{
    (void)state;
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [4], \"elements\": 4, "
                   "\"source_type\": \"F32\", \"values\": {\"offset\": -16, \"bytes\": 16}}}}",
                   "w: plane `values` has a negative offset or size");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [-4], \"elements\": -4, "
                   "\"source_type\": \"F32\", \"values\": {\"offset\": 0, \"bytes\": -16}}}}",
                   "w: `shape` has a negative dimension");
    /* Negative plane bytes that the seed's contiguity and sum checks let
     * through: the spans 0+600, 600-88, 512+256 chain and sum to 768. */
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4], \"elements\": 1024, "
                   "\"source_type\": \"Q4_K\", \"code_bits\": 4, \"group_elems\": 32, \"has_offset\": true, "
                   "\"codes\": {\"offset\": 0, \"bytes\": 600}, "
                   "\"scales\": {\"offset\": 600, \"bytes\": -88}, "
                   "\"offsets\": {\"offset\": 512, \"bytes\": 256}}}}",
                   "w: plane `scales` has a negative offset or size");
}

/* --------------------------------------------- refusals beyond the seed */

static void test_plausible_garbage_refused(void **state)
{
    (void)state;
    /* same sum as a real Q4_0, planes of the wrong widths: codes read as scales */
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256, 4], \"elements\": 1024, "
                   "\"source_type\": \"Q4_0\", \"code_bits\": 4, \"group_elems\": 32, \"scales_fp16\": true, "
                   "\"codes\": {\"offset\": 0, \"bytes\": 544}, \"scales\": {\"offset\": 544, \"bytes\": 32}}}}",
                   "w: plane `codes` holds 544 bytes but the shape and widths give 512");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256], \"elements\": 128, "
                   "\"source_type\": \"F32\", \"values\": {\"offset\": 0, \"bytes\": 512}}}}",
                   "w: `elements` 128 is not the product of `shape` (256)");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256], \"elements\": 256, "
                   "\"source_type\": \"BF16\", \"values\": {\"offset\": 0, \"bytes\": 512}}}}",
                   "w: a BF16 `values` plane of 256 elements at 4 bytes each is 1024 bytes, but the manifest says 512");
    expect_refusal("{\"tensors\": {\"w\": {\"file\": \"dense.bin\", \"shape\": [256], \"elements\": 256, "
                   "\"source_type\": \"F16\", \"values_fp16\": true, \"values\": {\"offset\": 0, \"bytes\": 1024}}}}",
                   "w: a F16 `values` plane of 256 elements at 2 bytes each is 512 bytes");
    expect_refusal("{\"tensors\": {\"two words\": {\"file\": \"dense.bin\", \"shape\": [4], \"elements\": 4, "
                   "\"source_type\": \"F32\", \"values\": {\"offset\": 0, \"bytes\": 16}}}}",
                   "two words: a tensor name must be non-empty");
    expect_refusal("{\"tensors\": {\"#w\": {\"file\": \"dense.bin\", \"shape\": [4], \"elements\": 4, "
                   "\"source_type\": \"F32\", \"values\": {\"offset\": 0, \"bytes\": 16}}}}",
                   "not start with # or @");
    /* a planed tensor claiming a float type would load S-form planes as values */
    expect_refusal("{\"tensors\": {" Q4_0_X("w", "[256, 4]", "\"BF16\"", "4", "") "}}",
                   "w: unknown quantized source_type 'BF16'");
    expect_refusal("{\"tensors\": {" Q4_0_X("w", "[256, 4]", "null", "4", "") "}}",
                   "w: unknown quantized source_type '?'");
}

static void test_seed_refusal_wins_over_added_one(void **state)
{
    (void)state;
    /* the first tensor is one only packindex refuses (wrong values width),
     * the second one the seed refuses: the seed's message is the one given */
    expect_refusal("{\"tensors\": {\"a\": {\"file\": \"dense.bin\", \"shape\": [256], \"elements\": 256, "
                   "\"source_type\": \"F32\", \"values\": {\"offset\": 0, \"bytes\": 4}}, "
                   Q4_0_X("b", "[256, 4]", "\"Q4_0\"", "0", "") "}}",
                   "b: a quantized tensor with code_bits=0 group_elems=32");
}

/* ------------------------------------------------------------- successes */

static void test_index_written(void **state)
{
    (void)state;
    const char *man =
        "{\"align\": 128, \"tensors\": {"
        Q4_0("blk.0.attn_q.weight", "") ", "
        "\"blk.0.ffn_gate_inp.weight\": {\"file\": \"dense.bin\", \"shape\": [8, 2, 3], \"elements\": 48, "
        "\"source_type\": \"F32\", \"values\": {\"offset\": 576, \"bytes\": 192}}, "
        "\"blk.0.ffn_up_exps.weight\": {\"file\": \"experts.bin\", \"shape\": [64, 2, 2], \"elements\": 256, "
        "\"source_type\": \"Q5_K\", \"code_bits\": 8, \"code_bias\": -16, \"group_elems\": 32, "
        "\"has_offset\": true, \"offsets_fp16\": true, \"codes\": {\"offset\": 0, \"bytes\": 256}, "
        "\"scales\": {\"offset\": 256, \"bytes\": 32}, \"offsets\": {\"offset\": 288, \"bytes\": 16}}}}";
    result r = run_on(man, NULL);
    if (r.rc) printf("%s", r.err);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.err_len, 0);
    char p[4096];
    snprintf(p, sizeof p, "%s/index.txt", r.dir);
    char *idx = slurp(p, NULL);
    assert_non_null(idx);
    assert_string_equal(idx,
        "# strata pack index v3  --  generated by tools/pack_index.py; do not hand-edit\n"
        "# align 128 pool 1280 tensors 3\n"
        "# name file kind src_off src_bytes dst_off dst_bytes ne0 ne1 code_bits code_bias group_elems "
        "codebook has_offset codes_bytes scales_bytes offset_bytes scales_fp16 act_kind\n"
        "blk.0.attn_q.weight 0 0 0 576 0 640 256 4 4 -8 32 0 0 512 128 0 1 0\n"
        "blk.0.ffn_gate_inp.weight 0 2 576 192 640 192 8 2 0 0 0 0 0 0 0 0 0 0\n"
        "@shape blk.0.ffn_gate_inp.weight 8 2 3\n"
        "blk.0.ffn_up_exps.weight 2 0 0 304 896 320 64 2 8 -16 32 0 1 256 32 32 0 1\n"
        "@shape blk.0.ffn_up_exps.weight 64 2 2\n"
        "@offsets_fp16 blk.0.ffn_up_exps.weight\n");
    free(idx);
    char head[8192];
    snprintf(head, sizeof head, "%s: 3 tensors, engine pool 1280 B (0.000 GiB)\n"
             "   kind VERBATIM        2 tensors\n"
             "   kind F32             1 tensors\n"
             "   0 tensors re-rounded to 16 bits, saving 0 B (0.000 GiB)\n"
             "   1 tensors widened fp16 scales -> f32, costing 64 B (0.000 GiB)\n"
             "   1 tensors widened fp16 offsets -> f32, costing 16 B (0.000 GiB)\n", p);
    assert_int_equal(strncmp(r.out, head, strlen(head)), 0);
    assert_int_equal(dir_entries(r.dir), 2);
    cleanup(&r);
}

static void test_existing_output_never_overwritten(void **state)
{
    (void)state;
    result r = run_on("{\"tensors\": {}}", NULL);
    assert_int_equal(r.rc, 0);
    char p[4096];
    snprintf(p, sizeof p, "%s/index.txt", r.dir);
    write_text(p, "precious\n");
    free(r.out);
    free(r.err);
    r.out = r.err = NULL;
    FILE *out = open_memstream(&r.out, &r.out_len);
    FILE *err = open_memstream(&r.err, &r.err_len);
    assert_int_equal(packindex_run(r.dir, NULL, out, err), 1);
    fclose(out);
    fclose(err);
    assert_non_null(strstr(r.err, "already exists; refusing to overwrite it"));
    char *now = slurp(p, NULL);
    assert_string_equal(now, "precious\n");
    free(now);
    assert_int_equal(dir_entries(r.dir), 2); /* no temporary left */
    cleanup(&r);
}

static void test_unwritable_output(void **state)
{
    (void)state;
    result r = run_on("{\"tensors\": {}}", "no/such/dir/index.txt");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "no/such/dir/index.txt"));
    assert_null(memchr(r.err, '\n', r.err_len - 1));
    assert_int_equal(r.out_len, 0);
    cleanup(&r);
}

static void test_missing_manifest(void **state)
{
    (void)state;
    char *dir = make_scratch_dir();
    assert_non_null(dir);
    char *o = NULL, *e = NULL;
    size_t ol = 0, el = 0;
    FILE *out = open_memstream(&o, &ol), *err = open_memstream(&e, &el);
    assert_int_equal(packindex_run(dir, NULL, out, err), 1);
    fclose(out);
    fclose(err);
    assert_non_null(strstr(e, "/manifest.json: "));
    assert_int_equal(ol, 0);
    assert_int_equal(dir_entries(dir), 0);
    free(o);
    free(e);
    rmdir(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_error_names_line_and_column),
        cmocka_unit_test(test_duplicate_tensor_refused),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_missing_keys),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_huge_numbers),
        cmocka_unit_test(test_negative_sizes),
        cmocka_unit_test(test_plausible_garbage_refused),
        cmocka_unit_test(test_seed_refusal_wins_over_added_one),
        cmocka_unit_test(test_index_written),
        cmocka_unit_test(test_existing_output_never_overwritten),
        cmocka_unit_test(test_unwritable_output),
        cmocka_unit_test(test_missing_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
