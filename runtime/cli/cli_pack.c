/* cli_pack.c: `strata info PACK` (what the loaded pack holds) and `strata
 * check PACK` (size and crc32 of every file against the index). */
#include "runtime/cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/pack_files.h"
#include "runtime/chat/chat_template.h"
#include "runtime/pull/pull.h"

static int want_help(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(usage, stdout); return 1; }
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' || i > 1) { cli_opt_bad(argv[0], argv[i], NULL); fputs(usage, stderr); return 2; }
    if (argc < 2) { fprintf(stderr, "strata %s: no PACK given\n", argv[0]); fputs(usage, stderr); return 2; }
    return 0;
}

int cmd_check(int argc, char **argv)
{
    const char *u = "usage: strata check PACK\n"
                    "  Recomputes the size and crc32 of dense.bin, embd.bin, experts.bin and tokenizer.gguf\n"
                    "  and compares them with index.txt. Exit 0 when all agree, 1 on the first mismatch.\n";
    int h = want_help(argc, argv, u);
    if (h) return h == 1 ? 0 : 2;
    char err[1024];
    if (cli_check_pack_path(argv[1], err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
    if (loader_check(argv[1], stdout, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
    printf("%s: every file matches its index\n", argv[1]);
    return 0;
}

int cmd_info(int argc, char **argv)
{
    const char *u = "usage: strata info PACK\n"
                    "  Loads the pack as `strata run` would and prints its hyperparameters and sizes.\n";
    int h = want_help(argc, argv, u);
    if (h) return h == 1 ? 0 : 2;
    char err[1024];
    if (cli_check_pack_path(argv[1], err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
    loaded_pack *p = loader_open(argv[1], err, sizeof err);
    if (!p) { fprintf(stderr, "strata: %s\n", err); return 1; }
    const model_hparams *hp = loader_hparams(p);
    printf("%s\n  arch %s, %d layers, embd %d, heads %d (kv %d, dim %d), ff %d, context %d, vocab %d\n", argv[1],
           hp->arch.name, hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->head_dim, hp->n_ff,
           hp->n_ctx_train, hp->n_vocab);
    if (hp->arch.mla) {
        printf("  latent attention: kv rank %d", hp->n_lora_kv);
        if (hp->n_lora_q) printf(", q rank %d", hp->n_lora_q);
        printf(", q/k heads %d (%d rotated), v heads %d\n", hp->head_k_mla, hp->n_rot, hp->head_v_mla);
    }
    if (hp->arch.dsa)
        printf("  sparse attention: a lightning indexer of %d heads of %d picks %d positions a query\n", hp->n_idx_head,
               hp->idx_head_dim, hp->idx_top_k);
    if (hp->arch.attn_sinks || hp->n_swa > 0) {
        printf("  attention:%s", hp->arch.attn_sinks ? " a sink per head" : "");
        if (hp->n_swa > 0)
            printf("%s the last %d positions on %d of every %d layers", hp->arch.attn_sinks ? "," : "", hp->n_swa,
                   hp->arch.swa_pattern - 1, hp->arch.swa_pattern);
        putchar('\n');
    }
    if (hp->n_expert) {
        printf("  MoE: %d experts, %d used, expert ff %d, shared ff %d", hp->n_expert, hp->n_expert_used,
               hp->n_ff_exp, hp->n_ff_shexp);
        if (hp->n_layer_dense_lead) printf(", the first %d layers dense", hp->n_layer_dense_lead);
        putchar('\n');
    }
    static const char *const SCALING[] = { "none", "linear", "yarn" };
    printf("  RoPE %s, %d dims, base %g, scaling %s", rope_kind_name(hp->arch.rope), hp->n_rot,
           hp->rope_base, SCALING[hp->rope_scaling]);
    if (hp->rope_freq_scale != 1.0f) printf(" x%g", 1.0 / hp->rope_freq_scale);
    if (hp->rope_scaling == ROPE_SCALING_YARN) printf(" (original context %d)", hp->n_ctx_orig);
    if (hp->rope_attn_factor != 1.0f) printf(", attn factor %g", hp->rope_attn_factor);
    if (loader_weights(p)->rope_freqs) printf(", %d frequency factors", loader_weights(p)->n_rope_freqs);
    if (hp->no_rope_step > 0) printf("; none on every %dth layer", hp->no_rope_step);
    if (hp->attn_chunk > 0) printf("; attention in %d-position chunks", hp->attn_chunk);
    putchar('\n');
    char dense[32], experts[32];
    pull_human_bytes(dense, sizeof dense, (double)loader_pool_bytes(p));
    pull_human_bytes(experts, sizeof experts, (double)loader_expert_bytes(p));
    printf("  %d tensors; dense weights %s in memory", loader_n_tensors(p), dense);
    if (loader_expert_bytes(p)) printf("; experts %s, read from experts.bin as needed", experts);
    putchar('\n');
    printf("  tokenizer: %d tokens, pre '%s', bos %d eos %d\n", tokenizer_n_vocab(loader_tokenizer(p)),
           tokenizer_pre_name(loader_tokenizer(p)), tokenizer_bos(loader_tokenizer(p)),
           tokenizer_eos(loader_tokenizer(p)));
    int n_vt = 0;
    uint64_t vbytes = 0;
    const char *proj = loader_vision(p, &n_vt, &vbytes);
    if (proj) {
        char vb[32];
        pull_human_bytes(vb, sizeof vb, (double)vbytes);
        printf("  vision projector: %s (%s, %d tensors, %s); strata does not run it yet: requests with images are "
               "refused\n", proj, PACK_VISION, n_vt, vb);
    }
    /* the chat template strata serve will render (the loader keeps only the tokenizer) */
    char tpath[4096];
    snprintf(tpath, sizeof tpath, "%s/%s", argv[1], PACK_FILE_NAMES[PACK_TOKENIZER]);
    gguf_file *g = gguf_open(tpath, err, sizeof err);
    const char *tmpl = g ? gguf_get_str(g, "tokenizer.chat_template") : NULL;
    const chat_family fam = chat_template_detect(tmpl);
    const chat_tools tools = chat_template_tools(tmpl);
    printf("  chat template: %s; tool calls: %s\n",
           fam != CHAT_UNKNOWN ? chat_family_name(fam)
           : tmpl              ? "not one strata renders (serve falls back to chatml)"
                               : "none (serve falls back to chatml)",
           tools != CHAT_TOOLS_NONE ? chat_tools_name(tools) : "none");
    if (g) gguf_close(g);
    loader_close(p);
    return 0;
}
