/* test_qwen3vl_llamacpp.c: the Qwen3-VL vision tower (runtime/vision/vision.h)
 * against llama.cpp 0.7.0's mtmd on a tower our GGUF writer makes
 * (tests/lib/vision_model.h: patch 8, a 6 x 6 position table, a deepstack
 * merger): a 48 x 48 picture (the table's native grid, no resize) and a
 * 70 x 40 one (made 64 x 48 by mtmd's smart resize: Pillow's bicubic to
 * 64 x 37, centred on black; the position table resized to 8 x 6). The
 * image embeddings (merger and deepstack, every token) must agree with the
 * committed fixtures within 1e-3 of their largest magnitude; a picture one
 * patch away from the native one must not (the comparison can fail); one
 * thread gives the bits two give. Also
 * refused by name: a projector type with no row, a missing tensor.
 * Fixtures: sh tests/diag/diag_vision_llamacpp.sh tests/fixtures/vision
 * (llama.cpp's libmtmd, flash attention off, on the pixels this test
 * writes with --write DIR). */
#include "tests/lib/test_util.h"
#include "tests/lib/vision_model.h"

#include <math.h>

#include "runtime/vision/vision.h"
#include "tests/lib/gguf_weights.h"
#include "tests/lib/test_images.h"
#include "tests/lib/vision_greedy.h"

static const struct { const char *name; int w, h; uint64_t seed; int nx, ny; } PICS[] = {
    { "native", 48, 48, 11, 3, 3 },
    { "resized", 70, 40, 12, 4, 3 },
};

static uint8_t *picture(int i)
{
    uint8_t *p = malloc((size_t)PICS[i].w * PICS[i].h * 3);
    vm_picture(PICS[i].w, PICS[i].h, PICS[i].seed, p);
    return p;
}

static vision_model *open_tower(char *dir, size_t n)
{
    char *scratch = make_scratch_dir();
    char path[4200], err[4400];
    snprintf(dir, n, "%s", scratch);
    free(scratch);
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (vm_write_mmproj(path, err, sizeof err)) fail_msg("%s", err);
    vision_model *v = vision_open(path, 2, err, sizeof err);
    if (!v) fail_msg("%s", err);
    return v;
}

static void test_agreement(void **st)
{
    (void)st;
    char dir[4200], path[4400], err[4600];
    vision_model *v = open_tower(dir, sizeof dir);
    assert_string_equal(vision_projector(v), "qwen3vl_merger");
    assert_int_equal(vision_width(v), VM_WIDTH);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "tests/fixtures/vision/qwen3vl.%s.embd.f32", PICS[i].name);
        size_t nb = 0;
        float *ref = (float *)slurp(path, &nb);
        if (!ref) fail_msg("%s: missing (make it with tests/diag/diag_vision_llamacpp.sh)", path);
        image_rgb img = { PICS[i].w, PICS[i].h, picture(i) };
        float *out;
        int n_tok, nx, ny;
        if (vision_encode(v, &img, &out, &n_tok, &nx, &ny, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(nx, PICS[i].nx);
        assert_int_equal(ny, PICS[i].ny);
        assert_int_equal(n_tok, nx * ny);
        assert_int_equal(nb, (size_t)n_tok * VM_WIDTH * sizeof(float));
        const double e = vg_rel_err(out, ref, (size_t)n_tok * VM_WIDTH);
        printf("%s: %d tokens of %d, largest difference %.3g of the largest value\n", PICS[i].name, n_tok, VM_WIDTH, e);
        assert_true(e < 1e-3);
        { /* one thread gives the same bits as two */
            char one_path[4400];
            snprintf(one_path, sizeof one_path, "%s/mmproj.gguf", dir);
            vision_model *v1 = vision_open(one_path, 1, err, sizeof err);
            assert_non_null(v1);
            float *o1;
            int n1, x1, y1;
            assert_int_equal(vision_encode(v1, &img, &o1, &n1, &x1, &y1, err, sizeof err), 0);
            assert_int_equal(n1, n_tok);
            assert_memory_equal(o1, out, (size_t)n_tok * VM_WIDTH * sizeof *o1);
            free(o1);
            vision_close(v1);
        }
        if (i == 0) { /* the first patch black: far off */
            for (int y = 0; y < VM_PATCH; y++) memset(img.rgb + (size_t)y * PICS[i].w * 3, 0, VM_PATCH * 3);
            float *o2;
            assert_int_equal(vision_encode(v, &img, &o2, &n_tok, &nx, &ny, err, sizeof err), 0);
            const double e2 = vg_rel_err(o2, ref, (size_t)n_tok * VM_WIDTH);
            printf("control (one patch black): %.3g\n", e2);
            assert_true(e2 > 1e-2);
            free(o2);
        }
        free(out);
        free(img.rgb);
        free(ref);
    }
    vision_close(v);
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    unlink(path);
    rmdir(dir);
}


/* F16 matrices, as real towers ship them: kept as fp16, the same bits (the larger picture). */
static void test_f16(void **st)
{
    (void)st;
    uint8_t *p = picture(1);
    vg_check_f16(vm_write_mmproj, p, PICS[1].w, PICS[1].h);
    free(p);
}

/* Greedy text for a prompt with a picture, at the native size and resized:
 * token for token llama.cpp's (libmtmd's tokenize and eval, as
 * llama-mtmd-cli runs them), and the first step's logits within 1e-3 of the
 * largest; with the picture's first patch black the logits are far off. */
static void test_greedy(void **st)
{
    (void)st;
    char *dir = make_scratch_dir(), path[4400], err[4600];
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (vm_write_mmproj(path, err, sizeof err)) fail_msg("%s", err);
    snprintf(path, sizeof path, "%s/text_vl.gguf", dir);
    if (vm_write_text_vl(path, SHIPPED_MODEL, err, sizeof err)) fail_msg("%s", err);
    for (int i = 0; i < 2; i++) {
        uint8_t *p = picture(i);
        vg_check(dir, "qwen3vl", PICS[i].name, p, PICS[i].w, PICS[i].h, VM_PATCH);
        free(p);
    }
    unlink(path);
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

static void test_refusals(void **st)
{
    (void)st;
    char dir[4200], path[4400], err[4600];
    vision_close(open_tower(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    assert_null(vision_open(SHIPPED_MODEL, 1, err, sizeof err));
    assert_non_null(strstr(err, "vision projector 'none' is not supported"));
    /* the tower without one tensor */
    size_t n = 0;
    unsigned char *d = slurp(path, &n);
    assert_non_null(d);
    gguf_file *g = gguf_open_memory(d, n, "mm", err, sizeof err);
    assert_non_null(g);
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(g); i++) assert_int_equal(gguf_writer_copy_kv(w, g, i), 0);
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (!strcmp(t->name, "v.blk.2.ffn_down.weight")) continue;
        assert_true(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) >= 0);
    }
    char cut[4400];
    snprintf(cut, sizeof cut, "%s/cut.gguf", dir);
    assert_int_equal(gguf_writer_write(w, cut, err, sizeof err), 0);
    gguf_writer_free(w);
    gguf_close(g);
    free(d);
    assert_null(vision_open(cut, 1, err, sizeof err));
    assert_non_null(strstr(err, "tensor v.blk.2.ffn_down.weight is missing"));
    unlink(cut);
    /* the text model without its M-RoPE sections: refused by name (its rotated pairs cannot be placed) */
    char tv[4400];
    snprintf(tv, sizeof tv, "%s/text_vl.gguf", dir);
    assert_int_equal(vm_write_text_vl(tv, SHIPPED_MODEL, err, sizeof err), 0);
    d = slurp(tv, &n);
    assert_non_null(d);
    g = gguf_open_memory(d, n, "tv", err, sizeof err);
    assert_non_null(g);
    w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(g); i++)
        if (strcmp(gguf_kv_key(g, i), "qwen3vlmoe.rope.dimension_sections"))
            assert_int_equal(gguf_writer_copy_kv(w, g, i), 0);
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        assert_true(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) >= 0);
    }
    assert_int_equal(gguf_writer_write(w, cut, err, sizeof err), 0);
    gguf_writer_free(w);
    gguf_close(g);
    free(d);
    gguf_model gm;
    assert_int_not_equal(gguf_model_load(&gm, cut, 0, err, sizeof err), 0);
    assert_non_null(strstr(err, "hyperparameter qwen3vlmoe.rope.dimension_sections (4 counts) is missing"));
    unlink(cut);
    unlink(tv);
    unlink(path);
    rmdir(dir);
}

/* --write DIR: the tower, its text models and the pictures (raw RGB and
 * PNG) for tests/diag/diag_vision_llamacpp.sh; one line "NAME W H" per
 * picture, then "prompt TEXT" and "n N" for the greedy run. */
static int write_all(const char *dir)
{
    char path[4200], err[4400];
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (vm_write_mmproj(path, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    snprintf(path, sizeof path, "%s/text.gguf", dir);
    if (vm_write_text(path, SHIPPED_MODEL, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    snprintf(path, sizeof path, "%s/text_vl.gguf", dir);
    if (vm_write_text_vl(path, SHIPPED_MODEL, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    for (int i = 0; i < 2; i++) {
        uint8_t *p = picture(i);
        const int bad = vg_write_picture(dir, PICS[i].name, p, PICS[i].w, PICS[i].h);
        free(p);
        if (bad) return 1;
    }
    printf("prompt %s\nn %d\n", VG_PROMPT, VG_N);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agreement),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
