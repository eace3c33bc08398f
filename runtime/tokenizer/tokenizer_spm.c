/* tokenizer_spm.c: SentencePiece-style BPE ("llama" vocabularies).
 * Spaces become U+2581, the text starts as one symbol per UTF-8 character,
 * and the adjacent pair whose concatenation is the highest-scoring token is
 * merged until none is left. Characters no token covers fall back to
 * <0xXX> byte tokens, so no input is lost. */
#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

static int try_pair(const tokenizer *t, const char *w, const tok_sym *sym, int32_t l, int32_t r, tok_heap *h)
{
    if (l < 0 || r < 0) return 0;
    uint32_t n = sym[l].n + sym[r].n;
    int32_t id = tok_lookup(t, w + sym[l].off, n);
    if (id < 0) return 0;
    return tok_heap_push(h, (tok_bigram){-(double)t->score[id], l, r, n});
}

static int emit_bytes(const tokenizer *t, const char *s, size_t n, tok_ids *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int32_t id = t->byte_id[c];
        /* vocabularies without byte tokens may still hold the lone byte */
        if (id < 0) id = tok_lookup(t, s + i, 1);
        if (id < 0) id = t->unk;
        if (id >= 0 && tok_ids_push(out, id) != 0) return -1;
    }
    return 0;
}

int tok_spm_encode(const tokenizer *t, const char *text, size_t len, bool space_prefix, tok_ids *out)
{
    static const char sp[3] = {'\xe2', '\x96', '\x81'};
    size_t cap = 3 * (len + 1);
    char *w = malloc(cap);
    /* one symbol per character of w, at most one per byte: a truncated
     * sequence (as the text may hold) can swallow the first byte of a
     * space mark and leave its other two bytes as symbols of their own, so
     * the text's length + 1 is not a bound, w's is */
    tok_sym *sym = malloc(cap * sizeof *sym);
    tok_heap h = {0};
    int rc = -1;
    if (!w || !sym) goto done;

    size_t wn = 0;
    if (space_prefix) { memcpy(w, sp, 3); wn = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(w + wn, sp, 3); wn += 3; }
        else w[wn++] = text[i];
    }
    if (wn == 0) { rc = 0; goto done; }

    if (tok_merge_word(t, w, wn, sym, &h, try_pair) < 0) goto done;

    /* Every merged symbol is a token by construction; only single
     * characters can be missing from the vocabulary. */
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        int32_t id = tok_lookup(t, w + sym[i].off, sym[i].n);
        if (id >= 0) {
            if (tok_ids_push(out, id) != 0) goto done;
        } else if (emit_bytes(t, w + sym[i].off, sym[i].n, out) != 0) {
            goto done;
        }
    }
    rc = 0;
done:
    free(w);
    free(sym);
    free(h.v);
    return rc;
}
