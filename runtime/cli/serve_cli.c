/* serve_cli.c: see serve_cli.h.
 *
 * PACK is loaded after the server is listening, so /health says 503 while
 * a large pack loads and 200 once engine_model.h has built its contexts
 * (or the hooks' engine is open). Before listening, the pack gets the
 * cheap look of loader_precheck() (loader.h), so that a pack that cannot
 * load ends with one error line and no "listening" line. */
#include "runtime/cli/serve_cli.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cli/cli.h"
#include "runtime/model/loader.h"
#include "runtime/pull/pull.h"
#include "runtime/serve/engine_model.h"

static void usage(FILE *fp, const serve_engine_hooks *hooks)
{
    fprintf(fp,
        "usage: strata serve PACK [--host 127.0.0.1] [--port 8080] [--api-key KEY]\n"
        "                         [--parallel N] [--queue N] [--ctx N] [--chat-template NAME]\n"
        "                         [--cors ORIGIN] [--max-body BYTES] [--no-prompt-cache]\n"
        "                         [--strict-max-tokens] [--draft none|ngram|mtp] [--draft-max N]\n"
        "                         [--no-webui] [--allow-remote-images]\n"
        "  Serves PACK over OpenAI- and Anthropic-compatible HTTP APIs (docs/server.md), with a chat\n"
        "  page at / and a dashboard of /metrics at /dashboard for a browser. Pictures in requests\n"
        "  (image_url parts, image blocks) are answered when the pack has a vision projector strata\n"
        "  runs (iq3pack build --mmproj); --max-body bounds their size.\n"
        "  --host          name or IPv4/IPv6 address to bind: localhost, 0.0.0.0, ::1 (default 127.0.0.1:\n"
        "                  this machine only)\n"
        "  --port          TCP port (default 8080; 0 picks a free one and prints it)\n"
        "  --api-key       require Authorization: Bearer KEY or x-api-key: KEY\n"
        "  --parallel      generation slots, each with its own KV cache (default 1)\n"
        "  --threads       threads per slot (default: cores / parallel, at least 1)\n"
        "  --queue         requests that may wait for a slot before 429 (default 4 x parallel)\n"
        "  --ctx           context length per request (default: the model's)\n"
        "  --chat-template chatml | llama2 | llama3 | llama4 | mistral | gemma | phi3 | deepseek | deepseek2 |\n"
        "                  qwen3-thinking | qwen3-instruct |\n"
        "                  granite | chatglm4 | hunyuan-moe | kimi-k2 | gpt-oss | bailing | bailing-think |\n"
        "                  bailing2 | minimax-m2 | dots1 | qwen3 | qwen3-coder | glm-4.5 | kimi-k2-thinking |\n"
        "                  deepseek-v3.1 | llama3.1 | llama3.2 | llama3.3 | mistral-v3 |\n"
        "                  mistral-v3-user-system | kimi-k2-0905 | kimi-k2-0711 (qwen3*, qwen3-coder,\n"
        "                  glm-4.5, minimax-m2, kimi-k2-thinking, kimi-k2-0905, kimi-k2-0711,\n"
        "                  deepseek-v3.1, llama4, llama3.x, mistral-v3* and gpt-oss bring their tool calls)\n"
        "  --cors          allow browser requests from ORIGIN\n"
        "  --no-webui      no chat page and dashboard (/ then answers as /health)\n"
        "  --allow-remote-images  fetch pictures a request names by http(s) URL (at most 20 MiB, 10 s,\n"
        "                  3 redirects; any address the server can reach, its own network included);\n"
        "                  without it such a picture is refused (400)\n"
        "  --max-body      largest request body in bytes (default 1048576)\n"
        "  --no-prompt-cache  evaluate every prompt whole (default: a slot keeps its KV cache and a\n"
        "                  request evaluates only what follows the prefix it shares with it)\n"
        "  --strict-max-tokens  refuse (400) a max_tokens the context cannot hold after the prompt\n"
        "                  (default: the answer ends where the context does, finish_reason \"length\"\n"
        "                  / stop_reason \"max_tokens\"; clients such as Claude Code ask for 32000)\n"
        "  --draft, --draft-max  the default of requests that do not say (\"draft\": \"ngram\" | \"mtp\" | \"none\",\n"
        "                  \"draft_max\": N in a request body); their counters appear in /metrics:\n"
        DRAFT_HELP
        "  [--device auto|cpu|cuda] [--vram-reserve SIZE] [--miss cpu|pcie|auto] [--profile FILE]\n"
        "  [--record-routing FILE] (written when the server stops; the GPU expert cache's counters\n"
        "  appear in /metrics):\n"
        DEVICE_HELP);
    if (hooks && hooks->help) fputs(hooks->help, fp);
}

bool serve_parse_int(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "strata serve: %s needs an integer in %ld..%ld, got '%s'\n", opt, lo, hi,
                v ? v : "");
        return false;
    }
    *out = x;
    return true;
}

typedef struct serve_opts {
    server_config cfg;
    const char   *pack;
    bool          no_prompt_cache;
    long          threads;
    device_opts   dev;
    spec_params   draft;
    const serve_engine_hooks *hooks; /* NULL: the pack's model */
} serve_opts;

/* Returns 0, or the exit status to return. */
static int parse_args(int argc, char **argv, serve_opts *o)
{
    const serve_engine_hooks *hooks = o->hooks;
    o->cfg.port = 8080;
    device_opts_default(&o->dev);
    cli_draft_default(&o->draft);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout, hooks); return -1; }
        if (!strcmp(a, "--no-prompt-cache")) { o->no_prompt_cache = true; continue; }
        if (!strcmp(a, "--strict-max-tokens")) { o->cfg.strict_max_tokens = true; continue; }
        if (!strcmp(a, "--no-webui")) { o->cfg.no_webui = true; continue; }
        if (!strcmp(a, "--allow-remote-images")) { o->cfg.allow_remote_images = true; continue; }
        if (a[0] != '-') {
            if (o->pack) { fprintf(stderr, "strata serve: more than one PACK given ('%s')\n", a); return 2; }
            o->pack = a;
            continue;
        }
        if (!v) {
            fprintf(stderr, "strata serve: unknown option or missing value: %s\n", a);
            usage(stderr, hooks);
            return 2;
        }
        i++;
        char derr[256];
        int dr = device_parse_arg(&o->dev, a, v, derr, sizeof derr);
        if (dr < 0) { fprintf(stderr, "strata serve: %s\n", derr); return 2; }
        if (dr > 0) continue;
        dr = cli_draft_arg("serve", &o->draft, a, v);
        if (dr < 0) return 2;
        if (dr > 0) {
            o->cfg.draft_max = o->draft.kind == SPEC_NONE ? 0 : o->draft.max_draft;
            o->cfg.draft_mtp = o->draft.kind == SPEC_MTP;
            continue;
        }
        if (!strcmp(a, "--host")) o->cfg.host = v;
        else if (!strcmp(a, "--api-key")) o->cfg.api_key = v;
        else if (!strcmp(a, "--chat-template")) o->cfg.chat_template = v;
        else if (!strcmp(a, "--cors")) o->cfg.cors_origin = v;
        else if (!strcmp(a, "--port")) { if (!serve_parse_int(a, v, 0, 65535, &x)) return 2; o->cfg.port = (int)x; }
        else if (!strcmp(a, "--parallel")) { if (!serve_parse_int(a, v, 1, 256, &x)) return 2; o->cfg.parallel = (int)x; }
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) { if (!serve_parse_int(a, v, 1, 1024, &x)) return 2; o->threads = x; }
        else if (!strcmp(a, "--queue")) { if (!serve_parse_int(a, v, 0, 4096, &x)) return 2; o->cfg.queue = x ? (int)x : -1; }
        else if (!strcmp(a, "--ctx")) { if (!serve_parse_int(a, v, 16, 1 << 24, &x)) return 2; o->cfg.n_ctx = (int)x; }
        else if (!strcmp(a, "--max-body")) { if (!serve_parse_int(a, v, 1024, 1L << 30, &x)) return 2; o->cfg.max_body = (size_t)x; }
        else {
            int hr = hooks && hooks->option ? hooks->option(hooks->ctx, a, v) : 0;
            if (hr < 0) return 2;
            if (hr > 0) continue;
            fprintf(stderr, "strata serve: unknown option: %s\n", a);
            usage(stderr, hooks);
            return 2;
        }
    }
    if (!o->pack) {
        fprintf(stderr, "strata serve: no PACK given\n");
        usage(stderr, hooks);
        return 2;
    }
    return 0;
}

/* Loading progress: a line at every tenth of the dense weights read, with
 * the time left, on a terminal or not (a log of a server started by a
 * service manager shows how far a large pack has come), as `strata pull`. */
typedef struct load_progress {
    const char *pack;
    double      t0;
    int         decile; /* the last tenth printed */
} load_progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_load_progress(void *ctx, int64_t done, int64_t total)
{
    load_progress *lp = ctx;
    int d = total > 0 ? (int)(done * 10 / total) : 10;
    if (d <= lp->decile) return;
    lp->decile = d;
    double el = now_s() - lp->t0, left = done > 0 ? el * (double)(total - done) / (double)done : 0;
    char a[32], b[32];
    pull_human_bytes(a, sizeof a, (double)done);
    pull_human_bytes(b, sizeof b, (double)total);
    long t = (long)(left + 0.5);
    fprintf(stderr, "strata serve: loading %s: %3d%% (%s of %s), %ld:%02ld left\n", lp->pack, d * 10, a, b,
            t / 60, t % 60);
}

static engine *load_engine(const serve_opts *o, char *err, size_t errlen)
{
    if (o->hooks) return o->hooks->open(o->hooks->ctx, o->pack, &o->cfg, err, errlen);
    load_progress lp = { .pack = o->pack, .t0 = now_s() };
    tier_plan plan;
    /* the reason is written after the prefix, so err holds one line */
    snprintf(err, errlen, "%s: cannot load the pack: ", o->pack);
    size_t k = strlen(err);
    if (cli_mem_plan(o->pack, &o->dev, o->cfg.n_ctx, o->cfg.parallel, &plan, err, errlen)) return NULL;
    engine_model_opts mo = { .parallel = o->cfg.parallel, .n_ctx = o->cfg.n_ctx,
                             .n_threads = (int)o->threads, .kv = KV_F16, .dev = &o->dev,
                             .no_prompt_cache = o->no_prompt_cache,
                             .progress = on_load_progress, .progress_ctx = &lp, .plan = &plan };
    return engine_model_open(o->pack, &mo, err + k, errlen - k);
}

static void free_engine(const serve_opts *o, engine *e)
{
    if (o->hooks) o->hooks->free(o->hooks->ctx, e);
    else engine_model_free(e);
}

int strata_cmd_serve(int argc, char **argv) { return strata_cmd_serve_with(argc, argv, NULL); }

int strata_cmd_serve_with(int argc, char **argv, const serve_engine_hooks *hooks)
{
    serve_opts o = { .hooks = hooks };
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;

    /* Signals are taken synchronously by this thread (sigwait) so that no
     * handler and no global flag is needed; the server's threads inherit
     * the mask and never see them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    char err[512] = "";
    if (!hooks) {
        if (cli_check_pack_path(o.pack, err, sizeof err) != 0) {
            fprintf(stderr, "strata serve: %s\n", err);
            return 1;
        }
        long n_train = 0;
        if (loader_precheck(o.pack, &n_train, err, sizeof err) != 0) {
            fprintf(stderr, "strata serve: %s: cannot load the pack: %s\n", o.pack, err);
            return 1;
        }
        cli_warn_ctx(o.cfg.n_ctx, n_train);
    }
    /* libcurl's process-wide state, before any thread of the server exists (it lives until exit) */
    if (o.cfg.allow_remote_images && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "strata serve: --allow-remote-images: libcurl could not be initialised\n");
        return 1;
    }
    server *s = server_start(&o.cfg, err, sizeof err);
    if (!s) { fprintf(stderr, "strata serve: %s\n", err); return 1; }
    char url[320];
    printf("strata serve: listening on %s\n", server_url(s, url, sizeof url));
    fflush(stdout);

    engine *e = load_engine(&o, err, sizeof err);
    if (!e || server_set_engine(s, e, err, sizeof err) != 0) {
        fprintf(stderr, "strata serve: %s\n", err);
        server_stop(s);
        free_engine(&o, e);
        return 1;
    }
    if (o.cfg.draft_mtp && o.cfg.draft_max > 0 && !e->mtp) {
        fprintf(stderr, "strata serve: --draft mtp: %s has no next-token-prediction block this server can run "
                        "(a pack built with --no-nextn, a model without one, or --device cuda); use --draft ngram\n",
                o.pack);
        server_stop(s);
        free_engine(&o, e);
        return 1;
    }
    char chat[96];
    printf("strata serve: ready: model %s, %d-token context, chat template %s\n", e->name, e->n_ctx,
           server_chat_summary(s, chat, sizeof chat));
    fflush(stdout);

    int sig = 0;
    sigwait(&set, &sig);
    printf("strata serve: stopping (signal %d)\n", sig);
    fflush(stdout);
    server_stop(s);
    free_engine(&o, e);
    return 0;
}
