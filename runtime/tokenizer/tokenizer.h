/* tokenizer.h: the runtime's text <-> token ids, built from a GGUF's
 * tokenizer.* keys (a pack's metadata-only tokenizer.gguf is enough: no
 * tensor is read).
 *
 * Contract:
 *  - Models: tokenizer.ggml.model "llama" (SentencePiece-style BPE driven by
 *    scores, byte fallback through <0xXX> tokens, ' ' written as U+2581 and
 *    an optional leading space, add_space_prefix), "gpt2" (byte-level BPE
 *    ranked by tokenizer.ggml.merges, the GPT-2 byte-to-unicode map, a
 *    pre-tokenizer chosen by tokenizer.ggml.pre and run with PCRE2 in UTF +
 *    UCP mode) and "bert" (WordPiece, greedy longest match). Anything else,
 *    and an unknown pre-tokenizer name, is refused: a wrong split would give
 *    plausible but wrong ids with no error anywhere downstream.
 *  - Ids match llama.cpp's llama_tokenize() for the same flags: add_special
 *    adds BOS/EOS (CLS/SEP for bert) as the metadata's add_bos/add_eos keys
 *    say (model defaults otherwise); parse_special lets control tokens written
 *    in the text become their ids. User-defined tokens are always matched
 *    first, as llama.cpp and HF tokenizers do.
 *  - The tokenizer is immutable after loading: encode/decode may run from
 *    several threads at once; each call allocates its own scratch.
 *  - Every function that can fail returns -1 (or NULL) and writes one line
 *    into err when err is given. Nothing keeps a pointer into the gguf_file:
 *    it may be closed right after tokenizer_load(). */
#ifndef STRATA_TOKENIZER_H
#define STRATA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"

typedef struct tokenizer tokenizer;

typedef enum tokenizer_kind {
    TOKENIZER_SPM = 0, /* "llama" */
    TOKENIZER_BPE = 1, /* "gpt2" */
    TOKENIZER_WPM = 2  /* "bert" */
} tokenizer_kind;

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum {
    TOKEN_TYPE_UNDEFINED = 0, TOKEN_TYPE_NORMAL = 1, TOKEN_TYPE_UNKNOWN = 2,
    TOKEN_TYPE_CONTROL = 3, TOKEN_TYPE_USER_DEFINED = 4, TOKEN_TYPE_UNUSED = 5,
    TOKEN_TYPE_BYTE = 6
};

#define TOKENIZER_ID_DEFAULT (-2) /* spec: take the model's default id */
#define TOKENIZER_ID_NONE    (-1)

/* An in-memory description, the same information the GGUF keys carry.
 * Everything is copied; the caller keeps ownership. */
typedef struct tokenizer_spec {
    const char         *model;     /* "llama" | "gpt2" | "bert" */
    const char         *pre;       /* tokenizer.ggml.pre, NULL = "default" */
    size_t              n_tokens;
    const char *const  *tokens;
    const float        *scores;    /* NULL: all 0 */
    const int32_t      *types;     /* NULL: all NORMAL */
    size_t              n_merges;
    const char *const  *merges;    /* "left right", for gpt2 */
    int32_t bos, eos, unk, pad, sep, cls, mask; /* an id, _NONE or _DEFAULT */
    int add_bos, add_eos, add_space_prefix;     /* 0, 1 or -1 (model default) */
} tokenizer_spec;

/* A spec with every id and flag set to "model default". */
tokenizer_spec tokenizer_spec_defaults(void);

tokenizer *tokenizer_new(const tokenizer_spec *spec, char *err, size_t errlen);
tokenizer *tokenizer_load(const gguf_file *f, char *err, size_t errlen);
void tokenizer_free(tokenizer *t);

/* text[0..len) -> *ids (malloc'd, caller frees; NULL when *n == 0).
 * Returns 0, or -1 on out of memory or a PCRE2 failure. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special,
                     bool parse_special, int32_t **ids, size_t *n);

/* The bytes one token stands for (what llama_token_to_piece gives): control
 * tokens are empty unless special; byte tokens give their byte; gpt2 tokens
 * are mapped back through the byte-to-unicode table. Writes at most bufsz
 * bytes and returns the piece's full length (so a caller can grow the buffer
 * and ask again), or -1 for an id outside the vocabulary. */
int tokenizer_piece(const tokenizer *t, int32_t id, bool special, char *buf, size_t bufsz);
/* A special token's text (BOS, EOS) as a malloc'd string: "" for an id
 * outside the vocabulary (TOKENIZER_ID_NONE) or a piece of 256 bytes or
 * more; NULL when out of memory. */
char *tokenizer_special_text(const tokenizer *t, int32_t id);

/* ids -> text (malloc'd, NUL-terminated; *len excludes the NUL). For
 * "llama" with add_space_prefix, the one space encode put in front of the
 * first text piece is dropped again, so decode(encode(s)) == s. */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, bool special,
                     char **out, size_t *len);

tokenizer_kind tokenizer_get_kind(const tokenizer *t);
int32_t     tokenizer_n_vocab(const tokenizer *t);
int32_t     tokenizer_bos(const tokenizer *t); /* TOKENIZER_ID_NONE if absent */
int32_t     tokenizer_eos(const tokenizer *t);
int32_t     tokenizer_unk(const tokenizer *t);
int32_t     tokenizer_pad(const tokenizer *t);
bool        tokenizer_add_bos(const tokenizer *t);
bool        tokenizer_add_eos(const tokenizer *t);
int         tokenizer_token_type(const tokenizer *t, int32_t id); /* -1 if out of range */
const char *tokenizer_token_text(const tokenizer *t, int32_t id); /* NULL if out of range */
int32_t     tokenizer_find(const tokenizer *t, const char *text, size_t len); /* -1 if absent */
/* The pre-tokenizer the GGUF asked for ("default", "llama3", ...). */
const char *tokenizer_pre_name(const tokenizer *t);

#endif
