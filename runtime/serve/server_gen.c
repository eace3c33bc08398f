/* server_gen.c: from a checked request to a running generation: the chat
 * template, tokenization, the context limits, sampling parameters and the
 * metrics hooks. Shared by both APIs so they cannot drift apart. */
#include "runtime/serve/server_internal.h"
#include "runtime/chat/json_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(api_error *e, int status, const char *param, const char *msg)
{
    e->status = status;
    snprintf(e->param, sizeof e->param, "%s", param);
    snprintf(e->message, sizeof e->message, "%s", msg);
    return -1;
}

/* The request's tool i's name (malloc'd), or NULL. */
static char *tool_name(const api_request *r, size_t i)
{
    json_t *t = json_loads(r->tools[i], 0, NULL);
    const char *nm = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
    char *out = nm ? strdup(nm) : NULL;
    json_decref(t);
    return out;
}

/* A forced tool's parameters schema as JSON text (malloc'd; "{}" when it has none), or NULL. */
static char *tool_params(const api_request *r, int i)
{
    json_t *t = json_loads(r->tools[i], 0, NULL);
    json_t *params = json_object_get(json_object_get(t, "function"), "parameters");
    char *text = params ? json_dumps(params, JSON_COMPACT) : strdup("{}");
    json_decref(t);
    return text;
}

/* A named forced call in a format whose arguments are one JSON object: the arguments are held to the
 * tool's parameters schema (JSON mode's layer), and the call's close is taken as the answer's end.
 * A schema json_schema.h cannot hold leaves the arguments free, as before. */
static void forced_args(const server *s, const api_request *r, prepared *p)
{
    const char *close = tool_call_args_close(chat_tools_format(s->tools));
    for (size_t i = 0; close && s->json_vocab && i < r->n_tools; i++) {
        char *nm = tool_name(r, i);
        const bool match = nm && !strcmp(nm, r->force_name);
        free(nm);
        if (!match) continue;
        char *text = tool_params(r, (int)i), err[200];
        js_schema *js = text ? js_compile(text, err, sizeof err) : NULL;
        if (js) {
            p->forced_tool = (int)i;
            p->call_suffix = close;
        }
        js_free(js);
        free(text);
        return;
    }
}

/* The tools' names as the call's text writes them: JSON strings with nothing to escape. */
static bool plain_names(const api_request *r)
{
    for (size_t i = 0; i < r->n_tools; i++) {
        char *nm = tool_name(r, i);
        bool ok = nm && *nm;
        for (const unsigned char *c = (const unsigned char *)(nm ? nm : ""); ok && *c; c++)
            ok = *c >= 0x20 && *c != '"' && *c != '\\';
        free(nm);
        if (!ok) return false;
    }
    return r->n_tools > 0;
}

/* An unnamed forced call ("required"): the name is held to the tools' and, in a format whose
 * arguments are one JSON object (Qwen3's, Llama's, Mistral's, DeepSeek's, Kimi's: the markers
 * between name and arguments, control tokens in real vocabularies, are written by theirs,
 * json_vocab_calls), the arguments to its schema; in the tagged ones (Qwen3-Coder's, GLM's,
 * MiniMax's) only the name, through what follows it. */
static void forced_any(const server *s, const api_request *r, prepared *p)
{
    const char *close = tool_call_args_close(chat_tools_format(s->tools));
    if (!s->json_vocab || !plain_names(r)) return;
    p->forced_any = true;
    p->call_suffix = close;
    p->forced_name_only = !close; /* the tagged formats: their arguments are not JSON, only the name is held */
}

/* An unnamed forced call's leads (each tool's name and what follows it up to the arguments) and, unless
 * only the name is held, each tool's schema: malloc'd arrays of r->n_tools texts, or -1. */
static int forced_leads(const server *s, const api_request *r, const prepared *p, char ***leads, char ***schemas)
{
    const tool_format f = chat_tools_format(s->tools);
    char *base = tool_call_prefix(f, NULL);
    *leads = calloc(r->n_tools + 1, sizeof **leads);
    *schemas = calloc(r->n_tools + 1, sizeof **schemas);
    bool ok = base && *leads && *schemas;
    for (size_t i = 0; ok && i < r->n_tools; i++) {
        char *nm = tool_name(r, i), *full = nm ? tool_call_prefix(f, nm) : NULL;
        (*leads)[i] = full ? strdup(full + strlen(base)) : NULL;
        if (!p->forced_name_only) (*schemas)[i] = tool_params(r, (int)i);
        ok = (*leads)[i] && (p->forced_name_only || (*schemas)[i]);
        free(full);
        free(nm);
    }
    free(base);
    return ok ? 0 : -1;
}

static void free_texts(char **t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) free(t[i]);
    free(t);
}

static int prepare(server *s, const api_request *r, api_message *marked, prepared *p, api_error *e);

int server_prepare(server *s, const api_request *r, prepared *p, api_error *e)
{
    memset(p, 0, sizeof *p);
    memset(e, 0, sizeof *e);
    p->forced_tool = -1;
    api_message *marked = NULL;
    if (server_pictures(s, r, p, &marked, e)) return -1;
    const int rc = prepare(s, r, marked, p, e);
    server_free_marked(r, marked);
    if (rc) server_prepared_free(s, p);
    return rc;
}

void server_prepared_free(const server *s, prepared *p)
{
    free(p->ids);
    p->ids = NULL;
    server_free_pictures(s, p);
}

/* server_prepare() after the pictures: marked, the messages with their markers (NULL: none). */
static int prepare(server *s, const api_request *r, api_message *marked, prepared *p, api_error *e)
{
    const engine *eng = s->eng;
    char *text;
    const char *what = r->kind == API_COMPLETION ? "prompt" : "messages";
    bool add_special = true;
    if (r->draft_mtp == 1 && r->draft_max != 0 && !eng->mtp)
        return fail(e, 400, "draft", "draft \"mtp\" needs the model's next-token-prediction block, which this "
                                     "server's model does not have (or runs on a GPU): use \"ngram\"");
    if (r->json_mode && s->has_harmony)
        return fail(e, 400, "response_format", "JSON mode is not available with gpt-oss's harmony template");
    if (r->json_mode && !s->json_vocab) return fail(e, 500, "response_format", "out of memory for JSON mode");
    if (r->json_schema) { /* compiled again by the generation, which keeps it */
        char jerr[200];
        js_schema *js = js_compile(r->json_schema, jerr, sizeof jerr);
        if (!js) {
            char msg[300];
            snprintf(msg, sizeof msg, "the JSON schema: %s", jerr);
            return fail(e, 400, "response_format", msg);
        }
        js_free(js);
    }
    for (int i = 0; i < r->n_bias; i++) {
        if (r->bias_id[i] >= eng->n_vocab) {
            char msg[160];
            snprintf(msg, sizeof msg, "logit_bias names token %d; the vocabulary's ids are 0..%d", (int)r->bias_id[i],
                     eng->n_vocab - 1);
            return fail(e, 400, "logit_bias", msg);
        }
    }
    if (r->kind == API_COMPLETION) {
        text = strdup(r->prompt);
        if (!text) return fail(e, 500, what, "out of memory");
    } else {
        const chat_setup cs = { .family = s->family, .tools = s->tools, .bos = eng->bos_text,
                                .eos = eng->eos_text, .default_system = s->default_system };
        api_request rm = *r; /* with pictures: the texts that mark where they stood */
        if (marked) rm.msgs = marked;
        text = chat_request_render(&cs, &rm, e);
        if (!text) return -1;
        p->tools = r->n_tools > 0;
        p->tool_defs = (const char *const *)r->tools;
        p->n_tool_defs = r->n_tools;
        /* a prompt that ends inside <think> (MiniMax-M2, newer DeepSeek-R1 templates) starts the answer
         * in its reasoning; otherwise the answer may open one itself (Qwen3, R1) */
        size_t tl = strlen(text);
        while (tl && (text[tl - 1] == '\n' || text[tl - 1] == ' ')) tl--;
        p->think = tl >= 7 && !memcmp(text + tl - 7, "<think>", 7) ? GEN_THINK_OPEN : GEN_THINK_MAYBE;
        if (r->force_tool) { /* the prompt ends with the call's opening (chat_request.h): the answer is the call */
            p->think = GEN_THINK_OFF;
            char *pre = tool_call_prefix(chat_tools_format(s->tools), r->force_name);
            snprintf(p->call_prefix, sizeof p->call_prefix, "%s", pre ? pre : "");
            free(pre);
            if (r->force_name) forced_args(s, r, p);
            else forced_any(s, r, p);
        }
        /* the template wrote BOS already; a second one would shift the model */
        size_t bl = strlen(eng->bos_text);
        if (bl && !strncmp(text, eng->bos_text, bl)) add_special = false;
    }
    if (p->n_pics) { /* the pictures through the vision projector, in the prompt where their markers are */
        char perr[256];
        int rc = eng->tokenize_pictures(eng->self, text, strlen(text), add_special, p->pics, p->n_pics, &p->ids,
                                        &p->n_ids, &p->pictures, perr, sizeof perr);
        free(text);
        if (rc != 0) return fail(e, 400, what, perr);
    } else {
        int rc = eng->tokenize(eng->self, text, strlen(text), add_special, &p->ids, &p->n_ids);
        free(text);
        if (rc != 0) return fail(e, 500, what, "tokenization failed");
    }
    char msg[256];
    if (p->n_ids >= (size_t)s->n_ctx) {
        snprintf(msg, sizeof msg, "the prompt is %zu tokens%s; the context length is %d tokens",
                 p->n_ids, p->n_pics ? " and picture rows" : "", s->n_ctx);
        return fail(e, 400, what, msg);
    }
    int room = s->n_ctx - (int)p->n_ids;
    p->max_tokens = r->max_tokens ? r->max_tokens : room;
    /* clients that size max_tokens for a hosted model (Claude Code asks for 32000) would be refused
     * on every turn; by default their answers end where the context does, reported as "length" /
     * "max_tokens", and the prompt itself is never cut */
    if (p->max_tokens > room && !s->strict_max_tokens) p->max_tokens = room;
    if (p->max_tokens > room) {
        snprintf(msg, sizeof msg,
                 "the prompt (%zu tokens) plus max_tokens (%d) exceeds the context length of %d tokens",
                 p->n_ids, p->max_tokens, s->n_ctx);
        return fail(e, 400, "max_tokens", msg);
    }
    return 0;
}

static void on_token(void *ud, double seconds, int first)
{
    server *s = ud;
    if (first) metrics_ttft(s->metrics, seconds);
    else metrics_token_latency(s->metrics, seconds);
}

gen *server_gen_begin(server *s, const api_request *r, const prepared *p, char *err, size_t errlen)
{
    uint64_t seed = r->seed;
    if (!r->has_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ atomic_fetch_add(&s->next_id, 1);
    }
    gen_params gp = {
        .max_tokens = p->max_tokens,
        .sampling = { .temperature = (float)r->temperature, .top_p = (float)r->top_p,
                      .top_k = r->top_k, .seed = seed, .presence_penalty = r->presence_penalty,
                      .frequency_penalty = r->frequency_penalty, .bias_id = r->bias_id, .bias = r->bias,
                      .n_bias = r->n_bias, .min_p = r->min_p, .repeat_penalty = r->repeat_penalty,
                      .draft_max = r->draft_max >= 0 ? r->draft_max : s->draft_max,
                      .draft_mtp = r->draft_mtp >= 0 ? r->draft_mtp == 1 : s->draft_mtp,
                      .n_probs = r->logprobs ? (r->top_logprobs > 0 ? r->top_logprobs : 1) : 0,
                      .pictures = p->pictures },
        .stops = (const char *const *)r->stops,
        .n_stops = r->n_stops,
        .cancel = &s->stopping,
        .harmony = s->has_harmony && r->kind != API_COMPLETION ? &s->harmony : NULL,
        .think = p->think,
        .kept = r->kind != API_COMPLETION ? s->kept : NULL,
        .json_vocab = r->json_mode ? s->json_vocab : NULL,
        .json_schema = r->json_schema,
        .n_kept = r->kind != API_COMPLETION ? s->n_kept : 0,
        .on_token = on_token,
        .ud = s,
    };
    char *args_schema = NULL; /* a named forced call's arguments, held to the tool's schema */
    if (p->forced_tool >= 0 && (args_schema = tool_params(r, p->forced_tool))) {
        gp.json_vocab = s->json_vocab;
        gp.json_schema = args_schema;
    }
    char **leads = NULL, **schemas = NULL; /* an unnamed forced call's */
    if (p->forced_any && forced_leads(s, r, p, &leads, &schemas) == 0) {
        gp.json_vocab = s->json_vocab_calls ? s->json_vocab_calls : s->json_vocab;
        gp.json_leads = (const char *const *)leads;
        gp.json_lead_schemas = (const char *const *)schemas;
        gp.n_json_leads = r->n_tools;
        gp.json_leads_only = p->forced_name_only;
    }
    gen *g = gen_begin(s->eng, p->ids, p->n_ids, &gp, err, errlen);
    free(args_schema); /* the generation keeps its own compiled copies */
    free_texts(leads, r->n_tools);
    free_texts(schemas, r->n_tools);
    return g;
}

void server_gen_finish(server *s, gen *g, size_t n_prompt)
{
    if (!g) return;
    metrics_tokens(s->metrics, n_prompt, gen_n_cached(g), gen_n_tokens(g));
    if (!gen_finished(g)) metrics_ended_early(s->metrics);
    gen_end(g);
}

void server_content(const server *s, const prepared *p, tool_scan *ts, const char *d, size_t n, strbuf *out)
{
    if (p->tools && chat_format_of_tools(s->tools)->calls != CHAT_CALLS_APART) {
        ts->format = chat_tools_format(s->tools);
        ts->tools = p->tool_defs;
        ts->n_tools = p->n_tool_defs;
        ts->prefix = p->call_prefix[0] ? p->call_prefix : NULL;
        ts->suffix = p->call_suffix;
        tool_scan_feed(ts, d, n, out);
    } else {
        strbuf_add(out, d, n);
    }
}

size_t server_calls(const server *s, const prepared *p, gen *g, tool_scan *ts, strbuf *out, tool_call **calls)
{
    *calls = NULL;
    if (!p->tools) return 0;
    if (chat_format_of_tools(s->tools)->calls != CHAT_CALLS_APART) { /* harmony's come apart, below */
        ts->format = chat_tools_format(s->tools);
        ts->tools = p->tool_defs;
        ts->n_tools = p->n_tool_defs;
        ts->prefix = p->call_prefix[0] ? p->call_prefix : NULL;
        ts->suffix = p->call_suffix;
        return tool_scan_finish(ts, calls, out);
    }
    size_t n;
    const gen_call *c = gen_calls(g, &n);
    const char **names = calloc(n + 1, sizeof *names), **args = calloc(n + 1, sizeof *args);
    size_t k = 0;
    for (size_t i = 0; names && args && i < n; i++) {
        if (c[i].args.oom) { k = 0; break; }
        names[k] = c[i].name;
        args[k++] = c[i].args.data ? c[i].args.data : "";
    }
    k = names && args ? tool_calls_from(names, args, k, calls) : 0;
    free(names);
    free(args);
    return k;
}
