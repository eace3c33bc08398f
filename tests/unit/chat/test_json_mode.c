/* test_json_mode.c: the JSON-mode mask (runtime/chat/json_mode.h) over a real
 * vocabulary: leads (an unnamed forced call's tool names, then that tool's
 * schema), and control tokens whose text a tool format keeps. The shipped
 * model's first tokens are relabelled as DeepSeek's call markers, typed
 * CONTROL as llama.cpp's converter types them: their pieces are empty, so
 * only the marked table (json_vocab_new_marked) lets the mask write them. */
#include "tests/lib/test_util.h"
#include "tests/lib/vocab_relabel.h"
#include "tests/lib/engine_fake.h"
#include "runtime/chat/json_mode.h"

#define GGUF SHIPPED_MODEL
#define SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

typedef struct fixture {
    char      *dir;
    engine    *e;
    json_vocab *plain, *marked;
    int32_t    sep; /* <｜tool▁sep｜>'s id */
    uint8_t   *allow;
} fixture;

static int32_t one_token(const engine *e, const char *text)
{
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(e->tokenize(e->self, text, strlen(text), false, &ids, &n), 0);
    int32_t id = n == 1 ? ids[0] : -1;
    free(ids);
    return id;
}

/* the token whose text is exactly this (SentencePiece would put a space before a word tokenized alone) */
static int32_t piece_id(const engine *e, const char *text)
{
    char buf[64];
    for (int32_t id = 0; id < e->n_vocab; id++) {
        int k = e->piece(e->self, id, buf, sizeof buf);
        if (k == (int)strlen(text) && !memcmp(buf, text, (size_t)k)) return id;
    }
    return -1;
}

static void open_fixture(fixture *f)
{
    static const char *const MARK[] = { SEP };
    char gg[4200], err[256];
    f->dir = make_scratch_dir();
    assert_non_null(f->dir);
    snprintf(gg, sizeof gg, "%s/markers.gguf", f->dir);
    if (vocab_relabel(GGUF, gg, 3, MARK, 1, err, sizeof err)) fail_msg("%s", err);
    fake_engine_opts o = { .n_ctx = 512 };
    f->e = fake_engine_new(gg, &o, err, sizeof err);
    if (!f->e) fail_msg("%s", err);
    f->sep = one_token(f->e, SEP);
    assert_true(f->sep >= 0);
    const char *texts[] = { SEP };
    f->plain = json_vocab_new(f->e);
    f->marked = json_vocab_new_marked(f->e, &f->sep, texts, 1);
    assert_non_null(f->plain);
    assert_non_null(f->marked);
    f->allow = calloc((size_t)f->e->n_vocab, 1);
    assert_non_null(f->allow);
}

static void close_fixture(fixture *f)
{
    free(f->allow);
    json_vocab_free(f->plain);
    json_vocab_free(f->marked);
    fake_engine_free(f->e);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f->dir);
}

/* the mask's verdict on the token with this id (fill's return: whether it constrains at all) */
static bool allowed(fixture *f, json_mode *m, int32_t id)
{
    assert_true(m->mask.fill(m->mask.ud, f->allow, f->e->n_vocab));
    return f->allow[id] != 0;
}

static void leads_for(json_mode *m, const json_vocab *v)
{
    static const char *const LEADS[] = { "now" SEP, "get_weather" SEP };
    static const char *const SCHEMAS[] = {
        "{}", "{\"type\":\"object\",\"required\":[\"city\"],\"additionalProperties\":false,"
              "\"properties\":{\"city\":{\"type\":\"string\"}}}" };
    json_mode_init(m, v, NULL);
    assert_int_equal(json_mode_set_leads(m, LEADS, SCHEMAS, 2), 0);
    m->active = true;
}

static void test_leads(void **st)
{
    (void)st;
    fixture f = { 0 };
    open_fixture(&f);
    const int32_t n = piece_id(f.e, "n"), g = piece_id(f.e, "g"), x = piece_id(f.e, "x"),
                  open = piece_id(f.e, "{"), quote = piece_id(f.e, "\""), five = piece_id(f.e, "5");
    assert_true(n >= 0 && g >= 0 && x >= 0 && open >= 0 && quote >= 0 && five >= 0);
    json_mode m;
    /* the answer opens with a tool's name: n or g, not x; no turn end before the object closes */
    leads_for(&m, f.marked);
    assert_true(allowed(&f, &m, n));
    assert_true(allowed(&f, &m, g));
    assert_false(allowed(&f, &m, x));
    assert_false(allowed(&f, &m, f.sep));
    /* after the name, its marker: a control token, written only through the marked table */
    json_mode_feed(&m, "now", 3);
    assert_true(allowed(&f, &m, f.sep));
    assert_false(allowed(&f, &m, open));
    json_mode m0;
    leads_for(&m0, f.plain);
    json_mode_feed(&m0, "now", 3);
    assert_false(allowed(&f, &m0, f.sep));
    json_mode_free(&m0);
    /* then the arguments: an object (now's schema is any), closing it ends the answer */
    json_mode_feed(&m, SEP, strlen(SEP));
    assert_true(allowed(&f, &m, open));
    assert_false(allowed(&f, &m, f.sep));
    json_mode_feed(&m, "{}", 2);
    assert_true(m.mask.fill(m.mask.ud, f.allow, f.e->n_vocab));
    int n_allowed = 0;
    for (int32_t id = 0; id < f.e->n_vocab; id++) {
        if (!f.allow[id]) continue;
        assert_true(f.e->is_eog(f.e->self, id));
        n_allowed++;
    }
    assert_true(n_allowed > 0);
    json_mode_free(&m);
    /* get_weather's schema: its city must be a string */
    leads_for(&m, f.marked);
    json_mode_feed(&m, "get_weather" SEP "{\"city\": ", strlen("get_weather" SEP "{\"city\": "));
    assert_true(allowed(&f, &m, quote));
    assert_false(allowed(&f, &m, five));
    json_mode_free(&m);
    /* a name no tool has breaks the constraint (it came before it applied): no mask at all */
    leads_for(&m, f.marked);
    json_mode_feed(&m, "nope", 4);
    assert_true(m.broken);
    assert_false(m.mask.fill(m.mask.ud, f.allow, f.e->n_vocab));
    json_mode_free(&m);
    close_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
