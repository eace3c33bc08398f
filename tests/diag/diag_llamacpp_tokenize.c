/* diag_llamacpp_tokenize.c: a diagnostic (not built by make, not run by CI):
 * llama.cpp's own llama_tokenize() on every text of a file in the layout of
 * llama.cpp's vocab test pairs (texts each ended by "\n__ggml_vocab_test__\n"),
 * written as its .out files are (one line per text, each id after a space).
 * Built and run by tests/diag/diag_tokenizer_llamacpp.sh against Debian's
 * llama.cpp packages, to compare `strata tokenize` with llama.cpp on texts
 * of any number and kind, not only the 46 of the pairs.
 *
 *   diag_llamacpp_tokenize VOCAB.gguf IN OUT ADD_SPECIAL PARSE_SPECIAL */
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s VOCAB.gguf IN OUT ADD_SPECIAL PARSE_SPECIAL\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "%s: cannot load\n", argv[1]); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    FILE *in = fopen(argv[2], "rb"), *out = fopen(argv[3], "wb");
    if (!in || !out) { fprintf(stderr, "cannot open %s or %s\n", argv[2], argv[3]); return 1; }
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, in) != (size_t)size) { fprintf(stderr, "cannot read %s\n", argv[2]); return 1; }
    buf[size] = '\0';
    const char *sep = "\n__ggml_vocab_test__\n";
    const bool add_special = atoi(argv[4]) != 0, parse_special = atoi(argv[5]) != 0;
    int cap = 1 << 16;
    llama_token *toks = malloc((size_t)cap * sizeof *toks);
    for (char *s = buf, *e; s < buf + size && (e = strstr(s, sep)) != NULL; s = e + strlen(sep)) {
        int n = llama_tokenize(vocab, s, (int32_t)(e - s), toks, cap, add_special, parse_special);
        if (n < 0) { fprintf(stderr, "llama_tokenize failed (%d)\n", n); return 1; }
        for (int i = 0; i < n; i++) fprintf(out, " %d", toks[i]);
        fputc('\n', out);
    }
    fclose(out);
    fclose(in);
    free(toks);
    free(buf);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
