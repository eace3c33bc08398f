/* grams2imatrix: calibration Grams -> importance-matrix GGUF. Parses the
 * command line the way the seed's argparse does (usage errors exit 2) and
 * hands over to grams2imatrix_run(). */
#include <stdio.h>
#include <string.h>

#include "convert/grams2imatrix.h"
#include "formats/version.h"

static const char USAGE[] =
    "usage: grams2imatrix [-h] -o OUT [--datasets DATASETS] [--chunk-size CHUNK_SIZE]\n"
    "                     [--min-rows MIN_ROWS] [--names {seed,llama}] [-v] calib_dir\n";

static const char HELP[] =
    "\nFold a radiance calibration recording into a GGUF v3 imatrix.\n\n"
    "positional arguments:\n"
    "  calib_dir             directory of RADGRAM2 gram.r<rank>.blk.<L>.ffn_down_exps[.<e>].bin\n\n"
    "options:\n"
    "  -h, --help            show this help message and exit\n"
    "  --version             print the version and the build, and exit\n"
    "  -o OUT, --out OUT     output imatrix (never overwritten)\n"
    "  --datasets DATASETS   comma-separated names for imatrix.datasets\n"
    "  --chunk-size N        rows per chunk for imatrix.chunk_size (default 4096)\n"
    "  --min-rows N          own-gram row threshold (default 4*k, the engine's kOwnRowsPerK law)\n"
    "  --names {seed,llama}  seed: the seed's entries, byte for byte (default);\n"
    "                        llama: what llama.cpp's imatrix writer writes, for llama-quantize\n"
    "  -v, --verbose         one line per gram and per layer on stderr\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs(USAGE, stderr);
    fputs("grams2imatrix: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

static const char MISSING[] = "";

/* "--opt VALUE" or "--opt=VALUE" (and "-oVALUE" for the short flag); MISSING
 * when the flag ends the command line. */
static const char *opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt)
{
    const char *a = argv[*i];
    size_t n = strlen(lng);
    if (!strcmp(a, lng) || (shrt && !strcmp(a, shrt))) return *i + 1 < argc ? argv[++*i] : MISSING;
    if (!strncmp(a, lng, n) && a[n] == '=') return a + n + 1;
    if (shrt && !strncmp(a, shrt, 2) && a[2]) return a + 2;
    return NULL;
}

static int number(const char *flag, const char *text, g2i_int *out)
{
    if (g2i_parse_int(text, out) == 0) return 0;
    fputs(USAGE, stderr);
    fprintf(stderr, "grams2imatrix: error: argument %s: invalid int value: '%s'\n", flag, text);
    return -1;
}

int main(int argc, char **argv)
{
    g2i_options o;
    g2i_options_default(&o);
    int no_more_opts = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v;
        if (no_more_opts || a[0] != '-' || !a[1]) {
            if (o.calib_dir) return usage_error("unrecognized arguments: %s", a);
            o.calib_dir = a;
        } else if (!strcmp(a, "--")) {
            no_more_opts = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            fputs(HELP, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("grams2imatrix %s (%s; CPU only)\n", strata_version(), strata_build_info());
            return 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o.verbose = true;
        } else if ((v = opt_value(argc, argv, &i, "--out", "-o"))) {
            if (v == MISSING) return usage_error("argument -o/--out: expected one argument%s", "");
            o.out = v;
        } else if ((v = opt_value(argc, argv, &i, "--datasets", NULL))) {
            if (v == MISSING) return usage_error("argument --datasets: expected one argument%s", "");
            o.datasets = v;
        } else if ((v = opt_value(argc, argv, &i, "--chunk-size", NULL))) {
            if (v == MISSING) return usage_error("argument --chunk-size: expected one argument%s", "");
            if (number("--chunk-size", v, &o.chunk_size)) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--min-rows", NULL))) {
            if (v == MISSING) return usage_error("argument --min-rows: expected one argument%s", "");
            if (number("--min-rows", v, &o.min_rows)) return 2;
        } else if ((v = opt_value(argc, argv, &i, "--names", NULL))) {
            if (v == MISSING) return usage_error("argument --names: expected one argument%s", "");
            if (!strcmp(v, "seed")) o.names = G2I_NAMES_SEED;
            else if (!strcmp(v, "llama")) o.names = G2I_NAMES_LLAMA;
            else return usage_error("argument --names: invalid choice: '%s' (choose from 'seed', 'llama')", v);
        } else {
            return usage_error("unrecognized arguments: %s", a);
        }
    }
    if (!o.calib_dir && !o.out)
        return usage_error("the following arguments are required: calib_dir, -o/--out%s", "");
    if (!o.calib_dir) return usage_error("the following arguments are required: calib_dir%s", "");
    if (!o.out) return usage_error("the following arguments are required: -o/--out%s", "");
    return grams2imatrix_run(&o, stderr);
}
