/* byte_vocab.h: TEST-ONLY. A small byte-level BPE vocabulary (a "gpt2"
 * tokenizer's GGUF keys, no tensors) written to a file, for the tests that
 * need a byte-level vocabulary rather than a SentencePiece one: ids 0..255
 * are the 256 bytes in GPT-2's byte alphabet (id = byte value), then the
 * tokens of a few merges, then BOS and EOS (DeepSeek's names, CONTROL).
 * Decoding gives every byte back as it is: no space before the first word,
 * and U+2581 stays U+2581 (SentencePiece would make it a space). Returns 0,
 * or -1 with one line in err. */
#ifndef STRATA_TEST_BYTE_VOCAB_H
#define STRATA_TEST_BYTE_VOCAB_H

#include "formats/gguf.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves,
 * the others for U+0100 onwards in byte order; as UTF-8 into buf[4]. */
static inline void byte_vocab_char(int b, char *buf)
{
    int cp = b, n = 0;
    if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
        for (int c = 0; c < b; c++)
            n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF));
        cp = 256 + n;
    }
    if (cp < 0x80) { buf[0] = (char)cp; buf[1] = 0; }
    else { buf[0] = (char)(0xC0 | (cp >> 6)); buf[1] = (char)(0x80 | (cp & 0x3F)); buf[2] = 0; }
}

static inline int byte_vocab_write(const char *path, char *err, size_t errlen)
{
    /* "Ġ" is the space's byte character */
    static const char *const MERGES[] = { "\xc4\xa0 t", "h e", "i n", "\xc4\xa0t he" };
    static const char *const MERGED[] = { "\xc4\xa0t", "he", "in", "\xc4\xa0the" };
    enum { N_MERGES = sizeof MERGES / sizeof MERGES[0], N = 256 + N_MERGES + 2 };
    char bytes[256][4];
    const char *tok[N];
    int32_t type[N];
    for (int b = 0; b < 256; b++) {
        byte_vocab_char(b, bytes[b]);
        tok[b] = bytes[b];
        type[b] = 1; /* normal, as GPT-2's GGUFs type them */
    }
    for (int i = 0; i < N_MERGES; i++) { tok[256 + i] = MERGED[i]; type[256 + i] = 1; }
    tok[N - 2] = "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
    tok[N - 1] = "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
    type[N - 2] = type[N - 1] = 3; /* control */
    const bool add_bos = true;
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    if (rc == 0)
        rc = gguf_writer_add_str(w, "general.architecture", "llama") || gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2") ||
             gguf_writer_add_str(w, "tokenizer.ggml.pre", "gpt-2") ||
             gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", tok, N) ||
             gguf_writer_add_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, type, N) ||
             gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", MERGES, N_MERGES) ||
             gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", N - 2) ||
             gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", N - 1) ||
             gguf_writer_add_kv(w, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL, &add_bos) ? -1 : 0;
    if (rc) snprintf(err, errlen, "%.200s: cannot make the byte-level vocabulary", path);
    else rc = gguf_writer_write(w, path, err, errlen);
    gguf_writer_free(w);
    return rc;
}

#endif
