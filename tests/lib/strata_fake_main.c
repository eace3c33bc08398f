/* strata_fake_main.c: strata-fake, `strata serve` answering with the fake
 * engine (engine_fake.h) instead of a pack's model; a test program built by
 * `make tests` into $(BUILD)/tests/ beside the suites, never installed.
 * The end-to-end scripts find it in $STRATA_FAKE (make test sets it), the
 * diag scripts under build/.
 *
 *   strata-fake serve PACK [strata serve's options] [--fake-delay-ms N]
 *                          [--fake-load-ms N] [--fake-script TEXT] [--fake-template TEXT]
 *
 * PACK is a GGUF holding a tokenizer (or a pack directory holding
 * tokenizer.gguf). --fake-delay-ms sleeps before each token (concurrency
 * and disconnect tests), --fake-load-ms before the engine opens (/health
 * 503 while loading), --fake-script is the answer, greedy or sampled, and
 * --fake-template the chat template (the SDK and agent tool-call checks).
 * Everything else is serve_cli.c's, unchanged. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/cli/serve_cli.h"
#include "tests/lib/engine_fake.h"

typedef struct fake_serve {
    long        delay_ms, load_ms;
    const char *script, *tmpl;
} fake_serve;

static int fake_option(void *ctx, const char *a, const char *v)
{
    fake_serve *f = ctx;
    if (!strcmp(a, "--fake-delay-ms")) return serve_parse_int(a, v, 0, 60000, &f->delay_ms) ? 1 : -1;
    if (!strcmp(a, "--fake-load-ms")) return serve_parse_int(a, v, 0, 600000, &f->load_ms) ? 1 : -1;
    if (!strcmp(a, "--fake-script")) { f->script = v; return 1; }
    if (!strcmp(a, "--fake-template")) { f->tmpl = v; return 1; }
    return 0;
}

static engine *fake_open(void *ctx, const char *pack, const server_config *cfg, char *err, size_t errlen)
{
    const fake_serve *f = ctx;
    if (f->load_ms > 0) {
        struct timespec ts = { f->load_ms / 1000, (f->load_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    char path[PATH_MAX];
    struct stat st;
    if (stat(pack, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%s/tokenizer.gguf", pack);
    else
        snprintf(path, sizeof path, "%s", pack);
    /* a scripted answer (tool calls) comes with a template, whose prompts want room; --ctx sets it
     * (an agent's system prompt alone can be 20000 tokens) */
    const int n_ctx = cfg->n_ctx ? cfg->n_ctx : f->script ? 4096 : 512;
    fake_engine_opts fo = { .n_ctx = n_ctx, .delay_ms = (int)f->delay_ms,
                            .script = f->script, .script_always = true, .chat_template = f->tmpl };
    return fake_engine_new(path, &fo, err, errlen);
}

static void fake_free(void *ctx, engine *e)
{
    (void)ctx;
    fake_engine_free(e);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "serve")) {
        fprintf(stderr, "usage: strata-fake serve PACK [options] (strata-fake serve --help)\n");
        return 2;
    }
    fake_serve f = { 0 };
    const serve_engine_hooks hooks = {
        .ctx = &f, .option = fake_option, .open = fake_open, .free = fake_free,
        .help = "  Test hooks (strata-fake only): PACK is a GGUF with a tokenizer, --fake-delay-ms N,\n"
                "  --fake-load-ms N, --fake-script TEXT (the answer, greedy or sampled), --fake-template TEXT (the chat\n"
                "  template).\n",
    };
    return strata_cmd_serve_with(argc - 1, argv + 1, &hooks);
}
