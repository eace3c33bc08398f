/* tokenizer_internal.h: the tokenizer object shared by tokenizer.c (loading,
 * special-token partition, decode), tokenizer_spm.c, tokenizer_bpe.c and
 * tokenizer_wpm.c, and the helpers they share (tokenizer_common.c). Not part
 * of the runtime's API.
 *
 * Contract: every field is written once by tokenizer_new() and only read
 * afterwards; the encoders append to a tok_ids vector and report -1 only on
 * out of memory or a regex engine failure. */
#ifndef STRATA_TOKENIZER_INTERNAL_H
#define STRATA_TOKENIZER_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "runtime/tokenizer/tokenizer.h"

#define TOK_MAX_REGEX 8

/* A growable id vector; the encoders only append. */
typedef struct tok_ids {
    int32_t *v;
    size_t   n, cap;
} tok_ids;

int tok_ids_push(tok_ids *o, int32_t id);

/* Symbols of one word while it is being merged: a doubly linked list over
 * spans of the word's bytes; a merged-away symbol has n == 0. */
typedef struct tok_sym {
    uint32_t off, n;
    int32_t  prev, next;
} tok_sym;

/* Candidate merges, best first: the smallest key, then the leftmost pair
 * (both SentencePiece and BPE break ties towards the left). A candidate
 * whose symbols changed since it was queued is recognised by its size. */
typedef struct tok_bigram {
    double   key;
    int32_t  left, right;
    uint32_t size;
} tok_bigram;

typedef struct tok_heap {
    tok_bigram *v;
    size_t      n, cap;
} tok_heap;

int  tok_heap_push(tok_heap *h, tok_bigram b);
bool tok_heap_pop(tok_heap *h, tok_bigram *out);

/* Queues the candidate merge of neighbours l and r (either may be -1: no
 * neighbour, nothing queued); returns -1 only on out of memory. */
typedef int (*tok_pair_fn)(const tokenizer *t, const char *w, const tok_sym *sym, int32_t l, int32_t r, tok_heap *h);

/* One word's merges, shared by SentencePiece and BPE: w[0..wn) starts as one
 * symbol per UTF-8 character (sym holds wn entries), and the best candidate
 * pair() queued is merged until the heap is empty. Returns the number of
 * symbols made (walk the merged ones from sym[0] by .next), or -1 when
 * pair() failed. */
int32_t tok_merge_word(const tokenizer *t, const char *w, size_t wn, tok_sym *sym, tok_heap *h, tok_pair_fn pair);

struct tokenizer {
    tokenizer_kind kind;
    char          *pre_name;
    int32_t        n_vocab;
    char          *arena;    /* every token text, NUL-terminated, back to back */
    uint32_t      *off;      /* start of token i in arena */
    uint32_t      *len;
    float         *score;
    uint8_t       *type;
    uint32_t       max_len;  /* longest token text, bytes */

    /* text -> id, open addressing; slots hold id + 1 (0 = empty). */
    int32_t       *slot;
    uint32_t       slot_mask;

    /* gpt2 merges: "left right" lines; the key is (left, right) so a line
     * is found by hashing left, ' ', right without building the string. */
    char          *m_arena;
    uint32_t      *m_off, *m_left, *m_len; /* m_left: bytes of the left part */
    size_t         n_merges;
    int32_t       *m_slot;                 /* rank + 1 */
    uint32_t       m_mask;

    /* Tokens matched in raw text before the model runs, longest first. */
    int32_t       *special;
    size_t         n_special;

    int32_t bos, eos, unk, pad, sep, cls, mask;
    bool    add_bos, add_eos, add_space_prefix, ignore_merges;

    int32_t  byte_id[256];  /* llama: <0xXX> tokens, -1 when absent */
    uint16_t byte_cp[256];  /* gpt2: byte -> code point (GPT-2 byte map) */
    int16_t  cp_byte[324];  /* gpt2: code point (< 324) -> byte, -1 otherwise */

    pcre2_code *re[TOK_MAX_REGEX];
    int         n_re;
};

uint32_t tok_hash(uint32_t h, const char *s, size_t n);
#define TOK_HASH_SEED 2166136261u

int32_t tok_lookup(const tokenizer *t, const char *s, size_t n);
/* Byte length of the UTF-8 sequence that starts with byte c (1 for stray bytes). */
size_t tok_utf8_len(unsigned char c);
size_t tok_utf8_put(uint32_t cp, char *out);

int tok_spm_encode(const tokenizer *t, const char *text, size_t len, bool space_prefix, tok_ids *out);
int tok_bpe_setup(tokenizer *t, char *err, size_t errlen);
int tok_bpe_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out);
int tok_wpm_setup(tokenizer *t, char *err, size_t errlen);
int tok_wpm_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out);

#endif
