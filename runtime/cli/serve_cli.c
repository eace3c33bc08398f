/* serve_cli.c: see serve_cli.h.
 *
 * PACK is loaded after the server is listening, so /health says 503 while
 * a large pack loads and 200 once engine_model.h has built its contexts.
 * --fake-engine serves the deterministic test engine (engine_fake.h) with
 * PACK read as a GGUF holding a tokenizer (or a pack directory holding
 * tokenizer.gguf). It exists for the end-to-end tests and is documented as
 * such; --fake-delay-ms and --fake-load-ms shape it for those tests,
 * --fake-script and --fake-template give it an answer and a template
 * (the SDK tool-call check). */
#include "runtime/cli/serve_cli.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "formats/pack_files.h"
#include "runtime/serve/engine_fake.h"
#include "runtime/serve/engine_model.h"
#include "runtime/serve/server.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: strata serve PACK [--host 127.0.0.1] [--port 8080] [--api-key KEY]\n"
        "                         [--parallel N] [--queue N] [--ctx N] [--chat-template NAME]\n"
        "                         [--cors ORIGIN] [--max-body BYTES] [--no-prompt-cache]\n"
        "                         [--strict-max-tokens]\n"
        "  Serves PACK over OpenAI- and Anthropic-compatible HTTP APIs (docs/server.md).\n"
        "  --host          IPv4 address to bind (default 127.0.0.1: this machine only)\n"
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
        "  --max-body      largest request body in bytes (default 1048576)\n"
        "  --no-prompt-cache  evaluate every prompt whole (default: a slot keeps its KV cache and a\n"
        "                  request evaluates only what follows the prefix it shares with it)\n"
        "  --strict-max-tokens  refuse (400) a max_tokens the context cannot hold after the prompt\n"
        "                  (default: the answer ends where the context does, finish_reason \"length\"\n"
        "                  / stop_reason \"max_tokens\"; clients such as Claude Code ask for 32000)\n"
        "  [--device auto|cpu|cuda] [--vram-reserve SIZE] [--miss cpu|pcie|auto] [--profile FILE]\n"
        "  [--record-routing FILE] (written when the server stops; the GPU expert cache's counters\n"
        "  appear in /metrics):\n"
        DEVICE_HELP
        "  Test hooks: --fake-engine (PACK is a GGUF with a tokenizer), --fake-delay-ms N,\n"
        "  --fake-load-ms N, --fake-script TEXT (the answer, greedy or sampled), --fake-template TEXT (the chat\n"
        "  template).\n");
}

static bool parse_int(const char *opt, const char *v, long lo, long hi, long *out)
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
    bool          fake, no_prompt_cache;
    long          fake_delay_ms, fake_load_ms, threads;
    const char   *fake_script, *fake_template;
    device_opts   dev;
} serve_opts;

/* Returns 0, or the exit status to return. */
static int parse_args(int argc, char **argv, serve_opts *o)
{
    o->cfg.port = 8080;
    device_opts_default(&o->dev);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return -1; }
        if (!strcmp(a, "--fake-engine")) { o->fake = true; continue; }
        if (!strcmp(a, "--no-prompt-cache")) { o->no_prompt_cache = true; continue; }
        if (!strcmp(a, "--strict-max-tokens")) { o->cfg.strict_max_tokens = true; continue; }
        if (a[0] != '-') {
            if (o->pack) { fprintf(stderr, "strata serve: more than one PACK given ('%s')\n", a); return 2; }
            o->pack = a;
            continue;
        }
        if (!v) {
            fprintf(stderr, "strata serve: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        char derr[256];
        int dr = device_parse_arg(&o->dev, a, v, derr, sizeof derr);
        if (dr < 0) { fprintf(stderr, "strata serve: %s\n", derr); return 2; }
        if (dr > 0) continue;
        if (!strcmp(a, "--host")) o->cfg.host = v;
        else if (!strcmp(a, "--api-key")) o->cfg.api_key = v;
        else if (!strcmp(a, "--chat-template")) o->cfg.chat_template = v;
        else if (!strcmp(a, "--cors")) o->cfg.cors_origin = v;
        else if (!strcmp(a, "--port")) { if (!parse_int(a, v, 0, 65535, &x)) return 2; o->cfg.port = (int)x; }
        else if (!strcmp(a, "--parallel")) { if (!parse_int(a, v, 1, 256, &x)) return 2; o->cfg.parallel = (int)x; }
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) { if (!parse_int(a, v, 1, 1024, &x)) return 2; o->threads = x; }
        else if (!strcmp(a, "--queue")) { if (!parse_int(a, v, 0, 4096, &x)) return 2; o->cfg.queue = x ? (int)x : -1; }
        else if (!strcmp(a, "--ctx")) { if (!parse_int(a, v, 16, 1 << 24, &x)) return 2; o->cfg.n_ctx = (int)x; }
        else if (!strcmp(a, "--max-body")) { if (!parse_int(a, v, 1024, 1L << 30, &x)) return 2; o->cfg.max_body = (size_t)x; }
        else if (!strcmp(a, "--fake-delay-ms")) { if (!parse_int(a, v, 0, 60000, &x)) return 2; o->fake_delay_ms = x; }
        else if (!strcmp(a, "--fake-load-ms")) { if (!parse_int(a, v, 0, 600000, &x)) return 2; o->fake_load_ms = x; }
        else if (!strcmp(a, "--fake-script")) o->fake_script = v;
        else if (!strcmp(a, "--fake-template")) o->fake_template = v;
        else {
            fprintf(stderr, "strata serve: unknown option: %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o->pack) {
        fprintf(stderr, "strata serve: no PACK given\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

static engine *load_engine(const serve_opts *o, char *err, size_t errlen)
{
    if (!o->fake) {
        engine_model_opts mo = { .parallel = o->cfg.parallel, .n_ctx = o->cfg.n_ctx,
                                 .n_threads = (int)o->threads, .kv = KV_F16, .dev = &o->dev,
                                 .no_prompt_cache = o->no_prompt_cache };
        /* the reason is written after the prefix, so err holds one line */
        snprintf(err, errlen, "%s: cannot load the pack: ", o->pack);
        size_t k = strlen(err);
        return engine_model_open(o->pack, &mo, err + k, errlen - k);
    }
    char path[PATH_MAX];
    struct stat st;
    if (stat(o->pack, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%s/%s", o->pack, PACK_FILE_NAMES[PACK_TOKENIZER]);
    else
        snprintf(path, sizeof path, "%s", o->pack);
    /* a scripted answer (tool calls) comes with a template, whose prompts want room; --ctx sets it
     * (an agent's system prompt alone can be 20000 tokens) */
    const int fake_ctx = o->cfg.n_ctx ? o->cfg.n_ctx : o->fake_script ? 4096 : 512;
    fake_engine_opts fo = { .n_ctx = fake_ctx, .delay_ms = (int)o->fake_delay_ms,
                            .script = o->fake_script, .script_always = true, .chat_template = o->fake_template };
    return fake_engine_new(path, &fo, err, errlen);
}

static void free_engine(const serve_opts *o, engine *e)
{
    if (o->fake) fake_engine_free(e);
    else engine_model_free(e);
}

int strata_cmd_serve(int argc, char **argv)
{
    serve_opts o = { 0 };
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
    server *s = server_start(&o.cfg, err, sizeof err);
    if (!s) { fprintf(stderr, "strata serve: %s\n", err); return 1; }
    printf("strata serve: listening on http://%s:%d\n", o.cfg.host ? o.cfg.host : "127.0.0.1",
           server_port(s));
    fflush(stdout);

    if (o.fake_load_ms > 0) {
        struct timespec ts = { o.fake_load_ms / 1000, (o.fake_load_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    engine *e = load_engine(&o, err, sizeof err);
    if (!e || server_set_engine(s, e, err, sizeof err) != 0) {
        fprintf(stderr, "strata serve: %s\n", err);
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
