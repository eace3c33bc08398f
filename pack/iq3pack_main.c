/* iq3pack: builds packs and encodes raw IQ3 containers. A thin dispatcher:
 * each subcommand is one row of COMMANDS (name, handler, one-line summary);
 * adding a subcommand is adding a row. Handlers get argv from the
 * subcommand's name on and return the exit status. */
#include "formats/version.h"
#include "pack/gguf_inspect.h"
#include "pack/iq3_cli.h"
#include "pack/pack_cli.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct iq3pack_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} iq3pack_command;

/* info takes a GGUF checkpoint or a pack directory: the argument decides. */
static int cmd_info(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] != '-' && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            return iq3pack_cmd_packinfo(argc, argv);
    }
    return gguf_inspect_info(argc, argv, stdout, stderr);
}
static int cmd_dump(int argc, char **argv) { return gguf_inspect_dump(argc, argv, stdout, stderr); }

static const iq3pack_command COMMANDS[] = {
    { "build", iq3pack_cmd_build, "GGUF checkpoint (+ imatrix) -> pack directory" },
    { "merge", iq3pack_cmd_merge, "shard directories of build --shard K/N -> the pack one build writes" },
    { "verify", iq3pack_cmd_verify, "re-read a pack: checksums, dense bit-exactness, expert error" },
    { "info", cmd_info, "GGUF checkpoint or pack: what it holds, by type/kind and size" },
    { "dump", cmd_dump, "one GGUF tensor dequantized to raw float32 (bit-exact with ggml)" },
    { "encode", iq3pack_cmd_encode, "raw float32 rows -> IQ3 container (quality or seed-exact reference)" },
    { "decode", iq3pack_cmd_decode, "IQ3 container -> raw float32 rows" },
    { "stats", iq3pack_cmd_stats, "bits per weight, rel-RMSE and weighted rel-RMSE" },
};

static void help(FILE *fp)
{
    fprintf(fp, "usage: iq3pack <command> [options]   (iq3pack <command> --help for its options)\n"
                "       iq3pack --version              (the version and the build)\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        fprintf(fp, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) { help(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        help(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("iq3pack %s (%s; CPU only)\n", strata_version(), strata_build_info());
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "iq3pack: unknown command '%s'\n", argv[1]);
    help(stderr);
    return 2;
}
