/* cli_routing.c: `strata routing PACK -f TEXT`: runs a text through a MoE
 * pack the way perplexity does, records every token's experts at every MoE
 * layer (runtime/model/routing_trace.h) and prints, per layer, how evenly
 * the experts are used and how soon they come back
 * (runtime/model/routing_stats.h); --trace-out keeps the trace. */
#include "runtime/cli/cli.h"

#include "formats/fileio.h"
#include "runtime/model/routing_stats.h"
#include "runtime/model/routing_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void routing_usage(FILE *fp)
{
    fprintf(fp, "usage: strata routing PACK -f TEXT [-c|--ctx N] [-t|--threads N] [--window N[,N...]]\n"
                "                      [--trace-out FILE] [--device auto|cpu|cuda] ...\n"
                "       strata routing --trace-in FILE [--window N[,N...]]\n"
                "  Tokenizes TEXT (BOS first as the model says), runs its tokens through the model in\n"
                "  chunks of N (default 512, at most the model's context; the last chunk may be shorter),\n"
                "  each from a fresh context with its first token replaced by BOS, as perplexity does,\n"
                "  and records the experts the router picks for every token at every MoE layer. Prints\n"
                "  one row per MoE layer and a mean row 'all':\n"
                "    tokens   the tokens traced\n"
                "    entropy  bits of the layer's expert-use distribution; uniform: log2(experts), its most\n"
                "    top25%%   the share of expert uses that go to the most used quarter of the experts\n"
                "    reuse@N  the probability that an expert a token uses is used again by one of the\n"
                "             next N tokens (at the same layer); --window sets the Ns (default 1,4,16)\n"
                "  --trace-out FILE writes the trace (docs/cuda.md: one line per token; never\n"
                "  overwritten: an existing FILE is refused before any work); --trace-in FILE prints the\n"
                "  table of such a file instead of running a pack.\n"
                DEVICE_HELP);
}

/* "1,4,16" -> windows; 0, or -1 with the line printed. */
static int parse_windows(const char *opt, const char *v, int *w, int *n)
{
    *n = 0;
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        char one[32];
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        long x;
        if (*n == ROUTING_STATS_MAX_WINDOWS) {
            fprintf(stderr, "strata routing: %s takes at most %d windows, got '%s'\n", opt, ROUTING_STATS_MAX_WINDOWS, v);
            return -1;
        }
        if (len >= sizeof one) len = sizeof one - 1;
        memcpy(one, p, len);
        one[len] = '\0';
        if (cli_int(one, 1, 1 << 20, &x)) {
            fprintf(stderr, "strata routing: %s needs windows in 1..%d separated by commas, got '%s'\n", opt, 1 << 20, v);
            return -1;
        }
        w[(*n)++] = (int)x;
        if (!comma) return 0;
        p = comma + 1;
    }
}

static void put_num(double v, int width, int prec)
{
    if (isnan(v)) printf(" %*s", width, "-");
    else printf(" %*.*f", width, prec, v);
}

static void put_row(const routing_layer_stats *s)
{
    if (s->layer < 0) printf("%5s", "all");
    else printf("%5d", s->layer);
    printf(" %8llu", (unsigned long long)s->tokens);
    put_num(s->entropy_bits, 8, 3);
    put_num(s->uniform_bits, 8, 3);
    put_num(s->top_share, 7, 3);
    for (int w = 0; w < s->n_windows; w++) put_num(s->reuse[w], 8, 3);
    putchar('\n');
}

/* The table of a trace (every routed layer, then their mean); 0, or -1 with the message printed. */
static int print_table(const routing_trace *t, const int *windows, int n_windows)
{
    routing_layer_stats *rows = calloc((size_t)t->n_layer, sizeof *rows);
    if (!rows) { fprintf(stderr, "strata: out of memory\n"); return -1; }
    char err[256];
    int n = 0;
    printf("%5s %8s %8s %8s %7s", "layer", "tokens", "entropy", "uniform", "top25%");
    for (int w = 0; w < n_windows; w++) {
        char h[24];
        snprintf(h, sizeof h, "reuse@%d", windows[w]);
        printf(" %8s", h);
    }
    putchar('\n');
    for (int l = 0; l < t->n_layer; l++) {
        if (!t->routed[l]) continue;
        if (routing_stats_layer(t, l, windows, n_windows, &rows[n], err, sizeof err)) {
            fprintf(stderr, "strata: %s\n", err);
            free(rows);
            return -1;
        }
        put_row(&rows[n++]);
    }
    routing_layer_stats all;
    routing_stats_mean(rows, n, &all);
    put_row(&all);
    free(rows);
    return 0;
}

/* --trace-in: the table of a saved trace. */
static int table_of_file(const char *path, const int *windows, int n_windows)
{
    char err[512];
    routing_trace t;
    if (routing_trace_load(&t, path, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
    int n_moe = 0;
    for (int l = 0; l < t.n_layer; l++) n_moe += t.routed[l];
    printf("# %s: %llu tokens; %d MoE layers of %d experts, %d used\n", path, (unsigned long long)t.n_tokens, n_moe,
           t.n_expert, t.n_used);
    int rc = print_table(&t, windows, n_windows) ? 1 : 0;
    routing_trace_free(&t);
    return rc;
}

typedef struct routing_args {
    const char *text_path, *trace_out, *trace_in;
    long        c, threads;
    int         windows[ROUTING_STATS_MAX_WINDOWS], n_windows;
    device_opts dev;
} routing_args;

static int routing_opt(void *ctx, const char *a, const char *v)
{
    routing_args *o = ctx;
    const int dr = cli_device_arg("routing", &o->dev, a, v);
    if (dr) return dr < 0 ? -1 : 0;
    if (!strcmp(a, "-f") || !strcmp(a, "--file")) o->text_path = v;
    else if (!strcmp(a, "--trace-out")) o->trace_out = v;
    else if (!strcmp(a, "--trace-in")) o->trace_in = v;
    else if (!strcmp(a, "--window")) return parse_windows(a, v, o->windows, &o->n_windows);
    else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) return cli_opt_int("routing", a, v, 2, 1 << 20, &o->c);
    else if (cli_is_threads(a)) return cli_opt_int("routing", a, v, 0, 1024, &o->threads);
    else return cli_opt_bad("routing", a, NULL);
    return 0;
}

int cmd_routing(int argc, char **argv)
{
    const char *pack = NULL;
    routing_args o = { .c = 512, .windows = { 1, 4, 16 }, .n_windows = 3 };
    device_opts_default(&o.dev);
    const int st = cli_parse_args("routing", argc, argv, &pack, routing_opt, &o, routing_usage);
    if (st != CLI_PARSED) return st;
    const char *text_path = o.text_path, *trace_out = o.trace_out, *trace_in = o.trace_in;
    long c = o.c, threads = o.threads;
    int *windows = o.windows, n_windows = o.n_windows;
    device_opts dev = o.dev;
    if (trace_in) {
        if (pack || text_path || trace_out) {
            fprintf(stderr, "strata routing: --trace-in reads a saved trace; %s is not used with it\n",
                    pack ? "PACK" : text_path ? "-f" : "--trace-out");
            routing_usage(stderr);
            return 2;
        }
        return table_of_file(trace_in, windows, n_windows);
    }
    if (!pack || !text_path) {
        fprintf(stderr, "strata routing: %s\n", !pack ? "no PACK given" : "no text given (-f TEXT)");
        routing_usage(stderr);
        return 2;
    }
    /* refused before any work: the trace is never overwritten */
    if (trace_out && path_exists(trace_out)) {
        fprintf(stderr, "strata: --trace-out %s: the file exists (it is never overwritten)\n", trace_out);
        return 1;
    }
    unsigned char *text = NULL;
    int32_t *ids = NULL, *chunk = NULL;
    float *logits = NULL;
    size_t n_ids = 0, text_len = 0;
    char err[1024];
    int rc = 1;
    cli_model cm;
    if (cli_load(&cm, pack, &dev, (int)c)) return 1;
    const model_hparams *hp = loader_hparams(cm.pack);
    if (hp->n_expert == 0) {
        fprintf(stderr, "strata: %s has no routed experts (a dense model): no routing to trace\n", pack);
        goto out;
    }
    if (hp->n_ctx_train > 0 && c > hp->n_ctx_train) {
        fprintf(stderr, "strata routing: chunks of %d tokens, the model's context (-c %ld asked)\n", hp->n_ctx_train, c);
        c = hp->n_ctx_train;
    }
    if (read_file(text_path, &text, &text_len, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    if (cli_build(&cm, pack, (int)threads, KV_F16, (int)c, &dev)) goto out;
    if (model_record_trace(cm.m, err, sizeof err)) { fprintf(stderr, "strata: %s: %s\n", pack, err); goto out; }
    const tokenizer *tk = loader_tokenizer(cm.pack);
    if (tokenizer_encode(tk, (const char *)text, text_len, true, false, &ids, &n_ids)) {
        fprintf(stderr, "strata: %s: cannot tokenize\n", text_path);
        goto out;
    }
    if (n_ids == 0) { fprintf(stderr, "strata: %s: no tokens to run\n", text_path); goto out; }
    chunk = malloc((size_t)c * sizeof *chunk);
    logits = malloc((size_t)hp->n_vocab * sizeof *logits);   /* the last row's, unread: the trace is the output */
    if (!chunk || !logits) { fprintf(stderr, "strata: out of memory\n"); goto out; }
    const int32_t bos = tokenizer_add_bos(tk) ? tokenizer_bos(tk) : -1;
    size_t n_chunks = 0;
    for (size_t at = 0; at < n_ids; at += (size_t)c, n_chunks++) {
        const size_t n = n_ids - at < (size_t)c ? n_ids - at : (size_t)c;
        memcpy(chunk, ids + at, n * sizeof *chunk);
        if (bos >= 0) chunk[0] = bos;
        model_rewind(cm.m, 0);
        if (model_forward(cm.m, chunk, (int)n, logits, false, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    }
    const routing_trace *t = model_trace(cm.m);
    if (t->n_tokens != n_ids) {
        fprintf(stderr, "strata: the trace holds %llu tokens of the %zu evaluated\n", (unsigned long long)t->n_tokens, n_ids);
        goto out;
    }
    int n_moe = 0;
    for (int l = 0; l < t->n_layer; l++) n_moe += t->routed[l];
    printf("# %s: %zu tokens in %zu chunk%s of at most %ld; %d MoE layers of %d experts, %d used\n", text_path, n_ids,
           n_chunks, n_chunks == 1 ? "" : "s", c, n_moe, t->n_expert, t->n_used);
    if (print_table(t, windows, n_windows)) goto out;
    if (trace_out && routing_trace_save(t, trace_out, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    rc = cli_save_routing(&cm, &dev) ? 1 : 0;
out:
    free(logits);
    free(chunk);
    free(ids);
    free(text);
    if (cm.pack) cli_close(&cm);
    return rc;
}
