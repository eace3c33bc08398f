/* test_imatrix.c: the imatrix reader on llama.cpp's own files (GGUF and .dat),
 * on grams2imatrix's output in both name styles, and on inconsistent files. */
#include "tests/lib/test_util.h"

#include <math.h>
#include <unistd.h>

#include "convert/grams2imatrix.h"
#include "formats/gguf.h"
#include "formats/imatrix.h"

#define LW "vectors/imatrix/llama.cpp-written/"

static imatrix *load_shared(const char *rel)
{
    char p[4096], err[512];
    imatrix *m = imatrix_load(shared_path(p, sizeof p, rel), err, sizeof err);
    if (!m) fail_msg("%s", err);
    return m;
}

static double sum_of(const imatrix_entry *e)
{
    double s = 0;
    for (int64_t i = 0; i < e->n_cols * e->n_expert; ++i) s += e->importance[i];
    return s;
}

/* Two readings of the same measurement agree value for value. */
static void assert_same_importance(const imatrix *a, const imatrix *b, double rel)
{
    assert_int_equal(a->n_entries, b->n_entries);
    for (int64_t i = 0; i < a->n_entries; ++i) {
        const imatrix_entry *x = &a->entries[i], *y = imatrix_find(b, x->name);
        assert_non_null(y);
        int64_t n = x->n_cols * x->n_expert;
        assert_int_equal(n, y->n_cols * y->n_expert);
        for (int64_t j = 0; j < n; ++j) {
            double d = fabs((double)x->importance[j] - y->importance[j]);
            if (d > rel * fabs((double)x->importance[j]) + 1e-30)
                fail_msg("%s[%lld]: %g vs %g", x->name, (long long)j, x->importance[j], y->importance[j]);
        }
    }
}

static void test_llama_gguf(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED(LW "tinymoe.imatrix.gguf");
    imatrix *m = load_shared(LW "tinymoe.imatrix.gguf");
    assert_int_equal(m->format, IMATRIX_FORMAT_GGUF);
    assert_int_equal(m->n_entries, 16);
    assert_int_equal(m->chunk_size, 128);
    assert_int_equal(m->chunk_count, 11);
    assert_int_equal(m->n_datasets, 1);
    assert_string_equal(m->datasets[0], "calib.txt");
    const imatrix_entry *e = imatrix_find(m, "blk.0.ffn_down_exps.weight");
    assert_non_null(e);
    assert_ptr_equal(e, imatrix_find(m, "blk.0.ffn_down_exps"));
    assert_int_equal(e->n_cols, 256);
    assert_int_equal(e->n_expert, 8);
    static const float counts[8] = { 286, 303, 370, 355, 289, 367, 331, 515 };
    for (int i = 0; i < 8; ++i) assert_true(e->counts[i] == counts[i]);
    /* llama-imatrix --show-statistics: sum of mean squared activations. */
    assert_true(fabs(sum_of(e) - 733.12) < 0.01);
    assert_true(fabs(sum_of(imatrix_find(m, "blk.0.attn_k.weight")) - 255.87) < 0.01);
    assert_true(fabs(sum_of(imatrix_find(m, "blk.1.ffn_gate_exps")) - 2057.65) < 0.01);
    assert_int_equal(imatrix_find(m, "blk.0.attn_k")->n_expert, 1);
    assert_null(imatrix_find(m, "output.weight"));
    imatrix_free(m);
}

static void test_dat_matches_gguf(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED(LW "tinymoe.imatrix.dat");
    imatrix *d = load_shared(LW "tinymoe.imatrix.dat"), *g = load_shared(LW "tinymoe.imatrix.gguf");
    assert_int_equal(d->format, IMATRIX_FORMAT_DAT);
    assert_int_equal(d->chunk_count, 11);
    assert_string_equal(d->datasets[0], "calib.txt");
    assert_int_equal(imatrix_find(d, "blk.0.ffn_down_exps")->n_cols, 2048);
    assert_same_importance(g, d, 1e-5);
    imatrix_free(d);
    imatrix_free(g);
}

static void test_legacy_dat_and_its_conversion(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("models/tinymoe/tinymoe-imatrix.dat");
    SKIP_UNLESS_SHARED(LW "tinymoe-c392e509-dat-converted.imatrix.gguf");
    imatrix *d = load_shared("models/tinymoe/tinymoe-imatrix.dat");
    imatrix *g = load_shared(LW "tinymoe-c392e509-dat-converted.imatrix.gguf");
    assert_int_equal(d->n_entries, 16);
    assert_int_equal(imatrix_find(g, "blk.1.ffn_up_exps")->n_expert, 1);
    assert_int_equal(imatrix_find(g, "blk.1.ffn_up_exps")->n_cols, 2048);
    assert_same_importance(d, g, 1e-6);
    imatrix_free(d);
    imatrix_free(g);
}

/* The seed-style vector: expert 4 has rows 0 and expert 5 no gram, so both
 * read as 1.0; expert 0 (320 rows) is its own sums over 320. */
static void test_seed_output(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("vectors/imatrix/ok_basic/out.gguf");
    imatrix *m = load_shared("vectors/imatrix/ok_basic/out.gguf");
    char p[4096], err[512];
    gguf_file *g = gguf_open(shared_path(p, sizeof p, "vectors/imatrix/ok_basic/out.gguf"), err, sizeof err);
    assert_non_null(g);
    assert_int_equal(m->n_entries, 8);
    const imatrix_entry *e = imatrix_find(m, "blk.0.ffn_down_exps.weight");
    assert_int_equal(e->n_cols, 16);
    assert_int_equal(e->n_expert, 8);
    assert_true(e->counts[0] == 320.0f);
    const float *s = (const float *)gguf_find_tensor(g, "blk.0.ffn_down_exps.in_sum2")->data;
    for (int j = 0; j < 16; ++j) assert_true(e->importance[j] == s[j] / 320.0f);
    for (int x = 4; x <= 5; ++x)
        for (int j = 0; j < 16; ++j) assert_true(e->importance[x * 16 + j] == 1.0f);
    /* Unfused names find the fused gate_up entry. */
    const imatrix_entry *gu = imatrix_find(m, "blk.0.ffn_gate_exps.weight");
    assert_non_null(gu);
    assert_string_equal(gu->name, "blk.0.ffn_gate_up_exps");
    assert_ptr_equal(gu, imatrix_find(m, "blk.0.ffn_up_exps"));
    assert_int_equal(imatrix_find(m, "blk.1.ffn_down_exps")->n_expert, 1);
    assert_int_equal(imatrix_find(m, "blk.2.ssm_inz")->n_cols, 16);
    gguf_close(g);
    imatrix_free(m);
}

/* grams2imatrix --names llama over the same recording reads back as the same
 * numbers under llama.cpp's names, gate and up included. */
static void test_llama_names_roundtrip(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("vectors/imatrix/ok_basic/calib");
    char calib[4096], out[4096], err[512];
    char *dir = make_scratch_dir();
    snprintf(out, sizeof out, "%s/llama.gguf", dir);
    g2i_options o;
    g2i_options_default(&o);
    o.calib_dir = shared_path(calib, sizeof calib, "vectors/imatrix/ok_basic/calib");
    o.out = out;
    o.names = G2I_NAMES_LLAMA;
    FILE *log = tmpfile();
    assert_int_equal(grams2imatrix_run(&o, log), 0);
    fclose(log);
    gguf_file *g = gguf_open(out, err, sizeof err);
    assert_non_null(g);
    assert_string_equal(gguf_get_str(g, "general.type"), "imatrix");
    /* ggml's rule: each offset is the running padded sum, nothing shared. */
    uint64_t next = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); ++i) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        assert_true(t->offset == next);
        next = (t->offset + t->size + 31) / 32 * 32;
        if (i) assert_true(strcmp(gguf_tensor_at(g, i - 1)->name, t->name) < 0 ||
                           strstr(t->name, ".counts"));
    }
    assert_true(gguf_data_offset(g) + next == gguf_file_size(g));
    gguf_close(g);
    imatrix *l = imatrix_load(out, err, sizeof err), *s = load_shared("vectors/imatrix/ok_basic/out.gguf");
    assert_non_null(l);
    assert_int_equal(l->n_entries, 12);
    for (int64_t i = 0; i < l->n_entries; ++i) {
        const imatrix_entry *x = &l->entries[i], *y = imatrix_find(s, x->name);
        assert_non_null(y);
        assert_int_equal(x->n_cols, y->n_cols);
        assert_int_equal(x->n_expert, y->n_expert);
        assert_memory_equal(x->importance, y->importance, (size_t)(x->n_cols * x->n_expert) * 4);
        assert_memory_equal(x->counts, y->counts, (size_t)x->n_expert * 4);
    }
    imatrix_free(l);
    imatrix_free(s);
    unlink(out);
    rmdir(dir);
    free(dir);
}

/* Builds a small GGUF in memory with the given tensors. */
static imatrix *load_built(int n, const char *const *names, const int *types,
                           const int64_t (*ne)[2], char *err, size_t errlen)
{
    gguf_writer *w = gguf_writer_new();
    float buf[64] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    for (int i = 0; i < n; ++i) {
        size_t bytes = (size_t)(ne[i][0] * ne[i][1]) * (types[i] == 0 ? 4 : 2);
        assert_true(gguf_writer_add_tensor(w, names[i], types[i], ne[i][1] > 1 ? 2 : 1, ne[i],
                                           buf, bytes) >= 0);
    }
    uint8_t *mem;
    size_t size;
    assert_int_equal(gguf_writer_to_memory(w, &mem, &size, err, errlen), 0);
    gguf_writer_free(w);
    imatrix *m = imatrix_load_memory(mem, size, "t.gguf", err, errlen);
    free(mem);
    return m;
}

static void test_inconsistent_gguf(void **st)
{
    (void)st;
    char err[512];
    static const int64_t ne[][2] = { { 4, 2 }, { 1, 2 } };
    static const int f32[] = { 0, 0 }, f16[] = { 1, 0 };
    const char *ok[] = { "a.in_sum2", "a.counts" };
    imatrix *m = load_built(2, ok, f32, ne, err, sizeof err);
    assert_non_null(m);
    assert_true(m->entries[0].importance[4] == 2.5f); /* 5 / count 2 */
    imatrix_free(m);
    const char *counts_only[] = { "b.counts" };
    static const int64_t ne1[][2] = { { 1, 2 } };
    assert_null(load_built(1, counts_only, f32, ne1, err, sizeof err));
    assert_string_equal(err, "t.gguf: b.counts has counts but no b.in_sum2");
    const char *sums_only[] = { "c.in_sum2" };
    assert_null(load_built(1, sums_only, f32, ne, err, sizeof err));
    assert_string_equal(err, "t.gguf: c.in_sum2 has sums but no c.counts");
    static const int64_t bad[][2] = { { 4, 2 }, { 1, 3 } };
    assert_null(load_built(2, ok, f32, bad, err, sizeof err));
    assert_non_null(strstr(err, "counts [1, 3] do not match sums [4, 2]"));
    assert_null(load_built(2, ok, f16, ne, err, sizeof err));
    assert_non_null(strstr(err, "f32 only"));
    const char *twice[] = { "d.in_sum2", "d.counts", "d.weight.in_sum2", "d.weight.counts" };
    static const int64_t ne4[][2] = { { 4, 2 }, { 1, 2 }, { 4, 2 }, { 1, 2 } };
    static const int f32x4[] = { 0, 0, 0, 0 };
    assert_null(load_built(4, twice, f32x4, ne4, err, sizeof err));
    assert_non_null(strstr(err, "appears twice"));
}

/* Every truncation of a real .dat is refused or read, never overrun. */
static void test_dat_truncated(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED(LW "tinymoe.imatrix.dat");
    size_t size;
    uint8_t *b = slurp_shared(LW "tinymoe.imatrix.dat", &size);
    assert_non_null(b);
    char err[512];
    int refused = 0;
    for (size_t n = 0; n < size; n += (n < 4096 ? 1 : 509)) {
        uint8_t *copy = malloc(n ? n : 1); /* exact-size copy so ASan sees any overrun */
        memcpy(copy, b, n);
        imatrix *m = imatrix_load_memory(copy, n, "t.dat", err, sizeof err);
        if (!m) refused++;
        imatrix_free(m);
        free(copy);
    }
    assert_true(refused > 100);
    int32_t huge = 0x7fffffff;
    memcpy(b, &huge, 4);
    assert_null(imatrix_load_memory(b, size, "t.dat", err, sizeof err));
    assert_non_null(strstr(err, "does not fit"));
    free(b);
}

/* A file of another kind (text, a model GGUF) is told apart from a broken
 * imatrix: one line naming the file and the two forms --imatrix reads. */
static void test_not_an_imatrix(void **st)
{
    (void)st;
    char err[512];
    static const char text[] = "hello, this is a text file and no importance matrix\n";
    assert_null(imatrix_load_memory(text, sizeof text - 1, "notes.txt", err, sizeof err));
    assert_non_null(strstr(err, "notes.txt: neither an imatrix GGUF nor a legacy imatrix.dat"));
    assert_null(strchr(err, '\n'));
    const char *model[] = { "token_embd.weight" };
    static const int64_t ne[][2] = { { 4, 2 } };
    static const int f32[] = { 0 };
    assert_null(load_built(1, model, f32, ne, err, sizeof err));
    assert_non_null(strstr(err, "t.gguf: neither an imatrix GGUF nor a legacy imatrix.dat"));
    static const uint8_t tiny[] = { 1, 0 };
    assert_null(imatrix_load_memory(tiny, sizeof tiny, "x.bin", err, sizeof err));
    assert_non_null(strstr(err, "x.bin: neither an imatrix GGUF"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_gguf),
        cmocka_unit_test(test_dat_matches_gguf),
        cmocka_unit_test(test_legacy_dat_and_its_conversion),
        cmocka_unit_test(test_seed_output),
        cmocka_unit_test(test_llama_names_roundtrip),
        cmocka_unit_test(test_inconsistent_gguf),
        cmocka_unit_test(test_dat_truncated),
        cmocka_unit_test(test_not_an_imatrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
