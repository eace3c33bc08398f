/* cli_calibrate.c: `strata calibrate PACK -f TEXT -o GRAMDIR`: runs a
 * calibration text through a MoE pack in chunks, as llama-imatrix does,
 * and records the Gram matrices of every routed expert's input
 * (runtime/calib/grams.h) as RADGRAM2 files that grams2imatrix folds into
 * an importance matrix. The folder is published whole (formats/fileio.h's
 * outdir_*: a partial name beside GRAMDIR, renamed when complete, removed
 * on failure). */
#include "runtime/cli/cli.h"

#include "formats/fileio.h"
#include "formats/hadamard.h"
#include "runtime/calib/grams.h"
#include "runtime/util/memavail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void calibrate_usage(FILE *fp)
{
    fprintf(fp,
            "usage: strata calibrate PACK -f TEXT -o GRAMDIR [-c|--ctx N] [-t|--threads N] [--layers A-B]\n"
            "                        [--rank R] [--rotate hadamard[:B]]\n"
            "  Tokenizes TEXT (BOS first as the model says) and runs it through the model in chunks of\n"
            "  N tokens (default 512, at most the model's context), each from a fresh context with its\n"
            "  first token replaced by BOS; the tokens past the last whole chunk are left out, as\n"
            "  llama-imatrix leaves them. At every MoE layer it sums x x^T over the rows each routed\n"
            "  expert receives (x: the layer's normed input, the experts' gate and up input), and over\n"
            "  all rows, and over each expert's down input (its GLU output), and writes them as RADGRAM2\n"
            "  files into GRAMDIR (created; never overwritten):\n"
            "    gram.rR.blk.L.ffn_down_exps.bin     all rows of layer L\n"
            "    gram.rR.blk.L.ffn_down_exps.E.bin   the rows routed to expert E (experts that got any)\n"
            "    gram.rR.blk.L.ffn_down_input.E.bin  expert E's down input\n"
            "  with each file's row count: `grams2imatrix GRAMDIR -o imatrix.gguf` makes the importance\n"
            "  matrix of them, `iq3pack build SRC --grams GRAMDIR` encodes the experts with GPTQ. The\n"
            "  sums are held in memory as doubles: 8 x (n_embd^2 x (experts + 1) + ff^2 x experts)\n"
            "  bytes a MoE layer (ff: an expert's width); --layers A-B records only layers A..B (run\n"
            "  it again for the others). Runs on the CPU.\n"
            "  --rank R   the R in the file names (default 0): recordings of disjoint parts of a text\n"
            "             by several machines, each its own rank, fold together in grams2imatrix\n"
            "  --rotate hadamard[:B]\n"
            "             records the inputs rotated by Hadamard blocks of B (default: the largest power\n"
            "             of two dividing each width), the files' domain B: the Grams of a pack built\n"
            "             with `iq3pack build --rotate` the same way (the build also rotates an\n"
            "             unrotated recording exactly itself)\n");
}

typedef struct calib_args {
    const char *text_path, *out, *layers, *rotate;
    long        c, threads, rank;
} calib_args;

static int calib_opt(void *ctx, const char *a, const char *v)
{
    calib_args *o = ctx;
    if (!strcmp(a, "-f") || !strcmp(a, "--file")) o->text_path = v;
    else if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->out = v;
    else if (!strcmp(a, "--layers")) o->layers = v;
    else if (!strcmp(a, "--rotate")) o->rotate = v;
    else if (!strcmp(a, "--rank")) return cli_opt_int("calibrate", a, v, 0, 1 << 20, &o->rank);
    else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) return cli_opt_int("calibrate", a, v, 2, 1 << 20, &o->c);
    else if (cli_is_threads(a)) return cli_opt_int("calibrate", a, v, 0, 1024, &o->threads);
    else return cli_opt_bad("calibrate", a, NULL);
    return 0;
}

typedef struct calib_ctx {
    gram_set *grams;
} calib_ctx;

static int on_expert(void *ctx, int layer, int expert, int n, const float *rows)
{
    return gram_set_add_down(((calib_ctx *)ctx)->grams, layer, expert, n, rows);
}

static int on_moe(void *ctx, int layer, int B, const float *x, const int *sel, char *err, size_t errlen)
{
    calib_ctx *c = ctx;
    if (gram_set_add(c->grams, layer, B, x, sel)) {
        snprintf(err, errlen, "out of memory while recording the grams");
        return -1;
    }
    return 0;
}

static int parse_layers(const char *v, long n_layer, long *a, long *b)
{
    char *end;
    *a = strtol(v, &end, 10);
    if (end == v || *end != '-') return -1;
    const char *p = end + 1;
    *b = strtol(p, &end, 10);
    return end == p || *end || *a < 0 || *b < *a || *b >= n_layer ? -1 : 0;
}

int cmd_calibrate(int argc, char **argv)
{
    const char *pack = NULL;
    calib_args o = { .c = 512 };
    const int st = cli_parse_args("calibrate", argc, argv, &pack, calib_opt, &o, calibrate_usage);
    if (st != CLI_PARSED) return st;
    const char *text_path = o.text_path, *out = o.out, *layers = o.layers;
    long c = o.c, threads = o.threads, rank = o.rank;
    if (!pack || !text_path || !out) {
        fprintf(stderr, "strata calibrate: %s\n",
                !pack ? "no PACK given" : !text_path ? "no text given (-f TEXT)" : "no output folder given (-o GRAMDIR)");
        calibrate_usage(stderr);
        return 2;
    }
    if (path_exists(out)) {
        fprintf(stderr, "strata calibrate: %s exists (a recording is never overwritten: move it away)\n", out);
        return 1;
    }
    unsigned char *text = NULL;
    int32_t *ids = NULL, *chunk = NULL;
    float *logits = NULL;
    unsigned char *record = NULL;
    gram_set *grams = NULL;
    char *tmp = NULL;
    size_t n_ids = 0, text_len = 0;
    char err[1024];
    int rc = 1;
    cli_model cm;
    if (cli_load(&cm, pack, NULL, (int)c)) return 1;
    const model_hparams *hp = loader_hparams(cm.pack);
    if (hp->n_expert == 0) {
        fprintf(stderr, "strata calibrate: %s has no routed experts (a dense model): nothing to record\n", pack);
        goto out;
    }
    int64_t rot = 0, rk = 0, rkd = 0;
    if (o.rotate) {
        if (hadamard_parse(o.rotate, &rot)) {
            fprintf(stderr, "strata calibrate: --rotate takes hadamard or hadamard:B (B a power of two), not '%s'\n",
                    o.rotate);
            rc = 2;
            goto out;
        }
        rk = rot ? rot : hadamard_default_block(hp->n_embd);
        rkd = rot ? rot : hadamard_default_block(hp->n_ff_exp);
        if (!hadamard_block_ok(hp->n_embd, rk) || !hadamard_block_ok(hp->n_ff_exp, rkd)) {
            fprintf(stderr, "strata calibrate: --rotate %s: blocks of %lld do not divide the experts' inputs of %d "
                    "and %d\n", o.rotate, (long long)(rot ? rot : rk), hp->n_embd, hp->n_ff_exp);
            rc = 2;
            goto out;
        }
    }
    long l0 = 0, l1 = hp->n_layer - 1;
    if (layers && parse_layers(layers, hp->n_layer, &l0, &l1)) {
        fprintf(stderr, "strata calibrate: --layers takes A-B within 0-%d, not '%s'\n", hp->n_layer - 1, layers);
        rc = 2;
        goto out;
    }
    record = calloc((size_t)hp->n_layer, 1);
    if (!record) { fprintf(stderr, "strata: out of memory\n"); goto out; }
    int n_rec = 0;
    for (long l = l0; l <= l1; l++) n_rec += record[l] = hparams_layer_moe(hp, (int)l);
    if (!n_rec) { fprintf(stderr, "strata calibrate: no MoE layer in %ld-%ld\n", l0, l1); rc = 2; goto out; }
    const uint64_t need = gram_set_bytes(n_rec, hp->n_expert, hp->n_embd, hp->n_ff_exp);
    memavail ma;
    if (memavail_read("", &ma) == 0 && need > ma.bytes) {
        fprintf(stderr,
                "strata calibrate: the grams of %d MoE layers need %.1f GiB (8 x (%d^2 x %d + %d^2 x %d) bytes a "
                "layer), and %.1f GiB are free (%s): record fewer layers at a time with --layers A-B\n",
                n_rec, (double)need / (1u << 30), hp->n_embd, hp->n_expert + 1, hp->n_ff_exp, hp->n_expert,
                (double)ma.bytes / (1u << 30), ma.by);
        goto out;
    }
    if (hp->n_ctx_train > 0 && c > hp->n_ctx_train) {
        fprintf(stderr, "strata calibrate: chunks of %d tokens, the model's context (-c %ld asked)\n", hp->n_ctx_train, c);
        c = hp->n_ctx_train;
    }
    if (read_file(text_path, &text, &text_len, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
    if (cli_build(&cm, pack, (int)threads, KV_F16, (int)c, NULL)) goto out;
    if (!(grams = gram_set_new(hp->n_layer, record, hp->n_expert, hp->n_expert_used, hp->n_embd, hp->n_ff_exp, err,
                               sizeof err))) {
        fprintf(stderr, "strata calibrate: %s\n", err);
        goto out;
    }
    gram_set_rotate(grams, rk, rkd);
    calib_ctx cc = { grams };
    if (model_on_moe_input(cm.m, on_moe, &cc, err, sizeof err) ||
        model_on_expert_hidden(cm.m, on_expert, &cc, err, sizeof err)) {
        fprintf(stderr, "strata: %s\n", err);
        goto out;
    }
    const tokenizer *tk = loader_tokenizer(cm.pack);
    if (tokenizer_encode(tk, (const char *)text, text_len, true, false, &ids, &n_ids)) {
        fprintf(stderr, "strata: %s: cannot tokenize\n", text_path);
        goto out;
    }
    const size_t n_chunks = n_ids / (size_t)c;
    if (n_chunks == 0) {
        fprintf(stderr, "strata calibrate: %s: %zu tokens, under one chunk of %ld (-c)\n", text_path, n_ids, c);
        goto out;
    }
    chunk = malloc((size_t)c * sizeof *chunk);
    logits = malloc((size_t)hp->n_vocab * sizeof *logits);
    if (!chunk || !logits) { fprintf(stderr, "strata: out of memory\n"); goto out; }
    /* the files hold the sums as f32: half the memory they take here */
    if (!(tmp = outdir_begin(out, need / 2, err, sizeof err))) { fprintf(stderr, "strata calibrate: %s\n", err); goto out; }
    fprintf(stderr, "strata calibrate: %zu tokens in %zu chunks of %ld; %d MoE layers recorded (%.1f MiB of sums)\n",
            n_ids, n_chunks, c, n_rec, (double)need / 1048576.0);
    const int32_t bos = tokenizer_add_bos(tk) ? tokenizer_bos(tk) : -1;
    const double t0 = cli_now();
    for (size_t k = 0, tenth = 0; k < n_chunks; k++) {
        memcpy(chunk, ids + k * (size_t)c, (size_t)c * sizeof *chunk);
        if (bos >= 0) chunk[0] = bos;
        model_rewind(cm.m, 0);
        if (model_forward(cm.m, chunk, (int)c, logits, false, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
        if ((k + 1) * 10 / n_chunks > tenth) {
            tenth = (k + 1) * 10 / n_chunks;
            const double el = cli_now() - t0;
            fprintf(stderr, "strata calibrate: %zu%% (%zu of %zu chunks) ETA %.0f s\n", tenth * 10, k + 1, n_chunks,
                    el / (double)(k + 1) * (double)(n_chunks - k - 1));
        }
    }
    if (gram_set_write(grams, tmp, (int)rank, err, sizeof err)) { fprintf(stderr, "strata calibrate: %s\n", err); goto out; }
    if (outdir_publish(tmp, out, err, sizeof err)) { fprintf(stderr, "strata calibrate: %s\n", err); goto out; }
    free(tmp);
    tmp = NULL;
    printf("%s: %zu tokens; per MoE layer the rows each expert received:\n", out, n_chunks * (size_t)c);
    for (int l = 0; l < hp->n_layer; l++) {
        if (!record[l]) continue;
        printf("  layer %d:", l);
        for (int e = 0; e < hp->n_expert; e++) printf(" %llu", (unsigned long long)gram_set_rows(grams, l, e));
        printf("\n");
    }
    printf("next: grams2imatrix %s -o imatrix.gguf\n", out);
    rc = 0;
out:
    if (tmp) { outdir_discard(tmp); free(tmp); }
    gram_set_free(grams);
    free(record);
    free(logits);
    free(chunk);
    free(ids);
    free(text);
    if (cm.pack) cli_close(&cm);
    return rc;
}
