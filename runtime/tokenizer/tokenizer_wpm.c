/* tokenizer_wpm.c: WordPiece ("bert" vocabularies), as llama.cpp runs it.
 * The text is normalised BERT's way (each character replaced by the first
 * code point of its NFD decomposition, i.e. accents dropped, then
 * lowercased; control characters, combining marks and ill-formed UTF-8
 * removed), split at whitespace and around
 * every punctuation mark, ASCII symbol and CJK ideograph, and each word is
 * covered greedily by the longest vocabulary entries. The GGUF spells a
 * word-initial piece with a leading U+2581 and a continuation piece bare
 * (BERT's "##"). A word that cannot be covered becomes one [UNK]. */
#include "runtime/tokenizer/tokenizer_internal.h"
#include "runtime/tokenizer/tokenizer_tables.h"
#include "runtime/util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tok_wpm_setup(tokenizer *t, char *err, size_t errlen)
{
    /* groups: 1 whitespace, 2 dropped: control, format, private use, and
     * the combining marks BERT's accent stripping removes (llama.cpp drops
     * every \\p{M}, spacing and enclosing ones too), 3 punctuation or an
     * ASCII symbol ($+<=>^`|~ are Unicode symbols, BERT splits them too).
     * Unassigned code points (\\p{Cn}) stay word characters: PCRE2's
     * Unicode tables can be older than llama.cpp's, and what is unassigned
     * to them may be a newer emoji to llama.cpp (U+1FABC), which keeps it. */
    static const char pat[] = "(\\s)|(\\p{Cc}|\\p{Cf}|\\p{Co}|\\p{Cs}|\\p{M})|(\\p{P}|[$+<=>^`|~])";
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        if (err) snprintf(err, errlen, "WordPiece classifier pattern at %zu: %s", (size_t)eo, (char *)msg);
        return -1;
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    t->re[t->n_re++] = re;
    return 0;
}

static uint32_t map_pairs(const uint32_t (*tab)[2], size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tab[mid][0] < cp) lo = mid + 1;
        else hi = mid;
    }
    return (lo < n && tab[lo][0] == cp) ? tab[lo][1] : cp;
}

static uint32_t nfd_first(uint32_t cp)
{
    if (cp >= 0xAC00 && cp <= 0xD7A3) return 0x1100 + (cp - 0xAC00) / 588; /* Hangul leading jamo */
    return map_pairs(tok_nfd_first, tok_nfd_first_n, cp);
}

static bool is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* One code point from s[0..n); a byte that starts no well-formed sequence
 * reads as U+FFFD (dropped), as llama.cpp reads it. */
static uint32_t next_cp(const unsigned char *s, size_t n, size_t *adv)
{
    const int sl = utf8_seq_len(s, n); /* RFC 3629; <= 0: ill-formed here */
    const size_t k = sl > 0 ? (size_t)sl : 0;
    *adv = k ? k : 1;
    if (k == 0) return 0xFFFD;
    if (k == 1) return s[0];
    uint32_t cp = s[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) cp = (cp << 6) | (s[i] & 0x3F);
    return cp;
}

enum { C_WORD, C_SPACE, C_DROP, C_ALONE };

static int classify(const tokenizer *t, pcre2_match_data *md, uint32_t cp)
{
    if (cp == 0 || cp == 0xFFFD) return C_DROP;
    if (cp == 0x85) return C_SPACE; /* White_Space, though PCRE2's \s leaves it out */
    if (cp < 0x80 && ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9')))
        return C_WORD;
    if (is_cjk(cp)) return C_ALONE;
    char u[4];
    size_t k = tok_utf8_put(cp, u);
    int rc = pcre2_match(t->re[0], (PCRE2_SPTR)u, k, 0, 0, md, NULL);
    if (rc <= 0) return C_WORD;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (rc >= 2 && ov[2] != PCRE2_UNSET) return C_SPACE;
    if (rc >= 3 && ov[4] != PCRE2_UNSET) return C_DROP;
    return C_ALONE;
}

/* Covers "▁" + word greedily, longest piece first; all or nothing. */
static int wpm_word(const tokenizer *t, const char *w, size_t n, tok_ids *out)
{
    size_t start = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = n - i < (size_t)t->max_len ? n : i + t->max_len;
        int32_t id = -1;
        for (; j > i; j--)
            if ((id = tok_lookup(t, w + i, j - i)) >= 0) break;
        if (id < 0) {
            out->n = start;
            break;
        }
        if (tok_ids_push(out, id) != 0) return -1;
        i = j;
    }
    if (out->n == start && t->unk >= 0) return tok_ids_push(out, t->unk);
    return 0;
}

int tok_wpm_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    /* a word: U+2581 then at most 4 bytes per input byte after lowercasing */
    char *w = malloc(3 + 4 * len + 4);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re[0], NULL);
    int rc = -1;
    if (!w || !md) goto done;
    memcpy(w, "\xe2\x96\x81", 3);
    size_t wn = 3;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t adv;
        uint32_t cp = nfd_first(next_cp(s + i, len - i, &adv));
        i += adv;
        int c = classify(t, md, cp);
        if (c == C_DROP) continue;
        if (c == C_SPACE || c == C_ALONE) {
            if (wn > 3 && wpm_word(t, w, wn, out) != 0) goto done;
            wn = 3;
            if (c == C_SPACE) continue;
        }
        wn += tok_utf8_put(map_pairs(tok_lower, tok_lower_n, cp), w + wn);
        if (c == C_ALONE) {
            if (wpm_word(t, w, wn, out) != 0) goto done;
            wn = 3;
        }
    }
    if (wn > 3 && wpm_word(t, w, wn, out) != 0) goto done;
    rc = 0;
done:
    pcre2_match_data_free(md);
    free(w);
    return rc;
}
