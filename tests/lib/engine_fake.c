/* engine_fake.c: see engine_fake.h. */
#include "tests/lib/engine_fake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/gguf.h"
#include "runtime/tokenizer/tokenizer.h"

/* Word boundaries, punctuation, a repeated name and a non-ASCII word, so that
 * stop strings span tokens and byte-fallback tokens split UTF-8 sequences. */
static const char *const STORIES[FAKE_ENGINE_N_STORIES] = {
    "Once upon a time, there was a little dog named Spot. Spot liked to run in the "
    "park. One day, Spot saw a big red ball at the caf\xc3\xa9. The end.",
    "Lily had a blue kite. She ran up the hill and the kite went high in the sky. "
    "Lily was happy.",
    "Tom found a shiny rock. He showed it to his mom. She said it was pretty. Tom "
    "smiled.",
};

typedef struct fake_engine {
    engine     e;
    tokenizer *tok;
    int        delay_ms;
    char      *bos, *eos, *tmpl;
    int32_t   *script[FAKE_ENGINE_N_STORIES];
    size_t     n_script[FAKE_ENGINE_N_STORIES];
} fake_engine;

struct engine_session {
    const fake_engine *fe;
    int                story;
    size_t             pos, n_ctx_left;
    int                n_probs;
    engine_mask        mask; /* fill NULL: none */
    uint8_t           *allow;
};

const char *fake_engine_story(int i)
{
    return (i >= 0 && i < FAKE_ENGINE_N_STORIES) ? STORIES[i] : NULL;
}

int fake_engine_story_for(float temperature, unsigned long long seed)
{
    return temperature > 0 ? (int)(seed % FAKE_ENGINE_N_STORIES) : 0;
}

static int fk_tokenize(void *self, const char *text, size_t len, bool add_special,
                       int32_t **ids, size_t *n)
{
    fake_engine *fe = self;
    return tokenizer_encode(fe->tok, text, len, add_special, true, ids, n);
}

static int fk_piece(void *self, int32_t id, char *buf, size_t bufsz)
{
    fake_engine *fe = self;
    return tokenizer_piece(fe->tok, id, false, buf, bufsz);
}

static bool fk_is_eog(void *self, int32_t id)
{
    fake_engine *fe = self;
    return id == tokenizer_eos(fe->tok);
}

static engine_session *fk_begin(void *self, const int32_t *prompt, size_t n_prompt,
                                const engine_sampling *s, char *err, size_t errlen)
{
    fake_engine *fe = self;
    (void)prompt;
    if (n_prompt >= (size_t)fe->e.n_ctx) {
        snprintf(err, errlen, "fake engine: prompt of %zu tokens fills the %d-token context",
                 n_prompt, fe->e.n_ctx);
        return NULL;
    }
    engine_session *ss = calloc(1, sizeof *ss);
    if (!ss) { snprintf(err, errlen, "fake engine: out of memory"); return NULL; }
    ss->fe = fe;
    ss->story = fake_engine_story_for(s->temperature, (unsigned long long)s->seed);
    ss->n_ctx_left = (size_t)fe->e.n_ctx - n_prompt;
    ss->n_probs = s->n_probs;
    if (s->mask) {
        ss->mask = *s->mask;
        ss->allow = malloc((size_t)fe->e.n_vocab);
        if (!ss->allow) { free(ss); snprintf(err, errlen, "fake engine: out of memory"); return NULL; }
    }
    return ss;
}

static int fk_step(engine_session *s, engine_token *out)
{
    const fake_engine *fe = s->fe;
    if (fe->delay_ms > 0) {
        struct timespec ts = { fe->delay_ms / 1000, (long)(fe->delay_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (s->n_ctx_left == 0) return -1; /* the server must never ask past the context */
    s->n_ctx_left--;
    int32_t id = s->pos < fe->n_script[s->story] ? fe->script[s->story][s->pos]
                                                 : tokenizer_eos(fe->tok);
    s->pos++;
    /* a constraint: the script's token when it may come, else the lowest id that may */
    if (s->mask.fill && s->mask.fill(s->mask.ud, s->allow, fe->e.n_vocab) && (id < 0 || !s->allow[id])) {
        int32_t k = 0;
        while (k < fe->e.n_vocab && !s->allow[k]) k++;
        if (k < fe->e.n_vocab) id = k;
    }
    memset(out, 0, sizeof *out);
    out->id = id;
    out->logprob = -0.125f * (float)(s->pos % 5);
    int32_t nv = tokenizer_n_vocab(fe->tok);
    out->n_top = s->n_probs;
    for (int j = 0; j < s->n_probs; j++) {
        out->top_id[j] = j == 0 ? id : (int32_t)((id + j) % nv);
        out->top_logprob[j] = out->logprob - (float)j;
    }
    return 0;
}

static void fk_end(engine_session *s)
{
    if (s) free(s->allow);
    free(s);
}

static char *piece_dup(const tokenizer *t, int32_t id)
{
    if (id < 0) return strdup("");
    char buf[256];
    int n = tokenizer_piece(t, id, true, buf, sizeof buf);
    if (n < 0 || (size_t)n >= sizeof buf) return strdup("");
    buf[n] = 0;
    return strdup(buf);
}

void fake_engine_free(engine *e)
{
    if (!e) return;
    fake_engine *fe = e->self;
    tokenizer_free(fe->tok);
    for (int i = 0; i < FAKE_ENGINE_N_STORIES; i++) free(fe->script[i]);
    free(fe->bos);
    free(fe->eos);
    free(fe->tmpl);
    free(fe);
}

engine *fake_engine_new(const char *gguf_path, const fake_engine_opts *o, char *err, size_t errlen)
{
    gguf_file *f = gguf_open(gguf_path, err, errlen);
    if (!f) return NULL;
    tokenizer *tok = tokenizer_load(f, err, errlen);
    gguf_close(f);
    if (!tok) return NULL;
    fake_engine *fe = calloc(1, sizeof *fe);
    if (!fe) { tokenizer_free(tok); snprintf(err, errlen, "fake engine: out of memory"); return NULL; }
    fe->tok = tok;
    fe->delay_ms = o ? o->delay_ms : 0;
    fe->bos = piece_dup(tok, tokenizer_bos(tok));
    fe->eos = piece_dup(tok, tokenizer_eos(tok));
    fe->tmpl = (o && o->chat_template) ? strdup(o->chat_template) : NULL;
    bool ok = fe->bos && fe->eos && (!o || !o->chat_template || fe->tmpl);
    for (int i = 0; ok && i < FAKE_ENGINE_N_STORIES; i++) {
        const bool own = (i == 0 || (o && o->script_always)) && o && o->script;
        const char *text = own ? o->script : STORIES[i];
        ok = tokenizer_encode(tok, text, strlen(text), false, own, &fe->script[i], &fe->n_script[i]) == 0;
    }
    fe->e = (engine){
        .self = fe, .name = "strata-fake", .n_ctx = (o && o->n_ctx > 0) ? o->n_ctx : 512,
        .chat_template = fe->tmpl, .bos_text = fe->bos, .eos_text = fe->eos, .n_vocab = tokenizer_n_vocab(tok),
        .tokenize = fk_tokenize, .piece = fk_piece, .is_eog = fk_is_eog,
        .begin = fk_begin, .step = fk_step, .end = fk_end,
    };
    if (!ok) {
        snprintf(err, errlen, "%s: fake engine: cannot prepare its script", gguf_path);
        fake_engine_free(&fe->e);
        return NULL;
    }
    return &fe->e;
}
