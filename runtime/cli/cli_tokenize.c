/* cli_tokenize.c: `strata tokenize MODEL [-p TEXT] [--no-bos]
 * [--parse-special] [--separator SEP] [--decode [--special]]`: text -> token
 * ids with a model's tokenizer (tokenizer.h), and back.
 *
 * Contract: MODEL is a GGUF file (a model or a vocab-only GGUF) or a pack
 * folder (its tokenizer.gguf); only the tokenizer.* keys are read. The text
 * is TEXT or all of stdin, bytes as they are. Ids are printed each preceded
 * by a space, one line per text (the layout of llama.cpp's vocab test .out
 * files). --separator SEP (C escapes \n \t \\ understood) makes the input a
 * list of texts, each ended by SEP (text after the last SEP, if any, is one
 * more), and prints one line per text. --decode reverses it: stdin holds ids
 * (decimal, whitespace-separated; one line per text with --separator) and
 * the decoded bytes are written (each text followed by SEP with
 * --separator). cli.h conventions: 0 ok, 1 model or input refused (one line
 * on stderr naming it), 2 usage. */
#include "runtime/cli/cli.h"

#include "formats/pack_files.h"
#include "runtime/tokenizer/tokenizer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: strata tokenize MODEL [-p TEXT] [--no-bos] [--parse-special] [--separator SEP]\n"
                "       strata tokenize MODEL --decode [--special] [--separator SEP]   (ids on stdin)\n"
                "  MODEL is a GGUF (a model or a vocab-only GGUF) or a pack folder (its tokenizer.gguf).\n"
                "  Prints the token ids of TEXT (default: all of stdin), each after a space, on one line.\n"
                "  --no-bos          add neither BOS nor EOS (default: as the model's metadata says)\n"
                "  --parse-special   control tokens written in the text (\"<|im_start|>\") become their ids\n"
                "  --separator SEP   the input is several texts, each ended by SEP (\\n, \\t, \\\\ understood):\n"
                "                    one line of ids per text\n"
                "  --decode          ids -> text: decimal ids on stdin (one line per text with --separator);\n"
                "                    writes the text's bytes (each text followed by SEP with --separator)\n"
                "  --special         with --decode: control tokens are written as their text\n");
}

typedef struct tok_opts {
    const char *model, *text, *sep;
    bool no_bos, parse_special, decode, special;
} tok_opts;

static int parse(tok_opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 1; }
        if (a[0] != '-') { if (o->model) return cli_opt_bad("tokenize", a, NULL); o->model = a; continue; }
        if (!strcmp(a, "--no-bos")) o->no_bos = true;
        else if (!strcmp(a, "--parse-special")) o->parse_special = true;
        else if (!strcmp(a, "--decode")) o->decode = true;
        else if (!strcmp(a, "--special")) o->special = true;
        else if (i + 1 < argc && (!strcmp(a, "-p") || !strcmp(a, "--prompt"))) o->text = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--separator")) o->sep = argv[++i];
        else return cli_opt_bad("tokenize", a, NULL);
    }
    if (!o->model) { fprintf(stderr, "strata tokenize: no MODEL given\n"); return -1; }
    if (o->decode && (o->text || o->no_bos || o->parse_special)) { /* encode-only options */
        fprintf(stderr, "strata tokenize: %s does not go with --decode\n",
                o->text ? "-p" : o->no_bos ? "--no-bos" : "--parse-special");
        return -1;
    }
    if (o->special && !o->decode) { fprintf(stderr, "strata tokenize: --special goes only with --decode\n"); return -1; }
    return 0;
}

/* SEP with \n, \t and \\ replaced; NULL (and a message) on another escape
 * or an empty result. */
static char *unescape(const char *s, size_t *n)
{
    char *out = malloc(strlen(s) + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (; *s; s++) {
        if (*s != '\\') { out[k++] = *s; continue; }
        s++;
        if (*s == 'n') out[k++] = '\n';
        else if (*s == 't') out[k++] = '\t';
        else if (*s == '\\') out[k++] = '\\';
        else {
            if (*s) fprintf(stderr, "strata tokenize: --separator: unknown escape '\\%c' (\\n, \\t, \\\\ only)\n", *s);
            else fprintf(stderr, "strata tokenize: --separator ends in a lone '\\'\n");
            free(out);
            return NULL;
        }
    }
    if (!k) { fprintf(stderr, "strata tokenize: --separator is empty\n"); free(out); return NULL; }
    *n = k;
    return out;
}

static tokenizer *open_tokenizer(const char *model)
{
    char path[4096], err[1024] = "";
    struct stat st;
    if (stat(model, &st) != 0) { fprintf(stderr, "strata tokenize: %s: %s\n", model, strerror(errno)); return NULL; }
    if (S_ISDIR(st.st_mode)) snprintf(path, sizeof path, "%s/%s", model, PACK_FILE_NAMES[PACK_TOKENIZER]);
    else snprintf(path, sizeof path, "%s", model);
    gguf_file *f = gguf_open(path, err, sizeof err);
    if (!f) { fprintf(stderr, "strata tokenize: %s\n", err); return NULL; }
    tokenizer *t = tokenizer_load(f, err, sizeof err);
    gguf_close(f);
    if (!t) fprintf(stderr, "strata tokenize: %s\n", err);
    return t;
}

static const char *find_sep(const char *s, const char *end, const char *sep, size_t sn)
{
    for (const char *p = s; (size_t)(end - p) >= sn; p++) {
        p = memchr(p, sep[0], (size_t)(end - p) - sn + 1);
        if (!p) return NULL;
        if (memcmp(p, sep, sn) == 0) return p;
    }
    return NULL;
}

static int encode_one(const tokenizer *t, const tok_opts *o, const char *s, size_t n)
{
    int32_t *ids;
    size_t k;
    if (tokenizer_encode(t, s, n, !o->no_bos, o->parse_special, &ids, &k) != 0) {
        fprintf(stderr, "strata tokenize: the tokenizer failed (out of memory or a regex error)\n");
        return -1;
    }
    for (size_t i = 0; i < k; i++) printf(" %d", ids[i]);
    putchar('\n');
    free(ids);
    return 0;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Ids of in[0..n) (whitespace-separated decimals) -> text on stdout. */
static int decode_one(const tokenizer *t, const tok_opts *o, const char *in, size_t n, size_t line)
{
    int32_t *ids = malloc((n / 2 + 1) * sizeof *ids);
    size_t k = 0;
    if (!ids) { fprintf(stderr, "strata tokenize: out of memory\n"); return -1; }
    for (size_t i = 0; i < n;) {
        if (is_blank(in[i])) { i++; continue; }
        size_t j = i;
        long long v = 0;
        while (j < n && in[j] >= '0' && in[j] <= '9' && v <= INT32_MAX) v = v * 10 + (in[j++] - '0');
        if (j == i || (j < n && !is_blank(in[j])) || v >= tokenizer_n_vocab(t)) {
            size_t e = i;
            while (e < n && !is_blank(in[e]) && e - i < 40) e++;
            fprintf(stderr, "strata tokenize: stdin line %zu: '%.*s' is not a token id (0..%d)\n", line,
                    (int)(e - i), in + i, tokenizer_n_vocab(t) - 1);
            free(ids);
            return -1;
        }
        ids[k++] = (int32_t)v;
        i = j;
    }
    char *txt;
    size_t tl;
    int rc = tokenizer_decode(t, ids, k, o->special, &txt, &tl);
    free(ids);
    if (rc != 0) { fprintf(stderr, "strata tokenize: out of memory\n"); return -1; }
    fwrite(txt, 1, tl, stdout);
    free(txt);
    return 0;
}

static int run(const tokenizer *t, const tok_opts *o, const char *in, size_t n, const char *sep, size_t sn)
{
    const char *end = in + n;
    if (!o->decode) {
        if (!sep) return encode_one(t, o, in, n);
        for (const char *s = in; s < end;) {
            const char *e = find_sep(s, end, sep, sn);
            if (encode_one(t, o, s, (size_t)((e ? e : end) - s)) != 0) return -1;
            s = e ? e + sn : end;
        }
        return 0;
    }
    if (!sep) return decode_one(t, o, in, n, 1);
    size_t line = 1;
    for (const char *s = in; s < end; line++) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (decode_one(t, o, s, (size_t)((e ? e : end) - s), line) != 0) return -1;
        fwrite(sep, 1, sn, stdout);
        s = e ? e + 1 : end;
    }
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    tok_opts o;
    memset(&o, 0, sizeof o);
    int pr = parse(&o, argc, argv);
    if (pr > 0) return 0;
    if (pr < 0) { usage(stderr); return 2; }
    char *sep = NULL, *in = NULL;
    const char *why = "read error";
    size_t sn = 0, n = 0;
    if (o.sep && !(sep = unescape(o.sep, &sn))) return 2;
    tokenizer *t = open_tokenizer(o.model);
    int rc = 1;
    if (!t) goto done;
    if (o.text) {
        n = strlen(o.text);
    } else if (!(in = cli_read_all(stdin, &n, &why))) {
        fprintf(stderr, "strata tokenize: stdin: %s\n", why);
        goto done;
    }
    if (run(t, &o, o.text ? o.text : in, n, sep, sn) != 0) goto done;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "strata tokenize: stdout: write error\n");
        goto done;
    }
    rc = 0;
done:
    tokenizer_free(t);
    free(in);
    free(sep);
    return rc;
}
