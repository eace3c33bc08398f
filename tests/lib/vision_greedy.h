/* vision_greedy.h: what the vision agreement tests share: the largest
 * difference relative to the reference's largest value, and the greedy
 * check of a tower and its text model against llama.cpp's fixtures (a
 * prompt with one picture, laid out and evaluated by picture_prompt.h, then
 * VG_N greedy tokens), and the pictures the diagnostic reads. Needs
 * test_util.h, gguf_weights.h and test_images.h before it. */
#ifndef STRATA_TEST_VISION_GREEDY_H
#define STRATA_TEST_VISION_GREEDY_H

#include <math.h>

#include "runtime/vision/picture_prompt.h"
#include "runtime/vision/vision.h"

/* The prompt of the greedy agreement (llama.cpp: the same text through mtmd_tokenize) */
#define VG_PROMPT "The picture " PICTURE_MARKER " shows"
#define VG_N 12

/* max |a - ref| / max |ref| */
static inline double vg_rel_err(const float *a, const float *ref, size_t n)
{
    double md = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - ref[i]));
        mr = fmax(mr, fabs((double)ref[i]));
    }
    return md / mr;
}

/* For tests/diag/diag_vision_llamacpp.sh: picture `name` (w x h RGB) as
 * DIR/NAME.rgb and DIR/NAME.png, and its line "NAME W H" on stdout. Needs
 * test_images.h. 0, or -1 when a file cannot be written. */
static inline int vg_write_picture(const char *dir, const char *name, const uint8_t *rgb, int w, int h)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.rgb", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(rgb, 3, (size_t)w * h, f) != (size_t)w * h || fclose(f)) return -1;
    size_t n = 0;
    uint8_t *png = timg_png_rgb(w, h, rgb, &n);
    snprintf(path, sizeof path, "%s/%s.png", dir, name);
    const int bad = !png || !(f = fopen(path, "wb")) || fwrite(png, 1, n, f) != n || fclose(f);
    free(png);
    if (bad) return -1;
    printf("%s %d %d\n", name, w, h);
    return 0;
}

/* The tower write_mmproj writes, with its matrices as F16 (kept fp16 and widened as read), gives the
 * bits of the same values as F32 (widened once) on an w x h picture, in less memory. */
static inline void vg_check_f16(int (*write_mmproj)(const char *, char *, size_t), const uint8_t *rgb, int w, int h)
{
    char *dir = make_scratch_dir(), mmproj[4200], a[4300], b[4300], err[4600];
    snprintf(mmproj, sizeof mmproj, "%s/mmproj.gguf", dir);
    if (write_mmproj(mmproj, err, sizeof err)) fail_msg("%s", err);
    snprintf(a, sizeof a, "%s.f16", mmproj);
    snprintf(b, sizeof b, "%s.f32", mmproj);
    if (vm_rewrite_f16(mmproj, a, b, err, sizeof err)) fail_msg("%s", err);
    vision_model *vh = vision_open(a, 2, err, sizeof err), *vf = vision_open(b, 2, err, sizeof err);
    if (!vh || !vf) fail_msg("%s", err);
    image_rgb img = { w, h, (uint8_t *)rgb };
    float *oh, *of;
    int nh, nf, xh, yh, xf, yf;
    assert_int_equal(vision_encode(vh, &img, &oh, &nh, &xh, &yh, err, sizeof err), 0);
    assert_int_equal(vision_encode(vf, &img, &of, &nf, &xf, &yf, err, sizeof err), 0);
    assert_int_equal(nh, nf);
    assert_memory_equal(oh, of, (size_t)nh * (size_t)vision_width(vh) * sizeof *oh);
    printf("%s: F16 matrices kept as fp16: %zu bytes of weights, %zu widened; the same bits\n", vision_projector(vh),
           vision_weight_bytes(vh), vision_weight_bytes(vf));
    assert_true(vision_weight_bytes(vh) * 10 < vision_weight_bytes(vf) * 6);
    free(oh);
    free(of);
    vision_close(vh);
    vision_close(vf);
    remove_scratch_dir(dir);
}

/* The picture through dir's mmproj.gguf and text_vl.gguf as mtmd feeds it:
 * the first step's logits into *first (malloc'd), VG_N greedy tokens into ids. */
static inline void vg_run(const char *dir, const image_rgb *img, float **first, int32_t *ids, int *n_vocab)
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
    picture_prompt pp;
    if (picture_prompt_make(&pp, v, tk, VG_PROMPT, false, img, 1, err, sizeof err)) fail_msg("%s", err);
    const int nv = model_hp(m)->n_vocab;
    float *lg = malloc((size_t)nv * sizeof *lg);
    assert_non_null(lg);
    if (picture_prompt_eval(&pp, 0, m, lg, err, sizeof err)) fail_msg("%s", err);
    *first = malloc((size_t)nv * sizeof **first);
    assert_non_null(*first);
    memcpy(*first, lg, (size_t)nv * sizeof *lg);
    for (int g = 0; g < VG_N; g++) {
        int32_t best = 0;
        for (int32_t t = 1; t < nv; t++)
            if (lg[t] > lg[best]) best = t;
        ids[g] = best;
        if (model_forward(m, &best, 1, lg, false, err, sizeof err)) fail_msg("%s", err);
    }
    *n_vocab = nv;
    free(lg);
    picture_prompt_free(&pp);
    vision_close(v);
    tokenizer_free(tk);
    model_free(m);
    gguf_model_free(&gm);
}

/* Picture `name` (w x h RGB) of tower `tower` against its fixtures
 * tests/fixtures/vision/TOWER.NAME.{greedy.txt,logits.f32}: the greedy
 * tokens equal, the first logits within 1e-3 of the largest; with its first
 * patch x patch block black, the logits more than 1e-2 away (the check can
 * fail). */
static inline void vg_check(const char *dir, const char *tower, const char *name, const uint8_t *rgb, int w, int h,
                            int patch)
{
    char fx[4400];
    snprintf(fx, sizeof fx, "tests/fixtures/vision/%s.%s.greedy.txt", tower, name);
    FILE *f = fopen(fx, "r");
    if (!f) fail_msg("%s: missing (make it with tests/diag/diag_vision_llamacpp.sh)", fx);
    int32_t want[VG_N], got[VG_N], got_black[VG_N];
    for (int g = 0; g < VG_N; g++) assert_int_equal(fscanf(f, "%d", &want[g]), 1);
    fclose(f);
    snprintf(fx, sizeof fx, "tests/fixtures/vision/%s.%s.logits.f32", tower, name);
    size_t nb = 0;
    float *ref = (float *)slurp(fx, &nb);
    if (!ref) fail_msg("%s: missing (make it with tests/diag/diag_vision_llamacpp.sh)", fx);
    uint8_t *px = malloc((size_t)w * h * 3);
    assert_non_null(px);
    memcpy(px, rgb, (size_t)w * h * 3);
    image_rgb img = { w, h, px };
    float *first, *first_black;
    int nv;
    vg_run(dir, &img, &first, got, &nv);
    for (int y = 0; y < patch; y++) memset(px + (size_t)y * w * 3, 0, (size_t)patch * 3);
    vg_run(dir, &img, &first_black, got_black, &nv);
    assert_int_equal(nb, (size_t)nv * sizeof(float));
    const double e = vg_rel_err(first, ref, (size_t)nv), ec = vg_rel_err(first_black, ref, (size_t)nv);
    printf("%s %s: greedy", tower, name);
    for (int g = 0; g < VG_N; g++) printf(" %d", got[g]);
    printf("; first logits %.3g of the largest from llama.cpp's (first patch black: %.3g)\n", e, ec);
    assert_memory_equal(got, want, sizeof got);
    assert_true(e < 1e-3);
    assert_true(ec > 1e-2);
    free(first);
    free(first_black);
    free(ref);
    free(px);
}

#endif
