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

#include "runtime/vision/picture_prompt.h"
#include "runtime/vision/vision.h"
#include "tests/lib/gguf_weights.h"
#include "tests/lib/test_images.h"

#define GREEDY_PROMPT "The picture " PICTURE_MARKER " shows"
#define GREEDY_N 12

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

static double rel_err(const float *a, const float *ref, size_t n)
{
    double md = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - ref[i]));
        mr = fmax(mr, fabs((double)ref[i]));
    }
    return md / mr;
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
        const double e = rel_err(out, ref, (size_t)n * VM_WIDTH);
        printf("%s: %d rows of %d, largest difference %.3g of the largest value\n", PICS[i].name, n, VM_WIDTH, e);
        assert_true(e < 1e-3);
        assert_int_equal(vision_encode(v1, &img, &o1, &n1, &x1, &y1, err, sizeof err), 0);
        assert_memory_equal(o1, out, (size_t)n * VM_WIDTH * sizeof *o1);
        free(o1);
        for (int y = 0; y < VM4_PATCH; y++) memset(img.rgb + (size_t)y * PICS[i].w * 3, 0, VM4_PATCH * 3);
        assert_int_equal(vision_encode(v, &img, &o1, &n1, &x1, &y1, err, sizeof err), 0);
        const double ec = rel_err(o1, ref, (size_t)n * VM_WIDTH);
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


/* Picture i through the tower and the llama4 text model as mtmd feeds it:
 * the first step's logits into *first, GREEDY_N greedy tokens into ids. */
static void greedy_run(const char *dir, int i, bool black, float **first, int32_t *ids, int *n_vocab)
{
    char path[4400], err[4600];
    snprintf(path, sizeof path, "%s/text_vl.gguf", dir);
    gguf_model gm;
    if (gguf_model_load(&gm, path, 0, err, sizeof err)) fail_msg("%s", err);
    model_options o = model_default_options();
    o.n_threads = 2;
    o.n_ctx = 256;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    tokenizer *tk = tokenizer_load(gm.f, err, sizeof err);
    if (!tk) fail_msg("%s", err);
    snprintf(path, sizeof path, "%s/mmproj.gguf", dir);
    vision_model *v = vision_open(path, 2, err, sizeof err);
    if (!v) fail_msg("%s", err);
    image_rgb img = { PICS[i].w, PICS[i].h, picture(i) };
    if (black)
        for (int y = 0; y < VM4_PATCH; y++) memset(img.rgb + (size_t)y * PICS[i].w * 3, 0, VM4_PATCH * 3);
    picture_prompt pp;
    if (picture_prompt_make(&pp, v, tk, GREEDY_PROMPT, false, &img, 1, err, sizeof err)) fail_msg("%s", err);
    const int nv = model_hp(m)->n_vocab;
    float *lg = malloc((size_t)nv * sizeof *lg);
    assert_non_null(lg);
    if (picture_prompt_eval(&pp, 0, m, lg, err, sizeof err)) fail_msg("%s", err);
    *first = malloc((size_t)nv * sizeof **first);
    memcpy(*first, lg, (size_t)nv * sizeof *lg);
    for (int g = 0; g < GREEDY_N; g++) {
        int32_t best = 0;
        for (int32_t t = 1; t < nv; t++)
            if (lg[t] > lg[best]) best = t;
        ids[g] = best;
        if (model_forward(m, &best, 1, lg, false, err, sizeof err)) fail_msg("%s", err);
    }
    *n_vocab = nv;
    free(lg);
    picture_prompt_free(&pp);
    free(img.rgb);
    vision_close(v);
    tokenizer_free(tk);
    model_free(m);
    gguf_model_free(&gm);
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
        char fx[4400];
        snprintf(fx, sizeof fx, "tests/fixtures/vision/llama4.%s.greedy.txt", PICS[i].name);
        FILE *f = fopen(fx, "r");
        if (!f) fail_msg("%s: missing (make it with tests/diag/diag_vision_llamacpp.sh)", fx);
        int32_t want[GREEDY_N];
        for (int g = 0; g < GREEDY_N; g++) assert_int_equal(fscanf(f, "%d", &want[g]), 1);
        fclose(f);
        snprintf(fx, sizeof fx, "tests/fixtures/vision/llama4.%s.logits.f32", PICS[i].name);
        size_t nb = 0;
        float *ref = (float *)slurp(fx, &nb);
        if (!ref) fail_msg("%s: missing (make it with tests/diag/diag_vision_llamacpp.sh)", fx);
        float *first, *first_black;
        int32_t got[GREEDY_N], got_black[GREEDY_N];
        int nv;
        greedy_run(dir, i, false, &first, got, &nv);
        greedy_run(dir, i, true, &first_black, got_black, &nv);
        assert_int_equal(nb, (size_t)nv * sizeof(float));
        const double e = rel_err(first, ref, (size_t)nv), ec = rel_err(first_black, ref, (size_t)nv);
        printf("%s: greedy", PICS[i].name);
        for (int g = 0; g < GREEDY_N; g++) printf(" %d", got[g]);
        printf("; first logits %.3g of the largest from llama.cpp's (first patch black: %.3g)\n", e, ec);
        assert_memory_equal(got, want, sizeof got);
        assert_true(e < 1e-3);
        assert_true(ec > 1e-2);
        free(first);
        free(first_black);
        free(ref);
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
        snprintf(path, sizeof path, "%s/%s.rgb", dir, PICS[i].name);
        uint8_t *p = picture(i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(p, 3, (size_t)PICS[i].w * PICS[i].h, f) != (size_t)PICS[i].w * PICS[i].h) return 1;
        fclose(f);
        size_t n = 0;
        uint8_t *png = timg_png_rgb(PICS[i].w, PICS[i].h, p, &n);
        snprintf(path, sizeof path, "%s/%s.png", dir, PICS[i].name);
        if (!png || !(f = fopen(path, "wb")) || fwrite(png, 1, n, f) != n || fclose(f)) return 1;
        free(png);
        free(p);
        printf("%s %d %d\n", PICS[i].name, PICS[i].w, PICS[i].h);
    }
    printf("prompt %s\nn %d\n", GREEDY_PROMPT, GREEDY_N);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agreement),
        cmocka_unit_test(test_greedy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
