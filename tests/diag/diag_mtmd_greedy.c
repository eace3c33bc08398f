/* diag_mtmd_greedy.c: a diagnostic (not built by make, not run by CI): the
 * greedy continuation llama.cpp gives a prompt with one picture, through
 * libmtmd as llama-mtmd-cli drives it (mtmd_tokenize splits the prompt at
 * its "<__media__>" marker and adds the projector's begin and end markers,
 * mtmd_helper_eval_chunks evaluates text and picture, then one token at a
 * time). No special tokens added, flash attention off, DIAG_THREADS threads
 * (default 2). Writes the N generated token ids to stdout, one a line, the
 * logits the first one was drawn from to $DIAG_LOGITS (f32) when set, and
 * prints each chunk and the picture's decoder positions (t y x of its
 * first, second and last rows, relative to the chunk). The picture is a
 * file llama.cpp decodes itself (PNG). BACKEND is one ggml-cpu library.
 * Built and run by tests/diag/diag_vision_llamacpp.sh. */
#include "ggml-backend.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s BACKEND.so TEXT.gguf MMPROJ.gguf IMAGE.png PROMPT N > OUT\n", argv[0]);
        return 2;
    }
    if (!ggml_backend_load(argv[1])) { fprintf(stderr, "%s: cannot load\n", argv[1]); return 1; }
    llama_backend_init();
    const int n_gen = atoi(argv[6]);
    const int threads = getenv("DIAG_THREADS") ? atoi(getenv("DIAG_THREADS")) : 2;
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *m = llama_model_load_from_file(argv[2], mp);
    if (!m) { fprintf(stderr, "%s: cannot load model\n", argv[2]); return 1; }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = cp.n_ubatch = 64;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *lctx = llama_init_from_model(m, cp);
    if (!lctx) { fprintf(stderr, "cannot make a context\n"); return 1; }
    struct mtmd_context_params p = mtmd_context_params_default();
    p.use_gpu = false;
    p.n_threads = threads;
    p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    p.warmup = false;
    p.print_timings = false;
    mtmd_context *ctx = mtmd_init_from_file(argv[3], m, p);
    if (!ctx) { fprintf(stderr, "%s: mtmd cannot load it\n", argv[3]); return 1; }
    struct mtmd_helper_bitmap_wrapper bw =
        mtmd_helper_bitmap_init_from_file(ctx, argv[4], false, mtmd_helper_init_opt_default());
    if (!bw.bitmap) { fprintf(stderr, "%s: cannot decode\n", argv[4]); return 1; }
    mtmd_input_chunks *chunks = mtmd_input_chunks_init();
    mtmd_input_text txt = { .text = argv[5], .text_len = strlen(argv[5]), .add_special = false, .parse_special = true };
    const mtmd_bitmap *bms[1] = { bw.bitmap };
    if (mtmd_tokenize(ctx, chunks, &txt, bms, 1) != 0) { fprintf(stderr, "mtmd_tokenize failed\n"); return 1; }
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
        const mtmd_input_chunk *c = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n = 0;
            const llama_token *t = mtmd_input_chunk_get_tokens_text(c, &n);
            fprintf(stderr, "text chunk:");
            for (size_t k = 0; k < n; k++) fprintf(stderr, " %d", t[k]);
            fprintf(stderr, "\n");
        } else {
            const mtmd_image_tokens *it = mtmd_input_chunk_get_tokens_image(c);
            const size_t n = mtmd_image_tokens_get_n_tokens(it);
            const size_t at[3] = { 0, 1, n - 1 };
            fprintf(stderr, "picture chunk: %zu rows, n_pos %d, positions", n, (int)mtmd_input_chunk_get_n_pos(c));
            for (int k = 0; k < 3; k++) {
                struct mtmd_decoder_pos d = mtmd_image_tokens_get_decoder_pos(it, 0, at[k]);
                fprintf(stderr, " [%zu] t%u y%u x%u", at[k], d.t, d.y, d.x);
            }
            fprintf(stderr, "\n");
        }
    }
    llama_pos n_past = 0;
    if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 64, true, &n_past) != 0) {
        fprintf(stderr, "mtmd_helper_eval_chunks failed\n");
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    for (int g = 0; g < n_gen; g++) {
        const float *lg = llama_get_logits_ith(lctx, -1);
        if (g == 0 && getenv("DIAG_LOGITS")) {
            FILE *f = fopen(getenv("DIAG_LOGITS"), "wb");
            if (!f || fwrite(lg, sizeof *lg, (size_t)n_vocab, f) != (size_t)n_vocab || fclose(f)) {
                fprintf(stderr, "%s: cannot write\n", getenv("DIAG_LOGITS"));
                return 1;
            }
        }
        llama_token best = 0;
        for (int v = 1; v < n_vocab; v++)
            if (lg[v] > lg[best]) best = v;
        printf("%d\n", best);
        struct llama_batch b = llama_batch_get_one(&best, 1);
        if (llama_decode(lctx, b) != 0) { fprintf(stderr, "llama_decode failed\n"); return 1; }
    }
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bw.bitmap);
    mtmd_free(ctx);
    llama_free(lctx);
    llama_model_free(m);
    return 0;
}
