/* strata: the runtime's command-line entry. A thin dispatcher: each
 * subcommand is one row of COMMANDS (name, handler, one-line summary);
 * adding a subcommand is adding a row. Handlers get argv from the
 * subcommand's name on and return the exit status. */
#include <stdio.h>
#include <string.h>

#include "runtime/cli/budget.h"
#include "runtime/cli/cli.h"
#include "runtime/pull/pull.h"
#include "runtime/cli/serve_cli.h"

typedef struct strata_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} strata_command;

static const strata_command COMMANDS[] = {
    { "run", cmd_run, "generate a continuation of a prompt from a pack" },
    { "serve", strata_cmd_serve, "serve a pack over OpenAI- and Anthropic-compatible HTTP" },
    { "info", cmd_info, "load a pack and print what it holds" },
    { "check", cmd_check, "verify the size and crc32 of every pack file" },
    { "perplexity", cmd_perplexity, "perplexity of a text; KL divergence against base logits" },
    { "bench", cmd_bench, "prefill/decode tokens/s and decode against the bandwidth floor" },
    { "routing", cmd_routing, "per-layer expert use of a text: load entropy, top-25% share, reuse" },
    { "calibrate", cmd_calibrate, "record the routed experts' input Gram matrices of a text, for grams2imatrix" },
    { "tokenize", cmd_tokenize, "text -> token ids with a GGUF's or a pack's tokenizer, and back" },
    { "template", cmd_template, "the prompt strata serve renders for a chat request (tools included)" },
    { "budget", cmd_budget, "what fits where: dense pool, KV cache and expert slots per device" },
    { "pull", strata_cmd_pull, "download model files from Hugging Face, resumable and sha256-verified" },
    { "version", cmd_version, "the version and build: compiler, CPU kernels, CUDA or not (also --version)" },
    { NULL, NULL, NULL }, /* rows are added above this sentinel */
};

static void help(FILE *fp)
{
    fprintf(fp, "usage: strata <command> [options]   (strata <command> --help for its options)\n");
    for (size_t i = 0; COMMANDS[i].name; i++)
        fprintf(fp, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) { help(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        help(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) return cmd_version(1, argv + 1);
    for (size_t i = 0; COMMANDS[i].name; i++)
        if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "strata: unknown command '%s'\n", argv[1]);
    help(stderr);
    return 2;
}
