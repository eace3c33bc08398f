/* json_mode.c: see json_mode.h. */
#include "runtime/chat/json_mode.h"

#include <stdlib.h>
#include <string.h>

struct json_vocab {
    int       n;
    char     *text;   /* every token's piece, one after another */
    uint32_t *start;  /* n + 1 offsets into text */
    uint8_t  *eog;
};

void json_vocab_free(json_vocab *v)
{
    if (!v) return;
    free(v->text);
    free(v->start);
    free(v->eog);
    free(v);
}

json_vocab *json_vocab_new(const engine *e) { return json_vocab_new_marked(e, NULL, NULL, 0); }

json_vocab *json_vocab_new_marked(const engine *e, const int32_t *ids, const char *const *texts, size_t n_marked)
{
    json_vocab *v = calloc(1, sizeof *v);
    if (!v || e->n_vocab <= 0) { free(v); return NULL; }
    v->n = e->n_vocab;
    v->start = malloc(((size_t)v->n + 1) * sizeof *v->start);
    v->eog = malloc((size_t)v->n);
    size_t cap = (size_t)v->n * 8 + 64, len = 0;
    v->text = malloc(cap);
    if (!v->start || !v->eog || !v->text) { json_vocab_free(v); return NULL; }
    for (int id = 0; id < v->n; id++) {
        v->start[id] = (uint32_t)len;
        v->eog[id] = e->is_eog(e->self, id);
        char buf[256];
        int k = e->piece(e->self, id, buf, sizeof buf);
        if (k < 0 || k >= (int)sizeof buf) k = 0; /* no text, or too long to matter: never allowed */
        for (size_t j = 0; j < n_marked; j++) {
            size_t tl = strlen(texts[j]);
            if (ids[j] == id && tl < sizeof buf) { memcpy(buf, texts[j], tl); k = (int)tl; }
        }
        if (len + (size_t)k > cap) {
            cap = 2 * cap + (size_t)k;
            char *t = realloc(v->text, cap);
            if (!t) { json_vocab_free(v); return NULL; }
            v->text = t;
        }
        memcpy(v->text + len, buf, (size_t)k);
        len += (size_t)k;
    }
    v->start[v->n] = (uint32_t)len;
    return v;
}

/* Whether n bytes at t continue the object (under schema sch, or any object when NULL) from the given
 * states; NULL states: from the object's start (what follows a lead). */
static bool state_continues(const js_schema *sch, const js_prefix *ss, const json_prefix *js, const char *t,
                            size_t n)
{
    if (sch) {
        js_prefix p;
        if (ss) p = *ss;
        else js_prefix_init(&p, sch);
        return js_prefix_feed(&p, t, n);
    }
    json_prefix j;
    if (js) j = *js;
    else json_prefix_init(&j);
    return json_prefix_feed(&j, t, n);
}

/* While leading: whether the answer so far and t stay on one lead, or run past it into what may follow it. */
static bool lead_continues(const json_mode *m, const char *t, size_t n)
{
    const size_t have = m->lead_text.len;
    const char *so_far = m->lead_text.data ? m->lead_text.data : "";
    for (size_t i = 0; i < m->n_leads; i++) {
        const char *l = m->leads[i];
        const size_t ll = m->lead_len[i];
        if (have > ll || memcmp(l, so_far, have)) continue;
        if (have + n <= ll) {
            if (!memcmp(l + have, t, n)) return true;
        } else if (!memcmp(l + have, t, ll - have) &&
                   (m->leads_only ||
                    state_continues(m->lead_schema[i], NULL, NULL, t + (ll - have), n - (ll - have)))) {
            return true;
        }
    }
    return false;
}

/* Whether the text continues the answer so far. */
static bool continues(const json_mode *m, const char *t, size_t n)
{
    if (m->leading) return lead_continues(m, t, n);
    return state_continues(m->schema, &m->sstate, &m->state, t, n);
}

static bool done(const json_mode *m)
{
    if (m->leading) return false;
    return m->schema ? js_prefix_complete(&m->sstate) : json_prefix_complete(&m->state);
}

static bool fill(void *ud, uint8_t *allow, int n_vocab)
{
    json_mode *m = ud;
    if (!m->active || m->broken || m->released) return false;
    const json_vocab *v = m->v;
    const bool complete = done(m);
    /* most tokens fail on their first byte: which first bytes may come, once per step */
    uint8_t first[256];
    for (int c = 0; c < 256; c++) {
        const char b = (char)c;
        first[c] = !complete && continues(m, &b, 1);
    }
    for (int id = 0; id < n_vocab; id++) {
        if (id >= v->n) { allow[id] = 0; continue; }
        if (v->eog[id]) { allow[id] = complete; continue; }
        const uint32_t a = v->start[id], b = v->start[id + 1];
        if (b == a || !first[(unsigned char)v->text[a]]) { allow[id] = 0; continue; }
        allow[id] = b - a == 1 || continues(m, v->text + a, b - a);
    }
    return true;
}

void json_mode_init(json_mode *m, const json_vocab *v, const js_schema *schema)
{
    memset(m, 0, sizeof *m);
    m->v = v;
    m->schema = schema;
    json_prefix_init(&m->state);
    if (schema) js_prefix_init(&m->sstate, schema);
    m->mask = (engine_mask){ .fill = fill, .ud = m };
}

void json_mode_feed(json_mode *m, const char *s, size_t n)
{
    if (m->broken || m->released) return;
    if (m->leading) {
        strbuf_add(&m->lead_text, s, n);
        const char *t = m->lead_text.data ? m->lead_text.data : "";
        const size_t have = m->lead_text.len;
        bool on_one = false;
        for (size_t i = 0; i < m->n_leads && !m->lead_text.oom; i++) {
            const size_t ll = m->lead_len[i];
            if (memcmp(m->leads[i], t, have < ll ? have : ll)) continue;
            on_one = true;
            if (have < ll) continue;
            /* this lead is complete: what follows it is held to its schema from here on, or free */
            m->leading = false;
            if (m->leads_only) { m->released = true; return; }
            m->schema = m->lead_schema[i];
            if (m->schema) js_prefix_init(&m->sstate, m->schema);
            json_prefix_init(&m->state);
            json_mode_feed(m, t + ll, have - ll);
            return;
        }
        if (!on_one) m->broken = true;
        return;
    }
    if (m->schema ? !js_prefix_feed(&m->sstate, s, n) : !json_prefix_feed(&m->state, s, n)) m->broken = true;
}

int json_mode_set_leads(json_mode *m, const char *const *leads, const char *const *schemas, size_t n)
{
    m->leads = calloc(n + 1, sizeof *m->leads);
    m->lead_schema = calloc(n + 1, sizeof *m->lead_schema);
    m->lead_len = calloc(n + 1, sizeof *m->lead_len);
    if (!m->leads || !m->lead_schema || !m->lead_len) return -1;
    m->n_leads = n;
    for (size_t i = 0; i < n; i++) {
        if (!(m->leads[i] = strdup(leads[i]))) return -1;
        m->lead_len[i] = strlen(leads[i]);
        char err[200];
        m->lead_schema[i] = schemas && schemas[i] ? js_compile(schemas[i], err, sizeof err) : NULL;
    }
    m->leading = n > 0;
    return 0;
}

void json_mode_free(json_mode *m)
{
    for (size_t i = 0; i < m->n_leads; i++) {
        free(m->leads[i]);
        js_free(m->lead_schema[i]);
    }
    free(m->leads);
    free(m->lead_schema);
    free(m->lead_len);
    strbuf_free(&m->lead_text);
    m->leads = NULL;
    m->lead_schema = NULL;
    m->lead_len = NULL;
    m->n_leads = 0;
}
