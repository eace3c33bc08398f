/* fuzz_tokenizer.c: libFuzzer target for the runtime tokenizer on untrusted
 * text, what every served request hands it. The vocabularies are the real
 * ones in $STRATA_SHARED/vocab (SentencePiece, byte-level BPE with several
 * pre-tokenizers, WordPiece), loaded once; without them the target does
 * nothing and says so. The first input byte picks the vocabulary and the
 * flags, the rest is the text. For every input:
 *  - encode succeeds (no text is an error) and every id is in the vocabulary;
 *  - decode of those ids succeeds, and every id has a piece;
 *  - the lossless tokenizers give the text back exactly when it is valid
 *    UTF-8 and special tokens are not parsed (parsed ones are control
 *    tokens, which decode to nothing unless asked), no user-defined token
 *    was cut out of it (after one SentencePiece starts the rest with a
 *    space, as llama.cpp does) and, for SentencePiece, it holds no U+2581
 *    (its space mark, read back as ' '). Lossless: not WordPiece
 *    (it lowercases and drops spaces), and every single byte has a token
 *    (Falcon's vocabulary has none for bytes 3, 4 and 5: llama.cpp drops
 *    such bytes, and so does this tokenizer, to give its ids);
 *  - add_special only adds the model's BOS/EOS around the same ids.
 * fuzz-link: runtime/tokenizer/tokenizer.c runtime/tokenizer/tokenizer_common.c runtime/tokenizer/tokenizer_bpe.c runtime/tokenizer/tokenizer_spm.c runtime/tokenizer/tokenizer_wpm.c runtime/tokenizer/tokenizer_tables.c runtime/util/utf8.c runtime/util/strbuf.c -lpcre2-8 */
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_bytes(const char *s, size_t len, const char *needle)
{
    const size_t k = strlen(needle);
    for (size_t i = 0; i + k <= len; i++)
        if (memcmp(s + i, needle, k) == 0) return true;
    return false;
}

static bool valid_utf8(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        const int k = utf8_seq_len((const unsigned char *)s + i, len - i);
        if (k <= 0) return false;
        i += (size_t)k;
    }
    return true;
}

static const char *const k_vocabs[] = { "llama-spm", "gpt-2", "phi-3", "falcon", "deepseek-llm",
                                        "deepseek-coder", "starcoder", "mpt", "bert-bge" };
#define N_VOCABS (sizeof k_vocabs / sizeof k_vocabs[0])

/* Loaded on first use and kept for the process (libFuzzer never exits
 * through a path that could free them mid-run). */
static tokenizer *g_tok[N_VOCABS];
static bool g_lossless[N_VOCABS];
static int g_loaded;

/* Every byte alone encodes to one token, and WordPiece is not lossless;
 * nor is starcoder, whose merges make symbols it has no token for, which
 * llama.cpp drops and we with it (test_tokenizer's
 * test_starcoder_drops_as_llamacpp: a text this target found). */
static bool lossless(const tokenizer *t, const char *name)
{
    if (tokenizer_get_kind(t) == TOKENIZER_WPM || !strcmp(name, "starcoder")) return false;
    for (int b = 0; b < 256; b++) {
        const char c = (char)b;
        int32_t *ids = NULL;
        size_t n = 0;
        if (tokenizer_encode(t, &c, 1, false, false, &ids, &n) != 0) abort();
        free(ids);
        if (n == 0) return false;
    }
    return true;
}

static void load_all(void)
{
    const char *shared = getenv("STRATA_SHARED");
    if (!shared || !*shared) shared = "../shared";
    int n = 0;
    for (size_t i = 0; i < N_VOCABS; i++) {
        char path[4096], err[512] = "";
        snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", shared, k_vocabs[i]);
        gguf_file *f = gguf_open(path, err, sizeof err);
        if (!f) continue;
        g_tok[i] = tokenizer_load(f, err, sizeof err);
        gguf_close(f);
        if (!g_tok[i]) { fprintf(stderr, "fuzz_tokenizer: %s\n", err); abort(); }
        g_lossless[i] = lossless(g_tok[i], k_vocabs[i]);
        n++;
    }
    fprintf(stderr, "fuzz_tokenizer: %d of %zu vocabularies from %s/vocab%s\n", n, N_VOCABS, shared,
            n ? "" : " (none: nothing is fuzzed)");
    g_loaded = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_loaded) load_all();
    if (size < 1) return 0;
    const size_t v = (data[0] & 15) % N_VOCABS;
    const tokenizer *t = g_tok[v];
    if (!t) return 0;
    const bool parse_special = (data[0] & 16) != 0;
    const char *text = (const char *)data + 1;
    const size_t len = size - 1;

    int32_t *ids = NULL, *ids2 = NULL;
    size_t n = 0, n2 = 0;
    if (tokenizer_encode(t, text, len, false, parse_special, &ids, &n) != 0) __builtin_trap();
    const int32_t nv = tokenizer_n_vocab(t);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= nv) __builtin_trap();
        char piece[8];
        if (tokenizer_piece(t, ids[i], true, piece, sizeof piece) < 0) __builtin_trap();
    }
    char *out = NULL;
    size_t out_len = 0;
    if (tokenizer_decode(t, ids, n, false, &out, &out_len) != 0 || !out || out[out_len] != '\0') __builtin_trap();
    /* SentencePiece writes ' ' as U+2581 and reads every U+2581 back as ' ' */
    const bool has_2581 = tokenizer_get_kind(t) == TOKENIZER_SPM && has_bytes(text, len, "\xe2\x96\x81");
    /* a user-defined token matched in the text (always, as llama.cpp does)
     * makes SentencePiece give the next text its own leading space */
    bool all_text = true;
    for (size_t i = 0; i < n; i++) {
        const int ty = tokenizer_token_type(t, ids[i]);
        if (ty != TOKEN_TYPE_NORMAL && ty != TOKEN_TYPE_BYTE && ty != TOKEN_TYPE_UNDEFINED) all_text = false;
    }
    if (g_lossless[v] && all_text && !parse_special && !has_2581 && valid_utf8(text, len) &&
        (out_len != len || memcmp(out, text, len) != 0))
        __builtin_trap();

    /* add_special: the same ids, with BOS in front and EOS behind as the model says */
    if (tokenizer_encode(t, text, len, true, parse_special, &ids2, &n2) != 0) __builtin_trap();
    const size_t pre = tokenizer_add_bos(t) && tokenizer_bos(t) >= 0;
    const size_t post = tokenizer_add_eos(t) && tokenizer_eos(t) >= 0;
    if (tokenizer_get_kind(t) != TOKENIZER_WPM) {
        if (n2 != n + pre + post) __builtin_trap();
        if (pre && ids2[0] != tokenizer_bos(t)) __builtin_trap();
        if (post && ids2[n2 - 1] != tokenizer_eos(t)) __builtin_trap();
        if (n && memcmp(ids2 + pre, ids, n * sizeof *ids) != 0) __builtin_trap();
    }
    free(out);
    free(ids);
    free(ids2);
    return 0;
}
