/* diag_llamacpp_dump.c: a diagnostic (not built by make, not run by CI):
 * runs llama.cpp itself on a token sequence the way the shared reference
 * logits were made (n_ctx 512, F32 KV cache, no flash attention, 2 threads,
 * the first N_PROMPT tokens as one batch, then one token at a time) and
 * writes every row's logits, f32, to OUT (DIAG_LAST_ROWS=R: only the last
 * R; DIAG_N_CTX: another context size). With DUMP=K in the environment it
 * also writes every contiguous f32 intermediate tensor of decode call K
 * (0 = the prompt batch) to DUMPDIR/<name>__<ne0>_<ne1>_<ne2>.f32.
 * BACKEND is one ggml-cpu library (haswell, skylakex, x64, ...), so the
 * instruction set llama.cpp uses is chosen, not detected.
 * Built and run by tests/diag/diag_llamacpp.sh against Debian's packages. */
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dump_state { int on; const char *dir; } dump_state;

static bool dump_tensor(struct ggml_tensor *t, bool ask, void *user)
{
    dump_state *d = user;
    if (ask) return d->on;
    if (!d->on || t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return true;
    char fn[768];
    snprintf(fn, sizeof fn, "%s/%s__%lld_%lld_%lld.f32", d->dir, t->name, (long long)t->ne[0], (long long)t->ne[1],
             (long long)t->ne[2]);
    for (char *p = fn + strlen(d->dir) + 1; *p; p++)
        if (*p == ' ' || *p == '(' || *p == ')' || *p == '/') *p = '_';
    FILE *f = fopen(fn, "wb");
    if (f) { fwrite(t->data, 1, ggml_nbytes(t), f); fclose(f); }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s BACKEND.so MODEL.gguf TOKENS.i32 N_PROMPT OUT.f32\n", argv[0]);
        return 2;
    }
    if (!ggml_backend_load(argv[1])) { fprintf(stderr, "%s: cannot load\n", argv[1]); return 1; }
    llama_backend_init();
    FILE *f = fopen(argv[3], "rb");
    if (!f) { fprintf(stderr, "%s: cannot open\n", argv[3]); return 1; }
    static int32_t tok[1 << 16];
    const int n = (int)fread(tok, 4, sizeof tok / 4, f);
    fclose(f);
    int n_prompt = atoi(argv[4]);
    if (n_prompt < 1 || n_prompt > n) { fprintf(stderr, "N_PROMPT must be 1..%d\n", n); return 2; }
    const int dump_call = getenv("DUMP") ? atoi(getenv("DUMP")) : -1;
    dump_state ds = { 0, getenv("DUMPDIR") ? getenv("DUMPDIR") : "." };

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *m = llama_model_load_from_file(argv[2], mp);
    if (!m) { fprintf(stderr, "%s: cannot load model\n", argv[2]); return 1; }
    struct llama_context_params cp = llama_context_default_params();
    /* DIAG_N_CTX: a longer context than the reference runs' 512 */
    cp.n_ctx = getenv("DIAG_N_CTX") ? (uint32_t)atoi(getenv("DIAG_N_CTX")) : 512;
    cp.n_batch = n_prompt > 512 ? (uint32_t)n_prompt : 512; /* the prompt is one llama_decode */
    cp.n_ubatch = 512; cp.n_threads = 2; cp.n_threads_batch = 2;
    cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.cb_eval = dump_tensor;
    cp.cb_eval_user_data = &ds;
    struct llama_context *c = llama_init_from_model(m, cp);
    if (!c) { fprintf(stderr, "cannot create a context\n"); return 1; }
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    FILE *o = fopen(argv[5], "wb");
    if (!o) { fprintf(stderr, "%s: cannot write\n", argv[5]); return 1; }

    /* DIAG_LAST_ROWS: write only the last rows (a long sequence's end) */
    const int last = getenv("DIAG_LAST_ROWS") ? atoi(getenv("DIAG_LAST_ROWS")) : n;
    struct llama_batch b = llama_batch_init(n_prompt, 0, 1);
    for (int r = 0; r < n;) {
        const int k = r == 0 ? n_prompt : 1;
        for (int i = 0; i < k; i++) {
            b.token[i] = tok[r + i]; b.pos[i] = r + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
        }
        b.n_tokens = k;
        ds.on = dump_call == (r == 0 ? 0 : r - n_prompt + 1);
        if (llama_decode(c, b)) { fprintf(stderr, "decode failed at token %d\n", r); return 1; }
        ds.on = 0;
        for (int i = 0; i < k; i++)
            if (r + i >= n - last) fwrite(llama_get_logits_ith(c, i), 4, (size_t)nv, o);
        r += k;
    }
    fclose(o);
    llama_batch_free(b);
    llama_free(c);
    llama_model_free(m);
    llama_backend_free();
    return 0;
}
