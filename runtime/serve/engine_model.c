/* engine_model.c: see engine_model.h. Sections: the engine object and its
 * contexts, the tokenizer side, a session (begin/step/end), opening. */
#include "runtime/serve/engine_model.h"
#include "runtime/serve/engine_pictures.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "runtime/kernels/kernels.h"
#include "runtime/model/backend.h"
#include "runtime/model/loader.h"
#include "runtime/model/sampler.h"
#include "runtime/model/speculate.h"
#include "runtime/tokenizer/tokenizer.h"

/* ------------------------------------------------------------------------
 * The engine: one loaded pack, `parallel` contexts over its weights. */

#define MAX_EOG 16

typedef struct model_engine {
    engine           e;
    loaded_pack     *pack;
    expert_tier     *tier;     /* the routed experts' RAM tier (shared by the contexts), or NULL */
    const tokenizer *tok;
    int              n_vocab;
    char            *name, *bos, *eos, *tmpl;
    int32_t          eog[MAX_EOG];
    int              n_eog;
    pthread_mutex_t  mu;       /* guards busy[] */
    int              n_slots;
    model          **slots;
    model          **mtp;      /* per context: its draft model over the next-token-prediction block, or NULL */
    bool            *busy;
    const char      *record;   /* --record-routing FILE or NULL */
    device_stats     dstats;   /* snapshot for /metrics, guarded by mu */
    spec_stats       draft;    /* speculative decoding's counters over every session, guarded by mu */
    struct slot_ids {          /* per context: the ids its KV cache holds, in order */
        int32_t *ids;
        size_t   n, cap;
    } *held;
    bool             no_prompt_cache;
    vision_model    *vision;   /* the pack's vision tower when pictures are taken, else NULL */
    pthread_mutex_t  vision_mu; /* one picture through the tower at a time */
    char            *vision_off; /* why they are not (a projector is there), or NULL */
} model_engine;

struct engine_session {
    model_engine *me;
    int           slot;
    sampler      *smp;
    float        *logits;      /* n_vocab: the row the next token is drawn from */
    int32_t       pending;     /* sampled but not yet evaluated */
    bool          has_pending;
    int           n_probs;
    size_t        reused;      /* prompt tokens the context already held */
    engine_mask   mask;        /* fill NULL: none */
    uint8_t      *allow;       /* n_vocab, with a mask */
    spec_ctx     *spec;        /* speculative decoding (draft_max > 0, no mask) */
    spec_stats    spec_seen;   /* what has been added to me->draft already */
};

/* ------------------------------------------------------------------------
 * Tokenizer side. */

static int me_tokenize(void *self, const char *text, size_t len, bool add_special, int32_t **ids,
                       size_t *n)
{
    model_engine *me = self;
    /* parse_special: a rendered template writes <|im_start|> etc. as text */
    return tokenizer_encode(me->tok, text, len, add_special, true, ids, n);
}

static int me_tokenize_pictures(void *self, const char *text, size_t len, bool add_special,
                                const struct image_rgb *pics, size_t n_pics, int32_t **ids, size_t *n,
                                engine_pictures **out, char *err, size_t errlen)
{
    model_engine *me = self;
    return ep_tokenize(me->vision, &me->vision_mu, me->tok, text, len, add_special, pics, n_pics, ids, n, out, err,
                       errlen);
}

static int me_piece(void *self, int32_t id, char *buf, size_t bufsz)
{
    model_engine *me = self;
    return tokenizer_piece(me->tok, id, false, buf, bufsz);
}

static bool me_is_eog(void *self, int32_t id)
{
    model_engine *me = self;
    for (int i = 0; i < me->n_eog; i++)
        if (me->eog[i] == id) return true;
    return false;
}

static void add_eog(model_engine *me, int64_t id)
{
    if (id < 0 || id >= me->n_vocab || me->n_eog == MAX_EOG || me_is_eog(me, (int32_t)id)) return;
    me->eog[me->n_eog++] = (int32_t)id;
}

/* Many packs name only EOS in their metadata while their chat template ends
 * each turn with another control token; without these the model would talk
 * on past its turn (llama.cpp keeps the same list for the same reason). */
static const char *const TURN_ENDS[] = {
    "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "<|eot|>", "<|eom|>", /* Llama 4 (<|eom|> after a tool call) */
    "<|return|>", "<|call|>",              /* gpt-oss (harmony) */
    "<|role_end|>",                        /* Ling 2.0 */
    "[e~[",                                /* MiniMax-M2 */
    "<|endofresponse|>",                   /* dots.llm1 */
    "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>", /* deepseek, fullwidth bars */
};

/* A vocabulary's control (or user-defined) token spelled s, or -1. */
static int32_t control_id(const model_engine *me, const char *s)
{
    int32_t id = tokenizer_find(me->tok, s, strlen(s));
    if (id < 0) return -1;
    int type = tokenizer_token_type(me->tok, id);
    return type == TOKEN_TYPE_CONTROL || type == TOKEN_TYPE_USER_DEFINED ? id : -1;
}

static void find_eog(model_engine *me, const gguf_file *g)
{
    add_eog(me, tokenizer_eos(me->tok));
    static const char *const keys[] = { "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int64_t id;
        if (g && gguf_get_int(g, keys[i], &id) == 0) add_eog(me, id);
    }
    for (size_t i = 0; i < sizeof TURN_ENDS / sizeof TURN_ENDS[0]; i++) add_eog(me, control_id(me, TURN_ENDS[i]));
    /* harmony (gpt-oss): <|end|> closes the analysis message and the final
     * answer follows in the same turn, which <|return|> (or a tool's
     * <|call|>) ends; as llama.cpp, <|end|> is no end where both exist */
    const int32_t end = control_id(me, "<|end|>");
    if (end >= 0 && control_id(me, "<|return|>") >= 0 && control_id(me, "<|call|>") >= 0) {
        int k = 0;
        for (int i = 0; i < me->n_eog; i++)
            if (me->eog[i] != end) me->eog[k++] = me->eog[i];
        me->n_eog = k;
    }
}

/* ------------------------------------------------------------------------
 * A session: one context taken for its whole life. */

static size_t common_prefix(const struct slot_ids *h, const int32_t *p, size_t n)
{
    size_t k = 0;
    while (k < h->n && k < n && h->ids[k] == p[k]) k++;
    return k;
}

/* The free context whose cache shares the longest prefix with the prompt
 * (the lowest index on ties, so one request at a time keeps to context 0). */
static int take_slot(model_engine *me, const int32_t *prompt, size_t n_prompt)
{
    int got = -1;
    size_t best = 0;
    pthread_mutex_lock(&me->mu);
    for (int i = 0; i < me->n_slots; i++) {
        if (me->busy[i]) continue;
        size_t k = me->no_prompt_cache ? 0 : common_prefix(&me->held[i], prompt, n_prompt);
        if (got < 0 || k > best) { got = i; best = k; }
    }
    if (got >= 0) me->busy[got] = true;
    pthread_mutex_unlock(&me->mu);
    return got;
}

/* Keeps the record of what context i holds in step with its KV cache. */
static int held_append(model_engine *me, int i, const int32_t *ids, size_t n)
{
    struct slot_ids *h = &me->held[i];
    if (h->n + n > h->cap) {
        size_t cap = h->cap ? h->cap : 256;
        while (cap < h->n + n) cap *= 2;
        int32_t *g = realloc(h->ids, cap * sizeof *g);
        if (!g) return -1;
        h->ids = g;
        h->cap = cap;
    }
    memcpy(h->ids + h->n, ids, n * sizeof *ids);
    h->n += n;
    return 0;
}

/* A forward pass on context i failed or was not recorded: it holds nothing we know. */
static void held_forget(model_engine *me, int i)
{
    model_rewind(me->slots[i], 0);
    me->held[i].n = 0;
}

/* After a forward pass on context i: the device counters for /metrics. */
static void snapshot_stats(model_engine *me, int i)
{
    device_stats ds;
    device_get_stats(me->slots[i], &ds);
    if (!ds.on_gpu) return;
    pthread_mutex_lock(&me->mu);
    me->dstats = ds;
    pthread_mutex_unlock(&me->mu);
}

static void me_device_metrics(void *self, char *buf, size_t bufsz)
{
    model_engine *me = self;
    pthread_mutex_lock(&me->mu);
    device_stats d = me->dstats;
    pthread_mutex_unlock(&me->mu);
    const ec_stats *c = &d.cache;
    snprintf(buf, bufsz,
             "# HELP strata_device_gpu 1 when the forward pass runs on a GPU, 0 on the CPU.\n"
             "# TYPE strata_device_gpu gauge\nstrata_device_gpu %d\n"
             "# HELP strata_expert_cache_slots Expert slots in VRAM.\n"
             "# TYPE strata_expert_cache_slots gauge\nstrata_expert_cache_slots %d\n"
             "# HELP strata_expert_cache_accesses_total Routed-expert lookups in the VRAM cache.\n"
             "# TYPE strata_expert_cache_accesses_total counter\nstrata_expert_cache_accesses_total %llu\n"
             "# HELP strata_expert_cache_hits_total Lookups served from VRAM.\n"
             "# TYPE strata_expert_cache_hits_total counter\nstrata_expert_cache_hits_total %llu\n"
             "# HELP strata_expert_cache_hit_rate Hits over lookups.\n"
             "# TYPE strata_expert_cache_hit_rate gauge\nstrata_expert_cache_hit_rate %.6f\n"
             "# HELP strata_expert_cache_misses_total Misses by where the expert was computed.\n"
             "# TYPE strata_expert_cache_misses_total counter\n"
             "strata_expert_cache_misses_total{on=\"cpu\"} %llu\nstrata_expert_cache_misses_total{on=\"pcie\"} %llu\n"
             "# HELP strata_expert_cache_bytes_moved_total Bytes copied host to VRAM into expert slots.\n"
             "# TYPE strata_expert_cache_bytes_moved_total counter\nstrata_expert_cache_bytes_moved_total %llu\n"
             "# HELP strata_expert_cache_miss_seconds Summed latency of timed misses.\n"
             "# TYPE strata_expert_cache_miss_seconds summary\n"
             "strata_expert_cache_miss_seconds_sum %.9g\nstrata_expert_cache_miss_seconds_count %llu\n",
             d.on_gpu, d.n_slots, (unsigned long long)c->accesses, (unsigned long long)c->hits, d.hit_rate,
             (unsigned long long)c->miss_cpu, (unsigned long long)c->miss_pcie, (unsigned long long)c->bytes,
             c->miss_seconds, (unsigned long long)c->miss_timed);
    pthread_mutex_lock(&me->mu);
    const spec_stats ds = me->draft;
    pthread_mutex_unlock(&me->mu);
    size_t k = strlen(buf);
    snprintf(buf + k, bufsz > k ? bufsz - k : 0,
             "# HELP strata_draft_tokens_total Tokens speculative decoding guessed, and those the model kept.\n"
             "# TYPE strata_draft_tokens_total counter\nstrata_draft_tokens_total{kept=\"any\"} %ld\n"
             "strata_draft_tokens_total{kept=\"yes\"} %ld\n"
             "# HELP strata_draft_passes_total Forward passes of speculative decoding (each gives 1 + its kept guesses).\n"
             "# TYPE strata_draft_passes_total counter\nstrata_draft_passes_total %ld\n",
             ds.drafted, ds.accepted, ds.steps);
    if (!me->tier) return;
    tier_stats t;
    tier_get_stats(me->tier, &t);
    k = strlen(buf);
    snprintf(buf + k, bufsz > k ? bufsz - k : 0,
             "# HELP strata_expert_tier_slots Routed experts the RAM tier holds (the others are read from experts.bin).\n"
             "# TYPE strata_expert_tier_slots gauge\nstrata_expert_tier_slots %d\n"
             "# HELP strata_expert_tier_accesses_total Routed-expert lookups in the RAM tier.\n"
             "# TYPE strata_expert_tier_accesses_total counter\nstrata_expert_tier_accesses_total %llu\n"
             "# HELP strata_expert_tier_hits_total Lookups that found the expert in memory (or its read started).\n"
             "# TYPE strata_expert_tier_hits_total counter\nstrata_expert_tier_hits_total %llu\n"
             "# HELP strata_expert_tier_disk_bytes_total Bytes read from experts.bin.\n"
             "# TYPE strata_expert_tier_disk_bytes_total counter\nstrata_expert_tier_disk_bytes_total %llu\n"
             "# HELP strata_expert_tier_disk_read_seconds_total Seconds the I/O threads spent reading (summed).\n"
             "# TYPE strata_expert_tier_disk_read_seconds_total counter\nstrata_expert_tier_disk_read_seconds_total %.9g\n"
             "# HELP strata_expert_tier_stall_seconds_total Seconds the model waited for reads.\n"
             "# TYPE strata_expert_tier_stall_seconds_total counter\nstrata_expert_tier_stall_seconds_total %.9g\n"
             "# HELP strata_expert_tier_prefetches_total Reads started from predictions, and those used.\n"
             "# TYPE strata_expert_tier_prefetches_total counter\nstrata_expert_tier_prefetches_total{used=\"any\"} %llu\n"
             "strata_expert_tier_prefetches_total{used=\"yes\"} %llu\n",
             t.n_slots, (unsigned long long)t.accesses, (unsigned long long)t.hits, (unsigned long long)t.bytes_read,
             t.read_seconds, t.stall_seconds, (unsigned long long)t.prefetches, (unsigned long long)t.prefetch_hits);
}

static void give_slot(model_engine *me, int i)
{
    pthread_mutex_lock(&me->mu);
    me->busy[i] = false;
    pthread_mutex_unlock(&me->mu);
}

static void me_end(engine_session *s)
{
    if (!s) return;
    spec_free(s->spec); /* before the context goes back: it removes its hooks from the context */
    if (s->slot >= 0) give_slot(s->me, s->slot);
    sampler_free(s->smp);
    free(s->logits);
    free(s->allow);
    free(s);
}

static engine_session *me_begin(void *self, const int32_t *prompt, size_t n_prompt,
                                const engine_sampling *sp, char *err, size_t errlen)
{
    model_engine *me = self;
    if (n_prompt == 0 || n_prompt >= (size_t)me->e.n_ctx) {
        snprintf(err, errlen, "a prompt of %zu tokens: needs 1..%d", n_prompt, me->e.n_ctx - 1);
        return NULL;
    }
    engine_session *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->me = me;
    s->slot = -1;
    s->n_probs = sp->n_probs < 0 ? 0 : sp->n_probs > ENGINE_MAX_PROBS ? ENGINE_MAX_PROBS : sp->n_probs;
    /* `strata run`'s chain, with what the request asks for: no min_p or
     * penalty unless it does (they would change the text a client asked for). */
    sampler_params p = sampler_default_params();
    p.temp = sp->temperature;
    p.top_k = sp->top_k;
    p.top_p = sp->top_p;
    p.min_p = sp->min_p;
    /* OpenAI's penalties see the tokens generated so far (up to the last 1024); llama.cpp's repeat
     * penalty alone the last 64, its default */
    p.presence_penalty = sp->presence_penalty;
    p.frequency_penalty = sp->frequency_penalty;
    p.repeat_penalty = sp->repeat_penalty > 0.0f ? sp->repeat_penalty : 1.0f;
    p.penalty_last_n = sp->presence_penalty != 0.0f || sp->frequency_penalty != 0.0f ? 1024
                     : p.repeat_penalty != 1.0f                                      ? 64
                                                                                      : 0;
    p.bias_id = sp->bias_id;
    p.bias = sp->bias;
    p.n_bias = sp->n_bias;
    p.seed = sp->seed;
    s->smp = sampler_create(&p, me->n_vocab);
    s->logits = malloc((size_t)me->n_vocab * sizeof *s->logits);
    if (sp->mask) {
        s->mask = *sp->mask;
        s->allow = malloc((size_t)me->n_vocab);
    }
    if (!s->smp || !s->logits || (sp->mask && !s->allow)) {
        snprintf(err, errlen, "out of memory or bad sampling parameters (top_p %g)", (double)sp->top_p);
        me_end(s);
        return NULL;
    }
    s->slot = take_slot(me, prompt, n_prompt);
    if (s->slot < 0) {
        snprintf(err, errlen, "all %d model contexts are busy", me->n_slots);
        me_end(s);
        return NULL;
    }
    model *m = me->slots[s->slot];
    /* the prefix this context already holds stays; the last prompt token is
     * always evaluated, its logits give the first answer token */
    size_t keep = me->no_prompt_cache ? 0 : common_prefix(&me->held[s->slot], prompt, n_prompt);
    if (keep >= n_prompt) keep = n_prompt - 1;
    const engine_pictures *pics = sp->pictures;
    keep = ep_keep(pics, keep); /* a picture's rows go in whole */
    model_rewind(m, (int)keep);
    /* a sliding window, or a recurrent state without a checkpoint there, may start over */
    keep = (size_t)model_n_past(m) < keep ? (size_t)model_n_past(m) : keep;
    me->held[s->slot].n = keep;
    const size_t reused = keep;
    /* the drafter before the prompt's forward: mtp reads its rows (those after the cached prefix) */
    if (sp->draft_max > 0 && !sp->mask && !pics) {
        spec_params dp = spec_default_params();
        dp.max_draft = sp->draft_max > SPEC_MAX_DRAFT ? SPEC_MAX_DRAFT : sp->draft_max;
        if (sp->draft_mtp) {
            dp.kind = SPEC_MTP;
            dp.mtp = me->mtp ? me->mtp[s->slot] : NULL;
        }
        if (!(s->spec = spec_create(m, s->smp, &dp, prompt, (int)n_prompt, err, errlen))) {
            me_end(s);
            return NULL;
        }
    }
    /* Gated DeltaNet layers keep their state at the prompt's last token but one (model_checkpoint),
     * where the next request sharing this prompt (the same again, or a conversation going on) resumes */
    int bad = 0;
    if (!pics && model_hp(m)->arch.gated_delta_net && n_prompt - 1 > keep) {
        bad = model_forward(m, prompt + keep, (int)(n_prompt - 1 - keep), s->logits, false, err, errlen);
        if (!bad) model_checkpoint(m);
        if (!bad && held_append(me, s->slot, prompt + keep, n_prompt - 1 - keep) != 0) {
            snprintf(err, errlen, "out of memory");
            bad = -1;
        }
        if (!bad) keep = n_prompt - 1;
    }
    if (!bad) /* a prompt with pictures: its text and its pictures' rows, each from where the cache ends */
        bad = pics ? ep_eval(pics, m, keep, s->logits, err, errlen)
                   : model_forward(m, prompt + keep, (int)(n_prompt - keep), s->logits, false, err, errlen);
    if (!bad && held_append(me, s->slot, prompt + keep, n_prompt - keep) != 0) {
        snprintf(err, errlen, "out of memory");
        bad = -1;
    }
    if (bad) {
        held_forget(me, s->slot);
        me_end(s);
        return NULL;
    }
    s->reused = reused;
    snapshot_stats(me, s->slot);
    return s;
}

/* The counters of a session's drafts not yet in the engine's. */
static void add_draft_stats(engine_session *s)
{
    const spec_stats now = spec_get_stats(s->spec);
    pthread_mutex_lock(&s->me->mu);
    s->me->draft.steps += now.steps - s->spec_seen.steps;
    s->me->draft.drafted += now.drafted - s->spec_seen.drafted;
    s->me->draft.accepted += now.accepted - s->spec_seen.accepted;
    pthread_mutex_unlock(&s->me->mu);
    s->spec_seen = now;
}

static void fill_logprobs(const float *logits, int nv, int n, engine_token *out);

/* me_step with speculative decoding: the first token comes from the
 * prompt's logits as without; later ones from spec_next, whose steps
 * evaluate a token and its guesses in one pass. After a step the context
 * holds the history but its last token: what it gained is added to the
 * held ids, so the prompt cache stays true. */
static int spec_me_step(engine_session *s, engine_token *out)
{
    model_engine *me = s->me;
    memset(out, 0, sizeof *out);
    if (!s->has_pending) { /* the first token */
        out->id = sampler_sample(s->smp, s->logits);
        sampler_accept(s->smp, out->id);
        if (s->n_probs > 0) fill_logprobs(s->logits, me->n_vocab, s->n_probs, out);
        if (spec_push(s->spec, out->id)) return -1;
        s->has_pending = true;
        return 0;
    }
    char err[256];
    const float *row;
    if (spec_next(s->spec, &out->id, &row, err, sizeof err) != 0) {
        held_forget(me, s->slot);
        return -1;
    }
    const size_t np = (size_t)model_n_past(me->slots[s->slot]), have = me->held[s->slot].n;
    if (np > have) { /* a step ran */
        int n_hist;
        const int32_t *hist = spec_history(s->spec, &n_hist);
        if (held_append(me, s->slot, hist + have, np - have) != 0) {
            held_forget(me, s->slot);
            return -1;
        }
        snapshot_stats(me, s->slot);
        add_draft_stats(s);
    }
    if (s->n_probs > 0) fill_logprobs(row, me->n_vocab, s->n_probs, out);
    return 0;
}

static size_t me_cached(const engine_session *s) { return s->reused; }

/* The top n of log-softmax(logits) (n <= ENGINE_MAX_PROBS) and the chosen
 * token's own logprob. */
static void fill_logprobs(const float *logits, int nv, int n, engine_token *out)
{
    float mx = logits[0];
    for (int i = 1; i < nv; i++) if (logits[i] > mx) mx = logits[i];
    double sum = 0.0;
    for (int i = 0; i < nv; i++) sum += exp((double)logits[i] - mx);
    const float lse = mx + (float)log(sum);
    out->logprob = logits[out->id] - lse;
    int k = 0;
    for (int i = 0; i < nv && n > 0; i++) {
        float l = logits[i];
        if (k == n && l <= logits[out->top_id[k - 1]]) continue; /* ties keep the lower id */
        int j = k < n ? k++ : n - 1;
        while (j > 0 && logits[out->top_id[j - 1]] < l) { out->top_id[j] = out->top_id[j - 1]; j--; }
        out->top_id[j] = i;
    }
    out->n_top = k;
    for (int j = 0; j < k; j++) out->top_logprob[j] = logits[out->top_id[j]] - lse;
}

static int me_step(engine_session *s, engine_token *out)
{
    if (s->spec) return spec_me_step(s, out);
    model_engine *me = s->me;
    model *m = me->slots[s->slot];
    /* The last sampled token is evaluated only when another one is wanted:
     * a generation that stops never pays for a forward it does not use. */
    if (s->has_pending) {
        char err[256];
        if (model_forward(m, &s->pending, 1, s->logits, false, err, sizeof err) != 0 ||
            held_append(me, s->slot, &s->pending, 1) != 0) {
            held_forget(me, s->slot);
            return -1;
        }
        s->has_pending = false;
        snapshot_stats(me, s->slot);
    }
    memset(out, 0, sizeof *out);
    const bool masked = s->mask.fill && s->mask.fill(s->mask.ud, s->allow, me->n_vocab);
    out->id = sampler_sample_masked(s->smp, s->logits, masked ? s->allow : NULL);
    sampler_accept(s->smp, out->id);
    if (s->n_probs > 0) fill_logprobs(s->logits, me->n_vocab, s->n_probs, out);
    s->pending = out->id;
    s->has_pending = true;
    return 0;
}

/* ------------------------------------------------------------------------
 * Opening and freeing. */

static char *base_name(const char *dir)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/') start--;
    return len > start ? strndup(dir + start, len - start) : strdup("strata");
}

/* --record-routing: the contexts' counts summed, written once. */
static void save_routing(model_engine *me)
{
    if (!me->record || !me->slots || me->n_slots < 1 || !model_routing(me->slots[0])) return;
    char err[512];
    ec_profile sum;
    const ec_profile *p0 = model_routing(me->slots[0]);
    if (ec_profile_init(&sum, p0->n_layer, p0->n_expert, p0->n_used, err, sizeof err) == 0) {
        int bad = 0;
        for (int i = 0; i < me->n_slots && !bad; i++)
            if (model_routing(me->slots[i])) bad = device_profile_add(&sum, model_routing(me->slots[i]), err, sizeof err);
        if (!bad && ec_profile_save(&sum, me->record, err, sizeof err) == 0) err[0] = 0;
        ec_profile_free(&sum);
    }
    if (err[0]) fprintf(stderr, "strata: %s\n", err);
}

void engine_model_free(engine *e)
{
    if (!e) return;
    model_engine *me = e->self;
    save_routing(me);
    for (int i = 0; me->mtp && i < me->n_slots; i++) model_free(me->mtp[i]); /* before the contexts they share */
    free(me->mtp);
    for (int i = 0; me->slots && i < me->n_slots; i++) model_free(me->slots[i]);
    free(me->slots);
    free(me->busy);
    for (int i = 0; me->held && i < me->n_slots; i++) free(me->held[i].ids);
    free(me->held);
    tier_free(me->tier);
    vision_close(me->vision);
    free(me->vision_off);
    pthread_mutex_destroy(&me->vision_mu);
    loader_close(me->pack);
    free(me->name);
    free(me->bos);
    free(me->eos);
    free(me->tmpl);
    pthread_mutex_destroy(&me->mu);
    free(me);
}

/* Template and turn-end ids live in tokenizer.gguf; the loader keeps only
 * the tokenizer built from it, so the file is read once more here. */
static int read_tokenizer_meta(model_engine *me, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.gguf", dir);
    gguf_file *g = gguf_open(path, err, errlen);
    if (!g) return -1;
    const char *t = gguf_get_str(g, "tokenizer.chat_template");
    me->tmpl = t ? strdup(t) : NULL;
    find_eog(me, g);
    gguf_close(g);
    if (t && !me->tmpl) { snprintf(err, errlen, "out of memory"); return -1; }
    return 0;
}

/* The pack's vision tower, when the model can take its rows on the backend it runs on; else why
 * not, in vision_off (a projector strata does not run, a backend that takes no pictures). */
static void open_vision(model_engine *me, int n_threads)
{
    char err[512], *path = loader_vision_path(me->pack);
    const model_hparams *hp = loader_hparams(me->pack);
    const int need = hp->n_embd * (1 + hp->n_deepstack);
    vision_model *v = path ? vision_open(path, n_threads, err, sizeof err) : NULL;
    if (!path) snprintf(err, sizeof err, "out of memory");
    else if (v && vision_width(v) != need)
        snprintf(err, sizeof err, "its rows (%d floats) do not fit %s (%d)", vision_width(v), hp->arch.name, need);
    else if (v && !model_backend_ctx(me->slots[0], &backend_cpu))
        snprintf(err, sizeof err, "the model runs on a GPU, which takes no pictures yet (--device cpu does)");
    else if (v) {
        me->vision = v;
        v = NULL;
    }
    free(path);
    vision_close(v);
    if (!me->vision) me->vision_off = strdup(err);
}

engine *engine_model_open(const char *dir, const engine_model_opts *o, char *err, size_t errlen)
{
    engine_model_opts opt = o ? *o : (engine_model_opts){ 0 };
    if (opt.parallel <= 0) opt.parallel = 1;
    if (opt.n_threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        /* more threads than cores per context would only make the
         * concurrent sessions preempt each other */
        opt.n_threads = cores > opt.parallel ? (int)(cores / opt.parallel) : 1;
    }
    model_engine *me = calloc(1, sizeof *me);
    if (!me) { snprintf(err, errlen, "out of memory"); return NULL; }
    pthread_mutex_init(&me->mu, NULL);
    pthread_mutex_init(&me->vision_mu, NULL);
    me->e.self = me;
    const loader_opts lo = { opt.progress, opt.progress_ctx, opt.plan && opt.plan->tier, opt.plan && !opt.plan->tier,
                             device_split_codes(opt.dev) };
    me->pack = loader_open_opts(dir, &lo, err, errlen);
    if (!me->pack) { engine_model_free(&me->e); return NULL; }
    if (opt.plan && tier_from_plan(dir, opt.plan, me->pack, opt.dev ? opt.dev->profile : NULL, stderr, &me->tier, err,
                                   errlen)) {
        engine_model_free(&me->e);
        return NULL;
    }
    me->tok = loader_tokenizer(me->pack);
    me->n_vocab = loader_hparams(me->pack)->n_vocab;
    if (read_tokenizer_meta(me, dir, err, errlen) != 0) { engine_model_free(&me->e); return NULL; }

    me->slots = calloc((size_t)opt.parallel, sizeof *me->slots);
    me->busy = calloc((size_t)opt.parallel, sizeof *me->busy);
    me->held = calloc((size_t)opt.parallel, sizeof *me->held);
    me->no_prompt_cache = opt.no_prompt_cache;
    me->name = base_name(dir);
    me->bos = tokenizer_special_text(me->tok, tokenizer_bos(me->tok));
    me->eos = tokenizer_special_text(me->tok, tokenizer_eos(me->tok));
    if (!me->slots || !me->busy || !me->held || !me->name || !me->bos || !me->eos) {
        snprintf(err, errlen, "%s: out of memory", dir);
        engine_model_free(&me->e);
        return NULL;
    }
    model_options mo = model_default_options();
    mo.n_threads = opt.n_threads;
    mo.n_ctx = opt.n_ctx;
    mo.kv = opt.kv;
    mo.tier = me->tier;
    mo.kernels = device_cpu_kernels(opt.dev);
    device_opts dev;
    if (opt.dev) dev = *opt.dev;
    else { device_opts_default(&dev); dev.kind = DEVICE_CPU; }
    if (dev.kind != DEVICE_CPU && opt.parallel > 1 && device_cuda_built()) {
        if (dev.kind == DEVICE_CUDA) {
            snprintf(err, errlen, "--device cuda serves one context: use --parallel 1 (several contexts on one GPU "
                                  "are not implemented)");
            engine_model_free(&me->e);
            return NULL;
        }
        fprintf(stderr, "strata: --device auto with --parallel %d: running on the CPU (CUDA serves one context)\n",
                opt.parallel);
        dev.kind = DEVICE_CPU;
    }
    if (dev.record && access(dev.record, F_OK) == 0) {
        snprintf(err, errlen, "--record-routing %s: the file exists (it is never overwritten)", dev.record);
        engine_model_free(&me->e);
        return NULL;
    }
    for (int i = 0; i < opt.parallel; i++) {
        char merr[512];
        me->slots[i] = model_create(loader_hparams(me->pack), loader_weights(me->pack), &mo, merr,
                                    sizeof merr);
        if (!me->slots[i]) {
            snprintf(err, errlen, "%s: context %d of %d: %s", dir, i + 1, opt.parallel, merr);
            engine_model_free(&me->e);
            return NULL;
        }
        me->n_slots = i + 1;
        if (dev.record && model_record_routing(me->slots[i], merr, sizeof merr)) {
            snprintf(err, errlen, "%s: %s", dir, merr);
            engine_model_free(&me->e);
            return NULL;
        }
        char note[512];
        if (device_attach(me->slots[i], &dev, note, sizeof note, merr, sizeof merr) < 0) {
            snprintf(err, errlen, "%s: %s", dir, merr);
            engine_model_free(&me->e);
            return NULL;
        }
        if (note[0]) fprintf(stderr, "strata: %s\n", note);
    }
    /* a draft model per context where the pack has the block and the context runs on the CPU */
    bool mtp = loader_weights(me->pack)->n_mtp > 0 && (me->mtp = calloc((size_t)me->n_slots, sizeof *me->mtp));
    for (int i = 0; mtp && i < me->n_slots; i++) {
        char merr[256];
        mtp = model_backend_ctx(me->slots[i], &backend_cpu) &&
              (me->mtp[i] = model_create_mtp(me->slots[i], merr, sizeof merr)) != NULL;
    }
    me->record = dev.record;
    int n_vt;
    uint64_t vbytes;
    const char *vision = loader_vision(me->pack, &n_vt, &vbytes);
    if (vision) open_vision(me, opt.n_threads);
    me->e = (engine){
        .vision = vision, .vision_off = me->vision_off,
        .tokenize_pictures = me->vision ? me_tokenize_pictures : NULL, .pictures_free = ep_free,
        .self = me, .name = me->name, .n_ctx = model_n_ctx(me->slots[0]),
        .chat_template = me->tmpl, .bos_text = me->bos, .eos_text = me->eos, .n_vocab = me->n_vocab, .mtp = mtp,
        .tokenize = me_tokenize, .piece = me_piece, .is_eog = me_is_eog,
        .begin = me_begin, .step = me_step, .end = me_end, .device_metrics = me_device_metrics,
        .cached = me_cached,
    };
    return &me->e;
}
