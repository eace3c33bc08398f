/* test_engine_model.c: the real-model engine (engine_model.h) on the
 * shipped model's pack built by iq3pack: sessions on different contexts
 * that interleave without disturbing each other, the prompt cache, logprobs
 * against a log-softmax computed here from model_forward's logits, logit
 * bias and penalties, the turn-end set (gpt-oss's harmony rule too), and
 * the refusals; the prompt cache of a model with Gated DeltaNet layers and of one
 * whose lightning indexer chooses the positions each query reads (DSA). With ../shared, a stories260K pack's greedy tokens against
 * llama.cpp's. */
#include "tests/lib/test_util.h"
#include "tests/lib/dsa_model.h"
#include "tests/lib/hybrid_model.h"
#include "tests/lib/vocab_relabel.h"
#include "pack/pack_cli.h"
#include "runtime/serve/engine_model.h"
#include "runtime/model/loader.h"
#include "runtime/model/model.h"
#include <math.h>
#include <unistd.h>

#define STORIES "models/stories260K/stories260K.gguf"

typedef struct fixture { char *dir; char pack[4200], stories[4200]; } fixture;

/* iq3pack build SRC -o PACK, quietly. */
static void build(const char *src, const char *pack)
{
    char *argv[] = { "build", (char *)src, "-o", (char *)pack, "--threads", "2", NULL };
    assert_int_equal(run_quiet(iq3pack_cmd_build, 6, argv), 0);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = make_scratch_dir();
    assert_non_null(f->dir);
    snprintf(f->pack, sizeof f->pack, "%s/tiny-moe", f->dir);
    build(SHIPPED_MODEL, f->pack);
    if (have_shared(STORIES)) {
        char src[4096];
        snprintf(f->stories, sizeof f->stories, "%s/stories", f->dir);
        build(shared_path(src, sizeof src, STORIES), f->stories);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f->dir);
    free(f);
    return 0;
}

static engine *open_pack(const char *pack, int parallel)
{
    char err[512] = "";
    engine_model_opts o = { .parallel = parallel, .n_ctx = 64, .n_threads = 1, .kv = KV_F32 };
    engine *e = engine_model_open(pack, &o, err, sizeof err);
    if (!e) printf("%s\n", err);
    assert_non_null(e);
    return e;
}

static engine *open_engine(const fixture *f, int parallel) { return open_pack(f->pack, parallel); }

static void tokens_of(engine *e, const char *text, int32_t **ids, size_t *n)
{
    assert_int_equal(e->tokenize(e->self, text, strlen(text), true, ids, n), 0);
    assert_true(*n > 0);
}

/* stories260K's v0 is llama.cpp's greedy continuation of BOS alone (F32 KV cache). */
static void greedy_is_llama_cpp(void **state)
{
    SKIP_UNLESS_SHARED(STORIES);
    const int32_t want[] = { 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338,
                             401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385 };
    const fixture *f = *state;
    engine *e = open_pack(f->stories, 1);
    assert_string_equal(e->name, "stories");
    assert_int_equal(e->n_ctx, 64);
    assert_null(e->chat_template); /* stories260K carries none */
    assert_string_equal(e->bos_text, "<s>");
    assert_string_equal(e->eos_text, "</s>");
    const int32_t bos = 1;
    engine_sampling sp = { .temperature = 0, .top_p = 1 };
    char err[256] = "";
    engine_session *s = e->begin(e->self, &bos, 1, &sp, err, sizeof err);
    assert_non_null(s);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        engine_token t;
        assert_int_equal(e->step(s, &t), 0);
        assert_int_equal(t.id, want[i]);
    }
    e->end(s);
    engine_model_free(e);
}

/* The shipped model's engine: its name (the pack folder's), context and
 * BOS/EOS texts; greedy from BOS gives the same tokens twice. */
static void greedy_repeats(void **state)
{
    engine *e = open_engine(*state, 1);
    assert_string_equal(e->name, "tiny-moe");
    assert_int_equal(e->n_ctx, 64);
    assert_string_equal(e->bos_text, "<s>");
    assert_string_equal(e->eos_text, "</s>");
    const int32_t bos = 1;
    engine_sampling sp = { .temperature = 0, .top_p = 1 };
    enum { K = 32 };
    int32_t first[K], again[K];
    for (int run = 0; run < 2; run++) {
        char err[256] = "";
        engine_session *s = e->begin(e->self, &bos, 1, &sp, err, sizeof err);
        assert_non_null(s);
        for (int i = 0; i < K; i++) {
            engine_token t;
            assert_int_equal(e->step(s, &t), 0);
            assert_true(t.id >= 0 && t.id < e->n_vocab);
            (run ? again : first)[i] = t.id;
        }
        e->end(s);
    }
    assert_memory_equal(first, again, sizeof first);
    engine_model_free(e);
}

/* k tokens after prompt p in a session of its own; *cached (when given):
 * the prompt tokens it reused */
static void run_cached(engine *e, const int32_t *p, size_t n, const engine_sampling *sp, int32_t *out, int k,
                       size_t *cached)
{
    char err[256] = "";
    engine_session *s = e->begin(e->self, p, n, sp, err, sizeof err);
    assert_non_null(s);
    if (cached) *cached = e->cached(s);
    for (int i = 0; i < k; i++) {
        engine_token t;
        assert_int_equal(e->step(s, &t), 0);
        out[i] = t.id;
    }
    e->end(s);
}

static void run_alone(engine *e, const int32_t *p, size_t n, const engine_sampling *sp, int32_t *out, int k)
{
    run_cached(e, p, n, sp, out, k, NULL);
}

/* Each session keeps its own KV cache: two interleaved sessions give what
 * each gives alone, and a third is refused while both contexts are taken. */
static void sessions_interleave(void **state)
{
    engine *e = open_engine(*state, 2);
    int32_t *pa, *pb;
    size_t na, nb;
    tokens_of(e, "Once upon a time", &pa, &na);
    tokens_of(e, "Lily and Tom went to the park", &pb, &nb);
    engine_sampling sa = { .temperature = 0.9f, .top_p = 0.95f, .top_k = 40, .seed = 7 };
    engine_sampling sb = { .temperature = 0, .top_p = 1 };
    enum { K = 24 };
    int32_t alone_a[K], alone_b[K];
    run_alone(e, pa, na, &sa, alone_a, K);
    run_alone(e, pb, nb, &sb, alone_b, K);

    char err[256] = "";
    engine_session *a = e->begin(e->self, pa, na, &sa, err, sizeof err);
    engine_session *b = e->begin(e->self, pb, nb, &sb, err, sizeof err);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(e->begin(e->self, pa, na, &sa, err, sizeof err));
    assert_non_null(strstr(err, "busy"));
    for (int i = 0; i < K; i++) {
        engine_token t;
        assert_int_equal(e->step(a, &t), 0);
        assert_int_equal(t.id, alone_a[i]);
        assert_int_equal(e->step(b, &t), 0);
        assert_int_equal(t.id, alone_b[i]);
    }
    e->end(a);
    engine_session *c = e->begin(e->self, pa, na, &sa, err, sizeof err); /* a's context is free again */
    assert_non_null(c);
    engine_token t;
    assert_int_equal(e->step(c, &t), 0);
    assert_int_equal(t.id, alone_a[0]);
    e->end(c);
    e->end(b);
    free(pa);
    free(pb);
    engine_model_free(e);
}

static engine *open_pack_opts(const char *pack, int parallel, bool no_cache)
{
    char err[512] = "";
    engine_model_opts o = { .parallel = parallel, .n_ctx = 64, .n_threads = 1, .kv = KV_F32, .no_prompt_cache = no_cache };
    engine *e = engine_model_open(pack, &o, err, sizeof err);
    if (!e) printf("%s\n", err);
    assert_non_null(e);
    return e;
}

static engine *open_engine_opts(const fixture *f, int parallel, bool no_cache)
{
    return open_pack_opts(f->pack, parallel, no_cache);
}

static void greedy(engine *e, const int32_t *p, size_t n, int32_t *out, int k, size_t *cached)
{
    const engine_sampling sp = { .temperature = 0, .top_p = 1 };
    run_cached(e, p, n, &sp, out, k, cached);
}

/* The prompt cache: a context keeps what its KV cache holds (the prompt and
 * every token evaluated after it, not the last one sampled), a session
 * reuses the longest prefix it shares and evaluates the rest, at least the
 * last prompt token; among free contexts it takes the one sharing most.
 * Greedy answers equal an engine without the cache. */
static void prompt_cache(void **state)
{
    engine *e = open_engine_opts(*state, 2, false), *plain = open_engine_opts(*state, 1, true);
    int32_t *pa, *pb;
    size_t na, nb, cached;
    tokens_of(e, "Once upon a time", &pa, &na);
    tokens_of(e, "Lily and Tom went to the park", &pb, &nb);
    enum { K = 8 };
    int32_t first[K], again[K], want[K];
    greedy(e, pa, na, first, K, &cached);
    assert_int_equal(cached, 0);
    /* the same prompt again: all but its last token reused, the same answer */
    greedy(e, pa, na, again, K, &cached);
    assert_int_equal(cached, na - 1);
    assert_memory_equal(again, first, sizeof first);
    /* the conversation continued: prompt + answer; K - 1 answer tokens were evaluated */
    int32_t *pc = malloc((na + K + 1) * sizeof *pc);
    assert_non_null(pc);
    memcpy(pc, pa, na * sizeof *pa);
    memcpy(pc + na, first, sizeof first);
    greedy(e, pc, na + K, again, K, &cached);
    assert_int_equal(cached, na + K - 1);
    greedy(plain, pc, na + K, want, K, &cached);
    assert_int_equal(cached, 0);
    assert_memory_equal(again, want, sizeof want);
    /* another prompt shares only BOS with context 0, nothing with the empty context 1: context 0 */
    greedy(e, pb, nb, again, K, &cached);
    assert_int_equal(cached, 1);
    greedy(plain, pb, nb, want, K, &cached);
    assert_memory_equal(again, want, sizeof want);
    /* two at once: each takes the context holding its own prefix */
    char err[256] = "";
    engine_sampling sp = { .temperature = 0, .top_p = 1 };
    engine_session *b = e->begin(e->self, pb, nb, &sp, err, sizeof err); /* context 0, holding pb */
    assert_non_null(b);
    assert_int_equal(e->cached(b), nb - 1);
    engine_session *a = e->begin(e->self, pa, na, &sp, err, sizeof err); /* context 1: fresh */
    assert_non_null(a);
    assert_int_equal(e->cached(a), 0);
    e->end(a);
    e->end(b);
    a = e->begin(e->self, pa, na, &sp, err, sizeof err); /* context 1 holds pa now */
    assert_int_equal(e->cached(a), na - 1);
    e->end(a);
    free(pa);
    free(pb);
    free(pc);
    engine_model_free(plain);
    engine_model_free(e);
}

enum { CACHE_K = 6, CACHE_NA_MAX = 48 };

/* The first na ids as a prompt to e (a fresh cache) and to plain (no cache),
 * the same prompt again (cached to its last token), then the conversation
 * going on (prompt + answer, cached as it stands): every answer plain's.
 * first: the first answer; p (na + CACHE_K ids): the conversation. */
static void cache_gives_plain(engine *e, engine *plain, const int32_t *ids, int na, int32_t *first, int32_t *p)
{
    int32_t again[CACHE_K], want[CACHE_K];
    size_t cached;
    assert_true(na <= CACHE_NA_MAX);
    greedy(e, ids, (size_t)na, first, CACHE_K, &cached);
    assert_int_equal(cached, 0);
    greedy(plain, ids, (size_t)na, want, CACHE_K, &cached);
    assert_memory_equal(first, want, sizeof want);
    greedy(e, ids, (size_t)na, again, CACHE_K, &cached);
    assert_int_equal(cached, na - 1);
    assert_memory_equal(again, first, sizeof again);
    memcpy(p, ids, (size_t)na * sizeof *p);
    memcpy(p + na, first, sizeof again);
    greedy(e, p, (size_t)(na + CACHE_K), again, CACHE_K, &cached);
    assert_int_equal(cached, na + CACHE_K - 1);
    greedy(plain, p, (size_t)(na + CACHE_K), want, CACHE_K, &cached);
    assert_memory_equal(again, want, sizeof want);
}

/* The prompt cache of a model with Gated DeltaNet layers (hybrid_model.h's
 * qwen3next), whose state holds its last position only: the server keeps
 * it at the prompt's last token but one. The same prompt again resumes
 * there; the conversation going on keeps the context as it is; a prompt
 * sharing that prompt and more resumes from the checkpoint, one sharing
 * less starts over. Every answer is the one a server without a cache
 * gives. */
static void prompt_cache_recurrent(void **state)
{
    const fixture *f = *state;
    char gguf[4300], pack[4300], err[4600];
    snprintf(gguf, sizeof gguf, "%s/qwen3next.gguf", f->dir);
    snprintf(pack, sizeof pack, "%s/qwen3next", f->dir);
    if (hybrid_write_model(&HYBRID_SPECS[0], gguf, 0, err, sizeof err)) fail_msg("%s", err);
    build(gguf, pack);
    engine *e = open_pack_opts(pack, 1, false), *plain = open_pack_opts(pack, 1, true);
    int32_t *ids = hybrid_tokens();
    assert_non_null(ids);
    enum { K = CACHE_K, NA = 12 };
    int32_t first[K], again[K], want[K], p[NA + K + 4];
    size_t cached;
    cache_gives_plain(e, plain, ids, NA, first, p);
    /* the prompt and something else: back to the checkpoint */
    p[NA] = (first[0] + 1) % 512;
    greedy(e, p, NA + 3, again, K, &cached);
    assert_int_equal(cached, NA - 1);
    greedy(plain, p, NA + 3, want, K, &cached);
    assert_memory_equal(again, want, sizeof want);
    /* a prompt sharing less than the checkpoint: from the start */
    greedy(e, ids + 2, NA, again, K, &cached);
    assert_int_equal(cached, 0);
    greedy(plain, ids + 2, NA, want, K, &cached);
    assert_memory_equal(again, want, sizeof want);
    free(ids);
    engine_model_free(plain);
    engine_model_free(e);
}

/* DSA (deepseek32): the indexer keys are kept per position like K and V, so
 * a cached prefix resumes where it ends; past the indexer's top_k every
 * answer equals a cache-less server's. */
static void prompt_cache_dsa(void **state)
{
    const fixture *f = *state;
    char gguf[4300], pack[4300], err[4600];
    snprintf(gguf, sizeof gguf, "%s/deepseek32.gguf", f->dir);
    snprintf(pack, sizeof pack, "%s/deepseek32", f->dir);
    if (dsa_write_model(&DSA_SPECS[0], gguf, 0, err, sizeof err)) fail_msg("%s", err);
    build(gguf, pack);
    engine *e = open_pack_opts(pack, 1, false), *plain = open_pack_opts(pack, 1, true);
    int32_t *ids = dsa_tokens();
    assert_non_null(ids);
    int32_t first[CACHE_K], p[3 * DSA_TOP_K + CACHE_K];
    cache_gives_plain(e, plain, ids, 3 * DSA_TOP_K, first, p);
    free(ids);
    engine_model_free(plain);
    engine_model_free(e);
}

/* Logprobs are log-softmax of the raw logits: checked against a model of
 * our own over the same pack, for the first token and its alternatives. */
/* OpenAI's logit_bias and penalties reach the sampler: banning the greedy
 * first token changes it; a frequency penalty changes a greedy text that
 * repeats tokens. */
static void bias_and_penalties(void **state)
{
    const fixture *f = *state;
    engine *e = open_engine(f, 1);
    int32_t *p;
    size_t n;
    tokens_of(e, "Once upon a time", &p, &n);
    enum { K = 40 };
    int32_t plain[K], banned[K], penalised[K];
    size_t cached;
    greedy(e, p, n, plain, K, &cached);
    const int32_t id = plain[0];
    const float b = -100.0f;
    engine_sampling sp = { .temperature = 0, .top_p = 1, .bias_id = &id, .bias = &b, .n_bias = 1 };
    run_cached(e, p, n, &sp, banned, K, &cached);
    assert_true(banned[0] != plain[0]);
    bool repeats = false;
    for (int i = 0; i < K && !repeats; i++)
        for (int j = 0; j < i; j++) repeats |= plain[i] == plain[j];
    assert_true(repeats);
    sp = (engine_sampling){ .temperature = 0, .top_p = 1, .frequency_penalty = 2.0f };
    run_cached(e, p, n, &sp, penalised, K, &cached);
    assert_memory_not_equal(plain, penalised, sizeof plain);
    /* strong enough to move a greedy text whose repeated token dominates (1.5 did on stories260K, not on
     * random weights) */
    sp = (engine_sampling){ .temperature = 0, .top_p = 1, .repeat_penalty = 10.0f };
    run_cached(e, p, n, &sp, penalised, K, &cached);
    assert_memory_not_equal(plain, penalised, sizeof plain);
    sp = (engine_sampling){ .temperature = 0, .top_p = 1, .repeat_penalty = 1.0f, .min_p = 0.5f }; /* greedy: min_p changes nothing */
    run_cached(e, p, n, &sp, penalised, K, &cached);
    assert_memory_equal(plain, penalised, sizeof plain);
    free(p);
    engine_model_free(e);
}

static void logprobs_are_log_softmax(void **state)
{
    const fixture *f = *state;
    engine *e = open_engine(f, 1);
    int32_t *p;
    size_t n;
    tokens_of(e, "Once upon a time", &p, &n);
    engine_sampling sp = { .temperature = 0.7f, .top_p = 1, .seed = 3, .n_probs = 5 };
    char err[512] = "";
    engine_session *s = e->begin(e->self, p, n, &sp, err, sizeof err);
    assert_non_null(s);
    engine_token t;
    assert_int_equal(e->step(s, &t), 0);
    e->end(s);

    loaded_pack *lp = loader_open(f->pack, err, sizeof err);
    assert_non_null(lp);
    model_options o = model_default_options();
    o.kv = KV_F32;
    o.n_threads = 1;
    o.n_ctx = 64;
    model *m = model_create(loader_hparams(lp), loader_weights(lp), &o, err, sizeof err);
    assert_non_null(m);
    const int nv = loader_hparams(lp)->n_vocab;
    float *lg = malloc((size_t)nv * sizeof *lg);
    assert_non_null(lg);
    assert_int_equal(model_forward(m, p, (int)n, lg, false, err, sizeof err), 0);
    double mx = -INFINITY, z = 0;
    for (int i = 0; i < nv; i++) mx = fmax(mx, lg[i]);
    for (int i = 0; i < nv; i++) z += exp(lg[i] - mx);
    const double lse = mx + log(z);

    assert_int_equal(t.n_top, 5);
    assert_float_equal(t.logprob, lg[t.id] - lse, 1e-4);
    int above = 0; /* tokens strictly more likely than the 5th alternative */
    for (int i = 0; i < nv; i++) above += lg[i] > lg[t.top_id[4]];
    assert_true(above <= 4);
    for (int j = 0; j < 5; j++) {
        assert_float_equal(t.top_logprob[j], lg[t.top_id[j]] - lse, 1e-4);
        if (j) assert_true(t.top_logprob[j] <= t.top_logprob[j - 1]);
    }
    free(lg);
    free(p);
    model_free(m);
    loader_close(lp);
    engine_model_free(e);
}

/* The shipped model with tokens 3.. renamed to the given control tokens
 * (byte tokens it can spare), built into a pack at dir/NAME. */
static void relabelled_pack(const fixture *f, const char *name, const char *const *names, int n, char *pack,
                            size_t packsz)
{
    char gg[4300], err[256];
    snprintf(gg, sizeof gg, "%s/%s.gguf", f->dir, name);
    if (vocab_relabel(SHIPPED_MODEL, gg, 3, names, n, err, sizeof err)) fail_msg("%s", err);
    snprintf(pack, packsz, "%s/%s", f->dir, name);
    build(gg, pack);
}

/* gpt-oss's harmony: <|return|> and <|call|> end a turn and <|end|>, which
 * closes its analysis message, does not (llama.cpp's rule); elsewhere
 * <|end|> does (phi-3). */
static void harmony_turn_ends(void **state)
{
    const fixture *f = *state;
    char pack[4400], err[512] = "";
    engine_model_opts o = { .parallel = 1, .n_ctx = 64, .n_threads = 1, .kv = KV_F32 };
    static const char *const harmony[] = { "<|end|>", "<|return|>", "<|call|>" };
    relabelled_pack(f, "harmony", harmony, 3, pack, sizeof pack);
    engine *e = engine_model_open(pack, &o, err, sizeof err);
    if (!e) printf("%s\n", err);
    assert_non_null(e);
    assert_false(e->is_eog(e->self, 3));
    assert_true(e->is_eog(e->self, 4));
    assert_true(e->is_eog(e->self, 5));
    assert_true(e->is_eog(e->self, 2)); /* </s> still */
    engine_model_free(e);
    static const char *const phi[] = { "<|end|>" };
    relabelled_pack(f, "phi", phi, 1, pack, sizeof pack);
    e = engine_model_open(pack, &o, err, sizeof err);
    assert_non_null(e);
    assert_true(e->is_eog(e->self, 3));
    engine_model_free(e);
    /* Llama 4 ends a turn that made a tool call with <|eom|> */
    static const char *const llama4[] = { "<|eot|>", "<|eom|>", "<|python_start|>" };
    relabelled_pack(f, "llama4", llama4, 3, pack, sizeof pack);
    e = engine_model_open(pack, &o, err, sizeof err);
    assert_non_null(e);
    assert_true(e->is_eog(e->self, 3));
    assert_true(e->is_eog(e->self, 4));
    assert_false(e->is_eog(e->self, 5));
    engine_model_free(e);
}

static void turn_ends_and_refusals(void **state)
{
    engine *e = open_engine(*state, 1);
    assert_true(e->is_eog(e->self, 2));    /* </s> */
    assert_false(e->is_eog(e->self, 1));   /* <s> */
    assert_false(e->is_eog(e->self, 403)); /* an ordinary piece */
    char err[256] = "";
    int32_t many[64] = { 1 };
    engine_sampling sp = { .temperature = 0, .top_p = 1 };
    assert_null(e->begin(e->self, many, 64, &sp, err, sizeof err)); /* fills the 64-token context */
    assert_non_null(strstr(err, "64"));
    assert_null(e->begin(e->self, many, 0, &sp, err, sizeof err));
    engine_model_free(e);

    engine_model_opts o = { .parallel = 1 };
    assert_null(engine_model_open("/nonexistent/strata-pack", &o, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/strata-pack"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_is_llama_cpp),
        cmocka_unit_test(greedy_repeats),
        cmocka_unit_test(sessions_interleave),
        cmocka_unit_test(prompt_cache),
        cmocka_unit_test(prompt_cache_recurrent),
        cmocka_unit_test(prompt_cache_dsa),
        cmocka_unit_test(logprobs_are_log_softmax),
        cmocka_unit_test(bias_and_penalties),
        cmocka_unit_test(turn_ends_and_refusals),
        cmocka_unit_test(harmony_turn_ends),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
