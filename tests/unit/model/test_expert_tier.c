/* test_expert_tier.c: the RAM tier (runtime/model/expert_tier.h) on the
 * shipped model rewritten with its routed experts in the quantized forms a
 * pack keeps them in: gate Q8_0 (rounded from the model's values: S8 with
 * widened scales), up Q4_K and down Q6_K (random blocks with sane fp16
 * factors: S-forms with offsets and K-quant factors). From the pack built
 * with --experts keep, opened whole and opened with lazy experts:
 *  - every expert the tier reads (two slots: most are misses, evicted and
 *    read again) has the eager load's form, shape and row bytes, the same
 *    K-quant factoring, and each row's integer dot against a rounded
 *    activation is the eager weight's bit for bit;
 *  - a model over the tier gives the eager model's logits bit for bit for a
 *    prompt and three decode steps;
 *  - the tier counted accesses, misses and bytes read;
 *  - a budget below one slot is refused with the figure it lacks. */
#include "tests/lib/test_util.h"
#include "tests/lib/gguf_rewrite.h"

#include "formats/fp16.h"

#include <math.h>
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "pack/pack_cli.h"
#include "runtime/kernels/kernels.h"
#include "runtime/model/expert_tier.h"
#include "runtime/model/loader.h"

static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Q8_0 of n values (n % 32 == 0): d = amax / 127 in fp16, codes rounded. */
static void to_q8_0(const float *x, int64_t n, uint8_t *out)
{
    for (int64_t b = 0; b < n / 32; b++, out += 34) {
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fabsf(x[b * 32 + i]) > amax ? fabsf(x[b * 32 + i]) : amax;
        const uint16_t h = f32_to_fp16(amax / 127.0f);
        const float d = fp16_to_f32(h);
        memcpy(out, &h, 2);
        for (int i = 0; i < 32; i++) out[2 + i] = (uint8_t)(int8_t)(d > 0 ? lrintf(x[b * 32 + i] / d) : 0);
    }
}

/* n / 256 random Q4_K (type 12: d, dmin, 12 scale bytes, 128 nibble bytes)
 * or Q6_K (ql 128, qh 64, int8 scales 16, d) blocks with small factors. */
static void random_k(int type, int64_t n, uint8_t *out, uint64_t *s)
{
    const size_t bb = type == GGML_TYPE_Q4_K ? 144 : 210;
    for (int64_t b = 0; b < n / 256; b++, out += bb) {
        for (size_t i = 0; i < bb; i++) out[i] = (uint8_t)rnd(s);
        const uint16_t d = f32_to_fp16(0.0005f + 0.0005f * (float)(rnd(s) % 8)),
                       dm = f32_to_fp16(0.0002f * (float)(1 + rnd(s) % 4));
        if (type == GGML_TYPE_Q4_K) {
            memcpy(out, &d, 2);
            memcpy(out + 2, &dm, 2);
        } else {
            for (int k = 0; k < 16; k++) out[192 + k] = (uint8_t)(int8_t)((int)(rnd(s) % 41) - 20);
            memcpy(out + 208, &d, 2);
        }
    }
}

/* The shipped model with its routed experts as above. */
static void quantize_one(gguf_writer *w, const gguf_file *f, const gguf_tensor *t, int l, const char *part, void *ctx)
{
    (void)f;
    (void)l;
    uint64_t *seed = ctx;
    assert_true(t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16);
    const int64_t el = t->ne[0] * t->ne[1] * t->ne[2];
    const int type = !strcmp(part, "gate") ? GGML_TYPE_Q8_0 : !strcmp(part, "up") ? GGML_TYPE_Q4_K : GGML_TYPE_Q6_K;
    const size_t bytes = (size_t)el / (type == GGML_TYPE_Q8_0 ? 32 : 256) *
                         (type == GGML_TYPE_Q8_0 ? 34 : type == GGML_TYPE_Q4_K ? 144 : 210);
    uint8_t *q = malloc(bytes);
    assert_non_null(q);
    if (type == GGML_TYPE_Q8_0) {
        float *x = malloc((size_t)el * sizeof *x);
        assert_non_null(x);
        for (int64_t k = 0; k < el; k++)
            x[k] = t->type == GGML_TYPE_F32 ? ((const float *)t->data)[k] : fp16_to_f32(((const uint16_t *)t->data)[k]);
        to_q8_0(x, el, q);
        free(x);
    } else {
        random_k(type, el, q, seed);
    }
    assert_true(gguf_writer_add_tensor(w, t->name, type, 3, t->ne, q, bytes) >= 0);
    free(q);
}

static void write_quantized(const char *src, const char *path)
{
    uint64_t seed = 7;
    assert_true(gguf_rewrite_experts(src, path, quantize_one, &seed) >= 3);
}

/* Rows of a and b (the same weight, two loads) meet the same rounded
 * activation: the same bits from the integer dot (or the decoded row). */
static void same_products(const kernels *k, const weight *a, const weight *b, const qrow *qa, float *ra, float *rb)
{
    assert_int_equal(a->form, b->form);
    assert_int_equal(a->rows, b->rows);
    assert_int_equal(a->cols, b->cols);
    assert_int_equal(a->row_bytes, b->row_bytes);
    assert_int_equal(a->act, b->act);
    assert_int_equal(a->kf != NULL, b->kf != NULL);
    for (int64_t r = 0; r < a->rows; r++) {
        if (k->qdot[a->form] && kernels_qdot_ok(a) && a->act == qa->kind) {
            const float ya = k->qdot[a->form](a, r, qa), yb = k->qdot[b->form](b, r, qa);
            assert_memory_equal(&ya, &yb, sizeof ya);
        }
        k->row_f32[a->form](a, r, ra);
        k->row_f32[b->form](b, r, rb);
        assert_memory_equal(ra, rb, (size_t)a->cols * sizeof *ra);
    }
}

static void test_tier_equals_eager(void **st)
{
    (void)st;
    char *dir = make_scratch_dir();
    char src[4200], pack[4200], err[1024];
    snprintf(src, sizeof src, "%s/q.gguf", dir);
    snprintf(pack, sizeof pack, "%s/pack", dir);
    write_quantized(SHIPPED_MODEL, src);
    char *argv[] = { "build", src, "-o", pack, "--experts", "keep", NULL };
    assert_int_equal(run_quiet(iq3pack_cmd_build, 6, argv), 0);

    loaded_pack *eager = loader_open(pack, err, sizeof err);
    if (!eager) fail_msg("%s", err);
    const loader_opts lo = { .lazy_experts = 1 };
    loaded_pack *lazy = loader_open_opts(pack, &lo, err, sizeof err);
    if (!lazy) fail_msg("%s", err);
    assert_true(loader_lazy_experts(lazy));
    const model_hparams *hp = loader_hparams(eager);

    /* too small a budget: refused with what it lacks */
    assert_null(tier_create(lazy, tier_slot_bytes(lazy) - 1, 1, 2, err, sizeof err));
    assert_non_null(strstr(err, "room for 0 expert slots"));

    expert_tier *t = tier_create(lazy, 2 * tier_slot_bytes(lazy), 1, 2, err, sizeof err);
    if (!t) fail_msg("%s", err);
    const kernels *k = kernels_get(1);
    const int64_t C = hp->n_embd > hp->n_ff_exp ? hp->n_embd : hp->n_ff_exp;
    float *x = malloc((size_t)C * sizeof *x), *ra = malloc((size_t)C * sizeof *ra), *rb = malloc((size_t)C * sizeof *rb);
    qrow qa[3];
    int8_t *qq = malloc((size_t)C * 3);
    float *qd = malloc((size_t)C * 3 * sizeof *qd), *qdeq = malloc((size_t)C * 3 * sizeof *qdeq);
    int32_t *qs = malloc((size_t)C / 16 * 3 * sizeof *qs);
    uint64_t seed = 11;
    int kinds[3] = { 0 }, layers = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        const layer_weights *L = &loader_weights(eager)->layers[l];
        if (!L->exp_gate) continue;
        layers++;
        const weight *parts0[3] = { L->exp_gate, L->exp_up, L->exp_down };
        for (int p = 0; p < 3; p++) { /* an activation of each part's width and kind */
            for (int64_t i = 0; i < parts0[p]->cols; i++) x[i] = (float)((int)(rnd(&seed) % 2001) - 1000) / 500.0f;
            qa[p] = (qrow){ parts0[p]->act, parts0[p]->cols, qq + p * C, qd + p * C, qs + p * (C / 16), qdeq + p * C, NULL, NULL, NULL };
            qrow_fill(k, &qa[p], x);
        }
        for (int e = 0; e < hp->n_expert; e++) {
            tier_ref r;
            const weight *g, *u, *d;
            assert_int_equal(tier_get(t, l, &e, 1, &r, err, sizeof err), 0);
            if (tier_wait(t, &r, &g, &u, &d, err, sizeof err)) fail_msg("%s", err);
            const weight *tw[3] = { g, u, d }, *ew[3] = { &L->exp_gate[e], &L->exp_up[e], &L->exp_down[e] };
            for (int p = 0; p < 3; p++) {
                same_products(k, ew[p], tw[p], &qa[p], ra, rb);
                assert_int_equal(ew[p]->form, WF_SCODE);
                if (ew[p]->kf) kinds[p] = ew[p]->kf->style;
                else kinds[p] = 8;
            }
            tier_put(t, &r);
        }
    }
    assert_true(layers >= 2);
    /* what the test meant to cover: S8 gates, Q4_K-factored ups, Q6_K-factored downs */
    assert_int_equal(kinds[0], 8);
    assert_int_equal(kinds[1], 4);
    assert_int_equal(kinds[2], 6);

    /* the model over the tier, against the eager one */
    const int32_t prompt[6] = { 1, 100, 200, 300, 400, 500 };
    model_options o = model_default_options();
    o.n_ctx = 64;
    o.n_threads = 2;
    model *me = model_create(hp, loader_weights(eager), &o, err, sizeof err);
    if (!me) fail_msg("%s", err);
    o.tier = t;
    model *mt = model_create(loader_hparams(lazy), loader_weights(lazy), &o, err, sizeof err);
    if (!mt) fail_msg("%s", err);
    const size_t V = (size_t)hp->n_vocab;
    float *le = malloc(6 * V * sizeof *le), *lt = malloc(6 * V * sizeof *lt);
    assert_int_equal(model_forward(me, prompt, 6, le, true, err, sizeof err), 0);
    assert_int_equal(model_forward(mt, prompt, 6, lt, true, err, sizeof err), 0);
    assert_memory_equal(le, lt, 6 * V * sizeof *le);
    for (int i = 0; i < 3; i++) {
        const int32_t tok = 600 + 37 * i;
        assert_int_equal(model_forward(me, &tok, 1, le, false, err, sizeof err), 0);
        assert_int_equal(model_forward(mt, &tok, 1, lt, false, err, sizeof err), 0);
        assert_memory_equal(le, lt, V * sizeof *le);
    }
    tier_stats s;
    tier_get_stats(t, &s);
    assert_int_equal(s.n_slots, 2);
    assert_true(s.misses > 0 && s.reads >= s.misses && s.bytes_read > 0);
    assert_true(s.accesses == s.hits + s.misses);

    model_free(me);
    model_free(mt);
    tier_free(t);
    loader_close(eager);
    loader_close(lazy);
    free(le); free(lt); free(x); free(ra); free(rb); free(qq); free(qd); free(qdeq); free(qs);
    remove_scratch_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tier_equals_eager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
