/* tokenizer.c: building the tokenizer (from a spec or a GGUF), the
 * special-token partition every model shares, and token -> text.
 * The model-specific encoders live in tokenizer_spm.c / _bpe.c / _wpm.c,
 * the pieces they share in tokenizer_common.c. */
#include "runtime/tokenizer/tokenizer_internal.h"

#include "runtime/util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* building                                                            */

static uint32_t pow2_at_least(size_t n)
{
    uint32_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

tokenizer_spec tokenizer_spec_defaults(void)
{
    tokenizer_spec s;
    memset(&s, 0, sizeof s);
    s.bos = s.eos = s.unk = s.pad = s.sep = s.cls = s.mask = TOKENIZER_ID_DEFAULT;
    s.add_bos = s.add_eos = s.add_space_prefix = -1;
    return s;
}

/* An id from the metadata wins when it names a token; anything else (the
 * u32 -1 that converters write for "none" included) keeps the model's
 * default, which is what llama.cpp does with an out-of-range id. */
static int32_t pick_id(int32_t given, int32_t dflt, int32_t n_vocab)
{
    if (given == TOKENIZER_ID_NONE) return TOKENIZER_ID_NONE;
    if (given >= 0 && given < n_vocab) return given;
    return (dflt >= 0 && dflt < n_vocab) ? dflt : TOKENIZER_ID_NONE;
}

typedef struct len_id { uint32_t len; int32_t id; } len_id;

/* Longest first, so "<|im_start|>" is taken before a shorter token that is
 * a prefix of it; ties by id keep the order reproducible. */
static int cmp_special_len_desc(const void *a, const void *b)
{
    const len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int build_vocab(tokenizer *t, const tokenizer_spec *s, char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_tokens; i++) {
        if (!s->tokens[i]) { err_printf(err, errlen, "token %zu has no text", i); return -1; }
        total += strlen(s->tokens[i]) + 1;
    }
    if (total > UINT32_MAX) { err_printf(err, errlen, "vocabulary text is over 4 GiB"); return -1; }
    t->n_vocab = (int32_t)s->n_tokens;
    t->arena = malloc(total ? total : 1);
    t->off = malloc(s->n_tokens * sizeof *t->off);
    t->len = malloc(s->n_tokens * sizeof *t->len);
    t->score = malloc(s->n_tokens * sizeof *t->score);
    t->type = malloc(s->n_tokens);
    t->slot_mask = pow2_at_least(s->n_tokens * 2) - 1;
    t->slot = calloc((size_t)t->slot_mask + 1, sizeof *t->slot);
    if (!t->arena || !t->off || !t->len || !t->score || !t->type || !t->slot) {
        err_printf(err, errlen, "out of memory for %zu tokens", s->n_tokens);
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i < s->n_tokens; i++) {
        size_t n = strlen(s->tokens[i]);
        memcpy(t->arena + at, s->tokens[i], n + 1);
        t->off[i] = (uint32_t)at;
        t->len[i] = (uint32_t)n;
        if (n > t->max_len) t->max_len = (uint32_t)n;
        at += n + 1;
        t->score[i] = s->scores ? s->scores[i] : 0.0f;
        int32_t ty = s->types ? s->types[i] : TOKEN_TYPE_NORMAL;
        t->type[i] = (ty >= TOKEN_TYPE_UNDEFINED && ty <= TOKEN_TYPE_BYTE) ? (uint8_t)ty : TOKEN_TYPE_NORMAL;
        /* Duplicate texts: the later id wins, as in llama.cpp's token_to_id map. */
        uint32_t h = tok_hash(TOK_HASH_SEED, s->tokens[i], n) & t->slot_mask;
        for (;; h = (h + 1) & t->slot_mask) {
            int32_t v = t->slot[h];
            if (!v) { t->slot[h] = (int32_t)i + 1; break; }
            if (t->len[v - 1] == n && memcmp(t->arena + t->off[v - 1], s->tokens[i], n) == 0) {
                t->slot[h] = (int32_t)i + 1;
                break;
            }
        }
    }

    size_t ns = 0;
    for (size_t i = 0; i < s->n_tokens; i++) {
        int ty = t->type[i];
        if ((ty == TOKEN_TYPE_CONTROL || ty == TOKEN_TYPE_USER_DEFINED || ty == TOKEN_TYPE_UNKNOWN) && t->len[i])
            ns++;
    }
    t->special = malloc((ns ? ns : 1) * sizeof *t->special);
    len_id *li = malloc((ns ? ns : 1) * sizeof *li);
    if (!t->special || !li) { free(li); err_printf(err, errlen, "out of memory"); return -1; }
    for (size_t i = 0; i < s->n_tokens; i++) {
        int ty = t->type[i];
        if ((ty == TOKEN_TYPE_CONTROL || ty == TOKEN_TYPE_USER_DEFINED || ty == TOKEN_TYPE_UNKNOWN) && t->len[i])
            li[t->n_special++] = (len_id){t->len[i], (int32_t)i};
    }
    qsort(li, t->n_special, sizeof *li, cmp_special_len_desc);
    for (size_t i = 0; i < t->n_special; i++) t->special[i] = li[i].id;
    free(li);
    return 0;
}

static int build_merges(tokenizer *t, const tokenizer_spec *s, char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_merges; i++) {
        if (!s->merges[i]) { err_printf(err, errlen, "merge %zu has no text", i); return -1; }
        total += strlen(s->merges[i]) + 1;
    }
    if (total > UINT32_MAX) { err_printf(err, errlen, "merges are over 4 GiB"); return -1; }
    t->n_merges = s->n_merges;
    t->m_arena = malloc(total ? total : 1);
    t->m_off = malloc((s->n_merges ? s->n_merges : 1) * sizeof *t->m_off);
    t->m_left = malloc((s->n_merges ? s->n_merges : 1) * sizeof *t->m_left);
    t->m_len = malloc((s->n_merges ? s->n_merges : 1) * sizeof *t->m_len);
    t->m_mask = pow2_at_least(s->n_merges * 2) - 1;
    t->m_slot = calloc((size_t)t->m_mask + 1, sizeof *t->m_slot);
    if (!t->m_arena || !t->m_off || !t->m_left || !t->m_len || !t->m_slot) {
        err_printf(err, errlen, "out of memory for %zu merges", s->n_merges);
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i < s->n_merges; i++) {
        const char *m = s->merges[i];
        size_t n = strlen(m);
        /* The separator is the first space after the first byte: a left
         * part may itself be a lone space in non-byte-level vocabularies. */
        const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL;
        if (!sp) {
            err_printf(err, errlen, "tokenizer.ggml.merges[%zu] \"%s\" has no \"left right\" separator", i, m);
            return -1;
        }
        memcpy(t->m_arena + at, m, n + 1);
        t->m_off[i] = (uint32_t)at;
        t->m_len[i] = (uint32_t)n;
        t->m_left[i] = (uint32_t)(sp - m);
        at += n + 1;
        uint32_t h = tok_hash(TOK_HASH_SEED, m, n) & t->m_mask;
        for (;; h = (h + 1) & t->m_mask) {
            int32_t v = t->m_slot[h];
            if (!v) { t->m_slot[h] = (int32_t)i + 1; break; }
            /* A repeated pair keeps its first (best) rank. */
            if (t->m_len[v - 1] == n && t->m_left[v - 1] == t->m_left[i] &&
                memcmp(t->m_arena + t->m_off[v - 1], m, n) == 0)
                break;
        }
    }
    return 0;
}

static void build_byte_tables(tokenizer *t)
{
    char buf[8];
    for (int b = 0; b < 256; b++) {
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        t->byte_id[b] = tok_lookup(t, buf, 6);
    }
    /* GPT-2's byte-level alphabet: printable Latin-1 bytes stand for
     * themselves, the other 68 get code points from 256 up, in byte order,
     * so every byte has a visible, unique character. */
    int next = 256;
    for (int i = 0; i < 324; i++) t->cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        t->byte_cp[b] = (uint16_t)(self ? b : next++);
        t->cp_byte[t->byte_cp[b]] = (int16_t)b;
    }
}

tokenizer *tokenizer_new(const tokenizer_spec *s, char *err, size_t errlen)
{
    if (!s || !s->model) { err_printf(err, errlen, "tokenizer: no tokenizer.ggml.model"); return NULL; }
    if (!s->n_tokens || !s->tokens) { err_printf(err, errlen, "tokenizer: empty vocabulary"); return NULL; }
    if (s->n_tokens > INT32_MAX - 1) { err_printf(err, errlen, "tokenizer: %zu tokens do not fit int32 ids", s->n_tokens); return NULL; }
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) { err_printf(err, errlen, "tokenizer: out of memory"); return NULL; }

    int32_t d_bos = -1, d_eos = -1, d_unk = -1, d_pad = -1, d_sep = -1, d_cls = -1, d_mask = -1;
    bool d_add_bos = false, d_add_eos = false, d_space = false;
    if (!strcmp(s->model, "llama")) {
        t->kind = TOKENIZER_SPM;
        d_bos = 1; d_eos = 2; d_unk = 0; d_add_bos = true; d_space = true;
    } else if (!strcmp(s->model, "gpt2")) {
        t->kind = TOKENIZER_BPE;
        d_bos = 11; d_eos = 11;
    } else if (!strcmp(s->model, "bert")) {
        t->kind = TOKENIZER_WPM;
        d_unk = 100; d_sep = 102; d_pad = 0; d_cls = 101; d_mask = 103; d_add_bos = true; d_add_eos = true;
    } else {
        err_printf(err, errlen, "tokenizer: tokenizer.ggml.model \"%s\" is not supported (llama, gpt2, bert)", s->model);
        free(t);
        return NULL;
    }
    t->pre_name = strdup(s->pre && *s->pre ? s->pre : "default");
    if (!t->pre_name) { err_printf(err, errlen, "tokenizer: out of memory"); goto fail; }
    if (build_vocab(t, s, err, errlen) != 0) goto fail;
    build_byte_tables(t);
    if (t->kind == TOKENIZER_BPE) {
        if (build_merges(t, s, err, errlen) != 0) goto fail;
        /* sets ignore_merges and add_bos for the pre-tokenizers that want them */
        if (tok_bpe_setup(t, err, errlen) != 0) goto fail;
        d_add_bos = t->add_bos;
    } else if (t->kind == TOKENIZER_WPM && tok_wpm_setup(t, err, errlen) != 0) {
        goto fail;
    }
    t->bos = pick_id(s->bos, d_bos, t->n_vocab);
    t->eos = pick_id(s->eos, d_eos, t->n_vocab);
    t->unk = pick_id(s->unk, d_unk, t->n_vocab);
    t->pad = pick_id(s->pad, d_pad, t->n_vocab);
    t->sep = pick_id(s->sep, d_sep, t->n_vocab);
    t->cls = pick_id(s->cls, d_cls, t->n_vocab);
    t->mask = pick_id(s->mask, d_mask, t->n_vocab);
    t->add_bos = s->add_bos < 0 ? d_add_bos : s->add_bos != 0;
    t->add_eos = s->add_eos < 0 ? d_add_eos : s->add_eos != 0;
    t->add_space_prefix = s->add_space_prefix < 0 ? d_space : s->add_space_prefix != 0;
    return t;
fail:
    tokenizer_free(t);
    return NULL;
}

void tokenizer_free(tokenizer *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_re; i++) pcre2_code_free(t->re[i]);
    free(t->pre_name);
    free(t->arena); free(t->off); free(t->len); free(t->score); free(t->type); free(t->slot);
    free(t->m_arena); free(t->m_off); free(t->m_left); free(t->m_len); free(t->m_slot);
    free(t->special);
    free(t);
}

/* ------------------------------------------------------------------ */
/* loading from GGUF                                                   */

static int32_t key_id(const gguf_file *f, const char *key)
{
    uint64_t v;
    if (gguf_get_uint(f, key, &v) != 0) return TOKENIZER_ID_DEFAULT;
    return v > INT32_MAX ? TOKENIZER_ID_DEFAULT : (int32_t)v;
}

static int key_flag(const gguf_file *f, const char *key)
{
    bool b;
    return gguf_get_bool(f, key, &b) == 0 ? (int)b : -1;
}

tokenizer *tokenizer_load(const gguf_file *f, char *err, size_t errlen)
{
    const char *path = gguf_path(f) ? gguf_path(f) : "gguf";
    tokenizer_spec s = tokenizer_spec_defaults();
    s.model = gguf_get_str(f, "tokenizer.ggml.model");
    if (!s.model) { err_printf(err, errlen, "%s: no tokenizer.ggml.model (not a model or tokenizer GGUF?)", path); return NULL; }
    s.pre = gguf_get_str(f, "tokenizer.ggml.pre");

    int64_t ki = gguf_find_key(f, "tokenizer.ggml.tokens");
    if (ki < 0 || gguf_kv_type(f, ki) != GGUF_TYPE_ARRAY || gguf_kv_arr_type(f, ki) != GGUF_TYPE_STRING) {
        err_printf(err, errlen, "%s: tokenizer.ggml.tokens is missing or not a string array", path);
        return NULL;
    }
    uint64_t n = gguf_kv_arr_n(f, ki);
    if (n == 0 || n > INT32_MAX - 1) { err_printf(err, errlen, "%s: tokenizer.ggml.tokens has %llu entries", path, (unsigned long long)n); return NULL; }
    s.n_tokens = (size_t)n;

    const char **toks = malloc(n * sizeof *toks);
    int32_t *types = NULL;
    float *scores = NULL;
    const char **merges = NULL;
    tokenizer *t = NULL;
    if (!toks) { err_printf(err, errlen, "%s: out of memory", path); return NULL; }
    for (uint64_t i = 0; i < n; i++) toks[i] = gguf_kv_arr_str(f, ki, i);
    s.tokens = toks;

    int64_t si = gguf_find_key(f, "tokenizer.ggml.scores");
    if (si >= 0) {
        if (gguf_kv_type(f, si) != GGUF_TYPE_ARRAY || gguf_kv_arr_type(f, si) != GGUF_TYPE_FLOAT32 ||
            gguf_kv_arr_n(f, si) != n) {
            err_printf(err, errlen, "%s: tokenizer.ggml.scores is not %llu float32 values", path, (unsigned long long)n);
            goto done;
        }
        scores = malloc(n * sizeof *scores);
        if (!scores) { err_printf(err, errlen, "%s: out of memory", path); goto done; }
        /* copied: a GGUF array need not be aligned (little-endian, as our hosts) */
        memcpy(scores, gguf_kv_arr_data(f, si), n * sizeof *scores);
        s.scores = scores;
    }
    int64_t ti = gguf_find_key(f, "tokenizer.ggml.token_type");
    if (ti >= 0) {
        gguf_type at = gguf_kv_arr_type(f, ti);
        if (gguf_kv_type(f, ti) != GGUF_TYPE_ARRAY || gguf_kv_arr_n(f, ti) != n ||
            (at != GGUF_TYPE_INT32 && at != GGUF_TYPE_UINT32)) {
            err_printf(err, errlen, "%s: tokenizer.ggml.token_type is not %llu int32 values", path, (unsigned long long)n);
            goto done;
        }
        types = malloc(n * sizeof *types);
        if (!types) { err_printf(err, errlen, "%s: out of memory", path); goto done; }
        memcpy(types, gguf_kv_arr_data(f, ti), n * sizeof *types); /* the array may be unaligned */
        s.types = types;
    }
    int64_t mi = gguf_find_key(f, "tokenizer.ggml.merges");
    if (mi >= 0) {
        if (gguf_kv_type(f, mi) != GGUF_TYPE_ARRAY || gguf_kv_arr_type(f, mi) != GGUF_TYPE_STRING) {
            err_printf(err, errlen, "%s: tokenizer.ggml.merges is not a string array", path);
            goto done;
        }
        uint64_t nm = gguf_kv_arr_n(f, mi);
        merges = malloc((nm ? nm : 1) * sizeof *merges);
        if (!merges) { err_printf(err, errlen, "%s: out of memory", path); goto done; }
        for (uint64_t i = 0; i < nm; i++) merges[i] = gguf_kv_arr_str(f, mi, i);
        s.merges = merges;
        s.n_merges = (size_t)nm;
    } else if (!strcmp(s.model, "gpt2")) {
        err_printf(err, errlen, "%s: a gpt2 tokenizer without tokenizer.ggml.merges", path);
        goto done;
    }
    s.bos = key_id(f, "tokenizer.ggml.bos_token_id");
    s.eos = key_id(f, "tokenizer.ggml.eos_token_id");
    s.unk = key_id(f, "tokenizer.ggml.unknown_token_id");
    s.pad = key_id(f, "tokenizer.ggml.padding_token_id");
    s.sep = key_id(f, "tokenizer.ggml.seperator_token_id"); /* sic: the key's spelling in GGUF */
    s.cls = key_id(f, "tokenizer.ggml.cls_token_id");
    s.mask = key_id(f, "tokenizer.ggml.mask_token_id");
    s.add_bos = key_flag(f, "tokenizer.ggml.add_bos_token");
    s.add_eos = key_flag(f, "tokenizer.ggml.add_eos_token");
    s.add_space_prefix = key_flag(f, "tokenizer.ggml.add_space_prefix");

    {
        char e2[256] = "";
        t = tokenizer_new(&s, e2, sizeof e2);
        if (!t) err_printf(err, errlen, "%s: %s", path, e2);
    }
done:
    free(toks);
    free(types);
    free(scores);
    free(merges);
    return t;
}

/* ------------------------------------------------------------------ */
/* encode: special tokens first, then the model on each raw span       */

typedef struct frag {
    size_t  off, len;
    int32_t id; /* -1: raw text */
} frag;

typedef struct frag_vec {
    frag  *v;
    size_t n, cap;
} frag_vec;

static int frag_push(frag_vec *fv, size_t off, size_t len, int32_t id)
{
    if (fv->n == fv->cap) {
        size_t cap = fv->cap ? fv->cap * 2 : 16;
        frag *v = realloc(fv->v, cap * sizeof *v);
        if (!v) return -1;
        fv->v = v;
        fv->cap = cap;
    }
    fv->v[fv->n++] = (frag){off, len, id};
    return 0;
}

static const char *find_bytes(const char *hay, size_t hn, const char *nd, size_t nn)
{
    if (nn == 0 || nn > hn) return NULL;
    const char *end = hay + hn - nn + 1;
    for (const char *p = hay; p < end;) {
        p = memchr(p, nd[0], (size_t)(end - p));
        if (!p) return NULL;
        if (memcmp(p, nd, nn) == 0) return p;
        p++;
    }
    return NULL;
}

/* Splits raw fragments around every occurrence of the special tokens, in
 * longest-first order. Control and unknown tokens are only recognised when
 * parse_special is set: otherwise "<s>" typed by a user would silently
 * become a real BOS. */
static int partition(const tokenizer *t, const char *text, size_t len, bool parse_special, frag_vec *out)
{
    frag_vec a = {0}, b = {0};
    if (frag_push(&a, 0, len, -1) != 0) return -1;
    for (size_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        int ty = t->type[id];
        if (!parse_special && ty != TOKEN_TYPE_USER_DEFINED) continue;
        const char *tx = t->arena + t->off[id];
        size_t tn = t->len[id];
        b.n = 0;
        bool changed = false;
        for (size_t i = 0; i < a.n; i++) {
            frag f = a.v[i];
            if (f.id >= 0 || f.len < tn) {
                if (frag_push(&b, f.off, f.len, f.id) != 0) goto oom;
                continue;
            }
            size_t at = f.off, end = f.off + f.len;
            const char *p;
            while ((p = find_bytes(text + at, end - at, tx, tn)) != NULL) {
                size_t m = (size_t)(p - text);
                if (m > at && frag_push(&b, at, m - at, -1) != 0) goto oom;
                if (frag_push(&b, m, tn, id) != 0) goto oom;
                at = m + tn;
                changed = true;
            }
            if (at < end && frag_push(&b, at, end - at, -1) != 0) goto oom;
        }
        if (changed) { frag_vec tmp = a; a = b; b = tmp; }
    }
    free(b.v);
    *out = a;
    return 0;
oom:
    free(a.v);
    free(b.v);
    return -1;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special,
                     bool parse_special, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    tok_ids o = {0};
    frag_vec fv = {0};
    if (len && partition(t, text, len, parse_special, &fv) != 0) return -1;

    int rc = 0;
    if (add_special) {
        int32_t first = t->kind == TOKENIZER_WPM ? t->cls : t->bos;
        if (t->add_bos && first >= 0) rc |= tok_ids_push(&o, first);
    }
    /* SentencePiece puts its space in front of the text and again after
     * every special token, since each raw span is encoded as a fresh text. */
    bool prev_special = true;
    for (size_t i = 0; i < fv.n && rc == 0; i++) {
        frag f = fv.v[i];
        if (f.id >= 0) {
            rc = tok_ids_push(&o, f.id);
            prev_special = true;
            continue;
        }
        switch (t->kind) {
        case TOKENIZER_SPM:
            rc = tok_spm_encode(t, text + f.off, f.len, t->add_space_prefix && prev_special, &o);
            break;
        case TOKENIZER_BPE:
            rc = tok_bpe_encode(t, text + f.off, f.len, &o);
            break;
        case TOKENIZER_WPM:
            rc = tok_wpm_encode(t, text + f.off, f.len, &o);
            break;
        }
        prev_special = false;
    }
    if (rc == 0 && add_special) {
        int32_t last = t->kind == TOKENIZER_WPM ? t->sep : t->eos;
        if (t->add_eos && last >= 0) rc = tok_ids_push(&o, last);
    }
    free(fv.v);
    if (rc != 0) { free(o.v); return -1; }
    *ids = o.v;
    *n = o.n;
    return 0;
}

/* ------------------------------------------------------------------ */
/* decode                                                              */

static size_t put(char *buf, size_t bufsz, size_t at, const char *s, size_t n)
{
    if (at < bufsz) memcpy(buf + at, s, n < bufsz - at ? n : bufsz - at);
    return at + n;
}

int tokenizer_piece(const tokenizer *t, int32_t id, bool special, char *buf, size_t bufsz)
{
    if (id < 0 || id >= t->n_vocab) return -1;
    const char *tx = t->arena + t->off[id];
    size_t tn = t->len[id], n = 0;
    switch (t->type[id]) {
    case TOKEN_TYPE_CONTROL:
    case TOKEN_TYPE_UNKNOWN:
        return special ? (int)put(buf, bufsz, 0, tx, tn) : 0;
    case TOKEN_TYPE_USER_DEFINED:
        return (int)put(buf, bufsz, 0, tx, tn);
    case TOKEN_TYPE_UNUSED:
    case TOKEN_TYPE_UNDEFINED:
        return 0;
    case TOKEN_TYPE_BYTE:
        if (t->kind == TOKENIZER_SPM) {
            unsigned v;
            if (tn == 6 && sscanf(tx, "<0x%2x>", &v) == 1) {
                char c = (char)v;
                return (int)put(buf, bufsz, 0, &c, 1);
            }
            return (int)put(buf, bufsz, 0, tx, tn);
        }
        break;
    default:
        break;
    }
    if (t->kind == TOKENIZER_BPE) {
        /* Undo the byte-to-unicode map; a code point outside it (a token
         * that was never byte-level) passes through as its own UTF-8. */
        for (size_t i = 0; i < tn;) {
            size_t k = tok_utf8_len((unsigned char)tx[i]);
            if (k > tn - i) k = tn - i;
            uint32_t cp = (unsigned char)tx[i];
            if (k == 2) cp = ((cp & 0x1F) << 6) | ((unsigned char)tx[i + 1] & 0x3F);
            if (k == 2 || k == 1) {
                if (cp < 324 && t->cp_byte[cp] >= 0) {
                    char c = (char)t->cp_byte[cp];
                    n = put(buf, bufsz, n, &c, 1);
                    i += k;
                    continue;
                }
            }
            n = put(buf, bufsz, n, tx + i, k);
            i += k;
        }
        return (int)n;
    }
    /* llama and bert: U+2581 stands for a space */
    for (size_t i = 0; i < tn;) {
        if (i + 3 <= tn && memcmp(tx + i, "\xe2\x96\x81", 3) == 0) {
            n = put(buf, bufsz, n, " ", 1);
            i += 3;
        } else {
            n = put(buf, bufsz, n, tx + i, 1);
            i++;
        }
    }
    return (int)n;
}

int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, bool special,
                     char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t cap = 64, at = 0;
    char *s = malloc(cap);
    if (!s) return -1;
    bool strip = t->kind == TOKENIZER_SPM && t->add_space_prefix;
    for (size_t i = 0; i < n; i++) {
        int k = tokenizer_piece(t, ids[i], special, s + at, cap - at - 1);
        if (k < 0) { free(s); return -1; }
        if ((size_t)k > cap - at - 1) {
            while ((size_t)k > cap - at - 1) cap *= 2;
            char *g = realloc(s, cap);
            if (!g) { free(s); return -1; }
            s = g;
            tokenizer_piece(t, ids[i], special, s + at, cap - at - 1);
        }
        if (k > 0 && strip) {
            strip = false;
            if (s[at] == ' ') { memmove(s + at, s + at + 1, (size_t)k - 1); k--; }
        }
        at += (size_t)k;
    }
    s[at] = 0;
    *out = s;
    *len = at;
    return 0;
}

/* ------------------------------------------------------------------ */
/* accessors                                                           */

tokenizer_kind tokenizer_get_kind(const tokenizer *t) { return t->kind; }
int32_t tokenizer_n_vocab(const tokenizer *t) { return t->n_vocab; }
int32_t tokenizer_bos(const tokenizer *t) { return t->kind == TOKENIZER_WPM ? t->cls : t->bos; }
int32_t tokenizer_eos(const tokenizer *t) { return t->kind == TOKENIZER_WPM ? t->sep : t->eos; }
int32_t tokenizer_unk(const tokenizer *t) { return t->unk; }
int32_t tokenizer_pad(const tokenizer *t) { return t->pad; }
bool tokenizer_add_bos(const tokenizer *t) { return t->add_bos; }
bool tokenizer_add_eos(const tokenizer *t) { return t->add_eos; }
const char *tokenizer_pre_name(const tokenizer *t) { return t->pre_name; }

int tokenizer_token_type(const tokenizer *t, int32_t id)
{
    return (id < 0 || id >= t->n_vocab) ? -1 : t->type[id];
}

const char *tokenizer_token_text(const tokenizer *t, int32_t id)
{
    return (id < 0 || id >= t->n_vocab) ? NULL : t->arena + t->off[id];
}

int32_t tokenizer_find(const tokenizer *t, const char *text, size_t len)
{
    return tok_lookup(t, text, len);
}

char *tokenizer_special_text(const tokenizer *t, int32_t id)
{
    char buf[256];
    int n = id < 0 ? 0 : tokenizer_piece(t, id, true, buf, sizeof buf);
    if (n < 0 || (size_t)n >= sizeof buf) n = 0;
    buf[n] = 0;
    return strdup(buf);
}
