/* vision_model.h: the small Qwen3-VL vision tower the vision agreement
 * test writes with our GGUF writer (llama.cpp's mmproj layout: the keys
 * and tensor names mtmd reads for clip.projector_type qwen3vl_merger),
 * the llama text model mtmd needs beside it (its width is the tower's
 * output width: it only has to load), and the pictures.
 * Tower: patch 8, a 6 x 6 position table (its native picture is 48 x 48),
 * width 32 in 2 heads, 3 layers with a deepstack merger after layer 1,
 * output 24 + 24. Weights F32 from gguf_random.h's uniform(), so every
 * machine writes the same bytes. No global state. */
#ifndef STRATA_TEST_VISION_MODEL_H
#define STRATA_TEST_VISION_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/fp16.h"
#include "formats/gguf.h"
#include "tests/lib/gguf_random.h"
#include "tests/lib/vocab_relabel.h"

#define VM_PATCH 8
#define VM_SIDE 6
#define VM_EMBD 32
#define VM_HEADS 2
#define VM_FF 64
#define VM_LAYERS 3
#define VM_DS_LAYER 1
#define VM_OUT 24
#define VM_WIDTH (VM_OUT * 2)

/* A layer's tensor: its name's format (%d the layer), dims, sizes, and the
 * uniform weights' scale and offset. */
typedef struct vm_spec { const char *f; int nd; int64_t a, b; float sc, off; } vm_spec;

static inline int vm_add_specs(gguf_writer *w, uint64_t *s, const vm_spec *t, size_t n, int il)
{
    char name[64];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        snprintf(name, sizeof name, t[i].f, il);
        rc = add_tensor(w, s, name, t[i].nd, t[i].a, t[i].b, 1, t[i].sc, t[i].off);
    }
    return rc;
}

static inline int vm_write_mmproj(const char *path, char *err, size_t errlen)
{
    gguf_writer *w = gguf_writer_new();
    uint64_t s = 0x5157454e33564cull; /* "QWEN3VL" */
    const bool yes = true;
    const float eps = 1e-6f, mean[3] = { 0.5f, 0.5f, 0.5f }, sd[3] = { 0.5f, 0.5f, 0.5f };
    int rc = w ? 0 : -1;
    rc |= gguf_writer_add_str(w, "general.architecture", "clip");
    rc |= gguf_writer_add_kv(w, "clip.has_vision_encoder", GGUF_TYPE_BOOL, &yes);
    rc |= gguf_writer_add_kv(w, "clip.use_gelu", GGUF_TYPE_BOOL, &yes);
    rc |= gguf_writer_add_str(w, "clip.projector_type", "qwen3vl_merger");
    const struct { const char *k; uint32_t v; } u[] = {
        { "clip.vision.image_size", VM_SIDE * VM_PATCH }, { "clip.vision.patch_size", VM_PATCH },
        { "clip.vision.embedding_length", VM_EMBD },     { "clip.vision.feed_forward_length", VM_FF },
        { "clip.vision.block_count", VM_LAYERS },         { "clip.vision.attention.head_count", VM_HEADS },
        { "clip.vision.projection_dim", VM_OUT },         { "clip.vision.spatial_merge_size", 2 },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u / sizeof u[0]; i++) rc = gguf_writer_add_u32(w, u[i].k, u[i].v);
    rc |= gguf_writer_add_kv(w, "clip.vision.attention.layer_norm_epsilon", GGUF_TYPE_FLOAT32, &eps);
    rc |= gguf_writer_add_arr(w, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
    rc |= gguf_writer_add_arr(w, "clip.vision.image_std", GGUF_TYPE_FLOAT32, sd, 3);
    const int64_t E = VM_EMBD, E4 = 4 * VM_EMBD, P = VM_PATCH;
    /* a 4-D tensor: add_tensor makes 3 dims, so the kernels are written here */
    for (int k = 0; rc == 0 && k < 2; k++) {
        const int64_t ne[4] = { P, P, 3, E };
        const size_t n = (size_t)(P * P * 3 * E);
        float *x = malloc(n * sizeof *x);
        for (size_t i = 0; x && i < n; i++) x[i] = 0.08f * uniform(&s);
        rc = x && gguf_writer_add_tensor(w, k ? "v.patch_embd.weight.1" : "v.patch_embd.weight", GGML_TYPE_F32, 4, ne,
                                         x, n * sizeof *x) >= 0 ? 0 : -1;
        free(x);
    }
    rc |= add_tensor(w, &s, "v.patch_embd.bias", 1, E, 1, 1, 0.1f, 0.0f);
    rc |= add_tensor(w, &s, "v.position_embd.weight", 2, E, VM_SIDE * VM_SIDE, 1, 0.5f, 0.0f);
    for (int il = 0; rc == 0 && il < VM_LAYERS; il++) {
        const vm_spec T[] = {
            { "v.blk.%d.ln1.weight", 1, E, 1, 0.2f, 1.0f },     { "v.blk.%d.ln1.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.attn_qkv.weight", 2, E, 3 * E, 0.3f, 0.0f }, { "v.blk.%d.attn_qkv.bias", 1, 3 * E, 1, 0.1f, 0.0f },
            { "v.blk.%d.attn_out.weight", 2, E, E, 0.2f, 0.0f }, { "v.blk.%d.attn_out.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.ln2.weight", 1, E, 1, 0.2f, 1.0f },     { "v.blk.%d.ln2.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.ffn_up.weight", 2, E, VM_FF, 0.3f, 0.0f }, { "v.blk.%d.ffn_up.bias", 1, VM_FF, 1, 0.1f, 0.0f },
            { "v.blk.%d.ffn_down.weight", 2, VM_FF, E, 0.2f, 0.0f }, { "v.blk.%d.ffn_down.bias", 1, E, 1, 0.1f, 0.0f },
        };
        const vm_spec D[] = {
            { "v.deepstack.%d.norm.weight", 1, E4, 1, 0.2f, 1.0f }, { "v.deepstack.%d.norm.bias", 1, E4, 1, 0.1f, 0.0f },
            { "v.deepstack.%d.fc1.weight", 2, E4, E4, 0.15f, 0.0f }, { "v.deepstack.%d.fc1.bias", 1, E4, 1, 0.1f, 0.0f },
            { "v.deepstack.%d.fc2.weight", 2, E4, VM_OUT, 0.15f, 0.0f }, { "v.deepstack.%d.fc2.bias", 1, VM_OUT, 1, 0.1f, 0.0f },
        };
        rc = vm_add_specs(w, &s, T, sizeof T / sizeof T[0], il);
        if (rc == 0 && il == VM_DS_LAYER) rc = vm_add_specs(w, &s, D, sizeof D / sizeof D[0], il);
    }
    rc |= add_tensor(w, &s, "v.post_ln.weight", 1, E, 1, 1, 0.2f, 1.0f);
    rc |= add_tensor(w, &s, "v.post_ln.bias", 1, E, 1, 1, 0.1f, 0.0f);
    rc |= add_tensor(w, &s, "mm.0.weight", 2, E4, E4, 1, 0.15f, 0.0f);
    rc |= add_tensor(w, &s, "mm.0.bias", 1, E4, 1, 1, 0.1f, 0.0f);
    rc |= add_tensor(w, &s, "mm.2.weight", 2, E4, VM_OUT, 1, 0.15f, 0.0f);
    rc |= add_tensor(w, &s, "mm.2.bias", 1, VM_OUT, 1, 1, 0.1f, 0.0f);
    if (rc == 0) rc = gguf_writer_write(w, path, err, errlen);
    else snprintf(err, errlen, "%s: could not build the GGUF", path);
    gguf_writer_free(w);
    return rc;
}

/* Llama 4's tower (clip.projector_type llama4): 16 x 16 tiles of 4 x 4 patches (16 patches and the
 * class token a slice), width 32 in 2 heads, 2 layers with biases, pixel shuffle by 2 (4 rows a
 * slice), an adapter 64 wide and a projector to VM_WIDTH (the text model's width). */
#define VM4_SIDE 16
#define VM4_PATCH 4
#define VM4_EMBD 32
#define VM4_FF 64
#define VM4_MLP 64

static inline int vm_write_mmproj_llama4(const char *path, char *err, size_t errlen)
{
    gguf_writer *w = gguf_writer_new();
    uint64_t s = 0x4c4c414d4134ull; /* "LLAMA4" */
    const bool yes = true;
    const float eps = 1e-5f, mean[3] = { 0.5f, 0.5f, 0.5f }, sd[3] = { 0.5f, 0.5f, 0.5f };
    int rc = w ? 0 : -1;
    rc |= gguf_writer_add_str(w, "general.architecture", "clip");
    rc |= gguf_writer_add_kv(w, "clip.has_vision_encoder", GGUF_TYPE_BOOL, &yes);
    rc |= gguf_writer_add_kv(w, "clip.use_gelu", GGUF_TYPE_BOOL, &yes);
    rc |= gguf_writer_add_str(w, "clip.projector_type", "llama4");
    const struct { const char *k; uint32_t v; } u[] = {
        { "clip.vision.image_size", VM4_SIDE },      { "clip.vision.patch_size", VM4_PATCH },
        { "clip.vision.embedding_length", VM4_EMBD }, { "clip.vision.feed_forward_length", VM4_FF },
        { "clip.vision.block_count", 2 },             { "clip.vision.attention.head_count", 2 },
        { "clip.vision.projection_dim", VM_WIDTH },   { "clip.vision.projector.scale_factor", 2 },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u / sizeof u[0]; i++) rc = gguf_writer_add_u32(w, u[i].k, u[i].v);
    rc |= gguf_writer_add_kv(w, "clip.vision.attention.layer_norm_epsilon", GGUF_TYPE_FLOAT32, &eps);
    rc |= gguf_writer_add_arr(w, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
    rc |= gguf_writer_add_arr(w, "clip.vision.image_std", GGUF_TYPE_FLOAT32, sd, 3);
    const int64_t E = VM4_EMBD, Np = (VM4_SIDE / VM4_PATCH) * (VM4_SIDE / VM4_PATCH);
    rc |= add_tensor(w, &s, "v.patch_embd.weight", 2, 3 * VM4_PATCH * VM4_PATCH, E, 1, 0.1f, 0.0f);
    rc |= add_tensor(w, &s, "v.class_embd", 1, E, 1, 1, 0.5f, 0.0f);
    rc |= add_tensor(w, &s, "v.position_embd.weight", 2, E, Np + 1, 1, 0.5f, 0.0f);
    rc |= add_tensor(w, &s, "v.pre_ln.weight", 1, E, 1, 1, 0.2f, 1.0f);
    rc |= add_tensor(w, &s, "v.pre_ln.bias", 1, E, 1, 1, 0.1f, 0.0f);
    for (int il = 0; rc == 0 && il < 2; il++) {
        const vm_spec T[] = {
            { "v.blk.%d.ln1.weight", 1, E, 1, 0.2f, 1.0f },      { "v.blk.%d.ln1.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.attn_q.weight", 2, E, E, 0.3f, 0.0f },   { "v.blk.%d.attn_q.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.attn_k.weight", 2, E, E, 0.3f, 0.0f },   { "v.blk.%d.attn_k.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.attn_v.weight", 2, E, E, 0.3f, 0.0f },   { "v.blk.%d.attn_v.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.attn_out.weight", 2, E, E, 0.2f, 0.0f }, { "v.blk.%d.attn_out.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.ln2.weight", 1, E, 1, 0.2f, 1.0f },      { "v.blk.%d.ln2.bias", 1, E, 1, 0.1f, 0.0f },
            { "v.blk.%d.ffn_up.weight", 2, E, VM4_FF, 0.3f, 0.0f }, { "v.blk.%d.ffn_up.bias", 1, VM4_FF, 1, 0.1f, 0.0f },
            { "v.blk.%d.ffn_down.weight", 2, VM4_FF, E, 0.2f, 0.0f }, { "v.blk.%d.ffn_down.bias", 1, E, 1, 0.1f, 0.0f },
        };
        rc = vm_add_specs(w, &s, T, sizeof T / sizeof T[0], il);
    }
    rc |= add_tensor(w, &s, "v.post_ln.weight", 1, E, 1, 1, 0.2f, 1.0f);
    rc |= add_tensor(w, &s, "v.post_ln.bias", 1, E, 1, 1, 0.1f, 0.0f);
    rc |= add_tensor(w, &s, "mm.model.mlp.1.weight", 2, 4 * E, VM4_MLP, 1, 0.15f, 0.0f);
    rc |= add_tensor(w, &s, "mm.model.mlp.2.weight", 2, VM4_MLP, VM4_MLP, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "mm.model.fc.weight", 2, VM4_MLP, VM_WIDTH, 1, 0.2f, 0.0f);
    if (rc == 0) rc = gguf_writer_write(w, path, err, errlen);
    else snprintf(err, errlen, "%s: could not build the GGUF", path);
    gguf_writer_free(w);
    return rc;
}

/* Llama 4's text model for the llama4 tower: width VM_WIDTH, 4 layers (the 4th without RoPE), 2 heads
 * (one KV head) 24 wide, every layer MoE (4 experts, 1 used, sigmoid, a shared expert), the shipped
 * model's first 512 tokens. */
static inline int vm_write_text_llama4(const char *path, const char *vocab_gguf, char *err, size_t errlen)
{
    gguf_file *tf = gguf_open(vocab_gguf, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    uint64_t s = 0x4c34544558ull; /* "L4TEX" */
    const float eps = 1e-5f, base = 500000.0f;
    int rc = w ? 0 : -1;
    rc |= gguf_writer_add_str(w, "general.architecture", "llama4");
    const struct { const char *k; uint32_t v; } u[] = {
        { "llama4.context_length", 256 },      { "llama4.embedding_length", VM_WIDTH },
        { "llama4.block_count", 4 },           { "llama4.feed_forward_length", 32 },
        { "llama4.attention.head_count", 2 },  { "llama4.attention.head_count_kv", 1 },
        { "llama4.expert_count", 4 },          { "llama4.expert_used_count", 1 },
        { "llama4.expert_feed_forward_length", 16 }, { "llama4.expert_shared_feed_forward_length", 16 },
        { "llama4.interleave_moe_layer_step", 1 },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u / sizeof u[0]; i++) rc = gguf_writer_add_u32(w, u[i].k, u[i].v);
    rc |= gguf_writer_add_kv(w, "llama4.attention.layer_norm_rms_epsilon", GGUF_TYPE_FLOAT32, &eps);
    rc |= gguf_writer_add_kv(w, "llama4.rope.freq_base", GGUF_TYPE_FLOAT32, &base);
    if (rc == 0) rc = vocab_keys_head(w, tf, 512);
    const int64_t D = VM_WIDTH, KV = 24, E = 4, F = 16;
    rc |= add_tensor(w, &s, "token_embd.weight", 2, D, 512, 1, 0.5f, 0.0f);
    rc |= add_tensor(w, &s, "output_norm.weight", 1, D, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, "output.weight", 2, D, 512, 1, 0.3f, 0.0f);
    for (int il = 0; rc == 0 && il < 4; il++) {
        const vm_spec T[] = {
            { "blk.%d.attn_norm.weight", 1, D, 1, 0.1f, 1.0f },   { "blk.%d.attn_q.weight", 2, D, D, 0.3f, 0.0f },
            { "blk.%d.attn_k.weight", 2, D, KV, 0.3f, 0.0f },     { "blk.%d.attn_v.weight", 2, D, KV, 0.3f, 0.0f },
            { "blk.%d.attn_output.weight", 2, D, D, 0.3f, 0.0f }, { "blk.%d.ffn_norm.weight", 1, D, 1, 0.1f, 1.0f },
            { "blk.%d.ffn_gate_inp.weight", 2, D, E, 0.5f, 0.0f },
            { "blk.%d.ffn_gate_shexp.weight", 2, D, F, 0.3f, 0.0f }, { "blk.%d.ffn_up_shexp.weight", 2, D, F, 0.3f, 0.0f },
            { "blk.%d.ffn_down_shexp.weight", 2, F, D, 0.3f, 0.0f },
        };
        rc = vm_add_specs(w, &s, T, sizeof T / sizeof T[0], il);
        char name[64];
        static const char *const exps[3] = { "blk.%d.ffn_gate_exps.weight", "blk.%d.ffn_up_exps.weight",
                                             "blk.%d.ffn_down_exps.weight" };
        for (int k = 0; rc == 0 && k < 3; k++) {
            snprintf(name, sizeof name, exps[k], il);
            rc = add_tensor(w, &s, name, 3, k == 2 ? F : D, k == 2 ? D : F, E, 0.3f, 0.0f);
        }
    }
    if (rc == 0) rc = gguf_writer_write(w, path, err, errlen);
    else snprintf(err, errlen, "%s: could not build the GGUF", path);
    gguf_writer_free(w);
    gguf_close(tf);
    return rc;
}

/* A one-layer llama of width VM_WIDTH with the shipped model's first 512
 * tokens: what mtmd needs to load the tower beside (its input width must
 * be the tower's output width). */
static inline int vm_write_text(const char *path, const char *vocab_gguf, char *err, size_t errlen)
{
    gguf_file *tf = gguf_open(vocab_gguf, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    uint64_t s = 77;
    const float eps = 1e-5f, base = 10000.0f;
    int rc = w ? 0 : -1;
    rc |= gguf_writer_add_str(w, "general.architecture", "llama");
    const struct { const char *k; uint32_t v; } u[] = {
        { "llama.context_length", 256 }, { "llama.embedding_length", VM_WIDTH }, { "llama.block_count", 1 },
        { "llama.feed_forward_length", 64 }, { "llama.attention.head_count", 2 }, { "llama.attention.head_count_kv", 2 },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u / sizeof u[0]; i++) rc = gguf_writer_add_u32(w, u[i].k, u[i].v);
    rc |= gguf_writer_add_kv(w, "llama.attention.layer_norm_rms_epsilon", GGUF_TYPE_FLOAT32, &eps);
    rc |= gguf_writer_add_kv(w, "llama.rope.freq_base", GGUF_TYPE_FLOAT32, &base);
    if (rc == 0) rc = vocab_keys_head(w, tf, 512);
    const int64_t Wd = VM_WIDTH;
    rc |= add_tensor(w, &s, "token_embd.weight", 2, Wd, 512, 1, 0.5f, 0.0f);
    rc |= add_tensor(w, &s, "output_norm.weight", 1, Wd, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, "output.weight", 2, Wd, 512, 1, 0.3f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.attn_norm.weight", 1, Wd, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, "blk.0.attn_q.weight", 2, Wd, Wd, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.attn_k.weight", 2, Wd, Wd, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.attn_v.weight", 2, Wd, Wd, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.attn_output.weight", 2, Wd, Wd, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.ffn_norm.weight", 1, Wd, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, "blk.0.ffn_gate.weight", 2, Wd, 64, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.ffn_up.weight", 2, Wd, 64, 1, 0.2f, 0.0f);
    rc |= add_tensor(w, &s, "blk.0.ffn_down.weight", 2, 64, Wd, 1, 0.2f, 0.0f);
    if (rc == 0) rc = gguf_writer_write(w, path, err, errlen);
    else snprintf(err, errlen, "%s: could not build the GGUF", path);
    gguf_writer_free(w);
    gguf_close(tf);
    return rc;
}

/* Qwen3-VL MoE's text model for the tower (qwen3vlmoe): width VM_OUT, the
 * tower's deepstack features added after its first layer (input width
 * VM_WIDTH), 2 layers of 2 heads (one KV head) 16 wide, 4 experts (2
 * used), M-RoPE sections 3, 2, 2, 1 over the 8 rotated pairs (the last pair
 * left to the fourth position, as Qwen3-VL's 24, 20, 20 leave two) with a
 * RoPE base of 100 so that a row's y and x turn it visibly, the shipped
 * model's first 512 tokens. */
static inline int vm_write_text_vl(const char *path, const char *vocab_gguf, char *err, size_t errlen)
{
    gguf_file *tf = gguf_open(vocab_gguf, err, errlen);
    if (!tf) return -1;
    gguf_writer *w = gguf_writer_new();
    uint64_t s = 0x564c4d4f45ull; /* "VLMOE" */
    const float eps = 1e-6f, base = 100.0f;
    const bool yes = true;
    const int32_t sections[4] = { 3, 2, 2, 1 };
    int rc = w ? 0 : -1;
    rc |= gguf_writer_add_str(w, "general.architecture", "qwen3vlmoe");
    const struct { const char *k; uint32_t v; } u[] = {
        { "qwen3vlmoe.context_length", 256 },  { "qwen3vlmoe.embedding_length", VM_OUT },
        { "qwen3vlmoe.block_count", 2 },        { "qwen3vlmoe.feed_forward_length", 32 },
        { "qwen3vlmoe.attention.head_count", 2 }, { "qwen3vlmoe.attention.head_count_kv", 1 },
        { "qwen3vlmoe.attention.key_length", 16 }, { "qwen3vlmoe.attention.value_length", 16 },
        { "qwen3vlmoe.expert_count", 4 },       { "qwen3vlmoe.expert_used_count", 2 },
        { "qwen3vlmoe.expert_feed_forward_length", 16 }, { "qwen3vlmoe.n_deepstack_layers", 1 },
    };
    for (size_t i = 0; rc == 0 && i < sizeof u / sizeof u[0]; i++) rc = gguf_writer_add_u32(w, u[i].k, u[i].v);
    rc |= gguf_writer_add_kv(w, "qwen3vlmoe.attention.layer_norm_rms_epsilon", GGUF_TYPE_FLOAT32, &eps);
    rc |= gguf_writer_add_kv(w, "qwen3vlmoe.rope.freq_base", GGUF_TYPE_FLOAT32, &base);
    rc |= gguf_writer_add_kv(w, "qwen3vlmoe.expert_weights_norm", GGUF_TYPE_BOOL, &yes);
    rc |= gguf_writer_add_arr(w, "qwen3vlmoe.rope.dimension_sections", GGUF_TYPE_INT32, sections, 4);
    if (rc == 0) rc = vocab_keys_head(w, tf, 512);
    const int64_t D = VM_OUT, Q = 32, KV = 16, E = 4, F = 16;
    rc |= add_tensor(w, &s, "token_embd.weight", 2, D, 512, 1, 0.5f, 0.0f);
    rc |= add_tensor(w, &s, "output_norm.weight", 1, D, 1, 1, 0.1f, 1.0f);
    rc |= add_tensor(w, &s, "output.weight", 2, D, 512, 1, 0.3f, 0.0f);
    for (int il = 0; rc == 0 && il < 2; il++) {
        const vm_spec T[] = {
            { "blk.%d.attn_norm.weight", 1, D, 1, 0.1f, 1.0f },  { "blk.%d.attn_q.weight", 2, D, Q, 0.3f, 0.0f },
            { "blk.%d.attn_k.weight", 2, D, KV, 0.3f, 0.0f },    { "blk.%d.attn_v.weight", 2, D, KV, 0.3f, 0.0f },
            { "blk.%d.attn_q_norm.weight", 1, 16, 1, 0.1f, 1.0f }, { "blk.%d.attn_k_norm.weight", 1, 16, 1, 0.1f, 1.0f },
            { "blk.%d.attn_output.weight", 2, Q, D, 0.3f, 0.0f }, { "blk.%d.ffn_norm.weight", 1, D, 1, 0.1f, 1.0f },
            { "blk.%d.ffn_gate_inp.weight", 2, D, E, 0.5f, 0.0f },
        };
        rc = vm_add_specs(w, &s, T, sizeof T / sizeof T[0], il);
        char name[64];
        static const char *const exps[3] = { "blk.%d.ffn_gate_exps.weight", "blk.%d.ffn_up_exps.weight",
                                             "blk.%d.ffn_down_exps.weight" };
        for (int k = 0; rc == 0 && k < 3; k++) {
            snprintf(name, sizeof name, exps[k], il);
            rc = add_tensor(w, &s, name, 3, k == 2 ? F : D, k == 2 ? D : F, E, 0.3f, 0.0f);
        }
    }
    if (rc == 0) rc = gguf_writer_write(w, path, err, errlen);
    else snprintf(err, errlen, "%s: could not build the GGUF", path);
    gguf_writer_free(w);
    gguf_close(tf);
    return rc;
}

/* The tower at src with every matrix (a tensor of more than one row) rounded to fp16: as F16 into
 * dst_f16, and as F32 holding the same rounded values into dst_f32 (what widening gives). 0 or -1. */
static inline int vm_rewrite_f16(const char *src, const char *dst_f16, const char *dst_f32, char *err, size_t errlen)
{
    gguf_file *g = gguf_open(src, err, errlen);
    if (!g) return -1;
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        gguf_writer *w = gguf_writer_new();
        rc = w ? 0 : -1;
        for (int64_t i = 0; rc == 0 && i < gguf_n_kv(g); i++) rc = gguf_writer_copy_kv(w, g, i);
        for (int64_t i = 0; rc == 0 && i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            const float *f = (const float *)t->data;
            const size_t n = (size_t)t->n_elements;
            if (t->ne[1] == 1 || t->type != GGML_TYPE_F32) {
                rc = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) < 0 ? -1 : 0;
                continue;
            }
            void *d = malloc(n * (k ? sizeof(float) : sizeof(uint16_t)));
            for (size_t j = 0; d && j < n; j++) {
                const uint16_t h = f32_to_fp16(f[j]);
                if (k) ((float *)d)[j] = fp16_to_f32(h);
                else ((uint16_t *)d)[j] = h;
            }
            rc = d && gguf_writer_add_tensor(w, t->name, k ? GGML_TYPE_F32 : GGML_TYPE_F16, t->n_dims, t->ne, d,
                                             n * (k ? sizeof(float) : sizeof(uint16_t))) >= 0 ? 0 : -1;
            free(d);
        }
        if (rc == 0) rc = gguf_writer_write(w, k ? dst_f32 : dst_f16, err, errlen);
        gguf_writer_free(w);
    }
    gguf_close(g);
    return rc;
}

/* A w x h picture with smooth gradients and some texture. */
static inline void vm_picture(int w, int h, uint64_t seed, uint8_t *rgb)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                const float g = 128.0f + 100.0f * sinf(0.21f * (float)(x * (c + 1)) + 0.13f * (float)(y * (3 - c)));
                const float v = g + 25.0f * uniform(&seed);
                rgb[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

#endif
