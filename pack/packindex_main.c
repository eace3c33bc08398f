/* packindex_main.c: `packindex [--pack DIR] [-o FILE]`; argument parsing
 * only, the work is packindex_run() in packindex.c. Usage errors exit 2,
 * like the seed's argparse. */
#include <stdio.h>
#include <string.h>

#include "formats/version.h"
#include "pack/packindex.h"

static const char USAGE[] = "usage: packindex [-h] [--version] [--pack PACK] [-o OUT]\n";

int main(int argc, char **argv)
{
    const char *pack = "pack/full", *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL, *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s\n"
                   "Flattens a pack's manifest.json into the index.txt the runtime loads.\n\n"
                   "options:\n"
                   "  -h, --help         show this help message and exit\n"
                   "  --version          print the version and the build, and exit\n"
                   "  --pack PACK        the pack directory (default: pack/full)\n"
                   "  -o OUT, --out OUT  default: <pack>/index.txt; an existing file is never overwritten\n",
                   USAGE);
            return 0;
        }
        if (!strcmp(a, "--version")) {
            printf("packindex %s (%s; CPU only)\n", strata_version(), strata_build_info());
            return 0;
        }
        if (!strcmp(a, "--pack")) dst = &pack;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) dst = &out;
        else if (!strncmp(a, "--pack=", 7)) { dst = &pack; val = a + 7; }
        else if (!strncmp(a, "--out=", 6)) { dst = &out; val = a + 6; }
        else if (!strncmp(a, "-o", 2)) { dst = &out; val = a + 2; }
        if (!dst) {
            fprintf(stderr, "%spackindex: error: unrecognized arguments: %s\n", USAGE, a);
            return 2;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%spackindex: error: argument %s: expected one argument\n", USAGE, a);
                return 2;
            }
            val = argv[++i];
        }
        *dst = val;
    }
    return packindex_run(pack, out, stdout, stderr);
}
