/* expert_cache.c: the expert-cache policy (expert_cache.h): routing
 * profiles, slot sizing, decaying scores, eviction, miss decisions,
 * statistics, and the simulated device the tests drive it with. */
#include "runtime/device/expert_cache.h"

#include "runtime/util/strbuf.h"
#include "runtime/util/textcur.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EC_MAX_LAYERS  4096
#define EC_MAX_EXPERTS 65536
#define EC_MAX_TOTAL   (1 << 24)              /* layers * experts */
#define EC_MAX_TOKENS  ((uint64_t)1 << 48)    /* counts stay exact in a double */
#define EC_MAX_FILE    ((size_t)256 << 20)

/* ================================================================ sim device */

static int sim_alloc(void *ctx, int n_slots, size_t slot_bytes, char *err, size_t errlen)
{
    ec_sim *s = ctx;
    free(s->resident);
    free(s->pending);
    s->resident = malloc(sizeof(int64_t) * (size_t)(n_slots > 0 ? n_slots : 1));
    s->pending = malloc(sizeof(int64_t) * (size_t)(n_slots > 0 ? n_slots : 1));
    if (!s->resident || !s->pending) return err_printf(err, errlen, "simulated device: out of memory for %d slots", n_slots);
    for (int i = 0; i < n_slots; i++) s->resident[i] = s->pending[i] = -1;
    s->n_slots = n_slots;
    s->slot_bytes = slot_bytes;
    return 0;
}

static int sim_copy(void *ctx, int slot, int64_t expert, size_t bytes, char *err, size_t errlen)
{
    ec_sim *s = ctx;
    if (slot < 0 || slot >= s->n_slots) return err_printf(err, errlen, "simulated device: slot %d of %d", slot, s->n_slots);
    if (bytes > s->slot_bytes) return err_printf(err, errlen, "simulated device: %zu bytes into a %zu-byte slot", bytes, s->slot_bytes);
    if ((int64_t)s->copies == s->fail_copy_at)
        return err_printf(err, errlen, "simulated device: copy %llu failed (injected)", (unsigned long long)s->copies);
    s->pending[slot] = expert;
    s->copies++;
    s->bytes += bytes;
    s->clock_s += s->pcie_bytes_per_s > 0 ? (double)bytes / s->pcie_bytes_per_s : 0;
    return 0;
}

static int sim_sync(void *ctx, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    ec_sim *s = ctx;
    for (int i = 0; i < s->n_slots; i++)
        if (s->pending[i] >= 0) { s->resident[i] = s->pending[i]; s->pending[i] = -1; }
    s->syncs++;
    return 0;
}

void ec_sim_init(ec_sim *s, double pcie_bytes_per_s)
{
    memset(s, 0, sizeof *s);
    s->pcie_bytes_per_s = pcie_bytes_per_s;
    s->fail_copy_at = -1;
}

ec_device ec_sim_device(ec_sim *s)
{
    ec_device d = { .ctx = s, .alloc = sim_alloc, .copy = sim_copy, .sync = sim_sync };
    return d;
}

void ec_sim_free(ec_sim *s)
{
    free(s->resident);
    free(s->pending);
    s->resident = s->pending = NULL;
}

/* ================================================================ profiles */

int ec_profile_init(ec_profile *p, int n_layer, int n_expert, int n_used, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (n_layer < 1 || n_layer > EC_MAX_LAYERS || n_expert < 1 || n_expert > EC_MAX_EXPERTS ||
        (int64_t)n_layer * n_expert > EC_MAX_TOTAL || n_used < 1 || n_used > n_expert)
        return err_printf(err, errlen, "routing profile: shape %d layers x %d experts, %d used is out of range",
                    n_layer, n_expert, n_used);
    p->count = calloc((size_t)n_layer * (size_t)n_expert, sizeof(uint64_t));
    if (!p->count) return err_printf(err, errlen, "routing profile: out of memory");
    p->n_layer = n_layer;
    p->n_expert = n_expert;
    p->n_used = n_used;
    return 0;
}

void ec_profile_free(ec_profile *p)
{
    free(p->count);
    memset(p, 0, sizeof *p);
}

int ec_profile_observe(ec_profile *p, int layer, const int32_t *experts, int n, char *err, size_t errlen)
{
    if (layer < 0 || layer >= p->n_layer) return err_printf(err, errlen, "routing profile: layer %d of %d", layer, p->n_layer);
    if (n != p->n_used) return err_printf(err, errlen, "routing profile: %d experts routed, the profile records %d", n, p->n_used);
    for (int i = 0; i < n; i++) {
        if (experts[i] < 0 || experts[i] >= p->n_expert)
            return err_printf(err, errlen, "routing profile: expert %d of %d", (int)experts[i], p->n_expert);
        for (int j = 0; j < i; j++)
            if (experts[j] == experts[i])
                return err_printf(err, errlen, "routing profile: expert %d routed twice in one token", (int)experts[i]);
    }
    for (int i = 0; i < n; i++) p->count[(size_t)layer * (size_t)p->n_expert + (size_t)experts[i]]++;
    if (layer == p->token_layer) p->tokens++;
    return 0;
}

int ec_profile_save(const ec_profile *p, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return err_printf(err, errlen, "%s: %s%s", path, strerror(errno), errno == EEXIST ? " (never overwritten)" : "");
    FILE *fp = fdopen(fd, "w");
    if (!fp) { close(fd); unlink(path); return err_printf(err, errlen, "%s: %s", path, strerror(errno)); }
    fprintf(fp, "strata-routing-profile 1\nshape %d %d %d\ntokens %llu\n", p->n_layer, p->n_expert, p->n_used,
            (unsigned long long)p->tokens);
    for (int l = 0; l < p->n_layer; l++) {
        fprintf(fp, "layer %d", l);
        for (int e = 0; e < p->n_expert; e++)
            fprintf(fp, " %llu", (unsigned long long)p->count[(size_t)l * (size_t)p->n_expert + (size_t)e]);
        fputc('\n', fp);
    }
    fputs("end\n", fp);
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) { unlink(path); return err_printf(err, errlen, "%s: write failed", path); }
    return 0;
}

int ec_profile_parse(ec_profile *p, const char *text, size_t len, const char *path, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    textcur c;
    tc_init(&c, text, len, path, "truncated: the file ends before its 'end' line", err, errlen);
    uint64_t nl, ne, nu, tokens;
    if (tc_line(&c)) return -1;
    if ((size_t)(c.le - c.ls) != strlen("strata-routing-profile 1") || memcmp(c.ls, "strata-routing-profile 1", (size_t)(c.le - c.ls)))
        return tc_fail(&c, "not a strata routing profile (the first line must be 'strata-routing-profile 1')");
    if (tc_line(&c) || tc_keyword(&c, "shape") || tc_u64(&c, "layer count", EC_MAX_LAYERS, &nl) ||
        tc_u64(&c, "expert count", EC_MAX_EXPERTS, &ne) || tc_u64(&c, "experts used", EC_MAX_EXPERTS, &nu) || tc_eol(&c))
        return -1;
    if (nl < 1 || ne < 1 || nu < 1 || nu > ne) return tc_fail(&c, "shape %llu x %llu with %llu used is impossible",
                                                          (unsigned long long)nl, (unsigned long long)ne, (unsigned long long)nu);
    if (nl * ne > EC_MAX_TOTAL) return tc_fail(&c, "%llu layers x %llu experts is above the limit %d",
                                               (unsigned long long)nl, (unsigned long long)ne, EC_MAX_TOTAL);
    if (tc_line(&c) || tc_keyword(&c, "tokens") || tc_u64(&c, "token count", EC_MAX_TOKENS, &tokens) || tc_eol(&c))
        return -1;
    ec_profile q;
    if (ec_profile_init(&q, (int)nl, (int)ne, (int)nu, err, errlen)) return -1;
    q.tokens = tokens;
    for (uint64_t l = 0; l < nl; l++) {
        uint64_t idx, sum = 0;
        if (tc_line(&c) || tc_keyword(&c, "layer") || tc_u64(&c, "layer number", nl, &idx)) goto bad;
        if (idx != l) { tc_fail(&c, "layer %llu where layer %llu was expected (layers in order, each once)", (unsigned long long)idx, (unsigned long long)l); goto bad; }
        for (uint64_t e = 0; e < ne; e++) {
            uint64_t v;
            if (tc_u64(&c, "count", tokens, &v)) goto bad;   /* an expert serves a token at most once per layer */
            q.count[l * ne + e] = v;
            sum += v;
        }
        if (tc_eol(&c)) goto bad;
        /* the counts must be the routing of `tokens` tokens, n_used experts each (or none: a
         * dense layer of an MoE model, as a leading one, routes nothing): a file cut or edited by
         * hand would otherwise skew every score silently */
        if (sum != tokens * nu && sum != 0) {
            tc_fail(&c, "layer %llu counts add up to %llu, but %llu tokens x %llu experts used is %llu", (unsigned long long)l,
                     (unsigned long long)sum, (unsigned long long)tokens, (unsigned long long)nu, (unsigned long long)(tokens * nu));
            goto bad;
        }
    }
    if (tc_line(&c) || tc_keyword(&c, "end") || tc_eol(&c)) goto bad;
    if (tc_tail(&c, "text after the 'end' line")) goto bad;
    *p = q;
    return 0;
bad:
    ec_profile_free(&q);
    return -1;
}

int ec_profile_load(ec_profile *p, const char *path, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    char *buf;
    size_t n;
    if (tc_slurp(path, EC_MAX_FILE, "a routing profile", &buf, &n, err, errlen)) return -1;
    int rc = ec_profile_parse(p, buf, n, path, err, errlen);
    free(buf);
    return rc;
}

int ec_profile_check(const ec_profile *p, int n_layer, int n_expert, int n_used, const char *path, char *err,
                     size_t errlen)
{
    if (p->n_layer != n_layer || p->n_expert != n_expert || p->n_used != n_used)
        return err_printf(err, errlen, "%s: the profile is for %d layers x %d experts (%d used), the model has %d x %d (%d used)",
                    path, p->n_layer, p->n_expert, p->n_used, n_layer, n_expert, n_used);
    return 0;
}

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

double ec_profile_hit_rate(const ec_profile *p, int64_t n_slots)
{
    size_t n = (size_t)p->n_layer * (size_t)p->n_expert;
    if (!p->count || n == 0) return 0;
    uint64_t *c = malloc(n * sizeof *c);
    if (!c) return NAN;
    memcpy(c, p->count, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_u64_desc);
    uint64_t total = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        total += c[i];
        if ((int64_t)i < n_slots) top += c[i];
    }
    free(c);
    return total ? (double)top / (double)total : 0;
}

/* ================================================================ small parsers */

int ec_miss_parse(const char *s)
{
    if (!strcmp(s, "cpu")) return EC_MISS_CPU;
    if (!strcmp(s, "pcie")) return EC_MISS_PCIE;
    if (!strcmp(s, "auto")) return EC_MISS_AUTO;
    return -1;
}

const char *ec_miss_name(ec_miss_mode m)
{
    return m == EC_MISS_CPU ? "cpu" : m == EC_MISS_PCIE ? "pcie" : "auto";
}

ec_miss_mode ec_miss_resolve(ec_miss_mode m, double cpu_s, double pcie_s)
{
    if (m != EC_MISS_AUTO) return m;
    if (!(cpu_s > 0) || !(pcie_s > 0) || !isfinite(cpu_s) || !isfinite(pcie_s)) return EC_MISS_CPU;
    return pcie_s < cpu_s ? EC_MISS_PCIE : EC_MISS_CPU;
}

int ec_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ') return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v >= 0) || !isfinite(v)) return -1;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mul > 1) {
        if (*end == 'i' && end[1] == 'B') end += 2;
        else if (*end == 'B') end++;
    } else if (*end == 'B') end++;
    if (*end) return -1;
    double b = v * mul;
    if (b >= 18446744073709551615.0) return -1;
    *out = (uint64_t)b;
    return 0;
}

int64_t ec_plan_slots(uint64_t free_bytes, uint64_t reserve_bytes, size_t slot_bytes, int64_t n_experts)
{
    if (slot_bytes == 0 || free_bytes <= reserve_bytes || n_experts <= 0) return 0;
    uint64_t n = (free_bytes - reserve_bytes) / slot_bytes;
    return n > (uint64_t)n_experts ? n_experts : (int64_t)n;
}

/* ================================================================ the cache */

struct expert_cache {
    ec_config cfg;
    ec_device dev;
    int64_t n_total;
    double *score;           /* n_total, as of last[i] */
    int64_t *last;           /* n_total: tick of the last score update */
    int *slot_of;            /* n_total: -1 not resident */
    int64_t *owner;          /* n_slots: expert, -1 empty */
    int64_t *slot_used;      /* n_slots: tick of the last access */
    int *pins;               /* n_slots: pin count */
    int64_t tick;
    ec_stats st;
};

static double decayed(const expert_cache *c, int64_t i)
{
    int64_t dt = c->tick - c->last[i];
    return dt > 0 ? c->score[i] * pow(c->cfg.decay, (double)dt) : c->score[i];
}

expert_cache *ec_create(const ec_config *cfg, ec_device dev, char *err, size_t errlen)
{
    if (cfg->n_layer < 1 || cfg->n_expert < 1 || (int64_t)cfg->n_layer * cfg->n_expert > EC_MAX_TOTAL) {
        err_printf(err, errlen, "expert cache: %d layers x %d experts is out of range", cfg->n_layer, cfg->n_expert);
        return NULL;
    }
    int64_t n_total = (int64_t)cfg->n_layer * cfg->n_expert;
    if (cfg->n_slots < 0 || cfg->n_slots > n_total || cfg->slot_bytes == 0) {
        err_printf(err, errlen, "expert cache: %d slots of %zu bytes for %lld experts", cfg->n_slots, cfg->slot_bytes, (long long)n_total);
        return NULL;
    }
    if (cfg->miss != EC_MISS_CPU && cfg->miss != EC_MISS_PCIE) {
        err_printf(err, errlen, "expert cache: the miss mode must be resolved to cpu or pcie (ec_miss_resolve)");
        return NULL;
    }
    if (cfg->decay >= 1 || isnan(cfg->decay)) {
        err_printf(err, errlen, "expert cache: decay %g is not in (0, 1)", cfg->decay);
        return NULL;
    }
    expert_cache *c = calloc(1, sizeof *c);
    if (!c) { err_printf(err, errlen, "expert cache: out of memory"); return NULL; }
    c->cfg = *cfg;
    if (!(c->cfg.decay > 0)) c->cfg.decay = 0.99;
    c->dev = dev;
    c->n_total = n_total;
    size_t ns = (size_t)(cfg->n_slots > 0 ? cfg->n_slots : 1);
    c->score = calloc((size_t)n_total, sizeof *c->score);
    c->last = calloc((size_t)n_total, sizeof *c->last);
    c->slot_of = malloc((size_t)n_total * sizeof *c->slot_of);
    c->owner = malloc(ns * sizeof *c->owner);
    c->slot_used = malloc(ns * sizeof *c->slot_used);
    c->pins = calloc(ns, sizeof *c->pins);
    if (!c->score || !c->last || !c->slot_of || !c->owner || !c->slot_used || !c->pins) {
        ec_free(c);
        err_printf(err, errlen, "expert cache: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n_total; i++) c->slot_of[i] = -1;
    for (size_t i = 0; i < ns; i++) { c->owner[i] = -1; c->slot_used[i] = -1; }
    if (cfg->n_slots > 0 && dev.alloc(dev.ctx, cfg->n_slots, cfg->slot_bytes, err, errlen)) { ec_free(c); return NULL; }
    return c;
}

void ec_free(expert_cache *c)
{
    if (!c) return;
    free(c->score);
    free(c->last);
    free(c->slot_of);
    free(c->owner);
    free(c->slot_used);
    free(c->pins);
    free(c);
}

static int place(expert_cache *c, int slot, int64_t expert, char *err, size_t errlen)
{
    if (c->dev.copy(c->dev.ctx, slot, expert, c->cfg.slot_bytes, err, errlen)) return -1;
    int64_t old = c->owner[slot];
    if (old >= 0) {
        if (c->slot_of[old] == slot) c->slot_of[old] = -1;
        c->st.evictions++;
    }
    c->owner[slot] = expert;
    c->slot_of[expert] = slot;
    c->st.copies++;
    c->st.bytes += c->cfg.slot_bytes;
    return 0;
}

typedef struct rank { double score; int64_t id; } rank;

static int cmp_rank(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int ec_fill(expert_cache *c, const ec_profile *p, char *err, size_t errlen)
{
    if (p->n_layer != c->cfg.n_layer || p->n_expert != c->cfg.n_expert)
        return err_printf(err, errlen, "expert cache: a profile of %d layers x %d experts for a model of %d x %d",
                    p->n_layer, p->n_expert, c->cfg.n_layer, c->cfg.n_expert);
    rank *r = malloc((size_t)c->n_total * sizeof *r);
    if (!r) return err_printf(err, errlen, "expert cache: out of memory");
    /* steady state of a decaying count for an expert routed with probability f per token */
    for (int64_t i = 0; i < c->n_total; i++) {
        double f = p->tokens ? (double)p->count[i] / (double)p->tokens : 0;
        c->score[i] = f / (1 - c->cfg.decay);
        c->last[i] = c->tick;
        r[i] = (rank){ c->score[i], i };
    }
    qsort(r, (size_t)c->n_total, sizeof *r, cmp_rank);
    /* slot k gets the k-th ranked expert; a slot already holding it is not copied again */
    int rc = 0;
    for (int k = 0; k < c->cfg.n_slots && rc == 0; k++)
        if (c->owner[k] != r[k].id) rc = place(c, k, r[k].id, err, errlen);
    free(r);
    if (rc) return -1;
    return ec_sync(c, err, errlen);
}

void ec_begin_token(expert_cache *c) { c->tick++; }

/* The resident with the lowest decayed score (ties: least recently used, then
 * lower slot) not pinned and (unless pin_only) not used by the current
 * token; -1 when every slot is in use. */
static int victim(const expert_cache *c, double *victim_score)
{
    int best = -1;
    double bs = 0;
    for (int k = 0; k < c->cfg.n_slots; k++) {
        if (c->pins[k] > 0) continue;
        if (c->owner[k] < 0) { *victim_score = -1; return k; }
        if (!c->cfg.pin_only && c->slot_used[k] == c->tick) continue;
        double s = decayed(c, c->owner[k]);
        if (best < 0 || s < bs || (s == bs && c->slot_used[k] < c->slot_used[best])) { best = k; bs = s; }
    }
    *victim_score = bs;
    return best;
}

int ec_access(expert_cache *c, int layer, int expert, ec_result *r, char *err, size_t errlen)
{
    if (layer < 0 || layer >= c->cfg.n_layer || expert < 0 || expert >= c->cfg.n_expert)
        return err_printf(err, errlen, "expert cache: layer %d expert %d is out of range (%d x %d)", layer, expert,
                    c->cfg.n_layer, c->cfg.n_expert);
    int64_t i = (int64_t)layer * c->cfg.n_expert + expert;
    c->score[i] = decayed(c, i) + 1;
    c->last[i] = c->tick;
    c->st.accesses++;
    *r = (ec_result){ EC_MISS_ON_CPU, -1, 0 };
    int s = c->slot_of[i];
    if (s >= 0) {
        c->st.hits++;
        c->slot_used[s] = c->tick;
        *r = (ec_result){ EC_HIT, s, 0 };
        return 0;
    }
    double vs;
    int v = victim(c, &vs);
    if (c->cfg.miss == EC_MISS_PCIE && v >= 0) {
        if (place(c, v, i, err, errlen)) return -1;
        c->slot_used[v] = c->tick;
        c->st.miss_pcie++;
        *r = (ec_result){ EC_MISS_ON_GPU, v, 1 };
        return 0;
    }
    c->st.miss_cpu++;
    /* computed on the CPU now; admitted for later tokens only when it outranks the victim */
    if (v >= 0 && c->score[i] > vs) {
        if (place(c, v, i, err, errlen)) return -1;
        r->copied = 1;
        r->slot = -1;
    }
    return 0;
}

int ec_prefetch(expert_cache *c, int layer, int expert, char *err, size_t errlen)
{
    if (layer < 0 || layer >= c->cfg.n_layer || expert < 0 || expert >= c->cfg.n_expert)
        return err_printf(err, errlen, "expert cache: layer %d expert %d is out of range (%d x %d)", layer, expert,
                          c->cfg.n_layer, c->cfg.n_expert);
    const int64_t i = (int64_t)layer * c->cfg.n_expert + expert;
    if (c->slot_of[i] >= 0) return 0;
    double vs;
    const int v = victim(c, &vs);
    if (v < 0 || !(decayed(c, i) + 1 > vs)) return 0;
    if (place(c, v, i, err, errlen)) return -1;
    c->slot_used[v] = c->tick;
    return 1;
}

int ec_sync(expert_cache *c, char *err, size_t errlen)
{
    if (c->cfg.n_slots == 0) return 0;
    return c->dev.sync(c->dev.ctx, err, errlen);
}

void ec_note_miss_seconds(expert_cache *c, double s)
{
    c->st.miss_seconds += s;
    c->st.miss_timed++;
}

void ec_pin(expert_cache *c, int slot)
{
    if (slot >= 0 && slot < c->cfg.n_slots) c->pins[slot]++;
}

void ec_unpin(expert_cache *c, int slot)
{
    if (slot >= 0 && slot < c->cfg.n_slots && c->pins[slot] > 0) c->pins[slot]--;
}

int ec_slot_of(const expert_cache *c, int layer, int expert)
{
    if (layer < 0 || layer >= c->cfg.n_layer || expert < 0 || expert >= c->cfg.n_expert) return -1;
    return c->slot_of[(int64_t)layer * c->cfg.n_expert + expert];
}

int64_t ec_slot_expert(const expert_cache *c, int slot)
{
    return slot >= 0 && slot < c->cfg.n_slots ? c->owner[slot] : -1;
}

double ec_score(const expert_cache *c, int layer, int expert)
{
    if (layer < 0 || layer >= c->cfg.n_layer || expert < 0 || expert >= c->cfg.n_expert) return NAN;
    return decayed(c, (int64_t)layer * c->cfg.n_expert + expert);
}

const ec_stats *ec_get_stats(const expert_cache *c) { return &c->st; }

double ec_hit_rate(const expert_cache *c)
{
    return c->st.accesses ? (double)c->st.hits / (double)c->st.accesses : 0;
}

int ec_n_slots(const expert_cache *c) { return c->cfg.n_slots; }
