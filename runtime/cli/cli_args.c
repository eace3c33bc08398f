/* cli_args.c: cli_check_pack_path(), the one check every `strata`
 * subcommand that takes a pack runs on its PACK argument before loading,
 * so that a GGUF, a missing path or a half-built folder gets one line that
 * says what it is and what to run, the same from every subcommand; and the
 * option refusals that name the argument they reject. */
#include "runtime/cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/pack_files.h"

/* A GGUF is told by its magic, not its name, so a renamed model file gets
 * the same advice; the ".gguf" suffix covers a file we cannot read. */
static int looks_like_gguf(const char *path)
{
    char magic[4] = { 0 };
    FILE *fp = fopen(path, "rb");
    if (fp) {
        size_t n = fread(magic, 1, sizeof magic, fp);
        fclose(fp);
        if (n == sizeof magic && !memcmp(magic, "GGUF", 4)) return 1;
    }
    size_t len = strlen(path);
    return len >= 5 && !strcmp(path + len - 5, ".gguf");
}

int cli_check_pack_path(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (!path || !*path) { snprintf(err, errlen, "no pack folder given"); return -1; }
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) snprintf(err, errlen, "%s: does not exist", path);
        else snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (looks_like_gguf(path))
            snprintf(err, errlen, "%s is a GGUF model file, not a pack: make a pack with `iq3pack build %s -o PACKDIR`",
                     path, path);
        else
            snprintf(err, errlen, "%s: not a pack folder (a pack is the folder `iq3pack build MODEL.gguf -o PACKDIR` writes)",
                     path);
        return -1;
    }
    char *index = pack_path(path, PACK_INDEX);
    if (!index) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    int rc = stat(index, &st);
    free(index);
    if (rc != 0) {
        snprintf(err, errlen, "%s: no index (%s is missing): not a finished pack; remove it and build it again with "
                 "`iq3pack build MODEL.gguf -o %s`", path, PACK_INDEX, path);
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------- option refusals */

int cli_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cli_float(const char *s, double *out)
{
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_is_threads(const char *opt)
{
    return !strcmp(opt, "-t") || !strcmp(opt, "--threads");
}

void cli_draft_default(spec_params *p)
{
    *p = spec_default_params();
    p->kind = SPEC_NONE;
}

int cli_draft_arg(const char *cmd, spec_params *p, const char *opt, const char *val)
{
    long l;
    if (!strcmp(opt, "--draft")) {
        if (!val || spec_kind_parse(val, &p->kind)) {
            fprintf(stderr, "strata %s: --draft takes none, ngram or mtp%s%s%s\n", cmd, val ? ", got '" : "", val ? val : "",
                    val ? "'" : "");
            return -1;
        }
        return 1;
    }
    if (!strcmp(opt, "--draft-max")) {
        if (cli_opt_int(cmd, opt, val, 1, SPEC_MAX_DRAFT, &l)) return -1;
        p->max_draft = (int)l;
        return 1;
    }
    return 0;
}

int cli_opt_int(const char *cmd, const char *opt, const char *val, long lo, long hi, long *out)
{
    if (!val) { fprintf(stderr, "strata %s: %s needs a value\n", cmd, opt); return -1; }
    if (cli_int(val, lo, hi, out)) {
        fprintf(stderr, "strata %s: %s needs an integer in %ld..%ld, got '%s'\n", cmd, opt, lo, hi, val);
        return -1;
    }
    return 0;
}

int cli_opt_float(const char *cmd, const char *opt, const char *val, double lo, double hi, double *out)
{
    if (!val) { fprintf(stderr, "strata %s: %s needs a value\n", cmd, opt); return -1; }
    if (cli_float(val, out) || *out < lo || *out > hi) {
        fprintf(stderr, "strata %s: %s needs a number in %g..%g, got '%s'\n", cmd, opt, lo, hi, val);
        return -1;
    }
    return 0;
}

int cli_opt_bad(const char *cmd, const char *opt, const char *val)
{
    if (opt[0] != '-') fprintf(stderr, "strata %s: unexpected argument '%s'\n", cmd, opt);
    else if (val) fprintf(stderr, "strata %s: %s does not take '%s'\n", cmd, opt, val);
    else fprintf(stderr, "strata %s: unknown option or missing value: %s\n", cmd, opt);
    return -1;
}

void cli_warn_ctx(long n_ctx, long n_ctx_train)
{
    if (n_ctx_train > 0 && n_ctx > n_ctx_train)
        fprintf(stderr, "strata: warning: a context of %ld tokens is beyond the %ld the model was trained on; "
                        "output past token %ld may degrade\n", n_ctx, n_ctx_train, n_ctx_train);
}

int cli_parse_args(const char *cmd, int argc, char **argv, const char **pack,
                   int (*opt)(void *ctx, const char *o, const char *v), void *ctx, void (*usage)(FILE *))
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (a[0] != '-') {
            if (*pack) { cli_opt_bad(cmd, a, NULL); usage(stderr); return 2; }
            *pack = a;
            continue;
        }
        if (!v || opt(ctx, a, v)) {
            if (!v) cli_opt_bad(cmd, a, NULL);
            usage(stderr);
            return 2;
        }
        i++;
    }
    return CLI_PARSED;
}
