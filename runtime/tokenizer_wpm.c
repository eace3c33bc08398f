/* tokenizer_wpm.c: WordPiece ("bert" vocabularies). Placeholder. */
#include "runtime/tokenizer_internal.h"

int tok_wpm_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    (void)t; (void)text; (void)len; (void)out;
    return -1;
}
