/* diag_mtmd_embd.c: a diagnostic (not built by make, not run by CI): runs
 * llama.cpp's mtmd (libmtmd, as Debian's llama.cpp packages ship it) on one
 * picture and writes the image embeddings it gives the text model, f32,
 * n_tokens rows of the text model's input width, to OUT, every picture chunk
 * in order (Llama 4 makes one per slice); prints "n_tokens N width W". The picture comes as raw 8-bit RGB (W x H), decoded
 * by the caller, so both programs see the same pixels. Flash attention off
 * (DIAG_FA=1: on), no warm-up, DIAG_THREADS threads (default 2). With
 * DUMPDIR set, every contiguous f32 intermediate tensor of the encoder goes
 * to DUMPDIR/<name>__<ne0>_<ne1>_<ne2>.f32. BACKEND is one ggml-cpu library.
 * Built and run by tests/diag/diag_vision_llamacpp.sh. */
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "mtmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool dump_tensor(struct ggml_tensor *t, bool ask, void *user)
{
    const char *dir = user;
    if (ask) return dir != NULL;
    if (!dir || t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return true;
    char fn[768];
    snprintf(fn, sizeof fn, "%s/%s__%lld_%lld_%lld.f32", dir, t->name, (long long)t->ne[0], (long long)t->ne[1],
             (long long)t->ne[2]);
    for (char *p = fn + strlen(dir) + 1; *p; p++)
        if (*p == ' ' || *p == '(' || *p == ')' || *p == '/') *p = '_';
    FILE *f = fopen(fn, "wb");
    if (f) { fwrite(t->data, 1, ggml_nbytes(t), f); fclose(f); }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: %s BACKEND.so TEXT.gguf MMPROJ.gguf IMAGE.rgb W H OUT.f32\n", argv[0]);
        return 2;
    }
    if (!ggml_backend_load(argv[1])) { fprintf(stderr, "%s: cannot load\n", argv[1]); return 1; }
    llama_backend_init();
    const int w = atoi(argv[5]), h = atoi(argv[6]);
    unsigned char *rgb = malloc((size_t)w * h * 3);
    FILE *f = fopen(argv[4], "rb");
    if (!f || !rgb || fread(rgb, 1, (size_t)w * h * 3, f) != (size_t)w * h * 3) {
        fprintf(stderr, "%s: cannot read %dx%d RGB\n", argv[4], w, h);
        return 1;
    }
    fclose(f);
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *m = llama_model_load_from_file(argv[2], mp);
    if (!m) { fprintf(stderr, "%s: cannot load model\n", argv[2]); return 1; }
    struct mtmd_context_params p = mtmd_context_params_default();
    p.use_gpu = false;
    p.n_threads = getenv("DIAG_THREADS") ? atoi(getenv("DIAG_THREADS")) : 2;
    p.flash_attn_type = getenv("DIAG_FA") && atoi(getenv("DIAG_FA")) ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                                                                      : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    p.warmup = false;
    p.print_timings = false;
    p.cb_eval = dump_tensor;
    p.cb_eval_user_data = getenv("DUMPDIR");
    mtmd_context *ctx = mtmd_init_from_file(argv[3], m, p);
    if (!ctx) { fprintf(stderr, "%s: mtmd cannot load it\n", argv[3]); return 1; }
    mtmd_bitmap *bm = mtmd_bitmap_init((uint32_t)w, (uint32_t)h, rgb);
    mtmd_input_chunks *chunks = mtmd_input_chunks_init();
    mtmd_input_text txt = { .text = mtmd_default_marker(), .text_len = strlen(mtmd_default_marker()),
                            .add_special = false, .parse_special = true };
    const mtmd_bitmap *bms[1] = { bm };
    if (mtmd_tokenize(ctx, chunks, &txt, bms, 1) != 0) { fprintf(stderr, "mtmd_tokenize failed\n"); return 1; }
    FILE *o = fopen(argv[7], "wb");
    if (!o) { fprintf(stderr, "%s: cannot write\n", argv[7]); return 1; }
    size_t total = 0, images = 0;
    const int width = llama_model_n_embd_inp(m);
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) { /* every picture chunk (Llama 4: a slice each) */
        const mtmd_input_chunk *c = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_IMAGE) continue;
        if (mtmd_encode_chunk(ctx, c) != 0) { fprintf(stderr, "mtmd_encode_chunk failed\n"); return 1; }
        const size_t n_tok = mtmd_input_chunk_get_n_tokens(c);
        if (fwrite(mtmd_get_output_embd(ctx), sizeof(float) * width, n_tok, o) != n_tok) {
            fprintf(stderr, "%s: cannot write\n", argv[7]);
            return 1;
        }
        total += n_tok;
        images++;
        printf("chunk %zu: n_tokens %zu n_pos %d\n", images, n_tok, (int)mtmd_input_chunk_get_n_pos(c));
    }
    if (fclose(o) != 0) { fprintf(stderr, "%s: cannot write\n", argv[7]); return 1; }
    printf("n_tokens %zu width %d chunks %zu\n", total, width, images);
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bm);
    mtmd_free(ctx);
    llama_model_free(m);
    free(rgb);
    return 0;
}
