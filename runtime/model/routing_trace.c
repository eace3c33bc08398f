/* routing_trace.c: the routing trace (routing_trace.h): recording, the
 * text file both ways, and its counts as a routing profile. */
#include "runtime/model/routing_trace.h"

#include "formats/fileio.h"
#include "runtime/util/strbuf.h"
#include "runtime/util/textcur.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_LAYERS  4096
#define TRACE_MAX_EXPERTS 65536
#define TRACE_MAX_ROW     (1 << 16)              /* layers x used: 256 KiB a token */
#define TRACE_MAX_ENTRIES ((uint64_t)1 << 28)    /* tokens x layers x used: 1 GiB of rows */
#define TRACE_MAX_FILE    ((size_t)1 << 30)

int routing_trace_init(routing_trace *t, int n_layer, int n_expert, int n_used, const bool *routed, char *err,
                       size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (n_layer < 1 || n_layer > TRACE_MAX_LAYERS || n_expert < 1 || n_expert > TRACE_MAX_EXPERTS || n_used < 1 ||
        n_used > n_expert || (int64_t)n_layer * n_used > TRACE_MAX_ROW)
        return err_printf(err, errlen, "routing trace: shape %d layers x %d experts, %d used is out of range", n_layer,
                          n_expert, n_used);
    int any = 0;
    for (int l = 0; l < n_layer; l++) any |= !routed || routed[l];
    if (!any) return err_printf(err, errlen, "routing trace: none of the %d layers routes to experts", n_layer);
    t->routed = malloc((size_t)n_layer * sizeof *t->routed);
    t->next = calloc((size_t)n_layer, sizeof *t->next);
    if (!t->routed || !t->next) { routing_trace_free(t); return err_printf(err, errlen, "routing trace: out of memory"); }
    for (int l = 0; l < n_layer; l++) t->routed[l] = !routed || routed[l];
    t->n_layer = n_layer;
    t->n_expert = n_expert;
    t->n_used = n_used;
    return 0;
}

void routing_trace_free(routing_trace *t)
{
    free(t->routed);
    free(t->ex);
    free(t->next);
    memset(t, 0, sizeof *t);
}

/* Room for `rows` rows; new rows hold -1 (the layers that do not route keep it). */
static int grow(routing_trace *t, uint64_t rows, char *err, size_t errlen)
{
    const uint64_t per = (uint64_t)t->n_layer * (uint64_t)t->n_used, most = TRACE_MAX_ENTRIES / per;
    if (rows > most)
        return err_printf(err, errlen, "routing trace: more than %llu tokens of %d layers x %d experts used",
                          (unsigned long long)most, t->n_layer, t->n_used);
    uint64_t cap = t->cap < 64 ? 64 : t->cap * 2;
    if (cap < rows) cap = rows;
    if (cap > most) cap = most;
    int32_t *ex = realloc(t->ex, (size_t)(cap * per) * sizeof *ex);
    if (!ex) return err_printf(err, errlen, "routing trace: out of memory for %llu tokens", (unsigned long long)cap);
    memset(ex + t->cap * per, 0xff, (size_t)((cap - t->cap) * per) * sizeof *ex);
    t->ex = ex;
    t->cap = cap;
    return 0;
}

/* One token's experts at one layer: in range and each once. */
static int check_experts(const routing_trace *t, int layer, const int32_t *experts, int n, char *err, size_t errlen)
{
    if (n != t->n_used)
        return err_printf(err, errlen, "routing trace: %d experts routed at layer %d, the trace records %d", n, layer,
                          t->n_used);
    for (int i = 0; i < n; i++) {
        if (experts[i] < 0 || experts[i] >= t->n_expert)
            return err_printf(err, errlen, "routing trace: layer %d: expert %d of %d", layer, (int)experts[i], t->n_expert);
        for (int j = 0; j < i; j++)
            if (experts[j] == experts[i])
                return err_printf(err, errlen, "routing trace: layer %d: expert %d routed twice in one token", layer,
                                  (int)experts[i]);
    }
    return 0;
}

int routing_trace_observe(routing_trace *t, int layer, const int32_t *experts, int n, char *err, size_t errlen)
{
    if (layer < 0 || layer >= t->n_layer)
        return err_printf(err, errlen, "routing trace: layer %d of %d", layer, t->n_layer);
    if (!t->routed[layer]) return err_printf(err, errlen, "routing trace: layer %d does not route to experts", layer);
    if (check_experts(t, layer, experts, n, err, errlen)) return -1;
    const uint64_t row = t->next[layer];
    if (row >= t->cap && grow(t, row + 1, err, errlen)) return -1;
    memcpy(t->ex + (row * (uint64_t)t->n_layer + (uint64_t)layer) * (uint64_t)t->n_used, experts,
           (size_t)n * sizeof *experts);
    t->next[layer] = row + 1;
    uint64_t done = UINT64_MAX;
    for (int l = 0; l < t->n_layer; l++)
        if (t->routed[l] && t->next[l] < done) done = t->next[l];
    t->n_tokens = done;
    return 0;
}

/* ------------------------------------------------------------------ file */

int routing_trace_save(const routing_trace *t, const char *path, char *err, size_t errlen)
{
    atomic_out o;
    if (atomic_out_open(&o, path, err, errlen)) return -1;
    fprintf(o.fp, "%s %d layers %d experts %d used %d tokens %llu\n", ROUTING_TRACE_MAGIC, ROUTING_TRACE_VERSION,
            t->n_layer, t->n_expert, t->n_used, (unsigned long long)t->n_tokens);
    for (uint64_t i = 0; i < t->n_tokens; i++) {
        for (int l = 0; l < t->n_layer; l++) {
            if (l) fputc(' ', o.fp);
            if (!t->routed[l]) { fputc('-', o.fp); continue; }
            const int32_t *e = routing_trace_at(t, i, l);
            for (int k = 0; k < t->n_used; k++) fprintf(o.fp, k ? ",%d" : "%d", (int)e[k]);
        }
        fputc('\n', o.fp);
    }
    return atomic_out_commit(&o, err, errlen);
}

/* One token's group at layer l of line `first`'s shape: "-" for a layer
 * that does not route, else n_used experts joined by ','. The first token
 * line says which layers route; every later line must agree. */
static int parse_group(routing_trace *t, textcur *c, uint64_t tok, int l, int32_t *out)
{
    const char *w;
    size_t n;
    if (tc_word(c, &w, &n))
        return tc_fail(c, "missing layer %d's experts (a token line holds %d layers)", l, t->n_layer);
    const bool dash = n == 1 && w[0] == '-';
    if (tok == 0) t->routed[l] = !dash;
    else if (dash != !t->routed[l])
        return tc_fail(c, "layer %d is %s here, but %s on the first token line", l, dash ? "'-'" : "routed",
                       dash ? "routed" : "'-'");
    if (dash) return 0;
    const char *p = w, *end = w + n;
    int k = 0;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *q = comma ? comma : end;
        uint64_t v;
        if (k == t->n_used)
            return tc_fail(c, "layer %d: more than %d experts (the header says %d used)", l, t->n_used, t->n_used);
        if (tc_num(c, p, (size_t)(q - p), "expert", UINT32_MAX, &v)) return -1;
        if (v >= (uint64_t)t->n_expert)
            return tc_fail(c, "layer %d: expert %llu of %d (experts are 0..%d)", l, (unsigned long long)v, t->n_expert,
                           t->n_expert - 1);
        for (int j = 0; j < k; j++)
            if (out[j] == (int32_t)v) return tc_fail(c, "layer %d: expert %llu twice in one token", l, (unsigned long long)v);
        out[k++] = (int32_t)v;
        if (!comma) break;
        p = comma + 1;
    }
    if (k != t->n_used) return tc_fail(c, "layer %d: %d experts, the header says %d used", l, k, t->n_used);
    return 0;
}

int routing_trace_parse(routing_trace *t, const char *text, size_t len, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    textcur c;
    tc_init(&c, text, len, path, "truncated: the file is empty", err, errlen);
    const char *w;
    size_t n;
    uint64_t ver, nl, ne, nu, nt;
    if (tc_line(&c)) return -1;
    if (tc_word(&c, &w, &n) || n != strlen(ROUTING_TRACE_MAGIC) || memcmp(w, ROUTING_TRACE_MAGIC, n))
        return tc_fail(&c, "not a strata routing trace (the first line must begin '%s %d')", ROUTING_TRACE_MAGIC,
                       ROUTING_TRACE_VERSION);
    if (tc_u64(&c, "version", UINT32_MAX, &ver)) return -1;
    if (ver != ROUTING_TRACE_VERSION)
        return tc_fail(&c, "version %llu: this strata reads version %d", (unsigned long long)ver, ROUTING_TRACE_VERSION);
    if (tc_keyword(&c, "layers") || tc_u64(&c, "layer count", TRACE_MAX_LAYERS, &nl) || tc_keyword(&c, "experts") ||
        tc_u64(&c, "expert count", TRACE_MAX_EXPERTS, &ne) || tc_keyword(&c, "used") ||
        tc_u64(&c, "experts used", TRACE_MAX_EXPERTS, &nu) || tc_keyword(&c, "tokens") ||
        tc_u64(&c, "token count", TRACE_MAX_ENTRIES, &nt) || tc_eol(&c))
        return -1;
    if (nl < 1 || ne < 1 || nu < 1 || nu > ne)
        return tc_fail(&c, "%llu layers of %llu experts with %llu used is impossible", (unsigned long long)nl,
                       (unsigned long long)ne, (unsigned long long)nu);
    if (nl * nu > TRACE_MAX_ROW)
        return tc_fail(&c, "%llu layers x %llu experts used is above the limit of %d a token", (unsigned long long)nl,
                       (unsigned long long)nu, TRACE_MAX_ROW);
    if (nt * nl * nu > TRACE_MAX_ENTRIES)
        return tc_fail(&c, "%llu tokens x %llu layers x %llu used is above the limit of %llu entries",
                       (unsigned long long)nt, (unsigned long long)nl, (unsigned long long)nu,
                       (unsigned long long)TRACE_MAX_ENTRIES);
    /* every layer's group takes a byte at least ("-" or an expert): a header
     * promising more than the text could hold is refused before the rows
     * are allocated */
    if (nt * nl > (uint64_t)len)
        return tc_fail(&c, "truncated: the header promises %llu tokens of %llu layers, more than %zu bytes can hold",
                       (unsigned long long)nt, (unsigned long long)nl, len);
    if (routing_trace_init(t, (int)nl, (int)ne, (int)nu, NULL, err, errlen)) return -1;
    for (uint64_t i = 0; i < nt; i++) {
        if (c.s >= c.end) {
            c.line++;
            tc_fail(&c, "truncated: the header promises %llu tokens, the file ends after %llu", (unsigned long long)nt,
                    (unsigned long long)i);
            goto bad;
        }
        /* rows grow with the lines read, not with the header's promise */
        if (tc_line(&c) || (i >= t->cap && grow(t, i + 1, err, errlen))) goto bad;
        for (int l = 0; l < t->n_layer; l++)
            if (parse_group(t, &c, i, l, t->ex + (i * nl + (uint64_t)l) * nu)) goto bad;
        if (tc_eol(&c)) goto bad;
        if (i == 0) {
            int any = 0;
            for (int l = 0; l < t->n_layer; l++) any |= t->routed[l];
            if (!any) { tc_fail(&c, "no layer routes to experts (every group is '-')"); goto bad; }
        }
    }
    char tail[96];
    snprintf(tail, sizeof tail, "text after the %llu token lines the header promises", (unsigned long long)nt);
    if (tc_tail(&c, tail)) goto bad;
    for (int l = 0; l < t->n_layer; l++) t->next[l] = nt;
    t->n_tokens = nt;
    return 0;
bad:
    routing_trace_free(t);
    return -1;
}

int routing_trace_load(routing_trace *t, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    char *buf;
    size_t n;
    if (tc_slurp(path, TRACE_MAX_FILE, "a routing trace", &buf, &n, err, errlen)) return -1;
    int rc = routing_trace_parse(t, buf, n, path, err, errlen);
    free(buf);
    return rc;
}

int routing_trace_profile(const routing_trace *t, ec_profile *p, char *err, size_t errlen)
{
    if (ec_profile_init(p, t->n_layer, t->n_expert, t->n_used, err, errlen)) return -1;
    p->tokens = t->n_tokens;
    for (uint64_t i = 0; i < t->n_tokens; i++)
        for (int l = 0; l < t->n_layer; l++) {
            if (!t->routed[l]) continue;
            const int32_t *e = routing_trace_at(t, i, l);
            for (int k = 0; k < t->n_used; k++) p->count[(size_t)l * (size_t)t->n_expert + (size_t)e[k]]++;
        }
    return 0;
}
