/* test_gguf_inspect.c: `iq3pack info` and `iq3pack dump` on the real models
 * (the shipped one, and ../shared's where present): dump of an F32 tensor is
 * exactly its bytes; dump of an F16 tensor, and of a Q4_K one (llama.cpp's
 * tinymoe-q4_k), is exactly what the vectors-verified decoder computes;
 * refusals are clean and leave no file. */
#include "tests/lib/test_util.h"

#include <unistd.h>

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "pack/gguf_inspect.h"

#define STORIES "models/stories260K/stories260K.gguf"
#define TINYQ4K "models/tinymoe/tinymoe-q4_k.gguf"

typedef struct { char *dir; FILE *null; } fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = make_scratch_dir();
    fx->null = fopen("/dev/null", "w");
    *state = fx;
    return fx->dir && fx->null ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0) return -1;
    fclose(fx->null);
    free(fx->dir);
    free(fx);
    return 0;
}

static int run_dump(fixture *fx, const char *gguf, const char *tensor, const char *out)
{
    char *argv[] = {"dump", (char *)gguf, (char *)tensor, "-o", (char *)out};
    return gguf_inspect_dump(5, argv, fx->null, fx->null);
}

/* Picks the first tensor of the given type, so the test does not depend on names. */
static const gguf_tensor *first_of_type(const gguf_file *f, int type)
{
    for (int64_t i = 0; i < gguf_n_tensors(f); i++)
        if (gguf_tensor_at(f, i)->type == type) return gguf_tensor_at(f, i);
    return NULL;
}

static void test_dump_f32_is_exact_bytes(void **state)
{
    fixture *fx = *state;
    const char *path = SHIPPED_MODEL;
    char out[4200], err[512];
    gguf_file *f = gguf_open(path, err, sizeof err);
    assert_non_null(f);
    const gguf_tensor *t = first_of_type(f, GGML_TYPE_F32);
    assert_non_null(t);
    snprintf(out, sizeof out, "%s/f32.bin", fx->dir);
    assert_int_equal(run_dump(fx, path, t->name, out), 0);
    size_t n = 0;
    unsigned char *got = slurp(out, &n);
    assert_non_null(got);
    assert_int_equal(n, t->size);
    assert_memory_equal(got, t->data, t->size);
    free(got);
    /* A second dump to the same name is refused and leaves the first intact. */
    assert_int_not_equal(run_dump(fx, path, t->name, out), 0);
    got = slurp(out, &n);
    assert_int_equal(n, t->size);
    free(got);
    gguf_close(f);
}

/* The first tensor of this type in the file at path, dumped: the decoder's floats. */
static void dump_matches_decoder(fixture *fx, const char *path, int type, const char *name)
{
    char out[4200], err[512];
    gguf_file *f = gguf_open(path, err, sizeof err);
    assert_non_null(f);
    const gguf_tensor *t = first_of_type(f, type);
    assert_non_null(t);
    snprintf(out, sizeof out, "%s/%s.f32", fx->dir, name);
    assert_int_equal(run_dump(fx, path, t->name, out), 0);
    size_t n = 0;
    float *got = slurp(out, &n);
    assert_non_null(got);
    assert_int_equal(n, (size_t)t->n_elements * sizeof(float));
    float *want = malloc(n);
    assert_int_equal(ggml_dequantize(t->type, t->data, want, t->n_elements), 0);
    assert_memory_equal(got, want, n);
    free(want);
    free(got);
    gguf_close(f);
}

static void test_dump_matches_decoder(void **state)
{
    fixture *fx = *state;
    dump_matches_decoder(fx, SHIPPED_MODEL, GGML_TYPE_F16, "f16");
    char path[4096];
    if (shared_part(path, sizeof path, TINYQ4K)) dump_matches_decoder(fx, path, GGML_TYPE_Q4_K, "q4k");
}

static void test_refusals_leave_nothing(void **state)
{
    fixture *fx = *state;
    char *path = SHIPPED_MODEL, out[4200];
    snprintf(out, sizeof out, "%s/none.f32", fx->dir);
    assert_int_equal(run_dump(fx, path, "no.such.tensor", out), 1);
    assert_int_not_equal(access(out, F_OK), 0);
    assert_int_equal(run_dump(fx, "/nonexistent/x.gguf", "x", out), 1);
    assert_int_not_equal(access(out, F_OK), 0);
    char *argv[] = {"dump", path};
    assert_int_equal(gguf_inspect_dump(2, argv, fx->null, fx->null), 2);
}

static void test_info_every_model(void **state)
{
    fixture *fx = *state;
    const char *models[] = {SHIPPED_MODEL, STORIES, TINYQ4K, "models/tinymoe/tinymoe-iq3_xxs.gguf",
                            "models/archs/qwen3moe/qwen3moe-f16.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char path[4096];
        if (i == 0) snprintf(path, sizeof path, "%s", models[i]); /* the shipped one, from the project root */
        else if (!have_shared(models[i])) continue;
        else shared_path(path, sizeof path, models[i]);
        char *argv[] = {"info", path, "--tensors"};
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        assert_int_equal(gguf_inspect_info(3, argv, mem, fx->null), 0);
        fclose(mem);
        assert_non_null(strstr(buf, "arch:"));
        assert_non_null(strstr(buf, "tensors by type:"));
        assert_null(strstr(buf, "(no decoder)")); /* every type in these models decodes */
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_f32_is_exact_bytes),
        cmocka_unit_test(test_dump_matches_decoder),
        cmocka_unit_test(test_refusals_leave_nothing),
        cmocka_unit_test(test_info_every_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
