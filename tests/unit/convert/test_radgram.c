/* test_radgram.c: the RADGRAM2 reader on hostile headers, and the fold on
 * synthetic recordings written here (ranks, k mismatches, rows near 2^64). */
#include "tests/lib/test_util.h"

#include <math.h>
#include <unistd.h>

#include "convert/grams2imatrix.h"
#include "formats/fileio.h"
#include "formats/radgram.h"

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

/* A gram whose element (i, j) is base + i + 1000*j: the diagonal is base + 1001*i. */
static uint8_t *make_gram(uint32_t k, uint32_t rank, uint64_t rows, float base, size_t *size)
{
    *size = 32 + (size_t)k * k * 4;
    uint8_t *b = calloc(1, *size);
    memcpy(b, "RADGRAM2", 8);
    put32(b + 8, k); put32(b + 12, rank); put64(b + 16, rows); put32(b + 24, 0);
    for (uint32_t i = 0; i < k; ++i)
        for (uint32_t j = 0; j < k; ++j) {
            float f = base + (float)i + 1000.0f * (float)j;
            memcpy(b + 32 + ((size_t)i * k + j) * 4, &f, 4);
        }
    return b;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

static void write_gram(const char *dir, const char *name, uint32_t k, uint64_t rows, float base)
{
    char p[4096];
    size_t n;
    uint8_t *b = make_gram(k, 0, rows, base, &n);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    write_bytes(p, b, n);
    free(b);
}

static void test_parse_valid(void **st)
{
    (void)st;
    size_t n;
    uint8_t *b = make_gram(5, 3, 77, 2.0f, &n);
    radgram_header h;
    float *d;
    char err[512];
    assert_int_equal(radgram_parse_memory(b, n, "g", &h, &d, err, sizeof err), RADGRAM_OK);
    assert_int_equal(h.k, 5);
    assert_int_equal(h.rank, 3);
    assert_int_equal(h.rows, 77);
    for (uint32_t i = 0; i < 5; ++i) assert_true(d[i] == 2.0f + 1001.0f * (float)i);
    free(d);
    free(b);
}

static void expect(const void *b, size_t n, radgram_error want, const char *msg)
{
    radgram_header h;
    float *d = (float *)1;
    char err[512];
    assert_int_equal(radgram_parse_memory(b, n, "g.bin", &h, &d, err, sizeof err), want);
    assert_null(d);
    assert_string_equal(err, msg);
}

static void test_hostile_headers(void **st)
{
    (void)st;
    size_t n;
    uint8_t *b = make_gram(2, 0, 1, 1.0f, &n);
    expect(b, 20, RADGRAM_SHORT, "g.bin: 20 bytes, under the 32-byte RADGRAM2 header");
    expect(b, 0, RADGRAM_SHORT, "g.bin: 0 bytes, under the 32-byte RADGRAM2 header");
    expect(b, n - 4, RADGRAM_SHORT, "g.bin: 44 bytes, expected 48 (32 + k*k*4 for k=2)");
    put32(b + 8, 0);
    expect(b, 32, RADGRAM_SHORT, "g.bin: header claims k=0, which describes no matrix");
    put32(b + 8, 0xFFFFFFFFu); /* 4*k*k overflows 64 bits: still stated exactly */
    expect(b, n, RADGRAM_SHORT,
           "g.bin: 48 bytes, expected 73786976260478468132 (32 + k*k*4 for k=4294967295)");
    put32(b + 8, 2);
    put64(b + 16, UINT64_MAX); /* rows near 2^64 are data, not an error */
    radgram_header h;
    float *d;
    char err[512];
    assert_int_equal(radgram_parse_memory(b, n, "g", &h, &d, err, sizeof err), RADGRAM_OK);
    assert_true(h.rows == UINT64_MAX);
    free(d);
    memcpy(b, "RADGRAM1", 8);
    expect(b, n, RADGRAM_NOT_RADGRAM2, "g.bin: magic b'RADGRAM1', expected b'RADGRAM2'");
    memcpy(b, "it's\n\x00\xff\\", 8);
    expect(b, n, RADGRAM_NOT_RADGRAM2, "g.bin: magic b\"it's\\n\\x00\\xff\\\\\", expected b'RADGRAM2'");
    free(b);
}

static void test_nonfinite(void **st)
{
    (void)st;
    size_t n;
    uint8_t *b = make_gram(3, 0, 1, 1.0f, &n);
    float nan = NAN, inf = -INFINITY;
    memcpy(b + 32 + (1 * 3 + 1) * 4, &nan, 4);
    expect(b, n, RADGRAM_NONFINITE,
           "g.bin: diagonal element 1 is nan; a non-finite second moment is a corrupt recording");
    memcpy(b + 32 + (1 * 3 + 1) * 4, &inf, 4);
    expect(b, n, RADGRAM_NONFINITE,
           "g.bin: diagonal element 1 is -inf; a non-finite second moment is a corrupt recording");
    /* Off the diagonal a NaN is not ours to judge: it is never read. */
    memcpy(b + 32 + (1 * 3 + 1) * 4, &(float){ 4.0f }, 4);
    memcpy(b + 32 + 1 * 4, &nan, 4);
    radgram_header h;
    float *d;
    char err[512];
    assert_int_equal(radgram_parse_memory(b, n, "g", &h, &d, err, sizeof err), RADGRAM_OK);
    free(d);
    free(b);
}

/* Large enough for the pread path (over RADGRAM_WHOLE_MAX). */
static void test_read_file_large(void **st)
{
    (void)st;
    char *dir = make_scratch_dir(), p[4096];
    assert_non_null(dir);
    uint32_t k = 600;
    size_t n;
    uint8_t *b = make_gram(k, 1, 12345, 0.5f, &n);
    assert_true(n > RADGRAM_WHOLE_MAX);
    snprintf(p, sizeof p, "%s/big.bin", dir);
    write_bytes(p, b, n);
    radgram_header h;
    float *d;
    char err[512];
    assert_int_equal(radgram_read(p, &h, &d, err, sizeof err), RADGRAM_OK);
    assert_int_equal(h.k, k);
    for (uint32_t i = 0; i < k; ++i) assert_true(d[i] == 0.5f + 1001.0f * (float)i);
    free(d);
    write_bytes(p, b, n - 1); /* a torn file: refused before any diagonal read */
    assert_int_equal(radgram_read(p, &h, &d, err, sizeof err), RADGRAM_SHORT);
    assert_null(d);
    unlink(p);
    assert_int_equal(radgram_read(p, &h, &d, err, sizeof err), RADGRAM_UNREADABLE);
    free(b);
    rmdir(dir);
    free(dir);
}

/* Runs the fold; returns its status and leaves its stderr in log. */
static int fold(const char *dir, const char *out, char *log, size_t loglen)
{
    g2i_options o;
    g2i_options_default(&o);
    o.calib_dir = dir;
    o.out = out;
    FILE *fp = tmpfile();
    assert_non_null(fp);
    int rc = grams2imatrix_run(&o, fp);
    rewind(fp);
    size_t n = fread(log, 1, loglen - 1, fp);
    log[n] = 0;
    fclose(fp);
    return rc;
}

static void clean_dir(const char *dir, const char *const *names)
{
    char p[4096];
    for (; *names; ++names) { snprintf(p, sizeof p, "%s/%s", dir, *names); unlink(p); }
}

static void test_fold_duplicate_layer_different_k(void **st)
{
    (void)st;
    char *dir = make_scratch_dir(), out[4096], log[4096];
    write_gram(dir, "gram.r0.blk.3.ffn_down_exps.bin", 4, 100, 1.0f);
    write_gram(dir, "gram.r1.blk.3.ffn_down_exps.bin", 8, 100, 1.0f);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    assert_int_equal(fold(dir, out, log, sizeof log), 2);
    assert_non_null(strstr(log, "REFUSED K_MISMATCH layer 3: pooled grams "));
    assert_non_null(strstr(log, "(k=4) and "));
    assert_false(path_exists(out));
    static const char *const names[] = { "gram.r0.blk.3.ffn_down_exps.bin",
                                         "gram.r1.blk.3.ffn_down_exps.bin", NULL };
    clean_dir(dir, names);
    /* The same expert twice at different k is a conflict, not a width mix. */
    write_gram(dir, "gram.r0.blk.3.ffn_down_exps.bin", 4, 100, 1.0f);
    write_gram(dir, "gram.r0.blk.3.ffn_down_exps.2.bin", 4, 50, 1.0f);
    write_gram(dir, "gram.r1.blk.3.ffn_down_exps.2.bin", 8, 50, 1.0f);
    assert_int_equal(fold(dir, out, log, sizeof log), 2);
    assert_non_null(strstr(log, "REFUSED EXPERT_CONFLICT layer 3 expert 2: "));
    assert_false(path_exists(out));
    static const char *const names2[] = { "gram.r0.blk.3.ffn_down_exps.bin",
                                          "gram.r0.blk.3.ffn_down_exps.2.bin",
                                          "gram.r1.blk.3.ffn_down_exps.2.bin", NULL };
    clean_dir(dir, names2);
    rmdir(dir);
    free(dir);
}

static void test_fold_rows_past_u64(void **st)
{
    (void)st;
    char *dir = make_scratch_dir(), out[4096], log[4096];
    write_gram(dir, "gram.r0.blk.0.ffn_down_exps.bin", 2, UINT64_MAX, 1.0f);
    write_gram(dir, "gram.r1.blk.0.ffn_down_exps.bin", 2, UINT64_MAX, 1.0f);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    assert_int_equal(fold(dir, out, log, sizeof log), 2);
    assert_non_null(strstr(log, "REFUSED CHUNK_COUNT 9007199254740991 = 36893488147419103230 rows"
                                " // 4096 does not fit"));
    assert_false(path_exists(out));
    static const char *const names[] = { "gram.r0.blk.0.ffn_down_exps.bin",
                                         "gram.r1.blk.0.ffn_down_exps.bin", NULL };
    clean_dir(dir, names);
    rmdir(dir);
    free(dir);
}

static void test_parse_int(void **st)
{
    (void)st;
    g2i_int v;
    char b[48];
    assert_int_equal(g2i_parse_int(" -4_096 ", &v), 0);
    assert_string_equal(g2i_int_str(v, b), "-4096");
    assert_int_equal(g2i_parse_int("+7", &v), 0);
    assert_true(v == 7);
    assert_int_equal(g2i_parse_int("123456789012345678901234567890", &v), 0);
    assert_string_equal(g2i_int_str(v, b), "123456789012345678901234567890");
    assert_int_equal(g2i_parse_int("4k", &v), -1);
    assert_int_equal(g2i_parse_int("_4", &v), -1);
    assert_int_equal(g2i_parse_int("4__0", &v), -1);
    assert_int_equal(g2i_parse_int("", &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_read_file_large),
        cmocka_unit_test(test_fold_duplicate_layer_different_k),
        cmocka_unit_test(test_fold_rows_past_u64),
        cmocka_unit_test(test_parse_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
