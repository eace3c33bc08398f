/* iq3_cli.c: iq3pack encode / decode / stats on raw little-endian files
 * (see iq3_cli.h). */
#include "iq3_cli.h"
#include "formats/fileio.h"
#include "formats/iq3.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cli_args {
    const char *cmd;
    long long rows, cols;
    int threads;
    int mode;
    const char *importance, *out;
    const char *pos[2];
    int npos;
} cli_args;

static const char *const HELP_ENCODE =
    "usage: iq3pack encode --rows R --cols K [--mode reference|quality] [--importance IMP.f32]\n"
    "                      [--threads N] IN.f32 -o OUT.iq3\n"
    "  Encode R x K float32 (row-major, little-endian) into the IQ3 expert container,\n"
    "  98 bytes per 256 weights (K must be a multiple of 256).\n"
    "  --mode quality    (default) searched scales, cheapest parity flips, importance-weighted\n"
    "  --mode reference  byte-identical to seeds/iq3_pack.py (ignores --importance)\n"
    "  --importance      K float32 per-column weights for the quality search\n"
    "  --threads N       rows are split over N threads; the bytes do not depend on N\n";
static const char *const HELP_DECODE =
    "usage: iq3pack decode --rows R --cols K IN.iq3 -o OUT.f32\n"
    "  Decode an IQ3 container of R rows x K weights into float32, exactly as the seed decodes.\n";
static const char *const HELP_STATS =
    "usage: iq3pack stats --rows R --cols K [--importance IMP.f32] [--threads N] IN.f32 [IN.iq3]\n"
    "  Bits per weight, rel-RMSE and weighted rel-RMSE of IN.iq3 against IN.f32; without\n"
    "  IN.iq3, of both encoder modes run in memory. Without --importance the weighted\n"
    "  figure uses imp[j] = 1 + 9*(j%7==0), the weighting of reference/baselines.md.\n";

static int usage(const char *cmd, const char *help, const char *msg)
{
    fprintf(stderr, "iq3pack %s: %s\n%s", cmd, msg, help);
    return 2;
}

static int parse_int(const char *s, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x <= 0) return -1;
    *v = x;
    return 0;
}

/* -1: usage error (already reported), 1: --help printed, 0: parsed. */
static int parse(int argc, char **argv, const char *help, int allow_enc, cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    a->threads = 1;
    a->mode = IQ3_MODE_QUALITY;
    char msg[256];
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { fputs(help, stdout); return 1; }
        int has_val = !strcmp(s, "--rows") || !strcmp(s, "--cols") || !strcmp(s, "-o") ||
                      (allow_enc && (!strcmp(s, "--mode") || !strcmp(s, "--importance") ||
                                     !strcmp(s, "--threads")));
        if (has_val) {
            if (i + 1 >= argc) {
                snprintf(msg, sizeof msg, "%s needs a value", s);
                return usage(a->cmd, help, msg), -1;
            }
            const char *v = argv[++i];
            long long n = 0;
            if (!strcmp(s, "--rows") || !strcmp(s, "--cols") || !strcmp(s, "--threads")) {
                if (parse_int(v, &n)) {
                    snprintf(msg, sizeof msg, "%s wants a positive integer, got '%s'", s, v);
                    return usage(a->cmd, help, msg), -1;
                }
            }
            if (!strcmp(s, "--rows")) a->rows = n;
            else if (!strcmp(s, "--cols")) a->cols = n;
            else if (!strcmp(s, "--threads")) a->threads = n > 256 ? 256 : (int)n;
            else if (!strcmp(s, "-o")) a->out = v;
            else if (!strcmp(s, "--importance")) a->importance = v;
            else if ((a->mode = iq3_mode_parse(v)) < 0) {
                snprintf(msg, sizeof msg, "--mode must be reference or quality, got '%s'", v);
                return usage(a->cmd, help, msg), -1;
            }
        } else if (s[0] == '-' && s[1]) {
            snprintf(msg, sizeof msg, "unknown option '%s'", s);
            return usage(a->cmd, help, msg), -1;
        } else if (a->npos < 2) {
            a->pos[a->npos++] = s;
        } else {
            snprintf(msg, sizeof msg, "unexpected argument '%s'", s);
            return usage(a->cmd, help, msg), -1;
        }
    }
    if (!a->rows || !a->cols) return usage(a->cmd, help, "--rows and --cols are required"), -1;
    if (a->npos == 0) return usage(a->cmd, help, "no input file given"), -1;
    return 0;
}

static int fail(const char *cmd, const char *msg)
{
    fprintf(stderr, "iq3pack %s: %s\n", cmd, msg);
    return 1;
}

/* Reads a file that must hold exactly `want` bytes; a size mismatch means
 * the wrong --rows/--cols or the wrong file, never something to pad. */
static unsigned char *read_exact(const char *cmd, const char *path, size_t want, const char *what)
{
    unsigned char *buf;
    size_t n;
    char err[512];
    if (read_file(path, &buf, &n, err, sizeof err)) { fail(cmd, err); return NULL; }
    if (n != want) {
        snprintf(err, sizeof err, "%s: %zu bytes, but %s needs %zu", path, n, what, want);
        fail(cmd, err);
        free(buf);
        return NULL;
    }
    return buf;
}

static int write_out(const char *cmd, const char *path, const void *data, size_t n)
{
    atomic_out o;
    char err[512];
    if (atomic_out_open(&o, path, err, sizeof err)) return fail(cmd, err);
    if (fwrite(data, 1, n, o.fp) != n) {
        atomic_out_abort(&o);
        snprintf(err, sizeof err, "%s: write failed", path);
        return fail(cmd, err);
    }
    if (atomic_out_commit(&o, err, sizeof err)) return fail(cmd, err);
    return 0;
}

static int check_shape(const cli_args *a, size_t *nw, size_t *nq)
{
    char err[256];
    if (iq3_check_k(a->cols, err, sizeof err)) return fail(a->cmd, err);
    if ((unsigned long long)a->rows > SIZE_MAX / 4 / (unsigned long long)a->cols)
        return fail(a->cmd, "--rows x --cols is too large");
    *nw = (size_t)a->rows * (size_t)a->cols;
    *nq = (size_t)a->rows * iq3_row_bytes(a->cols);
    return 0;
}

static const char *what(char *buf, size_t n, const char *kind, const cli_args *a)
{
    snprintf(buf, n, "%s of --rows %lld x --cols %lld", kind, a->rows, a->cols);
    return buf;
}

/* The start encode and decode share: arguments, -o and exactly one input, a
 * valid shape, and an existing output refused before the work is spent on it.
 * Returns 1 to go on; 0 with *rc the exit status (--help, or a refusal said). */
static int start_file_to_file(int argc, char **argv, const char *help, int allow_enc,
                              const char *no_out, cli_args *a, size_t *nw, size_t *nq, int *rc)
{
    int p = parse(argc, argv, help, allow_enc, a);
    if (p) { *rc = p > 0 ? 0 : 2; return 0; }
    if (!a->out) { *rc = usage(a->cmd, help, no_out); return 0; }
    if (a->npos != 1) { *rc = usage(a->cmd, help, "exactly one input file is expected"); return 0; }
    *rc = 1;
    if (check_shape(a, nw, nq)) return 0;
    if (path_exists(a->out)) {
        char err[512];
        snprintf(err, sizeof err, "%s: already exists; refusing to overwrite it", a->out);
        fail(a->cmd, err);
        return 0;
    }
    return 1;
}

static const float *load_importance(const cli_args *a, unsigned char **buf)
{
    *buf = NULL;
    if (!a->importance) return NULL;
    char w[160];
    snprintf(w, sizeof w, "an importance vector of --cols %lld float32", a->cols);
    *buf = read_exact(a->cmd, a->importance, (size_t)a->cols * 4, w);
    return (const float *)*buf;
}

int iq3pack_cmd_encode(int argc, char **argv)
{
    cli_args a;
    size_t nw, nq;
    int done_rc;
    if (!start_file_to_file(argc, argv, HELP_ENCODE, 1, "-o OUT.iq3 is required", &a, &nw, &nq, &done_rc))
        return done_rc;
    char w[160];
    unsigned char *x = read_exact(a.cmd, a.pos[0], nw * 4, what(w, sizeof w, "float32", &a));
    if (!x) return 1;
    unsigned char *impbuf = NULL;
    const float *imp = load_importance(&a, &impbuf);
    uint8_t *q = malloc(nq ? nq : 1);
    int rc = 1;
    if (a.importance && !imp) goto done;
    if (!q) { fail(a.cmd, "out of memory"); goto done; }
    iq3_encode_opts o = { .mode = (iq3_mode)a.mode, .n_threads = a.threads, .importance = imp, .force_scalar = 0 };
    char err[512], msg[700];
    if (iq3_encode((const float *)x, a.rows, a.cols, &o, q, err, sizeof err)) {
        snprintf(msg, sizeof msg, "%s: %s", a.pos[0], err);
        fail(a.cmd, msg);
        goto done;
    }
    rc = write_out(a.cmd, a.out, q, nq);
done:
    free(x); free(impbuf); free(q);
    return rc;
}

int iq3pack_cmd_decode(int argc, char **argv)
{
    cli_args a;
    size_t nw, nq;
    int done_rc;
    if (!start_file_to_file(argc, argv, HELP_DECODE, 0, "-o OUT.f32 is required", &a, &nw, &nq, &done_rc))
        return done_rc;
    char w[160];
    unsigned char *q = read_exact(a.cmd, a.pos[0], nq, what(w, sizeof w, "an IQ3 container", &a));
    if (!q) return 1;
    float *y = malloc(nw ? nw * 4 : 1);
    int rc = 1;
    char err[256];
    if (!y) fail(a.cmd, "out of memory");
    else if (iq3_decode(q, a.rows, a.cols, y, err, sizeof err)) fail(a.cmd, err);
    else rc = write_out(a.cmd, a.out, y, nw * 4);
    free(q); free(y);
    return rc;
}

static void rel_errors(const float *x, const float *y, size_t rows, size_t k, const float *imp,
                       double *plain, double *weighted)
{
    double a = 0, b = 0, wa = 0, wb = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < k; c++) {
            double xv = x[r * k + c], e = (double)y[r * k + c] - xv;
            double w = imp ? imp[c] : 1.0 + 9.0 * (c % 7 == 0);
            a += e * e; b += xv * xv;
            wa += w * e * e; wb += w * xv * xv;
        }
    *plain = b > 0 ? sqrt(a / b) : NAN;
    *weighted = wb > 0 ? sqrt(wa / wb) : NAN;
}

static void print_stats(const char *label, const cli_args *a, const float *x, const float *y,
                        size_t nq, const float *imp)
{
    double pl, wt;
    rel_errors(x, y, (size_t)a->rows, (size_t)a->cols, imp, &pl, &wt);
    printf("%s: %.4f bits/weight, rel-RMSE %.6f, weighted rel-RMSE %.6f (%s)\n", label,
           8.0 * (double)nq / ((double)a->rows * (double)a->cols), pl, wt,
           imp ? "--importance" : "imp[j] = 1 + 9*(j%7==0)");
}

int iq3pack_cmd_stats(int argc, char **argv)
{
    cli_args a;
    int p = parse(argc, argv, HELP_STATS, 1, &a);
    if (p) return p > 0 ? 0 : 2;
    if (a.out) return usage(a.cmd, HELP_STATS, "stats writes no file; drop -o");
    size_t nw, nq;
    if (check_shape(&a, &nw, &nq)) return 1;
    char w[160];
    unsigned char *x = read_exact(a.cmd, a.pos[0], nw * 4, what(w, sizeof w, "float32", &a));
    if (!x) return 1;
    unsigned char *impbuf = NULL, *q = NULL;
    const float *imp = load_importance(&a, &impbuf);
    float *y = malloc(nw ? nw * 4 : 1);
    int rc = 1;
    char err[512];
    if (a.importance && !imp) goto done;
    if (!y) { fail(a.cmd, "out of memory"); goto done; }
    if (a.npos == 2) {
        q = read_exact(a.cmd, a.pos[1], nq, what(w, sizeof w, "an IQ3 container", &a));
        if (!q) goto done;
        if (iq3_decode(q, a.rows, a.cols, y, err, sizeof err)) { fail(a.cmd, err); goto done; }
        print_stats(a.pos[1], &a, (const float *)x, y, nq, imp);
    } else {
        q = malloc(nq ? nq : 1);
        if (!q) { fail(a.cmd, "out of memory"); goto done; }
        for (int mode = IQ3_MODE_REFERENCE; mode >= IQ3_MODE_QUALITY; mode--) {
            iq3_encode_opts o = { .mode = (iq3_mode)mode, .n_threads = a.threads, .importance = imp, .force_scalar = 0 };
            char msg[700];
            if (iq3_encode((const float *)x, a.rows, a.cols, &o, q, err, sizeof err) ||
                iq3_decode(q, a.rows, a.cols, y, err, sizeof err)) {
                snprintf(msg, sizeof msg, "%s: %s", a.pos[0], err);
                fail(a.cmd, msg);
                goto done;
            }
            print_stats(iq3_mode_name((iq3_mode)mode), &a, (const float *)x, y, nq, imp);
        }
    }
    rc = 0;
done:
    free(x); free(impbuf); free(q); free(y);
    return rc;
}
