/* test_archs_llamacpp.c: architectures the shared models do not cover,
 * against llama.cpp. Each model is ours: small random weights written by
 * our GGUF writer with a 512-token vocabulary (the shipped model's first 512
 * tokens), llama.cpp's outputs for it in tests/fixtures/archs/ (made by
 * `sh tests/diag/diag_fixtures_llamacpp.sh test_archs_llamacpp tests/fixtures/archs`,
 * when the models carried stories260K's 512 tokens: the vocabulary's text
 * does not enter the forward pass, the weights and token ids are the same).
 * The sequence is SEQ, stories260K's v3 tokens' first 20, so no test here
 * needs ../shared (with it, SEQ is checked against that file).
 *  - qwen2moe (Qwen1.5-MoE, Qwen2-57B-A14B): q/k/v biases, raw top-k
 *    weights, a shared expert behind a sigmoid gate row stored as a 1-D
 *    [n_embd] tensor.
 *  - deepseek (DeepSeek-MoE 16B): the first layer dense, two shared experts
 *    side by side without a gate, raw top-k weights.
 *  - granite, granitemoe (IBM Granite 3.x): llama with four multipliers
 *    (embeddings, residual branches, attention scores, logits); dense, MoE,
 *    and MoE with a shared expert.
 *  - dots1 (dots.llm1): qwen3 attention, a dense first layer, sigmoid
 *    routing with a selection bias, renormalised and scaled weights, two
 *    shared experts.
 *  - ernie4_5-moe (ERNIE 4.5): softmax routing with a selection bias, a
 *    dense first layer, two shared experts.
 *  - glm4moe (GLM-4.5, 4.5-Air): q/k/v biases, half the head rotated,
 *    q/k norms or none, dots1's routing, a next-token-prediction block at
 *    the end (llama.cpp does not run it; --draft mtp does).
 *  - llama4 (Llama 4): the 4th layer without RoPE, L2 q/k norms on the
 *    others, sigmoid top-1 (or top-2 on every 2nd layer) whose weight
 *    scales the expert's input, a shared expert.
 *  - hunyuan-moe (Hunyuan-A13B): per-head q/k norms after RoPE, a shared
 *    expert.
 *  - minimax-m2 (MiniMax-M2): q/k norms over the whole projection, half the
 *    head rotated, sigmoid routing with a selection bias.
 *  - deepseek2 (DeepSeek V2/V3, Kimi K2): multi-head latent attention in
 *    llama.cpp's absorbed layout (q through a low-rank pair, or one matrix
 *    in V2-Lite's 27-layer form; with and without YaRN and its attention
 *    scale), a dense first layer, two shared experts; and V3's routing:
 *    sigmoid with a selection bias, experts chosen within the best groups.
 *  - gpt-oss: attention sinks, a sliding window on every other layer, q/k/v/o
 *    biases, experts chosen by the router's biased logits and weighted by a
 *    softmax over the chosen, bias rows on every expert product, the clamped
 *    GLU; with F32 experts and with MXFP4 ones (run as llama.cpp runs them,
 *    Q8_0 activations), YaRN.
 *  - bailingmoe2 (Ling 2.0) and bailingmoe (Ling v1): q, k and v as one
 *    attn_qkv matrix; 2.0 with per-head q/k norms, partial rotary and
 *    DeepSeek V3's grouped sigmoid routing, an MTP block ending in its own
 *    layer_output_norm.
 * The MTP blocks (glm4moe's, bailingmoe2's, deepseek2-v3's), which llama.cpp does not run,
 * against a PyTorch reference whose main model agrees with llama.cpp's.
 * Our logits on 20 positions (8 as one batch, then one at a time) must
 * agree within 1e-5 of each row's largest |logit|; the pack built from the
 * model must give the adapter's bits; each architecture's own part must
 * matter (a control model without it is far off); and speculative decoding
 * must give plain decoding's tokens and logits bit for bit
 * (tests/lib/spec_check.h).
 *
 *   test_archs_llamacpp --write DIR   writes the GGUFs and the tokens, then exits. */
#include "tests/lib/test_util.h"

#include "tests/lib/gguf_random.h"
#include "tests/lib/gguf_weights.h"
#include "tests/lib/spec_check.h"
#include "tests/lib/llamacpp_fixture.h"
#include "tests/lib/vocab_relabel.h"

enum { N_TOK = 20, N_PROMPT = 8 };
enum { VOCAB = 512, EMBD = 64, HEADS = 4, KV_HEADS = 2, EXPERTS = 4, USED = 2, FF_EXP = 32, FF = 96 };
#define TOKENS "models/stories260K/v3.tokens.i32"
static const int32_t SEQ[N_TOK] = { 1, 301, 425, 411, 381, 410, 472, 352, 266, 261,
                                    339, 305, 419, 426, 338, 336, 432, 313, 457, 303 };

typedef struct arch_spec {
    const char *name, *arch;    /* name: the fixture's */
    int layers, dense, bias, shared_gate, dense_lead, n_shared, ff_sh; /* ff_sh 0: n_shared x FF_EXP, no width key */
    int granite;                /* the four multipliers */
    int experts_at_ff;          /* llama-style: the experts' width is feed_forward_length (no expert key) */
    int expert_key_too;         /* ... and expert_feed_forward_length written anyway (Hunyuan reads it) */
    const char *control_arch;   /* the control: these weights under this architecture instead */
    int qk_norm;                /* q/k RMSNorm weights: 1 per head, 2 over the whole projection */
    int sigmoid, probs_b;       /* sigmoid gating; a selection bias per layer */
    float w_scale;              /* expert_weights_scale, 0: no key */
    int norm_w;                 /* expert_weights_norm: 0 no key, 1 false, 2 true */
    int norm_w_control;         /* the control's expert_weights_norm instead, 0: the same */
    int moe_step;               /* interleave_moe_layer_step, 0: no key */
    int mha;                    /* as many kv heads as heads (llama.cpp's dots1 takes no other) */
    int rot;                    /* rope.dimension_count, 0: no key (all of head_dim) */
    int nextn;                  /* next-token-prediction blocks after the run ones (GLM-4.5's MTP) */
    int used;                   /* experts per token, 0: USED */
    int swa_off_control;        /* the control writes attention.sliding_window 0 (Llama 4: RoPE everywhere) */
    uint32_t ctx;               /* context_length, 0: 512 */
    int experts;                /* routed experts, 0: EXPERTS */
    int mla, q_lora;            /* DeepSeek V2/V3's latent attention; q_lora_rank (0: one q matrix) */
    int groups, groups_used;    /* grouped routing (DeepSeek V3), written only for the model, not the control */
    float yarn;                 /* YaRN factor (original context 64, DeepSeek's yarn_log_multiplier), 0: none */
    int oai;                    /* gpt-oss: sinks, o bias, router and expert biases, a window of `oai` on the
                                 * even layers; the control drops the window and sinks the sinks (-100) */
    int fused;                  /* q, k and v as one attn_qkv matrix (Bailing) */
    int mxfp4;                  /* the routed experts in random MXFP4 blocks (as gpt-oss ships them), run with
                                 * llama.cpp's Q8_0 activations */
    int vl;                     /* Qwen3-VL's text model: M-RoPE sections covering the rotated half and two
                                 * deepstack layers (zero for text tokens); the control has its q/k norm
                                 * weights all 1 */
    float rope_base;
} arch_spec;

/* MLA widths: compressed kv row, q/k head before absorption (nope + rot), v head */
enum { MLA_R = 32, MLA_NOPE = 16, MLA_V = 16 };

static const arch_spec specs[] = {
    { .name = "qwen2moe", .arch = "qwen2moe", .layers = 2, .bias = 1, .shared_gate = 1, .ff_sh = 48, .rope_base = 1e6f },
    { .name = "deepseek", .arch = "deepseek", .layers = 3, .dense_lead = 1, .n_shared = 2, .rope_base = 1e4f },
    { .name = "granite", .arch = "granite", .layers = 2, .dense = 1, .granite = 1, .rope_base = 1e4f },
    { .name = "granitemoe", .arch = "granitemoe", .layers = 2, .granite = 1, .experts_at_ff = 1, .rope_base = 1e4f },
    { .name = "dots1", .arch = "dots1", .layers = 3, .dense_lead = 1, .n_shared = 2, .qk_norm = 1, .sigmoid = 1,
      .probs_b = 1, .w_scale = 2.5f, .norm_w = 2, .mha = 1, .rope_base = 1e4f },
    { .name = "ernie4_5-moe", .arch = "ernie4_5-moe", .layers = 3, .dense_lead = 1, .n_shared = 2, .ff_sh = 64, .probs_b = 1,
      .moe_step = 1, .rope_base = 5e5f },
    { .name = "glm4moe", .arch = "glm4moe", .layers = 3, .dense_lead = 1, .n_shared = 1, .ff_sh = FF_EXP, .bias = 1,
      .sigmoid = 1, .probs_b = 1, .w_scale = 1.5f, .norm_w = 2, .rot = 8, .nextn = 1, .rope_base = 1e6f },
    { .name = "glm4moe-qknorm", .arch = "glm4moe", .layers = 3, .dense_lead = 1, .n_shared = 1, .ff_sh = FF_EXP,
      .bias = 1, .qk_norm = 1, .sigmoid = 1, .probs_b = 1, .w_scale = 2.5f, .norm_w = 2, .rot = 8, .nextn = 1,
      .rope_base = 1e6f },
    /* Llama 4: layer 3 without RoPE; Scout-like top-1 in every layer, Maverick-like top-2 every 2nd */
    { .name = "llama4", .arch = "llama4", .layers = 4, .ff_sh = FF_EXP, .moe_step = 1, .used = 1,
      .swa_off_control = 1, .rope_base = 5e5f },
    { .name = "llama4-interleaved", .arch = "llama4", .layers = 4, .ff_sh = FF_EXP, .moe_step = 2,
      .swa_off_control = 1, .rope_base = 5e5f },
    /* the same past its first 8192-position chunk (the last entry: test_llama4_long's) */
    { .name = "llama4-long", .arch = "llama4", .layers = 4, .ff_sh = FF_EXP, .moe_step = 1, .used = 1,
      .swa_off_control = 1, .ctx = 16384, .rope_base = 5e5f },
    /* eight of sixteen experts a token, as Qwen3-MoE, OLMoE and GLM-4.5 route: decode's one-job path
     * then takes 16 mat-vecs (gates and ups) at once */
    { .name = "deepseek-top8", .arch = "deepseek", .layers = 3, .dense_lead = 1, .n_shared = 2, .experts = 16,
      .used = 8, .rope_base = 1e4f },
    /* Hunyuan: q/k norms after RoPE, a shared expert; the control is qwen3moe (the norms before RoPE) */
    { .name = "hunyuan-moe", .arch = "hunyuan-moe", .layers = 2, .qk_norm = 1, .ff_sh = FF_EXP, .experts_at_ff = 1,
      .expert_key_too = 1, .control_arch = "qwen3moe",
      .rope_base = 1e4f },
    /* MiniMax-M2: q/k norms over the whole projection, half the head rotated, sigmoid routing with a
     * selection bias */
    { .name = "minimax-m2", .arch = "minimax-m2", .layers = 2, .qk_norm = 2, .rot = 8, .sigmoid = 1, .probs_b = 1,
      .experts_at_ff = 1, .expert_key_too = 1,
      .rope_base = 5e6f },
    /* DeepSeek V2/V3: latent attention (q through a rank-32 pair), a dense first layer, two shared experts */
    { .name = "deepseek2", .arch = "deepseek2", .layers = 3, .dense_lead = 1, .n_shared = 2, .mla = 1, .q_lora = 32,
      .rot = 8, .rope_base = 1e4f },
    /* V2-Lite: one q matrix (llama.cpp takes it from a 27-layer model); the same with YaRN, as DeepSeek
     * ships it (factor 40 there, 4 here over an original context of 64) */
    { .name = "deepseek2-lite", .arch = "deepseek2", .layers = 27, .dense_lead = 1, .n_shared = 2, .mla = 1,
      .rot = 8, .rope_base = 1e4f },
    { .name = "deepseek2-yarn", .arch = "deepseek2", .layers = 3, .dense_lead = 1, .n_shared = 2, .mla = 1, .q_lora = 32,
      .rot = 8, .yarn = 4.0f, .rope_base = 1e4f },
    /* DeepSeek V3 / R1: sigmoid routing with a selection bias, renormalised and scaled weights, experts
     * chosen within the 2 best of 4 groups, its next-token-prediction block */
    { .name = "deepseek2-v3", .arch = "deepseek2", .layers = 3, .dense_lead = 1, .n_shared = 1, .mla = 1, .q_lora = 32,
      .rot = 8, .experts = 16, .used = 4, .groups = 4, .groups_used = 2, .sigmoid = 1, .probs_b = 1, .norm_w = 2,
      .w_scale = 2.5f, .nextn = 1, .rope_base = 1e4f },
    { .name = "granitemoe-shared", .arch = "granitemoe", .layers = 2, .granite = 1, .experts_at_ff = 1, .ff_sh = 48, .rope_base = 1e4f },
    /* gpt-oss: sinks, a 4-position window on layers 0 and 2, 4 of 8 experts by their biased logits, the
     * experts' products large enough that the GLU's clamp at 7 bites, YaRN as gpt-oss ships it (factor 32
     * there, 4 here over an original context of 64) */
    { .name = "gpt-oss", .arch = "gpt-oss", .layers = 3, .bias = 1, .oai = 4, .experts = 8, .used = 4, .yarn = 4.0f,
      .rope_base = 1.5e5f },
    { .name = "gpt-oss-mxfp4", .arch = "gpt-oss", .layers = 3, .bias = 1, .oai = 4, .experts = 8, .used = 4,
      .yarn = 4.0f, .mxfp4 = 1, .rope_base = 1.5e5f },
    /* Ling 2.0 (bailingmoe2): fused qkv, per-head q/k norms, half the head rotated, DeepSeek V3's routing
     * (sigmoid, selection bias, 2 of 4 groups, renormalised and scaled), a dense first layer, a shared
     * expert, a next-token-prediction block that is not run */
    { .name = "bailingmoe2", .arch = "bailingmoe2", .layers = 3, .dense_lead = 1, .n_shared = 1, .ff_sh = FF_EXP,
      .fused = 1, .qk_norm = 1, .rot = 8, .experts = 16, .used = 4, .groups = 4, .groups_used = 2, .sigmoid = 1,
      .probs_b = 1, .norm_w = 2, .w_scale = 2.5f, .nextn = 1, .rope_base = 6e5f },
    /* Ling v1 (bailingmoe): fused qkv, softmax routing renormalised by its key, two shared experts; it is
     * llama's MoE layer otherwise, so the control is the key saying not to renormalise */
    { .name = "bailingmoe", .arch = "bailingmoe", .layers = 2, .n_shared = 2, .fused = 1, .norm_w = 2,
      .norm_w_control = 1, .rope_base = 6e5f },
    /* Qwen3-VL MoE's text model (text only: no picture reaches it yet) */
    { .name = "qwen3vlmoe", .arch = "qwen3vlmoe", .layers = 2, .qk_norm = 1, .experts_at_ff = 0, .vl = 1,
      .rope_base = 5e6f },
};
#define N_SPECS ((int)(sizeof specs / sizeof specs[0]))

/* Random MXFP4 blocks for an ne0 x ne1 x ne2 tensor: E2M1 codes, block
 * scales 2^(e-128) for e in e_lo..e_lo+2. */
static int add_mxfp4(gguf_writer *w, uint64_t *s, const char *name, int64_t ne0, int64_t ne1, int64_t ne2, int e_lo)
{
    const int64_t ne[3] = { ne0, ne1, ne2 };
    const size_t nb = (size_t)(ne0 / 32 * ne1 * ne2), bytes = nb * 17;
    uint8_t *b = malloc(bytes);
    if (!b) return -1;
    for (size_t i = 0; i < nb; i++) {
        b[i * 17] = (uint8_t)(e_lo + (int)((uniform(s) + 1.0f) * 1.5f));
        for (int j = 1; j < 17; j++) b[i * 17 + j] = (uint8_t)((uniform(s) + 1.0f) * 128.0f);
    }
    const int rc = gguf_writer_add_tensor(w, name, GGML_TYPE_MXFP4, 3, ne, b, bytes) < 0 ? -1 : 0;
    free(b);
    return rc;
}

/* control 1 leaves out the architecture's own part: qwen2moe's gate row,
 * deepseek's dense lead (every layer MoE), Granite's multipliers, the
 * selection bias where there is one, Llama 4's no-RoPE layers, Hunyuan's
 * norm order (the same weights as qwen3moe). */
static int write_model(const arch_spec *a, const char *path, int control, char *err, size_t errlen)
{
    gguf_file *tf = gguf_open(SHIPPED_MODEL, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    char key[128];
    /* the control may be the same weights under another architecture */
    const char *arch = control && a->control_arch ? a->control_arch : a->arch;
    const int lead = control ? 0 : a->dense_lead, ff_sh = a->ff_sh ? a->ff_sh : a->n_shared * FF_EXP;
    rc |= gguf_writer_add_str(w, "general.architecture", arch);
    rc |= gguf_writer_add_str(w, "general.name", "strata MoE test model");
    const struct { const char *key; uint32_t v; } u32[] = {
        { "context_length", a->ctx ? a->ctx : 512 }, { "embedding_length", EMBD }, { "block_count", (uint32_t)(a->layers + a->nextn) },
        { "feed_forward_length", a->experts_at_ff ? FF_EXP : FF }, { "attention.head_count", HEADS },
        { "attention.head_count_kv", a->mla ? 1 : a->mha ? HEADS : KV_HEADS }, { "expert_count", a->dense ? 0 : a->experts ? (uint32_t)a->experts : EXPERTS },
        { "expert_used_count", a->dense ? 0 : a->used ? (uint32_t)a->used : USED },
        { "expert_feed_forward_length", a->dense || (a->experts_at_ff && !a->expert_key_too) ? 0 : FF_EXP },
        { "expert_shared_feed_forward_length", (uint32_t)a->ff_sh }, { "expert_shared_count", (uint32_t)a->n_shared },
        { "leading_dense_block_count", (uint32_t)lead },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u32 / sizeof u32[0]; i++) {
        if (!u32[i].v && i >= 6) continue; /* the optional keys only where the architecture has them */
        snprintf(key, sizeof key, "%s.%s", arch, u32[i].key);
        rc = gguf_writer_add_u32(w, key, u32[i].v);
    }
    const float eps = 1e-6f, scale = 1.0f;
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &a->rope_base);
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &eps);
    if (a->n_shared && !a->w_scale) {
        snprintf(key, sizeof key, "%s.expert_weights_scale", arch);
        rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &scale);
    }
    if (a->w_scale) {
        snprintf(key, sizeof key, "%s.expert_weights_scale", arch);
        rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &a->w_scale);
    }
    if (a->sigmoid) {
        snprintf(key, sizeof key, "%s.expert_gating_func", arch);
        rc |= gguf_writer_add_u32(w, key, 2);
    }
    if (a->norm_w) {
        const bool v = (control && a->norm_w_control ? a->norm_w_control : a->norm_w) == 2;
        snprintf(key, sizeof key, "%s.expert_weights_norm", arch);
        rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_BOOL, &v);
    }
    if (a->swa_off_control && control) {
        snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
        rc |= gguf_writer_add_u32(w, key, 0);
    }
    if (a->rot) {
        snprintf(key, sizeof key, "%s.rope.dimension_count", arch);
        rc |= gguf_writer_add_u32(w, key, (uint32_t)a->rot);
    }
    if (a->mla) { /* llama.cpp's MLA layout: one KV head of [compressed | rotated], V the compressed row */
        const struct { const char *key; int v; } mk[] = {
            { "attention.key_length", MLA_R + a->rot }, { "attention.value_length", MLA_R },
            { "attention.key_length_mla", MLA_NOPE + a->rot }, { "attention.value_length_mla", MLA_V },
            { "attention.kv_lora_rank", MLA_R }, { "attention.q_lora_rank", a->q_lora },
        };
        for (size_t i = 0; rc == 0 && i < sizeof mk / sizeof mk[0]; i++) {
            if (!mk[i].v) continue;
            snprintf(key, sizeof key, "%s.%s", arch, mk[i].key);
            rc = gguf_writer_add_u32(w, key, (uint32_t)mk[i].v);
        }
    }
    if (a->groups && !control) {
        snprintf(key, sizeof key, "%s.expert_group_count", arch);
        rc |= gguf_writer_add_u32(w, key, (uint32_t)a->groups);
        snprintf(key, sizeof key, "%s.expert_group_used_count", arch);
        rc |= gguf_writer_add_u32(w, key, (uint32_t)a->groups_used);
    }
    if (a->yarn) {
        const float log_mul = 0.0707f, factor = a->yarn;
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        rc |= gguf_writer_add_str(w, key, "yarn");
        snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
        rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &factor);
        snprintf(key, sizeof key, "%s.rope.scaling.yarn_log_multiplier", arch);
        if (a->mla) rc |= gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &log_mul);
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
        rc |= gguf_writer_add_u32(w, key, 64);
    }
    if (a->oai) {
        snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
        rc |= gguf_writer_add_u32(w, key, control ? 0 : (uint32_t)a->oai);
    }
    if (a->nextn) {
        snprintf(key, sizeof key, "%s.nextn_predict_layers", arch);
        rc |= gguf_writer_add_u32(w, key, (uint32_t)a->nextn);
    }
    if (a->vl) { /* head 16: 8 rotated pairs in sections t, h, w (Qwen3-VL: 24, 20, 20 of 64) */
        const int32_t sections[4] = { 4, 2, 2, 0 };
        snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
        rc |= gguf_writer_add_arr(w, key, GGUF_TYPE_INT32, sections, 4);
        snprintf(key, sizeof key, "%s.n_deepstack_layers", arch);
        rc |= gguf_writer_add_u32(w, key, 2);
    }
    if (a->moe_step) {
        snprintf(key, sizeof key, "%s.interleave_moe_layer_step", arch);
        rc |= gguf_writer_add_u32(w, key, (uint32_t)a->moe_step);
    }
    /* Granite's multipliers, each far from 1 (the attention scale from 1/sqrt(16)) */
    static const struct { const char *key; float v; } gs[] = {
        { "embedding_scale", 12.0f }, { "residual_scale", 0.22f }, { "attention.scale", 0.125f }, { "logit_scale", 8.0f },
    };
    for (size_t i = 0; rc == 0 && a->granite && !control && i < sizeof gs / sizeof gs[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, gs[i].key);
        rc = gguf_writer_add_kv(w, key, GGUF_TYPE_FLOAT32, &gs[i].v);
    }
    if (rc == 0) rc = vocab_keys_head(w, tf, VOCAB);

    uint64_t s = 20261202;
    const int n_exp = a->experts ? a->experts : EXPERTS;
    const int hd = EMBD / HEADS, kvd = (a->mha ? HEADS : KV_HEADS) * hd;
    const float in_d = 1.0f / sqrtf((float)EMBD), in_ff = 1.0f / sqrtf((float)FF_EXP);
    char n[96];
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_TOKEN_EMBD, 0), 2, EMBD, VOCAB, 1, 1.0f, 0);
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_OUTPUT_NORM, 0), 1, EMBD, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, tensor_name(n, sizeof n, TN_OUTPUT, 0), 2, EMBD, VOCAB, 1, 2 * in_d, 0);
#define T(role, ...) add_tensor(w, &s, tensor_name(n, sizeof n, role, l), __VA_ARGS__)
    for (int l = 0; rc == 0 && l < a->layers + a->nextn; l++) {
        if (l >= a->layers) { /* a next-token-prediction block: its own tensors, then a MoE layer's */
            rc |= T(TN_NEXTN_EH_PROJ, 2, 2 * EMBD, EMBD, 1, in_d, 0);
            rc |= T(TN_NEXTN_ENORM, 1, EMBD, 1, 1, 0.1f, 1.0f);
            rc |= T(TN_NEXTN_HNORM, 1, EMBD, 1, 1, 0.1f, 1.0f);
            /* its last norm: Ling 2.0's is the block's final_layernorm, the others' shared_head.norm */
            rc |= T(a->fused ? TN_LAYER_OUT_NORM : TN_NEXTN_SHARED_HEAD_NORM, 1, EMBD, 1, 1, 0.1f, 1.0f);
        }
        rc |= T(TN_ATTN_NORM, 1, EMBD, 1, 1, 0.1f, 1.0f);
        if (a->mla) {
            const int qk = MLA_NOPE + a->rot;
            if (a->q_lora) {
                rc |= T(TN_ATTN_Q_A, 2, EMBD, a->q_lora, 1, in_d, 0);
                rc |= T(TN_ATTN_Q_A_NORM, 1, a->q_lora, 1, 1, 0.1f, 1.0f);
                rc |= T(TN_ATTN_Q_B, 2, a->q_lora, HEADS * qk, 1, 1.0f / sqrtf((float)a->q_lora), 0);
            } else {
                rc |= T(TN_ATTN_Q, 2, EMBD, HEADS * qk, 1, in_d, 0);
            }
            rc |= T(TN_ATTN_KV_A_MQA, 2, EMBD, MLA_R + a->rot, 1, in_d, 0);
            rc |= T(TN_ATTN_KV_A_NORM, 1, MLA_R, 1, 1, 0.1f, 1.0f);
            rc |= T(TN_ATTN_K_B, 3, MLA_NOPE, MLA_R, HEADS, 1.0f / sqrtf((float)MLA_NOPE), 0);
            rc |= T(TN_ATTN_V_B, 3, MLA_R, MLA_V, HEADS, 1.0f / sqrtf((float)MLA_R), 0);
            rc |= T(TN_ATTN_OUT, 2, HEADS * MLA_V, EMBD, 1, 1.0f / sqrtf((float)(HEADS * MLA_V)), 0);
        } else {
            if (a->fused) {
                rc |= T(TN_ATTN_QKV, 2, EMBD, EMBD + 2 * kvd, 1, in_d, 0);
            } else {
                rc |= T(TN_ATTN_Q, 2, EMBD, EMBD, 1, in_d, 0);
                rc |= T(TN_ATTN_K, 2, EMBD, kvd, 1, in_d, 0);
                rc |= T(TN_ATTN_V, 2, EMBD, kvd, 1, in_d, 0);
            }
            if (a->bias) {
                rc |= T(TN_ATTN_Q_BIAS, 1, EMBD, 1, 1, 0.1f, 0);
                rc |= T(TN_ATTN_K_BIAS, 1, kvd, 1, 1, 0.1f, 0);
                rc |= T(TN_ATTN_V_BIAS, 1, kvd, 1, 1, 0.1f, 0);
            }
            if (a->qk_norm) {
                const float qs = control && a->vl ? 0.0f : 0.1f;
                rc |= T(TN_ATTN_Q_NORM, 1, a->qk_norm == 2 ? EMBD : hd, 1, 1, qs, 1.0f);
                rc |= T(TN_ATTN_K_NORM, 1, a->qk_norm == 2 ? kvd : hd, 1, 1, qs, 1.0f);
            }
            rc |= T(TN_ATTN_OUT, 2, EMBD, EMBD, 1, in_d, 0);
            if (a->oai) {
                rc |= T(TN_ATTN_OUT_BIAS, 1, EMBD, 1, 1, 0.1f, 0);
                rc |= T(TN_ATTN_SINKS, 1, HEADS, 1, 1, 1.0f, control ? -100.0f : 0.5f);
            }
        }
        rc |= T(tensor_arch_role(arch, TN_FFN_NORM), 1, EMBD, 1, 1, 0.1f, 1.0f);
        if (l < lead || a->dense || (a->moe_step > 1 && (l + 1) % a->moe_step)) {
            rc |= T(TN_FFN_GATE, 2, EMBD, FF, 1, in_d, 0);
            rc |= T(TN_FFN_UP, 2, EMBD, FF, 1, in_d, 0);
            rc |= T(TN_FFN_DOWN, 2, FF, EMBD, 1, 1.0f / sqrtf((float)FF), 0);
            continue;
        }
        rc |= T(TN_FFN_GATE_INP, 2, EMBD, n_exp, 1, 4 * in_d, 0);
        if (a->probs_b && !control) rc |= T(TN_FFN_EXP_PROBS_B, 1, n_exp, 1, 1, 0.2f, 0);
        const float big = a->oai ? 6.0f : 1.0f; /* gpt-oss: past the GLU's clamp */
        if (a->mxfp4) { /* the same magnitudes: up to 12 x 2^-4 and 12 x 2^-9 */
            const tensor_role part[3] = { TN_FFN_GATE_EXPS, TN_FFN_UP_EXPS, TN_FFN_DOWN_EXPS };
            for (int k = 0; k < 3 && rc == 0; k++) {
                tensor_name(n, sizeof n, part[k], l);
                rc = add_mxfp4(w, &s, n, k < 2 ? EMBD : FF_EXP, k < 2 ? FF_EXP : EMBD, n_exp, k < 2 ? 122 : 117);
            }
        } else {
            rc |= T(TN_FFN_GATE_EXPS, 3, EMBD, FF_EXP, n_exp, big * in_d, 0);
            rc |= T(TN_FFN_UP_EXPS, 3, EMBD, FF_EXP, n_exp, big * in_d, 0);
            rc |= T(TN_FFN_DOWN_EXPS, 3, FF_EXP, EMBD, n_exp, in_ff / big, 0);
        }
        if (a->oai) {
            rc |= T(TN_FFN_GATE_INP_BIAS, 1, n_exp, 1, 1, 0.5f, 0);
            rc |= T(TN_FFN_GATE_EXPS_BIAS, 2, FF_EXP, n_exp, 1, 0.5f, 0);
            rc |= T(TN_FFN_UP_EXPS_BIAS, 2, FF_EXP, n_exp, 1, 0.5f, 0);
            rc |= T(TN_FFN_DOWN_EXPS_BIAS, 2, EMBD, n_exp, 1, 0.1f, 0);
        }
        if (!ff_sh) continue;
        if (a->shared_gate && !control) rc |= T(TN_FFN_GATE_INP_SHEXP, 1, EMBD, 1, 1, 2 * in_d, 0);
        rc |= T(TN_FFN_GATE_SHEXP, 2, EMBD, ff_sh, 1, in_d, 0);
        rc |= T(TN_FFN_UP_SHEXP, 2, EMBD, ff_sh, 1, in_d, 0);
        rc |= T(TN_FFN_DOWN_SHEXP, 2, ff_sh, EMBD, 1, 1.0f / sqrtf((float)ff_sh), 0);
    }
#undef T
    if (rc) snprintf(err, errlen, "%s: cannot write the %s model", path, arch);
    else rc = gguf_writer_write(w, path, err, errlen);
    gguf_writer_free(w);
    gguf_close(tf);
    return rc;
}

/* keep_native 2: quantized weights as llama.cpp runs them (gguf_weights.h); n_batch 0: the default */
static float *run_gguf_batch(const char *path, const seq *s, int keep_native, int n_batch)
{
    char err[256];
    gguf_model gm;
    if (gguf_model_load(&gm, path, keep_native, err, sizeof err)) { printf("%s\n", err); fail(); }
    model_options o = f32_opts();
    if (n_batch) o.n_batch = n_batch;
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    float *out = run_seq(m, s);
    model_free(m);
    gguf_model_free(&gm);
    return out;
}

static float *run_gguf(const char *path, const seq *s, int keep_native)
{
    return run_gguf_batch(path, s, keep_native, 0);
}

/* SEQ is the head of stories260K's v3 tokens, where ../shared has them */
static void seq_is_stories260k_v3(void)
{
    size_t nt = 0;
    int32_t *tok = slurp_shared(TOKENS, &nt);
    if (!tok) return;
    assert_true(nt >= sizeof SEQ);
    assert_memory_equal(tok, SEQ, sizeof SEQ);
    free(tok);
}

/* The model's next-token-prediction block, run as --draft mtp runs it, from
 * the GGUF and from its pack: the PyTorch reference's logits
 * (tests/fixtures/archs/NAME-mtp.logits.f32, made by
 * `/usr/bin/python3 tests/diag/mtp_reference_archs.py DIR/NAME.gguf DIR/NAME.tokens.i32
 * tests/fixtures/archs/NAME-mtp.logits.f32 --main tests/fixtures/archs/NAME.logits.f32`
 * after `test_archs_llamacpp --write DIR`; its main model is checked against
 * llama.cpp's logits first), and the same bits both ways. */
static void mtp_agrees(const scratch *sc, const arch_spec *a)
{
    char err[256];
    size_t nl = 0;
    char name[64];
    snprintf(name, sizeof name, "%s-mtp", a->name);
    seq s = { .n_rows = N_TOK - 1, .n_prompt = N_TOK - 1, .n_vocab = VOCAB, .tok = NULL };
    s.ref = fixture_floats("archs", name, "logits", (size_t)(N_TOK - 1) * VOCAB, &nl);
    gguf_model gm;
    if (gguf_model_load(&gm, sc->gguf, 0, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(gm.w.n_mtp, a->nextn);
    model_options o = f32_opts();
    model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    float *out = mtp_logits(m, SEQ, N_TOK);
    model_free(m);
    gguf_model_free(&gm);
    loaded_pack *lp = loader_open(sc->pack, err, sizeof err);
    if (!lp) fail_msg("%s", err);
    m = model_create(loader_hparams(lp), loader_weights(lp), &o, err, sizeof err);
    if (!m) fail_msg("%s", err);
    float *packed = mtp_logits(m, SEQ, N_TOK);
    model_free(m);
    loader_close(lp);
    const double rel = worst_rel(&s, out);
    printf("%s's next-token-prediction block: %d rows, max |ours - PyTorch| / max|logit| = %.3g\n", a->name,
           N_TOK - 1, rel);
    assert_true(rel < 1e-5);
    assert_memory_equal(packed, out, (size_t)(N_TOK - 1) * VOCAB * sizeof *out);
    free(packed);
    free(out);
    free(s.ref);
}

static void check_arch(const arch_spec *a)
{
    seq_is_stories260k_v3();
    scratch sc;
    scratch_make(&sc, a->name);
    char err[256];
    if (write_model(a, sc.gguf, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    seq s;
    fixture_seq_ids(&s, SEQ, N_TOK, N_PROMPT, "archs", a->name);
    assert_int_equal(s.n_vocab, VOCAB);
    float *out = run_gguf(sc.gguf, &s, a->mxfp4 ? 2 : 0);
    const double rel = worst_rel(&s, out);

    char ctl[700];
    snprintf(ctl, sizeof ctl, "%s/control.gguf", sc.dir);
    if (write_model(a, ctl, 1, err, sizeof err)) { printf("%s\n", err); fail(); }
    float *control = run_gguf(ctl, &s, a->mxfp4 ? 2 : 0);
    const double moved = worst_rel(&s, control);
    free(control);
    printf("%s: %d rows, max |ours - llama.cpp| / max|logit| = %.3g (the control model: %.3g)\n", a->name,
           s.n_rows, rel, moved);
    assert_true(moved > 1e-2);
    assert_true(rel < 1e-5);

    pack_gives_same_bits(&sc, &s, out);
    if (a->nextn) mtp_agrees(&sc, a);
    /* speculative decoding's batched checks give plain decoding's bits */
    spec_greedy_identity(sc.gguf, a->mxfp4 ? 2 : 0, a->name);
    free(out);
    seq_free(&s);
    scratch_rm(&sc);
}

static void test_qwen2moe(void **st) { (void)st; check_arch(&specs[0]); }
static void test_deepseek(void **st) { (void)st; check_arch(&specs[1]); }
static void test_granite(void **st) { (void)st; check_arch(&specs[2]); }
static void test_granitemoe(void **st) { (void)st; check_arch(&specs[3]); }
static void test_dots1(void **st) { (void)st; check_arch(&specs[4]); }
static void test_ernie4_5_moe(void **st) { (void)st; check_arch(&specs[5]); }
static void test_glm4moe(void **st) { (void)st; check_arch(&specs[6]); }
static void test_glm4moe_qknorm(void **st) { (void)st; check_arch(&specs[7]); }
static void test_llama4(void **st) { (void)st; check_arch(&specs[8]); }
static void test_llama4_interleaved(void **st) { (void)st; check_arch(&specs[9]); }
static void test_deepseek_top8(void **st) { (void)st; check_arch(&specs[11]); }
static void test_hunyuan_moe(void **st) { (void)st; check_arch(&specs[12]); }
static void test_minimax_m2(void **st) { (void)st; check_arch(&specs[13]); }
static void test_deepseek2(void **st) { (void)st; check_arch(&specs[14]); }
static void test_deepseek2_lite(void **st) { (void)st; check_arch(&specs[15]); }
static void test_deepseek2_yarn(void **st) { (void)st; check_arch(&specs[16]); }
static void test_deepseek2_v3(void **st) { (void)st; check_arch(&specs[17]); }
static void test_granitemoe_shared(void **st) { (void)st; check_arch(&specs[18]); }
static void test_gpt_oss(void **st) { (void)st; check_arch(&specs[19]); }
static void test_gpt_oss_mxfp4(void **st) { (void)st; check_arch(&specs[20]); }
static void test_bailingmoe2(void **st) { (void)st; check_arch(&specs[21]); }
static void test_bailingmoe(void **st) { (void)st; check_arch(&specs[22]); }
static void test_qwen3vlmoe(void **st) { (void)st; check_arch(&specs[23]); }

/* gpt-oss's sliding layers keep a ring of window + n_batch positions: in
 * ubatches of 2 it is 6 rows, wrapped three times over the 20 positions,
 * and the logits are still llama.cpp's (a ring 2 rows short: 0.51 off). */
static void test_gpt_oss_ring(void **st)
{
    (void)st;
    const arch_spec *a = &specs[19];
    scratch sc;
    scratch_make(&sc, "gpt-oss-ring");
    char err[256];
    if (write_model(a, sc.gguf, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    seq s;
    fixture_seq_ids(&s, SEQ, N_TOK, N_PROMPT, "archs", a->name);
    float *out = run_gguf_batch(sc.gguf, &s, 0, 2);
    const double rel = worst_rel(&s, out);
    printf("%s in ubatches of 2 (rings of 6 rows): max |ours - llama.cpp| / max|logit| = %.3g\n", a->name, rel);
    assert_true(rel < 1e-5);
    free(out);
    seq_free(&s);
    scratch_rm(&sc);
}

/* Llama 4 past 8192 positions: the RoPE layers attend within their chunk
 * (positions 8192.. start a new one), the no-RoPE layer everything, its
 * queries 1.069 times warmer from position 8191. A random sequence of
 * LONG_TOK tokens, LONG_PROMPT as one batch; llama.cpp's last LONG_LAST rows
 * are the fixture (the chunk border among them). */
enum { LONG_TOK = 8200, LONG_PROMPT = 8194, LONG_LAST = 12 };

static int32_t *long_tokens(void)
{
    int32_t *t = malloc(LONG_TOK * sizeof *t);
    uint64_t s = 8192;
    for (int i = 0; t && i < LONG_TOK; i++) t[i] = (int32_t)((uniform(&s) + 1.0f) * 0.5f * (VOCAB - 1));
    return t;
}

static void test_llama4_long(void **st)
{
    (void)st;
    const arch_spec *a = &specs[10];
    scratch sc;
    scratch_make(&sc, a->name);
    char err[256];
    if (write_model(a, sc.gguf, 0, err, sizeof err)) { printf("%s\n", err); fail(); }
    seq s = { 0 };
    s.tok = long_tokens();
    assert_non_null(s.tok);
    s.n_rows = LONG_TOK;
    s.n_prompt = LONG_PROMPT;
    s.n_vocab = VOCAB;
    float *out = run_gguf(sc.gguf, &s, 0);
    /* the last rows against llama.cpp's, as a sequence of their own */
    seq tail = { .n_rows = LONG_LAST, .n_vocab = VOCAB };
    tail.ref = fixture_floats("archs", a->name, "logits", (size_t)LONG_LAST * VOCAB, NULL);
    const float *mine = out + (size_t)(LONG_TOK - LONG_LAST) * VOCAB;
    const double rel = worst_rel(&tail, mine);
    /* without the chunks and the temperature (sliding_window 0) */
    char ctl[700];
    snprintf(ctl, sizeof ctl, "%s/control.gguf", sc.dir);
    if (write_model(a, ctl, 1, err, sizeof err)) { printf("%s\n", err); fail(); }
    float *control = run_gguf(ctl, &s, 0);
    const double moved = worst_rel(&tail, control + (size_t)(LONG_TOK - LONG_LAST) * VOCAB);
    printf("%s: last %d of %d rows, max |ours - llama.cpp| / max|logit| = %.3g (without chunks: %.3g)\n", a->name,
           LONG_LAST, LONG_TOK, rel, moved);
    assert_true(moved > 1e-2);
    assert_true(rel < 1e-5);
    free(control);
    free(out);
    free(tail.ref);
    free(s.tok);
    scratch_rm(&sc);
}

/* --write DIR: the models and their token sequence, for llama.cpp. */
static int write_all(const char *dir)
{
    const int32_t *tok = SEQ;
    int rc = 0;
    int32_t *ltok = long_tokens();
    for (int i = 0; rc == 0 && i < N_SPECS; i++) {
        const int is_long = !strcmp(specs[i].name, "llama4-long");
        char path[600], err[256];
        snprintf(path, sizeof path, "%s/%s.gguf", dir, specs[i].name);
        if (write_model(&specs[i], path, 0, err, sizeof err)) { fprintf(stderr, "%s\n", err); rc = 1; break; }
        snprintf(path, sizeof path, "%s/%s.tokens.i32", dir, specs[i].name);
        FILE *fp = fopen(path, "wb");
        const size_t n = is_long ? LONG_TOK : N_TOK;
        const int ok = fp && ltok && fwrite(is_long ? ltok : tok, sizeof *tok, n, fp) == n;
        if (fp) fclose(fp);
        if (!ok) { fprintf(stderr, "%s: cannot write\n", path); rc = 1; break; }
        if (is_long) printf("%s %d %d ctx=8448 last=%d\n", specs[i].name, LONG_PROMPT, LONG_TOK, LONG_LAST);
        else printf("%s %d %d\n", specs[i].name, N_PROMPT, N_TOK);
    }
    free(ltok);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_all(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen2moe),    cmocka_unit_test(test_deepseek),
        cmocka_unit_test(test_granite),     cmocka_unit_test(test_granitemoe),
        cmocka_unit_test(test_granitemoe_shared), cmocka_unit_test(test_dots1),
        cmocka_unit_test(test_ernie4_5_moe), cmocka_unit_test(test_glm4moe),
        cmocka_unit_test(test_glm4moe_qknorm), cmocka_unit_test(test_llama4),
        cmocka_unit_test(test_llama4_interleaved), cmocka_unit_test(test_llama4_long),
        cmocka_unit_test(test_deepseek_top8), cmocka_unit_test(test_hunyuan_moe), cmocka_unit_test(test_minimax_m2),
        cmocka_unit_test(test_deepseek2), cmocka_unit_test(test_deepseek2_lite), cmocka_unit_test(test_deepseek2_yarn),
        cmocka_unit_test(test_deepseek2_v3), cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_gpt_oss_mxfp4), cmocka_unit_test(test_gpt_oss_ring),
        cmocka_unit_test(test_bailingmoe2), cmocka_unit_test(test_bailingmoe), cmocka_unit_test(test_qwen3vlmoe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
