/* fuzz_kld_base.c: libFuzzer target for the llama-perplexity base-file
 * reader (runtime/cli/kld_base.c), which `strata perplexity --kld-base` hands
 * any file. A file it accepts must be readable in full: every token and
 * every scored row of every chunk (scored against flat logits), so ASan
 * sees any read past what the size check allowed; a refusal must say why
 * in one line.
 * fuzz-link: runtime/cli/kld_base.c */
#include "runtime/cli/kld_base.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes: ASan then flags any read past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    kld_base k;
    char err[256] = "";
    if (kld_base_parse(&k, copy, size, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) __builtin_trap();
        free(copy);
        return 0;
    }
    volatile int64_t sink = 0;
    for (size_t c = 0; c < (size_t)k.n_chunk; c++)
        for (size_t j = 0; j < k.n_ctx; j++) sink += kld_base_token(&k, c, j);
    float *logits = calloc((size_t)k.n_vocab, sizeof *logits);
    if (logits) {
        const size_t n_eval = k.n_ctx - 1 - k.n_ctx / 2;
        for (size_t c = 0; c < (size_t)k.n_chunk; c++)
            for (size_t r = 0; r < n_eval; r++) {
                int same;
                const double kl = kld_base_row(&k, c, r, logits, &same);
                sink += (int64_t)(kl == kl) + same;
            }
        free(logits);
    }
    (void)sink;
    free(copy);
    return 0;
}
