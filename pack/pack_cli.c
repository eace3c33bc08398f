/* pack_cli.c: argument parsing for build / verify / info; the work is in
 * build.c, verify.c and packinfo.c. */
#include "pack/pack_cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/hadamard.h"
#include "pack/build.h"
#include "pack/shard.h"

static int usage(FILE *fp, const char *u, int rc)
{
    fprintf(fp, "usage: iq3pack %s\n", u);
    return rc;
}

static const char BUILD_USAGE[] =
    "build SRC.gguf -o PACKDIR [--imatrix IMAT] [--grams DIR] [--rotate hadamard[:B]] [--experts iq3|keep]\n"
    "       [--threads N] [--shard K/N] [--no-nextn] [--mmproj MMPROJ.gguf] [-v]";
static const char BUILD_HELP[] =
    "  Turns a GGUF checkpoint into a pack directory (written under a temporary name,\n"
    "  renamed when complete; an existing PACKDIR is never overwritten).\n"
    "  SRC.gguf         one file, or the first part of a gguf-split set (-00001-of-0000N.gguf);\n"
    "                   routed experts merged ([K, N, E]) or one tensor per expert, as GGUFs\n"
    "                   converted before April 2024 have them\n"
    "  --imatrix IMAT   llama.cpp importance matrix (imatrix.dat or GGUF) weighting the IQ3 error\n"
    "  --grams DIR      a calibration recording (`strata calibrate`): the experts chosen with\n"
    "                   GPTQ's error feedback from the Gram of each part's recorded inputs, so\n"
    "                   that their error on those inputs is least (an expert with no Gram or\n"
    "                   under 4 x width rows keeps the imatrix path)\n"
    "  --rotate hadamard[:B]\n"
    "                   rotated experts: each IQ3-encoded row is stored multiplied by a block\n"
    "                   Hadamard transform of B columns (a power of two dividing the row; default\n"
    "                   the largest that does), which spreads outlier columns over the block\n"
    "                   before encoding; `strata` rotates the inputs the same way as it runs.\n"
    "                   Grams recorded with `strata calibrate --rotate` must use the same B\n"
    "  --experts iq3    routed experts into the 3.0625-bit IQ3 container (default; IQ3_XXS moved\n"
    "                   losslessly)\n"
    "  --experts keep   routed experts kept in their source precision (bit-exact)\n"
    "  --threads N      encoder threads (default: all cores of this machine); the pack's bytes\n"
    "                   do not depend on N\n"
    "  --shard K/N      build only shard K of N (0..N-1) into the shard directory -o names: the\n"
    "                   expert layers cut into N runs of about equal bytes, shard 0 with the\n"
    "                   dense part; one per machine (a Slurm array task: --shard\n"
    "                   $SLURM_ARRAY_TASK_ID/N), then `iq3pack merge` assembles the pack, the same\n"
    "                   bytes one build writes\n"
    "  --no-nextn       leave out the next-token-prediction blocks (the MTP layers of GLM-4.5,\n"
    "                   DeepSeek V3 and Ling 2.0, kept by default: `strata run --draft mtp` drafts\n"
    "                   with them)\n"
    "  --mmproj MMPROJ.gguf\n"
    "                   a vision projector (llama.cpp's mmproj file of the model), carried in the\n"
    "                   pack as vision.gguf byte for byte; `iq3pack verify` checks it and\n"
    "                   `strata info` shows it (not with --shard yet)\n"
    "  -v, --verbose    one line per expert tensor and the index step's own summary\n";

int iq3pack_cmd_build(int argc, char **argv)
{
    /* all cores: the encoder splits rows over threads and its bytes do not depend on how many */
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    build_opts o = { .threads = cores < 1 ? 1 : cores > 1024 ? 1024 : (int)cores, .progress = isatty(2) ? 1 : 2 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, BUILD_USAGE, 0);
            fputs(BUILD_HELP, stdout);
            return 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o.verbose = 1;
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && has) o.out = argv[++i];
        else if (!strcmp(a, "--imatrix") && has) o.imatrix = argv[++i];
        else if (!strcmp(a, "--grams") && has) o.grams = argv[++i];
        else if (!strcmp(a, "--rotate") && has) {
            if (hadamard_parse(argv[++i], &o.rotate)) {
                fprintf(stderr, "iq3pack build: --rotate takes hadamard or hadamard:B (B a power of two), not %s\n",
                        argv[i]);
                return 2;
            }
            if (!o.rotate) o.rotate = -1;
        }
        else if (!strcmp(a, "--experts") && has) {
            const char *m = argv[++i];
            if (!strcmp(m, "keep")) o.experts_keep = 1;
            else if (strcmp(m, "iq3")) { fprintf(stderr, "iq3pack build: --experts is iq3 or keep, not %s\n", m); return 2; }
        } else if (!strcmp(a, "--no-nextn")) o.drop_nextn = 1;
        else if (!strcmp(a, "--mmproj") && has) o.mmproj = argv[++i];
        else if (!strcmp(a, "--threads") && has) {
            char *end;
            const long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 1024) { fprintf(stderr, "iq3pack build: --threads needs 1..1024\n"); return 2; }
            o.threads = (int)n;
        } else if (!strcmp(a, "--shard") && has) {
            if (shard_parse(argv[++i], &o.shard_k, &o.shard_n)) {
                fprintf(stderr, "iq3pack build: --shard takes K/N with 0 <= K < N <= 4096, not %s\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "iq3pack build: unknown option %s\n", a);
            return usage(stderr, BUILD_USAGE, 2);
        } else if (!o.src) o.src = a;
        else { fprintf(stderr, "iq3pack build: one source only (%s)\n", a); return 2; }
    }
    if (!o.src || !o.out) return usage(stderr, BUILD_USAGE, 2);
    if (o.mmproj && o.shard_n) {
        fprintf(stderr, "iq3pack build: --mmproj is not taken with --shard yet: a sharded build carries no vision "
                        "projector\n");
        return 2;
    }
    if (o.rotate && o.experts_keep) {
        fprintf(stderr, "iq3pack build: --rotate applies to IQ3-encoded experts; --experts keep encodes nothing\n");
        return 2;
    }
    if (o.grams) {
        struct stat st;
        const char *why = o.experts_keep ? "--experts keep encodes nothing"
                        : stat(o.grams, &st) || !S_ISDIR(st.st_mode) ? "not a folder" : NULL;
        if (why) { fprintf(stderr, "iq3pack build: --grams %s: %s\n", o.grams, why); return 2; }
    }
    return pack_build(&o, stdout, stderr);
}

int iq3pack_cmd_merge(int argc, char **argv)
{
    static const char U[] = "merge SHARDDIR... -o PACKDIR";
    static const char H[] =
        "  Assembles the shard directories of `iq3pack build SRC --shard K/N` (all N of them, in any\n"
        "  order) into PACKDIR: the bytes `iq3pack build SRC` writes with the same flags. Refuses a\n"
        "  shard missing or given twice, one of another source, flags or strata version, and a\n"
        "  damaged or incomplete part, naming it, before writing anything.\n";
    const char **dirs = calloc((size_t)argc, sizeof *dirs);
    const char *outp = NULL;
    int n = 0;
    if (!dirs) { fprintf(stderr, "iq3pack merge: out of memory\n"); return 1; }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            free(dirs);
            usage(stdout, U, 0);
            fputs(H, stdout);
            return 0;
        }
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) && i + 1 < argc) outp = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "iq3pack merge: unknown option %s\n", argv[i]);
            free(dirs);
            return usage(stderr, U, 2);
        } else dirs[n++] = argv[i];
    }
    if (!outp || n == 0) { free(dirs); return usage(stderr, U, 2); }
    const int rc = pack_merge(dirs, n, outp, stdout, stderr);
    free(dirs);
    return rc;
}

int iq3pack_cmd_verify(int argc, char **argv)
{
    static const char U[] = "verify PACKDIR [--source SRC.gguf]";
    const char *dir = NULL, *src = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout, U, 0);
        if (!strcmp(argv[i], "--source") && i + 1 < argc) src = argv[++i];
        else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "iq3pack verify: unexpected %s\n", argv[i]);
            return usage(stderr, U, 2);
        } else dir = argv[i];
    }
    if (!dir) return usage(stderr, U, 2);
    return pack_verify(dir, src, stdout, stderr) ? 1 : 0;
}

int iq3pack_cmd_packinfo(int argc, char **argv)
{
    static const char U[] = "info PACKDIR";
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) return usage(stdout, U, 0);
    if (argc != 2 || argv[1][0] == '-') return usage(stderr, U, 2);
    return pack_info(argv[1], stdout, stderr) ? 1 : 0;
}
