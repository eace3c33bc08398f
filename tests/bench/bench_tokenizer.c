/* bench_tokenizer.c: encoding speed of one SentencePiece (llama-spm) and one
 * byte-level BPE (gpt-2) vocabulary on ~300 KB of text, each beside
 * baselines measured in the same run on the same text: a byte-copy loop
 * (memory speed) and the gpt-2 pre-tokenizer pattern alone (PCRE2 split,
 * no merging), so the figure means something on any machine. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/tokenizer/tokenizer.h"
#include "tests/bench/bench_util.h"

#define TARGET_BYTES (300u * 1024u)

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = l >= 0 ? malloc((size_t)l + 1) : NULL;
    if (b && fread(b, 1, (size_t)l, f) != (size_t)l) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[l] = 0; *n = (size_t)l; }
    return b;
}

/* English story text plus the vocab test strings (emoji, CJK, Cyrillic,
 * Khmer, runs of spaces and digits), repeated up to the target size. */
static char *make_text(const char *shared, size_t *len)
{
    char p1[4096], p2[4096];
    snprintf(p1, sizeof p1, "%s/models/tinymoe/calib.txt", shared);
    snprintf(p2, sizeof p2, "%s/vocab/ggml-vocab-gpt-2.gguf.inp", shared);
    size_t n1 = 0, n2 = 0;
    char *a = slurp(p1, &n1), *b = slurp(p2, &n2);
    char *t = NULL;
    if (a && b && n1 + n2 > 0) {
        t = malloc(TARGET_BYTES + n1 + n2);
        size_t at = 0;
        while (t && at < TARGET_BYTES) {
            memcpy(t + at, a, n1); at += n1;
            memcpy(t + at, b, n2); at += n2;
        }
        *len = at;
    }
    free(a);
    free(b);
    return t;
}

static tokenizer *load(const char *shared, const char *name)
{
    char p[4096], err[512];
    snprintf(p, sizeof p, "%s/vocab/ggml-vocab-%s.gguf", shared, name);
    gguf_file *f = gguf_open(p, err, sizeof err);
    if (!f) { fprintf(stderr, "%s\n", err); return NULL; }
    tokenizer *t = tokenizer_load(f, err, sizeof err);
    gguf_close(f);
    if (!t) fprintf(stderr, "%s\n", err);
    return t;
}

/* Best of a few runs: the machine is shared, the minimum is the signal. */
static double bench_encode(const tokenizer *t, const char *text, size_t len, size_t *ntok)
{
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        int32_t *ids;
        size_t n;
        double t0 = bench_now();
        if (tokenizer_encode(t, text, len, false, false, &ids, &n) != 0) return -1;
        double dt = bench_now() - t0;
        free(ids);
        if (dt < best) best = dt;
        *ntok = n;
    }
    return best;
}

/* Keeps the copy loop from being optimised away. */
static unsigned copy_checksum(const char *d, size_t n) { return n ? (unsigned char)d[n / 2] : 0; }

static double bench_copy(const char *text, size_t len, unsigned *check)
{
    char *dst = malloc(len);
    double best = 1e30;
    for (int r = 0; r < 5 && dst; r++) {
        double t0 = bench_now();
        for (size_t i = 0; i < len; i++) dst[i] = text[i];
        *check += copy_checksum(dst, len);
        double dt = bench_now() - t0;
        if (dt < best) best = dt;
    }
    free(dst);
    return best;
}

static double bench_split(const char *text, size_t len, size_t *npieces)
{
    static const char pat[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &ec, &eo, NULL);
    if (!re) return -1;
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        size_t pos = 0, n = 0;
        double t0 = bench_now();
        while (pos < len && pcre2_match(re, (PCRE2_SPTR)text, len, pos, 0, md, NULL) > 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            pos = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
            n++;
        }
        double dt = bench_now() - t0;
        if (dt < best) best = dt;
        *npieces = n;
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return best;
}

int main(void)
{
    const char *shared = getenv("STRATA_SHARED");
    if (!shared || !*shared) shared = "../shared";
    size_t len = 0;
    char *text = make_text(shared, &len);
    if (!text) {
        printf("bench_tokenizer: skipped, %s/models/tinymoe/calib.txt or the gpt-2 vocab pairs are absent\n", shared);
        return 0;
    }
    unsigned check = 0;
    double tc = bench_copy(text, len, &check);
    size_t np = 0;
    double ts = bench_split(text, len, &np);
    printf("text: %zu bytes\n", len);
    printf("baseline byte copy      : %8.1f MB/s (check %u)\n", len / tc / 1e6, check);
    printf("baseline PCRE2 gpt-2 split: %6.1f MB/s, %zu pieces\n", len / ts / 1e6, np);
    static const char *names[] = {"llama-spm", "gpt-2"};
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        tokenizer *t = load(shared, names[i]);
        if (!t) { rc = 1; continue; }
        size_t nt = 0;
        double te = bench_encode(t, text, len, &nt);
        if (te < 0) { fprintf(stderr, "encode failed\n"); rc = 1; }
        else
            printf("encode %-10s: %9.0f tokens/s, %6.2f MB/s (%zu tokens); %.3f x PCRE2 split speed, %.4f x copy speed\n",
                   names[i], nt / te, len / te / 1e6, nt, ts / te, tc / te);
        tokenizer_free(t);
    }
    free(text);
    return rc;
}
