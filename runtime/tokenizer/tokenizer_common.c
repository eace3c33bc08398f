/* tokenizer_common.c: the pieces every encoder uses (tokenizer_internal.h):
 * the id vector, the merge heap and one word's merges, the vocabulary
 * lookup, UTF-8 lengths. Beneath tokenizer.c (which builds the tokenizer
 * and dispatches to an encoder) and the encoders (tokenizer_spm.c, _bpe.c,
 * _wpm.c), so that no encoder reaches back into tokenizer.c. */
#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

int tok_ids_push(tok_ids *o, int32_t id)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        int32_t *v = realloc(o->v, cap * sizeof *v);
        if (!v) return -1;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = id;
    return 0;
}

static bool bigram_before(const tok_bigram *a, const tok_bigram *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

int tok_heap_push(tok_heap *h, tok_bigram b)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        tok_bigram *v = realloc(h->v, cap * sizeof *v);
        if (!v) return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bigram_before(&b, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = b;
    return 0;
}

bool tok_heap_pop(tok_heap *h, tok_bigram *out)
{
    if (!h->n) return false;
    *out = h->v[0];
    tok_bigram last = h->v[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && bigram_before(&h->v[c + 1], &h->v[c])) c++;
        if (!bigram_before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n) h->v[i] = last;
    return true;
}

int32_t tok_merge_word(const tokenizer *t, const char *w, size_t wn, tok_sym *sym, tok_heap *h, tok_pair_fn pair)
{
    int32_t ns = 0;
    for (size_t i = 0; i < wn;) {
        size_t k = tok_utf8_len((unsigned char)w[i]);
        if (k > wn - i) k = wn - i;
        sym[ns] = (tok_sym){(uint32_t)i, (uint32_t)k, ns - 1, -1};
        if (ns > 0) sym[ns - 1].next = ns;
        ns++;
        i += k;
    }
    h->n = 0;
    for (int32_t i = 1; i < ns; i++)
        if (pair(t, w, sym, i - 1, i, h) != 0) return -1;
    tok_bigram b;
    while (tok_heap_pop(h, &b)) {
        tok_sym *l = &sym[b.left], *r = &sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = b.left;
        if (pair(t, w, sym, l->prev, b.left, h) != 0) return -1;
        if (pair(t, w, sym, b.left, l->next, h) != 0) return -1;
    }
    return ns;
}

uint32_t tok_hash(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

int32_t tok_lookup(const tokenizer *t, const char *s, size_t n)
{
    uint32_t i = tok_hash(TOK_HASH_SEED, s, n) & t->slot_mask;
    for (;; i = (i + 1) & t->slot_mask) {
        int32_t v = t->slot[i];
        if (!v) return -1;
        int32_t id = v - 1;
        if (t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0) return id;
    }
}

size_t tok_utf8_len(unsigned char c)
{
    static const unsigned char by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_nibble[c >> 4];
}

size_t tok_utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
