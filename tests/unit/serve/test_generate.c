/* test_generate.c: the text path from tokens to what a client receives:
 * UTF-8 hold-back and repair, stop strings split across tokens (held back,
 * never emitted), and the generation driver over the fake engine with the
 * shipped model's tokenizer (streamed deltas concatenate to the whole text,
 * max_tokens, end of generation, logprob records). */
#include "tests/lib/test_util.h"
#include "tests/lib/engine_fake.h"
#include "runtime/serve/generate.h"
#include "runtime/serve/stop_match.h"
#include "runtime/util/strbuf.h"
#include "runtime/util/utf8.h"

#define GGUF SHIPPED_MODEL

static void test_utf8(void **st)
{
    (void)st;
    assert_int_equal(utf8_incomplete_tail("ab\xc3", 3), 1);
    assert_int_equal(utf8_incomplete_tail("ab\xe2\x82", 4), 2);
    assert_int_equal(utf8_incomplete_tail("ab\xe2\x82\xac", 5), 0);
    assert_int_equal(utf8_incomplete_tail("ab\xf0\x9f\x98", 5), 3);
    assert_int_equal(utf8_incomplete_tail("ab\x80", 3), 0); /* stray continuation: not pending */
    size_t n;
    char *s = utf8_sanitize("a\xff" "b\xc3", 4, &n);
    assert_string_equal(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
    assert_int_equal(n, 8);
    free(s);
    s = utf8_sanitize("\xf2\x98 g\xe2\x82", 6, &n); /* a cut 4-byte and 3-byte start: one U+FFFD each */
    assert_string_equal(s, "\xef\xbf\xbd g\xef\xbf\xbd");
    free(s);
    s = utf8_sanitize("\xed\xa0\x80 \xc0\xaf", 6, &n); /* surrogate, overlong */
    assert_null(strstr(s, "\xed\xa0"));
    assert_null(strstr(s, "\xc0"));
    free(s);
}

static void test_stop_match(void **st)
{
    (void)st;
    const char *stops[] = { "Spot", "red ball" };
    int m;
    /* "Sp" could become "Spot": held back */
    assert_int_equal(stop_match("named Sp", 8, stops, 2, false, &m), 6);
    assert_int_equal(m, -1);
    /* completed: release up to the match, report which */
    assert_int_equal(stop_match("named Spot.", 11, stops, 2, false, &m), 6);
    assert_int_equal(m, 0);
    /* the earliest match wins over list order */
    assert_int_equal(stop_match("a red ball, Spot", 16, stops, 2, false, &m), 2);
    assert_int_equal(m, 1);
    /* a partial that cannot continue is released */
    assert_int_equal(stop_match("Spa", 3, stops, 2, false, &m), 3);
    /* final: nothing held back */
    assert_int_equal(stop_match("named Sp", 8, stops, 2, true, &m), 8);
    /* an incomplete UTF-8 sequence is held back even with no stops */
    assert_int_equal(stop_match("caf\xc3", 4, NULL, 0, false, &m), 3);
    /* empty stop strings are ignored */
    const char *empty[] = { "" };
    assert_int_equal(stop_match("abc", 3, empty, 1, false, &m), 3);
    assert_int_equal(m, -1);
}

static engine *fake(int n_ctx)
{
    char err[256] = "";
    fake_engine_opts o = { .n_ctx = n_ctx };
    engine *e = fake_engine_new(GGUF, &o, err, sizeof err);
    if (!e) fail_msg("%s", err);
    return e;
}

/* Runs one generation; returns the concatenated deltas. */
static char *run(engine *e, int max_tokens, const char *const *stops, size_t n_stops, int n_probs,
                 gen_finish *fin, int *stop_idx, size_t *n_tok, size_t *n_records)
{
    int32_t prompt[3] = { 1, 2, 3 };
    gen_params p = { .max_tokens = max_tokens, .stops = stops, .n_stops = n_stops,
                     .sampling = { .n_probs = n_probs } };
    char err[256] = "";
    gen *g = gen_begin(e, prompt, 3, &p, err, sizeof err);
    if (!g) fail_msg("%s", err);
    strbuf b = { 0 };
    size_t records = 0;
    gen_finish f;
    do {
        const char *d;
        size_t n, k;
        f = gen_next(g, &d, &n);
        strbuf_add(&b, d, n);
        const gen_token *t = gen_take_tokens(g, &k);
        for (size_t i = 0; i < k; i++) assert_true(t[i].t.n_top == n_probs);
        records += k;
    } while (f == GEN_RUNNING);
    *fin = f;
    if (stop_idx) *stop_idx = gen_stop_index(g);
    if (n_tok) *n_tok = gen_n_tokens(g);
    if (n_records) *n_records = records;
    gen_end(g);
    return strbuf_take(&b);
}

static void test_generate_story(void **st)
{
    (void)st;
    engine *e = fake(512);
    gen_finish f;
    size_t nt, nr;
    char *text = run(e, 1000, NULL, 0, 2, &f, NULL, &nt, &nr);
    assert_int_equal(f, GEN_EOS);
    /* the tokenizer's first piece carries the SentencePiece space */
    assert_string_equal(text + 1, fake_engine_story(0));
    assert_true(nt > 20);
    assert_int_equal(nr, nt);
    free(text);

    text = run(e, 5, NULL, 0, 0, &f, NULL, &nt, NULL);
    assert_int_equal(f, GEN_LENGTH);
    assert_int_equal(nt, 5);
    assert_true(strlen(text) > 0 && strncmp(text + 1, fake_engine_story(0), strlen(text) - 1) == 0);
    free(text);
    fake_engine_free(e);
}

static void test_generate_stops(void **st)
{
    (void)st;
    engine *e = fake(512);
    gen_finish f;
    int idx;
    size_t nr;
    /* "Spot" is several tokens in this vocabulary (S, p, ot) */
    const char *stops[] = { "nothing here", "Spot" };
    char *text = run(e, 1000, stops, 2, 1, &f, &idx, NULL, &nr);
    assert_int_equal(f, GEN_STOP);
    assert_int_equal(idx, 1);
    assert_string_equal(text, " Once upon a time, there was a little dog named ");
    assert_null(strstr(text, "Sp"));
    free(text);
    /* a stop string spanning the non-ASCII word */
    const char *cafe[] = { "caf\xc3\xa9." };
    text = run(e, 1000, cafe, 1, 0, &f, &idx, NULL, NULL);
    assert_int_equal(f, GEN_STOP);
    assert_non_null(strstr(text, "at the "));
    assert_null(strstr(text, "caf"));
    free(text);
    /* a stop string that never completes: the held-back text comes out at the end */
    const char *never[] = { "The end!" };
    text = run(e, 1000, never, 1, 0, &f, &idx, NULL, NULL);
    assert_int_equal(f, GEN_EOS);
    assert_string_equal(text + 1, fake_engine_story(0));
    free(text);
    fake_engine_free(e);
}

static void test_fake_engine_context(void **st)
{
    (void)st;
    engine *e = fake(3);
    int32_t prompt[3] = { 1, 2, 3 };
    gen_params p = { .max_tokens = 5 };
    char err[256] = "";
    assert_null(gen_begin(e, prompt, 3, &p, err, sizeof err));
    assert_non_null(strstr(err, "context"));
    fake_engine_free(e);
}

/* A scripted engine speaking gpt-oss's harmony: ids 0-4 the markers, 14
 * the end of generation, the rest words. */
static const char *const HV[] = { "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>", "assistant",
                                  "analysis", "final", "Think", " hard", "Hello", " world", "commentary to=f", "json",
                                  "<|return|>", "<think>", "\n", "plan", "</think>", "\n\n", "Answer", " here", "</th",
                                  "ink>", " to=functions.lookup", "{\"q\":", "1}", "commentary to=functions.now " };
typedef struct script { const int32_t *ids; size_t n, at; } script;

static int h_piece(void *self, int32_t id, char *buf, size_t bufsz)
{
    (void)self;
    const int n = (int)strlen(HV[id]);
    if ((size_t)n < bufsz) memcpy(buf, HV[id], (size_t)n + 1);
    return n;
}
static bool h_eog(void *self, int32_t id) { (void)self; return id == 14; }
static engine_session *h_begin(void *self, const int32_t *prompt, size_t n_prompt, const engine_sampling *s,
                               char *err, size_t errlen)
{
    (void)prompt; (void)n_prompt; (void)s; (void)err; (void)errlen;
    script *sc = self;
    sc->at = 0;
    return (engine_session *)sc;
}
static int h_step(engine_session *s, engine_token *out)
{
    script *sc = (script *)s;
    memset(out, 0, sizeof *out);
    out->id = sc->at < sc->n ? sc->ids[sc->at++] : 14;
    return 0;
}
static void h_end(engine_session *s) { (void)s; }

static char *run_script_think(script *sc, const gen_harmony *h, gen_think think, int max_tokens, size_t *n_tok,
                              size_t *n_records, char **reasoning);

static char *run_script(script *sc, const gen_harmony *h, int max_tokens, size_t *n_tok, size_t *n_records,
                        char **reasoning)
{
    return run_script_think(sc, h, GEN_THINK_OFF, max_tokens, n_tok, n_records, reasoning);
}

static char *run_script_think(script *sc, const gen_harmony *h, gen_think think, int max_tokens, size_t *n_tok,
                              size_t *n_records, char **reasoning)
{
    engine e = { .self = sc, .name = "script", .n_ctx = 64, .bos_text = "", .eos_text = "",
                 .piece = h_piece, .is_eog = h_eog, .begin = h_begin, .step = h_step, .end = h_end };
    gen_params p = { .max_tokens = max_tokens, .harmony = h, .think = think };
    int32_t prompt[1] = { 0 };
    char err[256] = "";
    gen *g = gen_begin(&e, prompt, 1, &p, err, sizeof err);
    assert_non_null(g);
    strbuf b = { 0 }, rs = { 0 };
    size_t records = 0;
    gen_finish f;
    do {
        const char *d, *r;
        size_t n, k, rn;
        f = gen_next(g, &d, &n);
        strbuf_add(&b, d, n);
        r = gen_take_reasoning(g, &rn);
        strbuf_add(&rs, r, rn);
        gen_take_tokens(g, &k);
        records += k;
    } while (f == GEN_RUNNING);
    *n_tok = gen_n_tokens(g);
    *n_records = records;
    if (reasoning) {
        *reasoning = strbuf_take(&rs);
        if (!*reasoning) *reasoning = strdup("");
    }
    strbuf_free(&rs);
    gen_end(g);
    char *t = strbuf_take(&b);
    return t ? t : strdup("");
}

/* harmony: the analysis channel, headers and markers are not released but
 * count as tokens; the final channel's text is, with its token records */
static void test_generate_harmony(void **st)
{
    (void)st;
    const gen_harmony h = { 0, 1, 2, 3, 4 };
    /* <|channel|>analysis<|message|>Think hard<|end|><|start|>assistant<|channel|>final<|message|>Hello world */
    static const int32_t turn[] = { 1, 6, 2, 8, 9, 3, 0, 5, 1, 7, 2, 10, 11 };
    script sc = { turn, sizeof turn / sizeof turn[0], 0 };
    size_t nt, nr;
    char *reason;
    char *text = run_script(&sc, &h, 100, &nt, &nr, &reason);
    assert_string_equal(text, "Hello world");
    assert_string_equal(reason, "Think hard"); /* the analysis channel */
    free(reason);
    assert_int_equal(nt, 13);
    assert_int_equal(nr, 2);
    free(text);
    /* max_tokens counts the hidden ones: 11 tokens end before the answer's second word */
    text = run_script(&sc, &h, 12, &nt, &nr, NULL);
    assert_string_equal(text, "Hello");
    assert_int_equal(nt, 12);
    free(text);
    /* a tool call's channel (with <|constrain|>) is hidden, and "finalThink" is no "final" */
    static const int32_t tool[] = { 1, 12, 4, 13, 2, 8, 3, 0, 5, 1, 7, 8, 2, 10 };
    script st2 = { tool, sizeof tool / sizeof tool[0], 0 };
    text = run_script(&st2, &h, 100, &nt, &nr, NULL);
    assert_string_equal(text, "");
    free(text);
    /* a message with no channel is shown */
    static const int32_t plain[] = { 2, 10, 11 };
    script st3 = { plain, 3, 0 };
    text = run_script(&st3, &h, 100, &nt, &nr, NULL);
    assert_string_equal(text, "Hello world");
    free(text);
    /* without harmony every piece is text */
    text = run_script(&sc, NULL, 100, &nt, &nr, NULL);
    assert_string_equal(text, "<|channel|>analysis<|message|>Think hard<|end|><|start|>assistant<|channel|>final<|message|>"
                              "Hello world");
    assert_int_equal(nr, 13);
    free(text);
}

/* harmony's function calls: a header addressed to=functions.NAME, before
 * its channel or after it, makes the body a call; "to=f" is no function */
static void test_generate_harmony_calls(void **st)
{
    (void)st;
    const gen_harmony h = { 0, 1, 2, 3, 4 };
    static const int32_t turn[] = { 24, 1, 13, 2, 25, 26, 3, 0, 5, 1, 12, 2, 10, 3,
                                    0, 5, 1, 27, 4, 13, 2, 25, 26 };
    script sc = { turn, sizeof turn / sizeof turn[0], 0 };
    engine e = { .self = &sc, .name = "script", .n_ctx = 64, .bos_text = "", .eos_text = "",
                 .piece = h_piece, .is_eog = h_eog, .begin = h_begin, .step = h_step, .end = h_end };
    gen_params p = { .max_tokens = 100, .harmony = &h };
    int32_t prompt[1] = { 0 };
    char err[256] = "";
    gen *g = gen_begin(&e, prompt, 1, &p, err, sizeof err);
    assert_non_null(g);
    const char *d;
    size_t n, total = 0;
    while (gen_next(g, &d, &n) == GEN_RUNNING) total += n;
    total += n;
    assert_int_equal(total, 0); /* nothing on the final channel */
    const gen_call *c = gen_calls(g, &n);
    assert_int_equal(n, 2);
    assert_string_equal(c[0].name, "lookup");
    assert_string_equal(c[0].args.data, "{\"q\":1}");
    assert_string_equal(c[1].name, "now");
    assert_string_equal(c[1].args.data, "{\"q\":1}");
    gen_end(g);
}

/* <think> reasoning (DeepSeek-R1, Qwen3, MiniMax-M2): opened by the answer
 * or by the prompt, the closing tag split across tokens, no tag at all,
 * and think off. Content after </think> starts at its first non-blank;
 * the reasoning ends at its last. */
static void test_generate_think(void **st)
{
    (void)st;
    size_t nt, nr;
    char *reason;
    static const int32_t opens[] = { 15, 16, 17, 18, 19, 20, 21 }; /* <think>\nplan</think>\n\nAnswer here */
    script a = { opens, 7, 0 };
    char *text = run_script_think(&a, NULL, GEN_THINK_MAYBE, 100, &nt, &nr, &reason);
    assert_string_equal(text, "Answer here");
    assert_string_equal(reason, "plan");
    assert_int_equal(nt, 7);
    assert_int_equal(nr, 2); /* the records: the content's tokens */
    free(text);
    free(reason);
    static const int32_t split[] = { 17, 22, 23, 19, 20 }; /* plan</th ink>\n\nAnswer, the prompt ended <think> */
    script b = { split, 5, 0 };
    text = run_script_think(&b, NULL, GEN_THINK_OPEN, 100, &nt, &nr, &reason);
    assert_string_equal(text, "Answer");
    assert_string_equal(reason, "plan");
    free(text);
    free(reason);
    /* blanks before </think> belong to neither part; blanks inside the reasoning stay */
    static const int32_t blanks[] = { 17, 16, 17, 16, 19, 18, 19, 20 }; /* plan\nplan\n\n\n</think>\n\nAnswer */
    script d = { blanks, 8, 0 };
    text = run_script_think(&d, NULL, GEN_THINK_OPEN, 100, &nt, &nr, &reason);
    assert_string_equal(text, "Answer");
    assert_string_equal(reason, "plan\nplan");
    free(text);
    free(reason);
    static const int32_t none[] = { 20, 21 };
    script c = { none, 2, 0 };
    text = run_script_think(&c, NULL, GEN_THINK_MAYBE, 100, &nt, &nr, &reason);
    assert_string_equal(text, "Answer here");
    assert_string_equal(reason, "");
    assert_int_equal(nr, 2);
    free(text);
    free(reason);
    /* still thinking at max_tokens: all of it reasoning, no content */
    text = run_script_think(&a, NULL, GEN_THINK_MAYBE, 3, &nt, &nr, &reason);
    assert_string_equal(text, "");
    assert_string_equal(reason, "plan");
    free(text);
    free(reason);
    text = run_script_think(&a, NULL, GEN_THINK_OFF, 100, &nt, &nr, &reason);
    assert_string_equal(text, "<think>\nplan</think>\n\nAnswer here");
    assert_string_equal(reason, "");
    free(text);
    free(reason);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_stop_match),
        cmocka_unit_test(test_generate_story),
        cmocka_unit_test(test_generate_stops),
        cmocka_unit_test(test_fake_engine_context),
        cmocka_unit_test(test_generate_harmony),
        cmocka_unit_test(test_generate_harmony_calls),
        cmocka_unit_test(test_generate_think),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
