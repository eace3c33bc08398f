/* tokenizer_bpe.c: byte-level BPE ("gpt2" vocabularies).
 * The text is first cut into words by the pre-tokenizer the GGUF names
 * (tokenizer.ggml.pre): a list of PCRE2 patterns, each one splitting every
 * piece the previous one left, with the text between matches kept as
 * pieces of its own. Each word's bytes are spelled in GPT-2's byte alphabet
 * and merged pair by pair, lowest merge rank first.
 *
 * The patterns are the models' own (their tokenizer.json), in the form
 * llama.cpp runs them; a pattern is applied to one piece at a time so a
 * lookahead never sees past the piece, as in llama.cpp. */
#include "runtime/tokenizer/tokenizer_internal.h"
#include "runtime/util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3 \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* llama.cpp runs the patterns that name no \p{..} class through std::wregex
 * on a copy of the text whose non-ASCII whitespace (U+1680, U+2000-200A,
 * U+2028, U+2029, U+202F, U+205F, U+3000 in these ranges) became \v: so its
 * literal ranges never match those characters, and these ones skip them. */
#define RE_CJK                                                                                         \
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}" \
    "\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"
/* DeepSeek LLM's explicit letter ranges (Latin, Greek, Cyrillic, Armenian,
 * Georgian, Cherokee, ... as listed in its tokenizer.json). */
#define RE_DEEPSEEK_LETTERS \
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}" \
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}" \
    "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}" \
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}" \
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}" \
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}" \
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}" \
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}" \
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}" \
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}" \
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}" \
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}" \
    "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}" \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}" \
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+"
#define RE_GPT4O \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?" \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?" \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Kimi K2's tiktoken split: gpt-4o's, with Han runs a piece of their own
 * and kept out of the letter classes (tiktoken's [...&&[^\p{Han}]]) */
#define KIMI_NOT_HAN "(?!\\p{Han})"
#define KIMI_UPPER "(?:" KIMI_NOT_HAN "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])"
#define KIMI_LOWER "(?:" KIMI_NOT_HAN "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])"
#define KIMI_CONTR "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
#define RE_KIMI_K2 \
    "\\p{Han}+|[^\\r\\n\\p{L}\\p{N}]?" KIMI_UPPER "*" KIMI_LOWER "+" KIMI_CONTR \
    "|[^\\r\\n\\p{L}\\p{N}]?" KIMI_UPPER "+" KIMI_LOWER "*" KIMI_CONTR \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct pre_def {
    const char *names; /* '|'-separated tokenizer.ggml.pre values */
    bool        ignore_merges, add_bos;
    const char *re[TOK_MAX_REGEX];
} pre_def;

/* One row per pre-tokenizer; adding a model is adding a row. */
static const pre_def k_pre[] = {
    {"gpt-2|phi-2|mpt|olmo|jais|roberta-bpe|jina-es|jina-de|jina-v1-en|jina-v2-es|jina-v2-de|jina-v2-code|gigachat|trillion|exaone4",
     false, false, {RE_GPT2}},
    /* no tokenizer.ggml.pre, or "default" (older GGUFs, gpt-neox's vocab):
     * llama.cpp's default split, not GPT-2's: punctuation runs first, and
     * digits in groups of three */
    {"default", false, false, {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2", true, true, {RE_LLAMA3}},
    /* Llama 3's split without BOS: GLM-4.5 looks whole chunks up first, the
     * others do not (llama.cpp 0.7.0's flags, checked on relabelled Llama 3
     * vocabularies: e2e_vocab_npm.sh) */
    {"glm4", true, false, {RE_LLAMA3}},
    {"chatglm-bpe|dbrx|smaug-bpe", false, false, {RE_LLAMA3}},
    {"qwen2|deepseek-r1-qwen|stablelm2|megrez|hunyuan|bailingmoe|bailingmoe2|grok-2", false, false, {RE_QWEN2}},
    {"deepseek-llm", false, false,
     {"[\r\n]", RE_DEEPSEEK_LETTERS,
      "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3001}-\\x{3002}]+" /* not U+3000: see RE_CJK */,
      "\\s+$", RE_CJK, "\\p{N}+"}},
    {"deepseek-coder", false, false, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}"}},
    {"deepseek-v3|hunyuan-dense", false, false,
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
      "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
    {"falcon", false, false, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b", false, false, {"\\p{N}", RE_GPT2}},
    {"poro-chat|bloom|gpt3-finnish", false, false, {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"}},
    {"viking", false, false, {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+", "\\p{N}"}},
    {"tekken", true, true,
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
      "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
      "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)"}},
    {"gpt-4o|llama4|minimax-m2", false, false, {RE_GPT4O}},
    {"kimi-k2", false, false, {RE_KIMI_K2}},
    {"chameleon", false, true,
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", RE_GPT2}},
};

static bool name_in(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '|');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && memcmp(p, name, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

int tok_bpe_setup(tokenizer *t, char *err, size_t errlen)
{
    const pre_def *d = NULL;
    for (size_t i = 0; i < sizeof k_pre / sizeof k_pre[0] && !d; i++)
        if (name_in(k_pre[i].names, t->pre_name)) d = &k_pre[i];
    if (!d) {
        /* Falling back to some other split would still produce ids, just
         * not the ones the model was trained on. */
        if (err) snprintf(err, errlen, "tokenizer.ggml.pre \"%s\" is not a known pre-tokenizer", t->pre_name);
        return -1;
    }
    t->ignore_merges = d->ignore_merges;
    t->add_bos = d->add_bos;
    for (int i = 0; i < TOK_MAX_REGEX && d->re[i]; i++) {
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)d->re[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_MATCH_INVALID_UTF,
                                       &ec, &eo, NULL);
        if (!re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            if (err) snprintf(err, errlen, "pre-tokenizer \"%s\" pattern %d at %zu: %s", t->pre_name, i, (size_t)eo, (char *)msg);
            return -1;
        }
        /* JIT is an optimisation only; without it the interpreter runs. */
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        t->re[t->n_re++] = re;
    }
    return 0;
}

typedef struct span_vec {
    size_t *v; /* off, len pairs */
    size_t  n, cap;
} span_vec;

static int span_push(span_vec *s, size_t off, size_t len)
{
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        size_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = off;
    s->v[s->n++] = len;
    return 0;
}

/* Splits every span of in by one pattern into out: matches and the gaps
 * between them both become spans. */
static int split_one(const pcre2_code *re, pcre2_match_data *md, const char *text, const span_vec *in, span_vec *out)
{
    out->n = 0;
    for (size_t k = 0; k < in->n; k += 2) {
        size_t off = in->v[k], len = in->v[k + 1];
        const char *s = text + off;
        size_t last = 0, pos = 0;
        while (pos < len) {
            int rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, 0, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) return -1;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me <= ms) { /* an empty match splits nothing; move on one character */
                pos = ms + tok_utf8_len((unsigned char)s[ms < len ? ms : len - 1]);
                continue;
            }
            if (ms > last && span_push(out, off + last, ms - last) != 0) return -1;
            if (span_push(out, off + ms, me - ms) != 0) return -1;
            last = pos = me;
        }
        if (last < len && span_push(out, off + last, len - last) != 0) return -1;
    }
    return 0;
}

static int32_t merge_rank(const tokenizer *t, const char *l, size_t ln, const char *r, size_t rn)
{
    uint32_t h = tok_hash(tok_hash(tok_hash(TOK_HASH_SEED, l, ln), " ", 1), r, rn) & t->m_mask;
    for (;; h = (h + 1) & t->m_mask) {
        int32_t v = t->m_slot[h];
        if (!v) return -1;
        int32_t i = v - 1;
        const char *m = t->m_arena + t->m_off[i];
        if (t->m_left[i] == ln && t->m_len[i] == ln + 1 + rn && memcmp(m, l, ln) == 0 &&
            memcmp(m + ln + 1, r, rn) == 0)
            return i;
    }
}

static int try_pair(const tokenizer *t, const char *w, const tok_sym *sym, int32_t l, int32_t r, tok_heap *h)
{
    if (l < 0 || r < 0) return 0;
    int32_t rank = merge_rank(t, w + sym[l].off, sym[l].n, w + sym[r].off, sym[r].n);
    if (rank < 0) return 0;
    return tok_heap_push(h, (tok_bigram){(double)rank, l, r, sym[l].n + sym[r].n});
}

/* One pre-tokenized word, already in the byte alphabet. */
static int bpe_word(const tokenizer *t, const char *w, size_t wn, tok_sym *sym, tok_heap *h, tok_ids *out)
{
    if (t->ignore_merges) {
        int32_t id = tok_lookup(t, w, wn);
        if (id >= 0) return tok_ids_push(out, id);
    }
    int32_t ns = tok_merge_word(t, w, wn, sym, h, try_pair);
    if (ns < 0) return -1;
    for (int32_t i = 0; i >= 0 && ns > 0; i = sym[i].next) {
        int32_t id = tok_lookup(t, w + sym[i].off, sym[i].n);
        if (id >= 0) {
            if (tok_ids_push(out, id) != 0) return -1;
            continue;
        }
        /* A symbol no merge produced and no token spells: keep whatever
         * single bytes the vocabulary has, as llama.cpp does. */
        for (uint32_t j = 0; j < sym[i].n; j++) {
            int32_t bid = tok_lookup(t, w + sym[i].off + j, 1);
            if (bid >= 0 && tok_ids_push(out, bid) != 0) return -1;
        }
    }
    return 0;
}

/* llama.cpp (as Debian's 0.7.0 build runs it) reads the text as code points
 * and turns every byte that starts no well-formed sequence into U+FFFD, one
 * per byte, before the byte-level mapping: invalid input gives the ids of
 * U+FFFD, not of the raw bytes. Returns a malloc'd copy with those bytes
 * replaced in *out (NULL when the text is well-formed), -1 on out of memory. */
static int llama_canonical(const char *text, size_t len, char **out, size_t *out_len)
{
    const unsigned char *s = (const unsigned char *)text;
    char *c = NULL;
    size_t n = 0;
    *out = NULL;
    for (size_t i = 0; i < len;) {
        const int sl = utf8_seq_len(s + i, len - i); /* RFC 3629; <= 0: ill-formed here */
        const size_t k = sl > 0 ? (size_t)sl : 0;
        if (k == 0 && !c) { /* the first bad byte: copy what came before */
            c = malloc(3 * len + 1); /* each byte at most 3 (U+FFFD) */
            if (!c) return -1;
            memcpy(c, text, i);
            n = i;
        }
        if (k == 0) { memcpy(c + n, "\xEF\xBF\xBD", 3); n += 3; i++; continue; }
        if (c) memcpy(c + n, s + i, k), n += k;
        i += k;
    }
    *out = c;
    *out_len = n;
    return 0;
}

int tok_bpe_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    char *canon;
    size_t canon_len;
    if (llama_canonical(text, len, &canon, &canon_len) != 0) return -1;
    if (canon) {
        const int rc = tok_bpe_encode(t, canon, canon_len, out);
        free(canon);
        return rc;
    }
    span_vec a = {0}, b = {0};
    pcre2_match_data *md = NULL;
    char *w = NULL;
    tok_sym *sym = NULL;
    tok_heap h = {0};
    int rc = -1;
    if (span_push(&a, 0, len) != 0) goto done;
    for (int i = 0; i < t->n_re; i++) {
        md = pcre2_match_data_create_from_pattern(t->re[i], NULL);
        if (!md) goto done;
        int r = split_one(t->re[i], md, text, &a, &b);
        pcre2_match_data_free(md);
        md = NULL;
        if (r != 0) goto done;
        span_vec tmp = a; a = b; b = tmp;
    }
    size_t maxw = 0;
    for (size_t k = 0; k < a.n; k += 2)
        if (a.v[k + 1] > maxw) maxw = a.v[k + 1];
    w = malloc(2 * maxw + 1);
    sym = malloc((2 * maxw + 1) * sizeof *sym);
    if (!w || !sym) goto done;
    for (size_t k = 0; k < a.n; k += 2) {
        const unsigned char *s = (const unsigned char *)text + a.v[k];
        size_t wn = 0;
        for (size_t j = 0; j < a.v[k + 1]; j++) wn += tok_utf8_put(t->byte_cp[s[j]], w + wn);
        if (bpe_word(t, w, wn, sym, &h, out) != 0) goto done;
    }
    rc = 0;
done:
    free(a.v);
    free(b.v);
    free(w);
    free(sym);
    free(h.v);
    return rc;
}
