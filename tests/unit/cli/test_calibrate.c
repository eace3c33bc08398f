/* test_calibrate.c: `strata calibrate` (cli_calibrate.c, runtime/calib/grams.h).
 *  - The gram recorder against a plain sum of outer products (random rows
 *    and choices): every element, the row counts, layers not recorded.
 *  - The shipped model (its pack with the F16 experts kept) on the first
 *    24000 bytes of its calibration split, against llama.cpp's llama-imatrix
 *    on the same text (tests/fixtures/tiny-moe/calib-head.imatrix.gguf, made
 *    by `head -c 24000 models/tiny-moe/calib.txt > HEAD && sh
 *    tools/train/imatrix_llamacpp.sh models/tiny-moe/tiny-moe.gguf HEAD
 *    tests/fixtures/tiny-moe/calib-head.imatrix.gguf`): each expert's gram
 *    diagonal is llama-imatrix's in_sum2 of ffn_up_exps and its rows are the
 *    expert's count (both within what llama.cpp's F16 activations move: a
 *    row or two routed the other way at a near tie, 2e-3 of the largest sum),
 *    and so is each expert's down-input gram's against ffn_down_exps';
 *    the pooled gram's diagonal is the router input's in_sum2 over every
 *    token; grams2imatrix folds the folder; --layers records one layer;
 *    an existing output is refused, and nothing is left beside it. */
#include "tests/lib/test_util.h"

#include "convert/grams2imatrix.h"
#include "formats/fileio.h"
#include "formats/gguf.h"
#include "formats/radgram.h"
#include "runtime/calib/grams.h"
#include "runtime/cli/cli.h"
#include "tests/lib/llamacpp_fixture.h"

#include <math.h>

#define HEAD_BYTES 24000
#define FIXTURE "tests/fixtures/tiny-moe/calib-head.imatrix.gguf"

static uint64_t rng = 20261204;
static double unit(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0 - 0.5;
}

static void test_recorder_sums(void **st)
{
    (void)st;
    enum { L = 3, E = 5, K = 2, D = 7, B = 9 };
    const unsigned char record[L] = { 1, 0, 1 };
    char err[256];
    gram_set *g = gram_set_new(L, record, E, K, D, 5, err, sizeof err);
    assert_non_null(g);
    /* down inputs (5 wide): expert 3 of layer 2 over two calls, layer 1 not recorded */
    double dw[5][5] = { { 0 } };
    for (int pass = 0; pass < 2; pass++) {
        float h[4 * 5];
        for (int i = 0; i < 20; i++) h[i] = (float)unit();
        assert_int_equal(gram_set_add_down(g, 2, 3, 4, h), 0);
        assert_int_equal(gram_set_add_down(g, 1, 3, 4, h), 0);
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 5; j++) dw[i][j] += (double)h[r * 5 + i] * h[r * 5 + j];
    }
    assert_int_equal(gram_set_down_rows(g, 2, 3), 8);
    assert_int_equal(gram_set_down_rows(g, 2, 0), 0);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) assert_true(fabs(gram_set_down_at(g, 2, 3, i, j) - dw[i][j]) < 1e-12 * (1 + fabs(dw[i][j])));
    static double want[L][E + 1][D][D];
    static uint64_t rows[L][E + 1];
    memset(want, 0, sizeof want);
    memset(rows, 0, sizeof rows);
    for (int pass = 0; pass < 3; pass++)
        for (int l = 0; l < L; l++) {
            float x[B * D];
            int sel[B * K];
            for (int i = 0; i < B * D; i++) x[i] = (float)unit();
            for (int b = 0; b < B; b++) {
                sel[b * K] = (int)((unit() + 0.5) * E) % E;
                sel[b * K + 1] = (sel[b * K] + 1 + (int)((unit() + 0.5) * (E - 1)) % (E - 1)) % E;
            }
            assert_int_equal(gram_set_add(g, l, B, x, sel), 0);
            if (!record[l]) continue;
            for (int b = 0; b < B; b++)
                for (int e = -1; e < E; e++) {
                    if (e >= 0 && sel[b * K] != e && sel[b * K + 1] != e) continue;
                    rows[l][e + 1]++;
                    for (int i = 0; i < D; i++)
                        for (int j = 0; j < D; j++) want[l][e + 1][i][j] += (double)x[b * D + i] * x[b * D + j];
                }
        }
    for (int l = 0; l < L; l++)
        for (int e = -1; e < E; e++) {
            if (!record[l]) continue;
            assert_int_equal(gram_set_rows(g, l, e), rows[l][e + 1]);
            for (int i = 0; i < D; i++)
                for (int j = 0; j < D; j++) {
                    const double w = want[l][e + 1][i][j], got = gram_set_at(g, l, e, i, j);
                    if (fabs(got - w) > 1e-12 * (1.0 + fabs(w))) fail_msg("layer %d expert %d (%d,%d): %g, want %g", l, e, i, j, got, w);
                }
        }
    /* the files: the mirror of the upper triangle, rounded to f32 */
    char *dir = make_scratch_dir();
    assert_non_null(dir);
    assert_int_equal(gram_set_write(g, dir, 3, err, sizeof err), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/gram.r3.blk.2.ffn_down_exps.1.bin", dir);
    radgram_header h;
    float *diag = NULL;
    assert_int_equal(radgram_read(path, &h, &diag, err, sizeof err), RADGRAM_OK);
    assert_int_equal(h.k, D);
    assert_int_equal(h.rank, 3);
    assert_int_equal(h.rows, rows[2][2]);
    for (int i = 0; i < D; i++) assert_true(diag[i] == (float)want[2][2][i][i]);
    free(diag);
    snprintf(path, sizeof path, "%s/gram.r3.blk.1.ffn_down_exps.bin", dir);
    assert_false(path_exists(path)); /* layer 1 was not recorded */
    snprintf(path, sizeof path, "%s/gram.r3.blk.2.ffn_down_input.3.bin", dir);
    assert_int_equal(radgram_read(path, &h, &diag, err, sizeof err), RADGRAM_OK);
    assert_int_equal(h.k, 5);
    assert_int_equal(h.rows, 8);
    for (int i = 0; i < 5; i++) assert_true(diag[i] == (float)dw[i][i]);
    free(diag);
    snprintf(path, sizeof path, "%s/gram.r3.blk.2.ffn_down_input.0.bin", dir);
    assert_false(path_exists(path)); /* no rows */
    remove_scratch_dir(dir);
    gram_set_free(g);
}

/* f32 tensor NAME of the reference imatrix */
static const float *ref_tensor(const gguf_file *f, const char *name, int64_t n)
{
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) fail_msg("%s: no tensor %s", FIXTURE, name);
    assert_int_equal(t->n_elements, n);
    return (const float *)t->data;
}

/* A gram file's diagonal against a reference row of d sums: *top its
 * largest |sum|, *worst the largest difference; returns the file's rows. */
static uint64_t diag_against(const char *path, const float *ref, int d, double *top, double *worst)
{
    radgram_header h;
    float *diag = NULL;
    char err[512];
    assert_int_equal(radgram_read(path, &h, &diag, err, sizeof err), RADGRAM_OK);
    assert_int_equal(h.k, d);
    *top = *worst = 0;
    for (int i = 0; i < d; i++) {
        *top = fmax(*top, fabs(ref[i]));
        *worst = fmax(*worst, fabs(diag[i] - ref[i]));
    }
    free(diag);
    return h.rows;
}

static int calibrate(const char *pack, const char *text, const char *out, const char *layers)
{
    char *argv[] = { "calibrate", (char *)pack, "-f", (char *)text, "-o", (char *)out, "-c", "512", "-t", "2",
                     layers ? "--layers" : NULL, (char *)layers, NULL };
    return run_quiet(cmd_calibrate, layers ? 12 : 10, argv);
}

static void test_against_llama_imatrix(void **st)
{
    (void)st;
    char *dir = make_scratch_dir();
    assert_non_null(dir);
    char pack[4200], text[4200], grams[4200], one[4200], path[4400], err[512];
    snprintf(pack, sizeof pack, "%s/pack", dir);
    snprintf(text, sizeof text, "%s/calib-head.txt", dir);
    snprintf(grams, sizeof grams, "%s/grams", dir);
    snprintf(one, sizeof one, "%s/layer2", dir);
    build_pack(SHIPPED_MODEL, pack); /* --experts keep: the F16 experts llama.cpp runs */
    unsigned char *all = NULL;
    size_t n = 0;
    assert_int_equal(read_file("models/tiny-moe/calib.txt", &all, &n, err, sizeof err), 0);
    assert_true(n > HEAD_BYTES);
    FILE *fp = fopen(text, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(all, 1, HEAD_BYTES, fp), HEAD_BYTES);
    fclose(fp);
    free(all);
    assert_int_equal(calibrate(pack, text, grams, NULL), 0);

    gguf_file *ref = gguf_open(FIXTURE, err, sizeof err);
    if (!ref) fail_msg("%s", err);
    uint32_t chunks = 0;
    assert_int_equal(gguf_get_u32(ref, "imatrix.chunk_count", &chunks), 0);
    enum { D = 256, E = 8 };
    for (int l = 1; l <= 3; l++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight.in_sum2", l);
        const float *sum2 = ref_tensor(ref, name, (int64_t)E * D);
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight.counts", l);
        const float *counts = ref_tensor(ref, name, E);
        double top = 0, worst = 0;
        uint64_t total = 0;
        int moved = 0;
        for (int e = 0; e < E; e++) {
            double et, ew;
            snprintf(path, sizeof path, "%s/gram.r0.blk.%d.ffn_down_exps.%d.bin", grams, l, e);
            const uint64_t rows = diag_against(path, sum2 + e * D, D, &et, &ew);
            total += rows;
            const double dc = fabs((double)rows - counts[e]);
            if (dc > 2) fail_msg("layer %d expert %d: %llu rows, llama-imatrix %g", l, e, (unsigned long long)rows, counts[e]);
            moved += dc > 0;
            top = fmax(top, et);
            worst = fmax(worst, ew);
        }
        /* every token goes to two experts, in both */
        assert_int_equal(total, (uint64_t)chunks * 512 * 2);
        /* the down inputs: llama-imatrix's in_sum2 of ffn_down_exps */
        snprintf(name, sizeof name, "blk.%d.ffn_down_exps.weight.in_sum2", l);
        const float *dsum2 = ref_tensor(ref, name, (int64_t)E * D);
        double dtop = 0, dworst = 0;
        int close = 0;
        for (int e = 0; e < E; e++) {
            double etop, eworst;
            snprintf(path, sizeof path, "%s/gram.r0.blk.%d.ffn_down_input.%d.bin", grams, l, e);
            assert_true(fabs((double)diag_against(path, dsum2 + e * D, D, &etop, &eworst) - counts[e]) <= 2);
            dtop = fmax(dtop, etop);
            dworst = fmax(dworst, eworst);
            close += eworst < 3e-4 * etop;
        }
        /* a row routed the other way weighs more here (the GLU's outputs are heavy-tailed): the
         * experts whose rows agree agree to 3e-4 (llama.cpp rounds the activations of its F16 products
         * to F16); none is off by more than 5e-3 of the largest sum */
        printf("layer %d: down inputs' diagonals against llama-imatrix: max |diff| / max = %.2g; %d of %d experts "
               "within 3e-4 of their own\n", l, dworst / dtop, close, E);
        assert_true(dworst / dtop < 5e-3);
        assert_true(close >= E / 2);
        printf("layer %d: expert grams' diagonals against llama-imatrix: max |diff| / max = %.2g; %d of %d experts' "
               "counts off by a row or two\n", l, worst / top, moved, E);
        assert_true(worst / top < 2e-3);
        /* the pooled gram: every token once, the router's input */
        snprintf(path, sizeof path, "%s/gram.r0.blk.%d.ffn_down_exps.bin", grams, l);
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight.in_sum2", l);
        assert_int_equal(diag_against(path, ref_tensor(ref, name, D), D, &top, &worst), (uint64_t)chunks * 512);
        assert_true(worst / top < 1e-4);
    }
    gguf_close(ref);

    /* grams2imatrix folds the recording */
    g2i_options o;
    g2i_options_default(&o);
    o.calib_dir = grams;
    snprintf(path, sizeof path, "%s/imatrix.gguf", dir);
    o.out = path;
    FILE *log = fopen("/dev/null", "w");
    assert_int_equal(grams2imatrix_run(&o, log), 0);
    fclose(log);
    assert_true(path_exists(path));

    /* one layer only; an existing output refused, nothing left beside it */
    assert_int_equal(calibrate(pack, text, one, "2-2"), 0);
    snprintf(path, sizeof path, "%s/gram.r0.blk.2.ffn_down_exps.bin", one);
    assert_true(path_exists(path));
    snprintf(path, sizeof path, "%s/gram.r0.blk.1.ffn_down_exps.bin", one);
    assert_false(path_exists(path));
    assert_int_equal(calibrate(pack, text, grams, NULL), 1);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c partial", dir);
    FILE *ls = popen(cmd, "r");
    assert_non_null(ls);
    int partials = -1;
    assert_int_equal(fscanf(ls, "%d", &partials), 1);
    pclose(ls);
    assert_int_equal(partials, 0);
    remove_scratch_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorder_sums),
        cmocka_unit_test(test_against_llama_imatrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
