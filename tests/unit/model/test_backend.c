/* test_backend.c: the backend interface (runtime/model/backend.h) on the
 * CPU. A bound backend that forwards every op to the CPU's, counting them,
 * gives the same logits bit for bit as the model left on the CPU (the graph
 * reads weights and buffers from the binding, and calls nothing behind its
 * back); model_free frees its context; binding twice or after evaluating is
 * refused; backend_check refuses, with the row's name and the missing
 * feature, what a row lacks (the CUDA row's refusals). On the shipped model
 * (glm4moe: a dense first layer, sigmoid routing with a selection bias, q/k
 * norms optional), and on tinymoe (all-MoE llama, softmax routing) where
 * ../shared has it. */
#include "tests/lib/test_util.h"

#include "tests/lib/gguf_weights.h"
#include "runtime/model/backend.h"
#include "runtime/model/model_impl.h"

/* The wrapper's context: the model the CPU ops run on, and what it saw. */
typedef struct wrap {
    model *m;
    int calls;
    int *freed;
} wrap;

#define W(c) (((wrap *)(c))->calls++, ((wrap *)(c))->m)

static int w_begin(void *c, const int32_t *t, int B, int pos0) { return backend_cpu.begin(W(c), t, B, pos0); }
static int w_rmsnorm(void *c, const float *x, const float *w, float *out, int rows, int n)
{
    return backend_cpu.rmsnorm(W(c), x, w, out, rows, n);
}
static int w_matmul(void *c, const weight *w, const float *x, int n, float *y)
{
    return backend_cpu.matmul(W(c), w, x, n, y);
}
static int w_matvecs(void *c, const mm_vec *v, int nv, const mm_next *next)
{
    return backend_cpu.matvecs(W(c), v, nv, next);
}
static int w_add_bias(void *c, float *y, const float *b, int rows, int n)
{
    return backend_cpu.add_bias(W(c), y, b, rows, n);
}
static int w_scale(void *c, float *x, size_t n, float s) { return backend_cpu.scale(W(c), x, n, s); }
static int w_add(void *c, float *x, const float *y, size_t n) { return backend_cpu.add(W(c), x, y, n); }
static int w_rope(void *c, float *v, int B, size_t rs, int nh, size_t hs, int pos0)
{
    return backend_cpu.rope(W(c), v, B, rs, nh, hs, pos0);
}
static int w_attention(void *c, int l, int B, int pos0, const mm_next *next)
{
    return backend_cpu.attention(W(c), l, B, pos0, next);
}
static int w_ffn(void *c, const weight *g, const weight *u, const weight *d, const float *x, int B, float *out)
{
    return backend_cpu.ffn(W(c), g, u, d, x, B, out);
}
static int w_route(void *c, int l, int B, const int **sel) { return backend_cpu.route(W(c), l, B, sel); }
static int w_moe(void *c, int l, int B) { return backend_cpu.moe(W(c), l, B); }
static int w_gate_add(void *c, const weight *r, const float *h, const float *y, int B, int n, float *o)
{
    return backend_cpu.gate_add(W(c), r, h, y, B, n, o);
}
static int w_logits(void *c, const weight *w, const float *h, int rows, float *out)
{
    return backend_cpu.logits(W(c), w, h, rows, out);
}
static const char *w_error(void *c) { (void)c; return "wrap"; }
static void w_free(void *c) { ++*((wrap *)c)->freed; }

/* llama's attention, plain RoPE, an f16 cache, softmax top-k: CUDA's row */
static const backend_caps narrow = { .name = "TEST", .max_head_dim = 256 };
/* and what the shipped model needs besides */
static const backend_caps wide = { .name = "TEST", .max_head_dim = 256, .routing = true, .mixed_layers = true,
                                   .qk_norm_optional = true };

static backend_ops wrap_ops = {
    .caps = &narrow, .begin = w_begin, .rmsnorm = w_rmsnorm, .matmul = w_matmul, .matvecs = w_matvecs,
    .add_bias = w_add_bias, .scale = w_scale, .add = w_add, .rope = w_rope, .attention = w_attention,
    .ffn = w_ffn, .route = w_route, .moe = w_moe, .gate_add = w_gate_add, .logits = w_logits,
    .error = w_error, .free = w_free,
};

#define TINYMOE "models/tinymoe/tinymoe-f16.gguf"

static model *open_at(gguf_model *gm, const char *path, model_options o)
{
    char err[1024];
    if (gguf_model_load(gm, path, 0, err, sizeof err) != 0) { printf("%s\n", err); fail(); }
    model *m = model_create(&gm->hp, &gm->w, &o, err, sizeof err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    return m;
}

/* The model at path, run by the CPU and by the wrapper (with these caps): the same bits. */
static void bound_backend_same_logits(const char *path, const backend_caps *caps)
{
    char err[256];
    model_options o = model_default_options();
    o.n_threads = 2;
    o.n_batch = 5; /* several ubatches, then decode steps */
    gguf_model g1, g2;
    wrap_ops.caps = caps;
    model *cpu = open_at(&g1, path, o), *m = open_at(&g2, path, o);
    const int T = 12, V = model_hp(cpu)->n_vocab;
    int32_t tok[12];
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 37 + 5) % V);
    float *a = malloc((size_t)T * V * sizeof *a), *b = malloc((size_t)T * V * sizeof *b);
    assert_int_equal(backend_check(wrap_ops.caps, m, err, sizeof err), 0);
    int freed = 0;
    wrap w = { m, 0, &freed };
    assert_int_equal(model_bind_backend(m, &wrap_ops, &w, model_host_weights(m), &m->bufs, err, sizeof err), 0);
    assert_ptr_equal(model_backend_ctx(m, &wrap_ops), &w);
    assert_null(model_backend_ctx(m, &backend_cpu));
    assert_int_equal(model_bind_backend(m, &wrap_ops, &w, model_host_weights(m), &m->bufs, err, sizeof err), -1);
    /* a prefill of 9 (all logits), then three decode steps */
    assert_int_equal(model_forward(cpu, tok, 9, a, true, err, sizeof err), 0);
    assert_int_equal(model_forward(m, tok, 9, b, true, err, sizeof err), 0);
    for (int i = 9; i < T; i++) {
        assert_int_equal(model_forward(cpu, tok + i, 1, a + (size_t)i * V, false, err, sizeof err), 0);
        assert_int_equal(model_forward(m, tok + i, 1, b + (size_t)i * V, false, err, sizeof err), 0);
    }
    assert_memory_equal(a, b, (size_t)T * V * sizeof *a);
    assert_true(w.calls > 0);
    assert_int_equal(freed, 0);
    model_free(m);
    assert_int_equal(freed, 1);
    /* a model that has evaluated tokens keeps its backend */
    assert_int_equal(model_bind_backend(cpu, &wrap_ops, &w, model_host_weights(cpu), &cpu->bufs, err, sizeof err), -1);
    assert_string_equal(err, "device_attach: the model is already attached or has evaluated tokens");
    model_free(cpu);
    gguf_model_free(&g1);
    gguf_model_free(&g2);
    free(a);
    free(b);
}

static void test_bound_backend_same_logits(void **st)
{
    (void)st;
    bound_backend_same_logits(SHIPPED_MODEL, &wide);
    char path[4096];
    if (shared_part(path, sizeof path, TINYMOE)) bound_backend_same_logits(path, &narrow);
}

/* The shipped model against the narrow row, one feature added at a time:
 * each refusal names the next thing it lacks, until none is left. */
/* The model at path with an F32 KV cache, which the CPU's row runs. */
static model *open_f32_kv(gguf_model *g, const char *path)
{
    char err[256];
    model_options o = model_default_options();
    o.n_threads = 1;
    o.kv = KV_F32;
    model *m = open_at(g, path, o);
    assert_int_equal(backend_check(backend_cpu.caps, m, err, sizeof err), 0);
    return m;
}

static void check_shipped(void)
{
    char err[256];
    gguf_model g;
    model *m = open_f32_kv(&g, SHIPPED_MODEL);
    backend_caps c = narrow;
    assert_int_equal(backend_check(&c, m, err, sizeof err), -1);
    assert_string_equal(err, "the TEST backend keeps an f16 KV cache (--kv-type f32 runs on the CPU: --device cpu)");
    c.kv_f32 = true;
    assert_int_equal(backend_check(&c, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "the TEST router does softmax top-k only"));
    c.routing = true;
    assert_int_equal(backend_check(&c, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "the TEST backend runs all-MoE or all-dense models (this one starts with 1 dense layers"));
    c.mixed_layers = true;
    assert_int_equal(backend_check(&c, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "the TEST backend does not run glm4moe's attention yet (q/k norms on some layers only"));
    c.qk_norm_optional = true;
    assert_int_equal(backend_check(&c, m, err, sizeof err), 0);
    c.max_head_dim = model_hp(m)->head_dim - 1;
    assert_int_equal(backend_check(&c, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "the TEST attention needs head_dim <= "));
    model_free(m);
    gguf_model_free(&g);
}

/* tinymoe: what the narrow row lacks for it is the f32 cache alone */
static void check_tinymoe(const char *path)
{
    char err[256];
    gguf_model g;
    model *m = open_f32_kv(&g, path);
    assert_int_equal(backend_check(&narrow, m, err, sizeof err), -1);
    assert_string_equal(err, "the TEST backend keeps an f16 KV cache (--kv-type f32 runs on the CPU: --device cpu)");
    backend_caps f32 = narrow;
    f32.kv_f32 = true;
    assert_int_equal(backend_check(&f32, m, err, sizeof err), 0);
    f32.max_head_dim = model_hp(m)->head_dim - 1;
    assert_int_equal(backend_check(&f32, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "the TEST attention needs head_dim <= "));
    /* the row's refusals follow the model's features */
    m->hp.arch.qk_norm_after_rope = true;
    f32.max_head_dim = 0;
    assert_int_equal(backend_check(&f32, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "attention yet (q/k norms after RoPE: --device cpu)"));
    m->hp.arch.qk_norm_after_rope = false;
    m->hp.gating = GATING_SIGMOID;
    assert_int_equal(backend_check(&f32, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "the TEST router does softmax top-k only"));
    model_free(m);
    gguf_model_free(&g);
}

static void test_check_names_what_is_missing(void **st)
{
    (void)st;
    check_shipped();
    char path[4096];
    if (shared_part(path, sizeof path, TINYMOE)) check_tinymoe(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_backend_same_logits),
        cmocka_unit_test(test_check_names_what_is_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
