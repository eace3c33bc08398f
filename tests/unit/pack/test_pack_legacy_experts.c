/* test_pack_legacy_experts.c: GGUFs converted before April 2024 (Mixtral's
 * first files) store each routed expert as its own [K, N] tensor,
 * "blk.L.ffn_gate.E.weight", where llama.cpp now writes one [K, N, E]
 * tensor; current llama.cpp refuses them. Our writer rewrites tinymoe that
 * way; the pack built from it (experts kept, and IQ3 with the imatrix) must
 * be byte-identical to the pack of the original file, and verify against
 * its source. A broken set is refused, naming the tensor: a gap, a missing
 * expert 0, a type that differs, a layer past the model's blocks. */
#include "tests/lib/test_util.h"

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "pack/pack_cli.h"

#define TINYMOE "models/tinymoe/tinymoe-f32.gguf"
#define IMATRIX "models/tinymoe/tinymoe-imatrix.dat"

enum { KEEP_ALL = -1 };

/* The source with every merged expert tensor split per expert; `drop`
 * leaves expert `drop` of layer 0's gate out, `f16` stores that expert as
 * F16 instead, `stray` adds expert 0 of a gate in layer `stray` (each -1
 * for none). */
static void write_split(const char *path, int drop, int f16, int stray)
{
    char src[4096], err[512];
    shared_path(src, sizeof src, TINYMOE);
    gguf_file *f = gguf_open(src, err, sizeof err);
    assert_non_null(f);
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(f); i++) assert_int_equal(gguf_writer_copy_kv(w, f, i), 0);
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        int l, n = 0;
        char part[16];
        if (t->n_dims != 3 || sscanf(t->name, "blk.%d.ffn_%15[a-z]_exps.weight%n", &l, part, &n) != 2 || !n) {
            assert_true(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) >= 0);
            continue;
        }
        const size_t slice = t->size / (size_t)t->ne[2];
        for (int e = 0; e < t->ne[2]; e++) {
            char name[96];
            const int64_t ne[2] = { t->ne[0], t->ne[1] };
            const int here = l == 0 && !strcmp(part, "gate");
            if (here && e == drop) continue;
            snprintf(name, sizeof name, "blk.%d.ffn_%s.%d.weight", l, part, e);
            if (here && e == f16) {
                const float *x = (const float *)(t->data + slice * (size_t)e);
                uint16_t *h = malloc(slice / 2);
                assert_non_null(h);
                for (size_t k = 0; k < slice / 4; k++) h[k] = f32_to_fp16(x[k]);
                assert_true(gguf_writer_add_tensor(w, name, GGML_TYPE_F16, 2, ne, h, slice / 2) >= 0);
                free(h);
                continue;
            }
            assert_true(gguf_writer_add_tensor(w, name, t->type, 2, ne, t->data + slice * (size_t)e, slice) >= 0);
            if (stray >= 0 && here && e == 0) {
                snprintf(name, sizeof name, "blk.%d.ffn_gate.0.weight", stray);
                assert_true(gguf_writer_add_tensor(w, name, t->type, 2, ne, t->data, slice) >= 0);
            }
        }
    }
    assert_int_equal(gguf_writer_write(w, path, err, sizeof err), 0);
    gguf_writer_free(w);
    gguf_close(f);
}

static int build(const char *src, const char *out, int keep, char *err_out, size_t n)
{
    char im[4096];
    shared_path(im, sizeof im, IMATRIX);
    char *argv[] = { "build", (char *)src, "-o", (char *)out, keep ? "--experts" : "--imatrix", keep ? "keep" : im,
                     NULL };
    /* the refusal goes to stderr: catch it in a file to check the name */
    char errf[4200];
    snprintf(errf, sizeof errf, "%s.err", out);
    fflush(stderr);
    const int saved = dup(2);
    assert_non_null(freopen(errf, "w", stderr));
    const int rc = run_quiet(iq3pack_cmd_build, 6, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t len = 0;
    char *msg = slurp(errf, &len);
    snprintf(err_out, n, "%s", msg ? msg : "");
    free(msg);
    return rc;
}

static void same_file(const char *a_dir, const char *b_dir, const char *name)
{
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/%s", a_dir, name);
    snprintf(b, sizeof b, "%s/%s", b_dir, name);
    size_t na = 0, nb = 0;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

static void test_split_experts_same_pack(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED(TINYMOE);
    SKIP_UNLESS_SHARED(IMATRIX);
    char *dir = make_scratch_dir();
    char split[4200], orig[4096], err[1024];
    snprintf(split, sizeof split, "%s/split.gguf", dir);
    shared_path(orig, sizeof orig, TINYMOE);
    write_split(split, KEEP_ALL, KEEP_ALL, KEEP_ALL);
    for (int keep = 1; keep >= 0; keep--) {
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/a%d", dir, keep);
        snprintf(b, sizeof b, "%s/b%d", dir, keep);
        assert_int_equal(build(split, a, keep, err, sizeof err), 0);
        assert_int_equal(build(orig, b, keep, err, sizeof err), 0);
        same_file(a, b, "experts.bin");
        same_file(a, b, "dense.bin");
        char *argv[] = { "verify", a, "--source", split, NULL };
        assert_int_equal(run_quiet(iq3pack_cmd_verify, 4, argv), 0);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void refused(int drop, int f16, int stray, const char *tensor, const char *why)
{
    char *dir = make_scratch_dir();
    char split[4200], out[4200], err[1024];
    snprintf(split, sizeof split, "%s/split.gguf", dir);
    snprintf(out, sizeof out, "%s/pack", dir);
    write_split(split, drop, f16, stray);
    assert_int_not_equal(build(split, out, 1, err, sizeof err), 0);
    printf("%s", err);
    assert_non_null(strstr(err, tensor));
    assert_non_null(strstr(err, why));
    assert_int_equal(access(out, F_OK), -1); /* no pack, not even a partial one */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void test_broken_sets_refused(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED(TINYMOE);
    refused(1, KEEP_ALL, KEEP_ALL, "blk.0.ffn_gate.2.weight", "after a gap at expert 1");
    refused(0, KEEP_ALL, KEEP_ALL, "blk.0.ffn_gate.", "without expert 0");
    refused(KEEP_ALL, 2, KEEP_ALL, "blk.0.ffn_gate.2.weight", "where expert 0 is f32");
    /* a layer index far past the blocks: refused at once, not planned */
    refused(KEEP_ALL, KEEP_ALL, 99999999, "blk.99999999", "layer 99999999 of a model with");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_experts_same_pack),
        cmocka_unit_test(test_broken_sets_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
