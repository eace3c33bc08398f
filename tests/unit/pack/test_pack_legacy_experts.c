/* test_pack_legacy_experts.c: GGUFs converted before April 2024 (Mixtral's
 * first files) store each routed expert as its own [K, N] tensor,
 * "blk.L.ffn_gate.E.weight", where llama.cpp now writes one [K, N, E]
 * tensor; current llama.cpp refuses them. Our writer rewrites the shipped
 * model that way (and, with ../shared, tinymoe); the pack built from it
 * (experts kept, and IQ3: without an imatrix, and on tinymoe with its
 * imatrix) must be byte-identical to the pack of the original file, and
 * verify against its source. A broken set is refused, naming the tensor: a
 * gap, a missing expert 0, a type that differs, a layer past the model's
 * blocks. */
#include "tests/lib/test_util.h"
#include "tests/lib/gguf_rewrite.h"

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "pack/pack_cli.h"

#define TINYMOE "models/tinymoe/tinymoe-f32.gguf"
#define IMATRIX "models/tinymoe/tinymoe-imatrix.dat"

enum { KEEP_ALL = -1 };

/* The first layer of f with merged expert tensors (the shipped model's first layer is dense). */
static int first_moe_layer(const gguf_file *f)
{
    int first = -1;
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        int l, n = 0;
        if (sscanf(gguf_tensor_at(f, i)->name, "blk.%d.ffn_gate_exps.weight%n", &l, &n) == 1 && n &&
            (first < 0 || l < first))
            first = l;
    }
    assert_true(first >= 0);
    return first;
}

/* src with every merged expert tensor split per expert; in the first MoE
 * layer's gate, `drop` leaves expert `drop` out and `other` stores expert
 * `other` in the other float type (F32 as F16, F16 as F32); `stray` adds
 * expert 0 of a gate in layer `stray` (each -1 for none). */
typedef struct split_opts { int drop, other, stray, first; } split_opts;

static void split_one(gguf_writer *w, const gguf_file *f, const gguf_tensor *t, int l, const char *part, void *ctx)
{
    split_opts *o = ctx;
    if (o->first < 0) o->first = first_moe_layer(f);
    const size_t slice = t->size / (size_t)t->ne[2];
    for (int e = 0; e < t->ne[2]; e++) {
        char name[96];
        const int64_t ne[2] = { t->ne[0], t->ne[1] };
        const int here = l == o->first && !strcmp(part, "gate");
        if (here && e == o->drop) continue;
        snprintf(name, sizeof name, "blk.%d.ffn_%s.%d.weight", l, part, e);
        if (here && e == o->other) {
            assert_true(t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16);
            const size_t n_el = (size_t)ne[0] * (size_t)ne[1];
            const void *x = t->data + slice * (size_t)e;
            void *out = malloc(n_el * 4);
            assert_non_null(out);
            for (size_t k = 0; k < n_el; k++) {
                if (t->type == GGML_TYPE_F32) ((uint16_t *)out)[k] = f32_to_fp16(((const float *)x)[k]);
                else ((float *)out)[k] = fp16_to_f32(((const uint16_t *)x)[k]);
            }
            const int ty = t->type == GGML_TYPE_F32 ? GGML_TYPE_F16 : GGML_TYPE_F32;
            assert_true(gguf_writer_add_tensor(w, name, ty, 2, ne, out, n_el * (ty == GGML_TYPE_F32 ? 4 : 2)) >= 0);
            free(out);
            continue;
        }
        assert_true(gguf_writer_add_tensor(w, name, t->type, 2, ne, t->data + slice * (size_t)e, slice) >= 0);
        if (o->stray >= 0 && here && e == 0) {
            snprintf(name, sizeof name, "blk.%d.ffn_gate.0.weight", o->stray);
            assert_true(gguf_writer_add_tensor(w, name, t->type, 2, ne, t->data, slice) >= 0);
        }
    }
}

static void write_split(const char *src, const char *path, int drop, int other, int stray)
{
    split_opts o = { drop, other, stray, -1 };
    assert_true(gguf_rewrite_experts(src, path, split_one, &o) > 0);
}

/* iq3pack build SRC -o OUT, experts kept (keep) or IQ3 (with imatrix when not NULL); the
 * refusal's text into err_out. */
static int build(const char *src, const char *out, int keep, const char *imatrix, char *err_out, size_t n)
{
    char *argv[] = { "build", (char *)src, "-o", (char *)out, NULL, NULL, NULL };
    int argc = 4;
    if (keep) { argv[argc++] = "--experts"; argv[argc++] = "keep"; }
    else if (imatrix) { argv[argc++] = "--imatrix"; argv[argc++] = (char *)imatrix; }
    /* the refusal goes to stderr: catch it in a file to check the name */
    char errf[4200];
    snprintf(errf, sizeof errf, "%s.err", out);
    fflush(stderr);
    const int saved = dup(2);
    assert_non_null(freopen(errf, "w", stderr));
    const int rc = run_quiet(iq3pack_cmd_build, argc, argv);
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

/* orig split per expert: kept, and IQ3 (with imatrix when given), the same packs as orig's */
static void same_packs(const char *orig, const char *imatrix)
{
    char *dir = make_scratch_dir();
    char split[4200], err[1024];
    snprintf(split, sizeof split, "%s/split.gguf", dir);
    write_split(orig, split, KEEP_ALL, KEEP_ALL, KEEP_ALL);
    for (int keep = 1; keep >= 0; keep--) {
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/a%d", dir, keep);
        snprintf(b, sizeof b, "%s/b%d", dir, keep);
        if (build(split, a, keep, imatrix, err, sizeof err)) fail_msg("%s", err);
        if (build(orig, b, keep, imatrix, err, sizeof err)) fail_msg("%s", err);
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

static void test_split_experts_same_pack(void **state)
{
    (void)state;
    same_packs(SHIPPED_MODEL, NULL);
    char orig[4096], im[4096];
    if (shared_part(orig, sizeof orig, TINYMOE) && shared_part(im, sizeof im, IMATRIX)) same_packs(orig, im);
}

static void refused(int drop, int other, int stray, const char *tensor, const char *why)
{
    char *dir = make_scratch_dir();
    char split[4200], out[4200], err[1024];
    snprintf(split, sizeof split, "%s/split.gguf", dir);
    snprintf(out, sizeof out, "%s/pack", dir);
    write_split(SHIPPED_MODEL, split, drop, other, stray);
    assert_int_not_equal(build(split, out, 1, NULL, err, sizeof err), 0);
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
    char err[512], gate[64], gate2[64];
    gguf_file *f = gguf_open(SHIPPED_MODEL, err, sizeof err);
    if (!f) fail_msg("%s", err);
    const int first = first_moe_layer(f);
    gguf_close(f);
    snprintf(gate, sizeof gate, "blk.%d.ffn_gate.", first);
    snprintf(gate2, sizeof gate2, "blk.%d.ffn_gate.2.weight", first);
    refused(1, KEEP_ALL, KEEP_ALL, gate2, "after a gap at expert 1");
    refused(0, KEEP_ALL, KEEP_ALL, gate, "without expert 0");
    refused(KEEP_ALL, 2, KEEP_ALL, gate2, "where expert 0 is f16"); /* the shipped model is F16 */
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
