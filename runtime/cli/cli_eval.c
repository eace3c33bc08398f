/* cli_eval.c: `strata perplexity`: the pack's quality on a text (perplexity,
 * and KL divergence against a reference's logits); `strata bench`, which
 * measures its speed, is cli_bench.c. */
#include "runtime/cli/cli.h"

#include "formats/fileio.h"
#include "runtime/cli/kld_base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- perplexity */

static void ppl_usage(FILE *fp)
{
    fprintf(fp, "usage: strata perplexity PACK (-f TEXT | --kld-base LLAMA.kld) [-c|--ctx N] [-t|--threads N]\n"
                "                         [--kv-type f16|f32]\n"
                "                         [--logits-out FILE] [--kld-base FILE] [--device auto|cpu|cuda]\n"
                "                         [--vram-reserve SIZE] [--miss cpu|pcie|auto] [--profile FILE]\n"
                "                         [--record-routing FILE]\n"
                "  Tokenizes TEXT (BOS first as the model says), cuts the tokens into chunks of N\n"
                "  (default 128), evaluates each from a fresh context with its first token replaced by\n"
                "  BOS, and scores the second half of every chunk: llama-perplexity's scheme, so the\n"
                "  figures compare. --logits-out writes the scored rows' f32 logits; --kld-base reads such a\n"
                "  file (from a reference pack) and prints mean KL(base || this) and top-1 agreement.\n"
                "  --kld-base also takes llama-perplexity's --kl-divergence-base files: their tokens and\n"
                "  -c are used (no -f needed), and the scores are llama-perplexity --kl-divergence's.\n"
                DEVICE_HELP);
}

static double log_softmax_at(const float *v, int n, int at, int *amax)
{
    float mx = v[0];
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > mx) { mx = v[i]; b = i; }
    double z = 0;
    for (int i = 0; i < n; i++) z += exp((double)v[i] - mx);
    if (amax) *amax = b;
    return at >= 0 ? (double)v[at] - mx - log(z) : mx + log(z);
}

static double kl_row(const float *base, const float *ours, int n, int *same_top)
{
    int ab, ao;
    double lzb = log_softmax_at(base, n, -1, &ab), lzo = log_softmax_at(ours, n, -1, &ao), kl = 0;
    for (int i = 0; i < n; i++) {
        double lb = base[i] - lzb, lo = ours[i] - lzo;
        kl += exp(lb) * (lb - lo);
    }
    *same_top = ab == ao;
    return kl;
}

int cmd_perplexity(int argc, char **argv)
{
    const char *pack = NULL, *text_path = NULL, *out_path = NULL, *base_path = NULL;
    long c = 128, threads = 0;
    int c_given = 0;
    kv_type kv = KV_F16;
    device_opts dev;
    device_opts_default(&dev);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { ppl_usage(stdout); return 0; }
        if (a[0] != '-') { if (pack) { cli_opt_bad("perplexity", a, NULL); ppl_usage(stderr); return 2; } pack = a; continue; }
        if (!v) { cli_opt_bad("perplexity", a, NULL); ppl_usage(stderr); return 2; }
        i++;
        int dr = cli_device_arg("perplexity", &dev, a, v);
        if (dr < 0) { ppl_usage(stderr); return 2; }
        if (dr > 0) continue;
        int bad = 0;
        if (!strcmp(a, "-f") || !strcmp(a, "--file")) text_path = v;
        else if (!strcmp(a, "--logits-out")) out_path = v;
        else if (!strcmp(a, "--kld-base")) base_path = v;
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) { bad = cli_opt_int("perplexity", a, v, 4, 1 << 20, &c); c_given = 1; }
        else if (cli_is_threads(a)) bad = cli_opt_int("perplexity", a, v, 0, 1024, &threads);
        else if (!strcmp(a, "--kv-type") && (!strcmp(v, "f16") || !strcmp(v, "f32"))) kv = v[1] == '3' ? KV_F32 : KV_F16;
        else bad = cli_opt_bad("perplexity", a, !strcmp(a, "--kv-type") ? v : NULL);
        if (bad) { ppl_usage(stderr); return 2; }
    }
    unsigned char *text = NULL;
    float *base = NULL, *logits = NULL;
    int32_t *ids = NULL, *chunk = NULL;
    size_t n_ids = 0, text_len = 0, base_bytes = 0;
    FILE *of = NULL;
    char err[1024];
    int rc = 1;
    cli_model cm;
    memset(&cm, 0, sizeof cm);
    kld_base lk;
    int llama_base = 0;
    if (base_path) {
        if (read_file(base_path, (unsigned char **)&base, &base_bytes, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
        llama_base = kld_base_is((const uint8_t *)base, base_bytes);
        if (llama_base && kld_base_parse(&lk, (const uint8_t *)base, base_bytes, err, sizeof err)) {
            fprintf(stderr, "strata: %s: %s\n", base_path, err);
            free(base);
            return 1;
        }
        if (llama_base && c_given && c != (long)lk.n_ctx) {
            fprintf(stderr, "strata: %s was made with -c %u; -c %ld cannot score against it\n", base_path, lk.n_ctx, c);
            free(base);
            return 1;
        }
        if (llama_base) c = (long)lk.n_ctx;
    }
    /* a llama-perplexity base file carries its tokens; other runs need the text */
    if (!pack || (!text_path && !llama_base)) {
        fprintf(stderr, "strata perplexity: %s\n", !pack ? "no PACK given" : "no text given (-f TEXT or --kld-base FILE)");
        ppl_usage(stderr);
        free(base);
        return 2;
    }
    if (!llama_base && read_file(text_path, &text, &text_len, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); free(base); return 1; }
    if (cli_open_dev(&cm, pack, (int)threads, kv, (int)c, &dev)) goto out;
    const tokenizer *tk = loader_tokenizer(cm.pack);
    const int nv = loader_hparams(cm.pack)->n_vocab;
    if (llama_base) {
        if (lk.n_vocab != nv) {
            fprintf(stderr, "strata: %s: %d logits per row, but %s has a vocabulary of %d\n", base_path, lk.n_vocab, pack, nv);
            goto out;
        }
        if (text_path) fprintf(stderr, "strata: %s carries its own tokens; -f %s is not read\n", base_path, text_path);
        n_ids = (size_t)lk.n_chunk * lk.n_ctx;
        ids = malloc(n_ids * sizeof *ids);
        if (!ids) { fprintf(stderr, "strata: out of memory\n"); goto out; }
        for (size_t i = 0; i < n_ids; i++) {
            ids[i] = kld_base_token(&lk, i / lk.n_ctx, i % lk.n_ctx);
            if (ids[i] < 0 || ids[i] >= nv) {
                fprintf(stderr, "strata: %s: token %zu is %d, outside the vocabulary of %d\n", base_path, i, ids[i], nv);
                goto out;
            }
        }
    } else if (tokenizer_encode(tk, (const char *)text, text_len, true, false, &ids, &n_ids)) {
        /* llama-perplexity's chunks: the text tokenized with BOS as the
         * model says, cut into chunks of c tokens, the first token of each
         * replaced by BOS (when the model adds one); the second half of
         * each scored */
        fprintf(stderr, "strata: %s: cannot tokenize\n", text_path);
        goto out;
    }
    const size_t per = (size_t)c, n_chunks = n_ids / per, first = (size_t)c / 2;
    if (n_chunks == 0) { fprintf(stderr, "strata: %s: %zu tokens, fewer than one chunk of %ld\n", text_path, n_ids, c); goto out; }
    const size_t scored = n_chunks * ((size_t)c - 1 - first);
    if (base_path && !llama_base) {
        if (base_bytes != scored * (size_t)nv * sizeof(float)) {
            fprintf(stderr, "strata: %s: %zu bytes, but %zu scored rows of %d logits need %zu\n", base_path, base_bytes,
                    scored, nv, scored * (size_t)nv * sizeof(float));
            goto out;
        }
    }
    if (out_path && !(of = fopen(out_path, "wbx"))) { fprintf(stderr, "strata: %s: %s\n", out_path, strerror(errno)); goto out; }
    logits = malloc((size_t)c * (size_t)nv * sizeof(float));
    chunk = malloc((size_t)c * sizeof(int32_t));
    if (!logits || !chunk) { fprintf(stderr, "strata: out of memory\n"); goto out; }
    double nll = 0, kl = 0;
    size_t n_scored = 0, same = 0;
    const int32_t bos = tokenizer_add_bos(tk) ? tokenizer_bos(tk) : -1;
    for (size_t k = 0; k < n_chunks; k++) {
        memcpy(chunk, ids + k * per, per * sizeof(int32_t));
        if (bos >= 0) chunk[0] = bos;
        model_rewind(cm.m, 0);
        if (model_forward(cm.m, chunk, (int)c, logits, true, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); goto out; }
        for (size_t j = first; j + 1 < (size_t)c; j++) {
            const float *row = logits + j * (size_t)nv;
            nll -= log_softmax_at(row, nv, chunk[j + 1], NULL);
            if (of && fwrite(row, sizeof(float), (size_t)nv, of) != (size_t)nv) { fprintf(stderr, "strata: %s: write failed\n", out_path); goto out; }
            if (base) {
                int st;
                kl += llama_base ? kld_base_row(&lk, k, j - first, row, &st)
                                 : kl_row(base + n_scored * (size_t)nv, row, nv, &st);
                same += (size_t)st;
            }
            n_scored++;
        }
        printf("[%zu] %.4f\n", k + 1, exp(nll / (double)n_scored));
        fflush(stdout);
    }
    printf("Final estimate: PPL = %.4f over %zu tokens (%zu chunks of %ld)\n", exp(nll / (double)n_scored), n_scored,
           n_chunks, c);
    if (base) printf("Mean KLD: %.6f   Same top: %.3f %%\n", kl / (double)n_scored, 100.0 * (double)same / (double)n_scored);
    rc = cli_save_routing(&cm, &dev) ? 1 : 0;
out:
    if (of && fclose(of) != 0 && rc == 0) { fprintf(stderr, "strata: %s: write failed\n", out_path); rc = 1; }
    free(chunk);
    free(logits);
    free(base);
    free(ids);
    free(text);
    if (cm.pack) cli_close(&cm);
    return rc;
}
