/* test_llama4_llamacpp.c: Llama 4's vision tower (runtime/vision/vision.h,
 * vision_llama4.c) against llama.cpp 0.7.0's mtmd on a tower our GGUF
 * writer makes (tests/lib/vision_model.h: 16 x 16 tiles of 4 x 4 patches,
 * pixel shuffle by 2, 4 rows a slice): a 16 x 16 picture (one slice, the
 * tile itself) and a 40 x 24 one (the best grid is 3 x 2 tiles, the picture
 * fitted to 48 x 29 on black, then the overview: 7 slices, 28 rows). The
 * image embeddings of every slice must agree with the committed fixtures
 * within 1e-3 of their largest magnitude; a picture one patch away must not;
 * one thread gives the bits two give. Then greedy text on a llama4 text
 * model, token for token llama.cpp's.
 * Fixtures: sh tests/diag/diag_vision_llamacpp.sh tests/fixtures/vision
 * (llama.cpp's libmtmd, flash attention off, on the pixels this test writes
 * with --write DIR). */
#include "tests/lib/test_util.h"
#include "tests/lib/vision_model.h"

#include <math.h>

#include "runtime/vision/vision.h"
#include "tests/lib/gguf_weights.h"
#include "tests/lib/test_images.h"
#include "tests/lib/vision_greedy.h"


static const struct { const char *name; int w, h; uint64_t seed; int rows; } PICS[] = {
    { "native", 16, 16, 21, 4 },
    { "tiled", 40, 24, 22, 28 },
};

static uint8_t *picture(int i)
{
    uint8_t *p = malloc((size_t)PICS[i].w * PICS[i].h * 3);
    vm_picture(PICS[i].w, PICS[i].h, PICS[i].seed, p);
    return p;
}

static void test_agreement(void **st)
{
    (void)st;
    char *dir = make_scratch_dir(), path[4200], err[4400];
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (vm_write_mmproj_llama4(path, err, sizeof err)) fail_msg("%s", err);
    vision_model *v = vision_open(path, 2, err, sizeof err), *v1 = vision_open(path, 1, err, sizeof err);
    if (!v || !v1) fail_msg("%s", err);
    assert_string_equal(vision_projector(v), "llama4");
    assert_int_equal(vision_width(v), VM_WIDTH);
    for (int i = 0; i < 2; i++) {
        char fx[4200];
        snprintf(fx, sizeof fx, "tests/fixtures/vision/llama4.%s.embd.f32", PICS[i].name);
        size_t nb = 0;
        float *ref = (float *)slurp(fx, &nb);
        if (!ref) fail_msg("%s: missing (make it with tests/diag/diag_vision_llamacpp.sh)", fx);
        image_rgb img = { PICS[i].w, PICS[i].h, picture(i) };
        float *out, *o1;
        int n, nx, ny, n1, x1, y1;
        if (vision_encode(v, &img, &out, &n, &nx, &ny, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(n, PICS[i].rows);
        assert_int_equal(nx * ny, n);
        assert_int_equal(nb, (size_t)n * VM_WIDTH * sizeof(float));
        const double e = vg_rel_err(out, ref, (size_t)n * VM_WIDTH);
        printf("%s: %d rows of %d, largest difference %.3g of the largest value\n", PICS[i].name, n, VM_WIDTH, e);
        assert_true(e < 1e-3);
        assert_int_equal(vision_encode(v1, &img, &o1, &n1, &x1, &y1, err, sizeof err), 0);
        assert_memory_equal(o1, out, (size_t)n * VM_WIDTH * sizeof *o1);
        free(o1);
        for (int y = 0; y < VM4_PATCH; y++) memset(img.rgb + (size_t)y * PICS[i].w * 3, 0, VM4_PATCH * 3);
        assert_int_equal(vision_encode(v, &img, &o1, &n1, &x1, &y1, err, sizeof err), 0);
        const double ec = vg_rel_err(o1, ref, (size_t)n * VM_WIDTH);
        printf("control (one patch black): %.3g\n", ec);
        assert_true(ec > 1e-2);
        free(o1);
        free(out);
        free(img.rgb);
        free(ref);
    }
    vision_close(v);
    vision_close(v1);
    unlink(path);
    rmdir(dir);
    free(dir);
}


/* F16 matrices, as real towers ship them: kept as fp16, the same bits (the larger picture). */
static void test_f16(void **st)
{
    (void)st;
    uint8_t *p = picture(1);
    vg_check_f16(vm_write_mmproj_llama4, p, PICS[1].w, PICS[1].h);
    free(p);
}

/* Greedy text for a prompt with a picture (one slice, and seven): token for
 * token llama.cpp's (libmtmd's tokenize and eval, as llama-mtmd-cli runs
 * them) on a llama4 text model, the first step's logits within 1e-3 of the
 * largest; with the first patch black the logits are far off. */
static void test_greedy(void **st)
{
    (void)st;
    char *dir = make_scratch_dir(), path[4400], err[4600];
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (vm_write_mmproj_llama4(path, err, sizeof err)) fail_msg("%s", err);
    snprintf(path, sizeof path, "%s/text_vl.gguf", dir);
    if (vm_write_text_llama4(path, SHIPPED_MODEL, err, sizeof err)) fail_msg("%s", err);
    for (int i = 0; i < 2; i++) {
        uint8_t *p = picture(i);
        vg_check(dir, "llama4", PICS[i].name, p, PICS[i].w, PICS[i].h, VM4_PATCH);
        free(p);
    }
    unlink(path);
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* --write DIR: the tower, the text models beside it (a llama for the
 * embeddings, text_vl.gguf a llama4 for the greedy run) and the pictures
 * (raw RGB and PNG) for tests/diag/diag_vision_llamacpp.sh; one line
 * "NAME W H" per picture, then "prompt TEXT" and "n N". */
static int write_all(const char *dir)
{
    char path[4200], err[4400];
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    if (vm_write_mmproj_llama4(path, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    snprintf(path, sizeof path, "%s/text.gguf", dir);
    if (vm_write_text(path, SHIPPED_MODEL, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    snprintf(path, sizeof path, "%s/text_vl.gguf", dir);
    if (vm_write_text_llama4(path, SHIPPED_MODEL, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
