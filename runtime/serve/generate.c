/* generate.c: see generate.h. */
#include "runtime/serve/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/chat/json_mode.h"
#include "runtime/serve/stop_match.h"
#include "runtime/util/strbuf.h"
#include "runtime/util/utf8.h"

struct gen {
    const engine   *e;
    engine_session *s;
    gen_params      p;
    strbuf          text;      /* everything generated, raw bytes */
    size_t          released;  /* bytes of text handed out */
    char           *out;       /* the last delta, sanitised */
    gen_token      *toks;
    size_t          n_toks, cap_toks, taken;
    gen_finish      fin;
    int             stop_idx;
    double          t_prev;
    size_t          n_sampled; /* every token counted, released or not (reasoning, harmony's markers) */
    strbuf          reasoning; /* the analysis channel's text, or what came before </think> */
    size_t          r_taken;   /* bytes of it handed out */
    char           *r_out;     /* the last reasoning delta, sanitised */
    gen_harmony     h;
    bool            h_on, h_body, h_visible, h_in_channel, h_reasoning;
    strbuf          h_channel; /* the channel name being read in a header */
    strbuf          h_head;    /* the whole header's text (its recipient: " to=functions.NAME") */
    bool            h_call;    /* this message's body is a function call's arguments */
    gen_call       *calls;     /* harmony: the function calls made */
    size_t          n_calls;
    int             th_state;  /* think: 0 undecided, 1 reasoning, 2 content */
    bool            th_trim;   /* think: after </think>, blanks dropped until the content's first byte */
    strbuf          th_head;   /* think, undecided: the answer's first bytes */
    strbuf          piece;     /* think: one token's text */
    json_mode       json;      /* JSON mode (p.json_vocab): the answer held to an object */
    js_schema      *schema;    /* p.json_schema compiled, owned */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

gen *gen_begin(const engine *e, const int32_t *prompt, size_t n_prompt, const gen_params *p,
               char *err, size_t errlen)
{
    gen *g = calloc(1, sizeof *g);
    if (!g) { snprintf(err, errlen, "out of memory"); return NULL; }
    g->e = e;
    g->p = *p;
    g->stop_idx = -1;
    g->t_prev = now_s();
    if (p->harmony) { g->h = *p->harmony; g->h_on = true; }
    g->th_state = p->harmony || p->think == GEN_THINK_OFF ? 2 : p->think == GEN_THINK_OPEN ? 1 : 0;
    engine_sampling sp = p->sampling;
    if (p->json_vocab && !p->harmony) {
        /* from the answer's start, or (reasoning first) once </think> has come */
        if (p->json_schema && !(g->schema = js_compile(p->json_schema, err, errlen))) { free(g); return NULL; }
        json_mode_init(&g->json, p->json_vocab, g->schema);
        g->json.leads_only = p->json_leads_only;
        if (p->n_json_leads && json_mode_set_leads(&g->json, p->json_leads, p->json_lead_schemas, p->n_json_leads)) {
            snprintf(err, errlen, "out of memory");
            json_mode_free(&g->json);
            js_free(g->schema);
            free(g);
            return NULL;
        }
        if (g->th_state == 0) g->th_state = 2; /* the answer is JSON from its first byte: no <think> can open it */
        g->json.active = g->th_state != 1;
        sp.mask = &g->json.mask;
    }
    g->s = e->begin(e->self, prompt, n_prompt, &sp, err, errlen);
    if (!g->s) { json_mode_free(&g->json); js_free(g->schema); free(g); return NULL; }
    return g;
}

static int append_piece(gen *g, int32_t id, strbuf *to)
{
    for (size_t i = 0; i < g->p.n_kept; i++)
        if (g->p.kept[i].id == id) { strbuf_puts(to, g->p.kept[i].text); return 0; }
    char small[128];
    int n = g->e->piece(g->e->self, id, small, sizeof small);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) { strbuf_add(to, small, (size_t)n); return 0; }
    char *big = malloc((size_t)n + 1);
    if (!big) return -1;
    int m = g->e->piece(g->e->self, id, big, (size_t)n + 1);
    if (m == n) strbuf_add(to, big, (size_t)n);
    free(big);
    return m == n ? 0 : -1;
}

static int push_token(gen *g, const engine_token *t, size_t offset)
{
    if (g->n_toks == g->cap_toks) {
        size_t cap = g->cap_toks ? g->cap_toks * 2 : 32;
        gen_token *nt = realloc(g->toks, cap * sizeof *nt);
        if (!nt) return -1;
        g->toks = nt;
        g->cap_toks = cap;
    }
    g->toks[g->n_toks++] = (gen_token){ .t = *t, .offset = offset };
    return 0;
}

/* Harmony: a header addressed " to=functions.NAME" (before or after its
 * channel) makes the message's body a call of NAME. */
static void start_call(gen *g)
{
    static const char TO[] = "to=functions.";
    const char *h = g->h_head.data, *end = h ? h + g->h_head.len : NULL, *p = NULL;
    for (const char *q = h; q && q + sizeof TO - 1 <= end; q++)
        if (!memcmp(q, TO, sizeof TO - 1) && (q == h || q[-1] == ' ')) { p = q + sizeof TO - 1; break; }
    if (!p) return;
    size_t n = 0;
    while (p + n < end && p[n] != ' ' && p[n] != '\n' && p[n] != '<') n++;
    gen_call *c = n ? realloc(g->calls, (g->n_calls + 1) * sizeof *c) : NULL;
    char *name = c ? malloc(n + 1) : NULL;
    if (c) g->calls = c;
    if (!name) return;
    memcpy(name, p, n);
    name[n] = 0;
    g->calls[g->n_calls++] = (gen_call){ .name = name };
    g->h_call = true;
}

/* Harmony: moves the framing state on by token id; true when the token's
 * text is not to be released (a marker, a header, a hidden channel). A
 * header's text after <|channel|> is the channel's name: "final" (after
 * any spaces, up to a space or the end) is shown, as is a message with no
 * channel. */
static bool harmony_hides(gen *g, int32_t id)
{
    const gen_harmony *h = &g->h;
    if (id == h->start || id == h->end) {
        g->h_body = g->h_visible = g->h_in_channel = g->h_reasoning = g->h_call = false;
        g->h_head.len = 0;
        return true;
    }
    if (id == h->channel || id == h->constrain) {
        /* the marker parts the header's words: "to=functions.f<|channel|>commentary" */
        if (!g->h_body && g->h_head.len < 256) strbuf_add(&g->h_head, "\n", 1);
        g->h_in_channel = id == h->channel;
        if (g->h_in_channel) g->h_channel.len = 0;
        return true;
    }
    if (id == h->message) {
        const char *c = g->h_channel.data ? g->h_channel.data : "";
        size_t n = g->h_channel.len;
        while (n > 0 && *c == ' ') { c++; n--; } /* a vocabulary that spells the name with a space */
        g->h_visible = n == 0 || (n >= 5 && !strncmp(c, "final", 5) && (n == 5 || c[5] == ' '));
        g->h_reasoning = n >= 8 && !strncmp(c, "analysis", 8) && (n == 8 || c[8] == ' ');
        g->h_body = true;
        g->h_channel.len = 0;
        start_call(g);
        g->h_head.len = 0;
        return true;
    }
    if (g->h_body) {
        if (g->h_reasoning) append_piece(g, id, &g->reasoning);
        if (g->h_call) append_piece(g, id, &g->calls[g->n_calls - 1].args);
        return !g->h_visible;
    }
    if (g->h_in_channel && g->h_channel.len < 64) append_piece(g, id, &g->h_channel); /* a header: its name */
    if (g->h_head.len < 256) append_piece(g, id, &g->h_head);
    return true;
}

static const char THINK_OPEN[] = "<think>", THINK_CLOSE[] = "</think>";

static size_t skip_ws(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    return i;
}

/* Content from think's reasoning or undecided head: leading whitespace
 * dropped until the first other byte. */
static void think_content(gen *g, const char *s, size_t n)
{
    if (g->text.len == 0) { size_t k = skip_ws(s, n); s += k; n -= k; }
    strbuf_add(&g->text, s, n);
}

/* Reasoning text: appended, and at </think> the rest becomes content. */
static void think_reason(gen *g, const char *s, size_t n)
{
    const size_t from = g->reasoning.len > 7 ? g->reasoning.len - 7 : 0;
    if (g->reasoning.len == 0) { size_t k = skip_ws(s, n); s += k; n -= k; }
    strbuf_add(&g->reasoning, s, n);
    if (g->reasoning.oom || !g->reasoning.len) return;
    const char *r = g->reasoning.data, *end = strstr(r + from, THINK_CLOSE);
    if (!end) return;
    const size_t after = (size_t)(end - r) + sizeof THINK_CLOSE - 1;
    size_t at = (size_t)(end - r);
    /* blanks before </think> end neither part (reasoning_ready held them back) */
    while (at > g->r_taken && skip_ws(r + at - 1, 1)) at--;
    g->th_state = 2;
    g->th_trim = true;
    think_content(g, r + after, g->reasoning.len - after);
    if (g->text.len) g->th_trim = false;
    g->reasoning.len = at;
    if (g->reasoning.data) g->reasoning.data[at] = 0;
}

/* The undecided head: reasoning if it opens with <think>, else content. */
static void think_head(gen *g, bool final)
{
    const char *h = g->th_head.data ? g->th_head.data : "";
    const size_t n = g->th_head.len, k = skip_ws(h, n), open = sizeof THINK_OPEN - 1;
    if (n - k >= open && !memcmp(h + k, THINK_OPEN, open)) {
        g->th_state = 1;
        think_reason(g, h + k + open, n - k - open);
    } else if (final || n - k >= open || memcmp(h + k, THINK_OPEN, n - k)) {
        g->th_state = 2;
        strbuf_add(&g->text, h, n);
    } else {
        return; /* still a prefix of <think> */
    }
    g->th_head.len = 0;
}

/* One token's text through think's states; its content goes to g->text. */
static int think_route(gen *g, int32_t id)
{
    g->piece.len = 0;
    if (append_piece(g, id, &g->piece) != 0) return -1;
    const char *s = g->piece.data ? g->piece.data : "";
    if (g->th_state == 0) {
        strbuf_add(&g->th_head, s, g->piece.len);
        think_head(g, false);
    } else if (g->th_state == 1) {
        think_reason(g, s, g->piece.len);
    } else { /* content, its leading blanks still being dropped */
        think_content(g, s, g->piece.len);
        if (g->text.len) g->th_trim = false;
    }
    return g->piece.oom || g->th_head.oom || g->reasoning.oom ? -1 : 0;
}

/* JSON mode follows the answer's text from offset on; it applies once the reasoning has ended. */
static void json_follow(gen *g, size_t offset)
{
    if (!g->json.v) return;
    if (g->text.len > offset) json_mode_feed(&g->json, g->text.data + offset, g->text.len - offset);
    if (g->th_state == 2) g->json.active = true;
}

/* Samples one token; returns a finish state or GEN_RUNNING. */
static gen_finish step(gen *g)
{
    if ((int)g->n_sampled >= g->p.max_tokens) return GEN_LENGTH;
    if (g->p.cancel && atomic_load(g->p.cancel)) return GEN_CANCELLED;
    engine_token t;
    if (g->e->step(g->s, &t) != 0) return GEN_ERROR;
    double now = now_s();
    if (g->p.on_token) g->p.on_token(g->p.ud, now - g->t_prev, g->n_sampled == 0);
    g->t_prev = now;
    if (g->e->is_eog(g->e->self, t.id)) return GEN_EOS;
    g->n_sampled++;
    if (g->h_on && harmony_hides(g, t.id))
        return g->h_channel.oom || g->reasoning.oom || g->h_head.oom || (g->n_calls && g->calls[g->n_calls - 1].args.oom)
                   ? GEN_ERROR : GEN_RUNNING;
    size_t offset = g->text.len;
    if (g->th_state != 2 || g->th_trim) {
        /* think: the token's record only when some of its text is content */
        if (think_route(g, t.id) != 0 || g->text.oom) return GEN_ERROR;
        if (g->text.len > offset && push_token(g, &t, offset) != 0) return GEN_ERROR;
        json_follow(g, offset);
        return GEN_RUNNING;
    }
    if (append_piece(g, t.id, &g->text) != 0 || push_token(g, &t, offset) != 0 || g->text.oom)
        return GEN_ERROR;
    json_follow(g, offset);
    return GEN_RUNNING;
}

/* Reasoning bytes that can be handed out: all of it once generation has
 * ended, else up to an incomplete UTF-8 character at the end, or (think)
 * up to what may be the start of </think>. */
static size_t reasoning_ready(const gen *g)
{
    const size_t len = g->reasoning.len;
    if (g->fin != GEN_RUNNING || !len) return len;
    size_t hold = utf8_incomplete_tail(g->reasoning.data, len);
    if (g->th_state == 1) {
        for (size_t k = sizeof THINK_CLOSE - 2; k > hold; k--)
            if (k <= len && !memcmp(g->reasoning.data + len - k, THINK_CLOSE, k)) { hold = k; break; }
        /* and the blanks before it: they go if </think> follows */
        while (hold < len && skip_ws(g->reasoning.data + len - hold - 1, 1)) hold++;
    }
    return len - hold;
}

const char *gen_take_reasoning(gen *g, size_t *n)
{
    free(g->r_out);
    g->r_out = NULL;
    *n = 0;
    const size_t ready = reasoning_ready(g);
    if (ready <= g->r_taken) return "";
    g->r_out = utf8_sanitize(g->reasoning.data + g->r_taken, ready - g->r_taken, n);
    if (!g->r_out) { *n = 0; return ""; }
    g->r_taken = ready;
    return g->r_out;
}

gen_finish gen_next(gen *g, const char **delta, size_t *n)
{
    free(g->out);
    g->out = NULL;
    *delta = "";
    *n = 0;
    if (g->fin != GEN_RUNNING) return g->fin;
    size_t rel;
    for (;;) {
        gen_finish f = step(g);
        if (f != GEN_RUNNING && g->th_state == 0) think_head(g, true); /* ended undecided: it was content */
        const char *pending = g->text.data ? g->text.data + g->released : "";
        size_t plen = g->text.len - g->released;
        int matched;
        rel = stop_match(pending, plen, g->p.stops, g->p.n_stops, f != GEN_RUNNING, &matched);
        if (matched >= 0) { g->stop_idx = matched; f = GEN_STOP; }
        g->fin = f;
        if (f != GEN_RUNNING || rel > 0 || reasoning_ready(g) > g->r_taken) break;
    }
    if (rel > 0) {
        g->out = utf8_sanitize(g->text.data + g->released, rel, n);
        if (!g->out) { g->fin = GEN_ERROR; *n = 0; return g->fin; }
        *delta = g->out;
        g->released += rel;
    }
    return g->fin;
}

const gen_token *gen_take_tokens(gen *g, size_t *n)
{
    size_t from = g->taken, to = from;
    /* a token whose text starts inside the released part is released; once
     * generation has ended, tokens inside a stop string never are */
    while (to < g->n_toks && (g->toks[to].offset < g->released ||
                              (g->fin != GEN_RUNNING && g->fin != GEN_STOP &&
                               g->toks[to].offset <= g->released)))
        to++;
    g->taken = to;
    *n = to - from;
    return g->toks ? g->toks + from : NULL;
}

size_t gen_n_tokens(const gen *g) { return g->n_sampled; }
bool gen_finished(const gen *g) { return g->fin != GEN_RUNNING; }
size_t gen_n_cached(const gen *g) { return g->e->cached ? g->e->cached(g->s) : 0; }

const gen_call *gen_calls(const gen *g, size_t *n)
{
    *n = g->n_calls;
    return g->calls;
}
int gen_stop_index(const gen *g) { return g->stop_idx; }

void gen_end(gen *g)
{
    if (!g) return;
    g->e->end(g->s);
    strbuf_free(&g->text);
    strbuf_free(&g->h_channel);
    strbuf_free(&g->h_head);
    for (size_t i = 0; i < g->n_calls; i++) {
        free(g->calls[i].name);
        strbuf_free(&g->calls[i].args);
    }
    free(g->calls);
    strbuf_free(&g->reasoning);
    strbuf_free(&g->th_head);
    strbuf_free(&g->piece);
    free(g->r_out);
    free(g->out);
    json_mode_free(&g->json);
    js_free(g->schema);
    free(g->toks);
    free(g);
}
