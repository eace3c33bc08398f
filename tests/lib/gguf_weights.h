/* gguf_weights.h: TEST-ONLY adapter that fills the model's hyperparameters
 * and weights straight from a GGUF file, so the forward pass can be checked
 * against llama.cpp's logits before the pack loader exists. The runtime
 * itself never reads a GGUF model (it loads packs).
 *
 * Contract: gguf_model_load() maps the file; F32 matrices become P32 and F16
 * matrices P16 views into the mapping; other types are dequantized to owned
 * f32 (P32), or, with keep_native, kept as WF_GGML views (keep_native 2:
 * with ggml's quantized activations, weight.act, as llama.cpp runs them). Norms and biases
 * are f32 (dequantized when stored otherwise). 3-D expert tensors become one
 * weight per expert (slice e along the slowest axis). Returns 0 or -1 with
 * one line in err. gguf_model_free() releases everything. */
#ifndef STRATA_TEST_GGUF_WEIGHTS_H
#define STRATA_TEST_GGUF_WEIGHTS_H

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "runtime/kernels/kernels.h"
#include "runtime/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gguf_model {
    gguf_file *f;
    model_hparams hp;
    model_weights w;
    void *owned[1024];
    int n_owned;
    int keep_native;
} gguf_model;

static int gw_get(void *ctx, const char *key, double *out)
{
    gguf_file *f = ctx;
    int64_t i = gguf_find_key(f, key);
    if (i < 0) return -1;
    int64_t iv;
    if (gguf_kv_type(f, i) == GGUF_TYPE_BOOL) { *out = *(const unsigned char *)gguf_kv_raw(f, i) != 0; return 0; }
    if (gguf_kv_f64(f, i, out) == 0) return 0;
    if (gguf_kv_i64(f, i, &iv) == 0) { *out = (double)iv; return 0; }
    return -1;
}

static void *gw_own(gguf_model *gm, size_t bytes)
{
    if (gm->n_owned == (int)(sizeof gm->owned / sizeof gm->owned[0])) return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p) gm->owned[gm->n_owned++] = p;
    return p;
}

/* f32 of a whole tensor: in place when F32, else a decoded copy. */
static const float *gw_f32(gguf_model *gm, const gguf_tensor *t)
{
    if (t->type == GGML_TYPE_F32) return (const float *)t->data;
    float *d = gw_own(gm, (size_t)t->n_elements * sizeof(float));
    if (!d || ggml_dequantize(t->type, t->data, d, t->n_elements) != 0) return NULL;
    return d;
}

static const float *gw_vec(gguf_model *gm, const char *name, int layer)
{
    char n[96];
    snprintf(n, sizeof n, name, layer);
    const gguf_tensor *t = gguf_find_tensor(gm->f, n);
    return t ? gw_f32(gm, t) : NULL;
}

/* Fills n_slices weights from a 2-D (n_slices 1) or 3-D tensor, or (n_slices 0) one weight of
 * all its rows. Absent: data NULL. */
static int gw_mat(gguf_model *gm, weight *w, int n_slices, const char *name, int layer)
{
    char n[96];
    snprintf(n, sizeof n, name, layer);
    const gguf_tensor *t = gguf_find_tensor(gm->f, n);
    memset(w, 0, sizeof *w * (size_t)(n_slices ? n_slices : 1));
    if (!t) return 0;
    int64_t cols = t->ne[0], rows = t->ne[1];
    if (n_slices == 0) { /* one weight of all ne1 x ne2 rows (MLA's per-head blocks) */
        rows *= t->ne[2];
        n_slices = 1;
    } else if (t->ne[2] != n_slices) {
        return -1;
    }
    const uint8_t *base = t->data;
    int form = WF_GGML;
    size_t rb = ggml_row_bytes(t->type, cols);
    if (t->type == GGML_TYPE_F32) form = WF_P32;
    else if (t->type == GGML_TYPE_F16) form = WF_P16;
    else if (!gm->keep_native) {
        base = (const uint8_t *)gw_f32(gm, t);
        if (!base) return -1;
        form = WF_P32;
        rb = (size_t)cols * 4;
    }
    for (int e = 0; e < n_slices; e++) {
        w[e].form = (wform)form;
        w[e].rows = rows;
        w[e].cols = cols;
        w[e].ggml_type = t->type;
        if (form == WF_GGML && gm->keep_native == 2) w[e].act = kernels_ggml_act(t->type);
        w[e].data = base + (size_t)e * (size_t)rows * rb;
    }
    return 0;
}

static void gguf_model_free(gguf_model *gm)
{
    for (int i = 0; i < gm->n_owned; i++) free(gm->owned[i]);
    if (gm->w.layers) {
        for (int l = 0; l < gm->hp.n_layer; l++) {
            free(gm->w.layers[l].exp_gate);
            free(gm->w.layers[l].exp_up);
            free(gm->w.layers[l].exp_down);
        }
        free(gm->w.layers);
    }
    gguf_close(gm->f);
    memset(gm, 0, sizeof *gm);
}

static int gguf_model_load(gguf_model *gm, const char *path, int keep_native, char *err, size_t errlen)
{
    memset(gm, 0, sizeof *gm);
    gm->keep_native = keep_native;
    gm->f = gguf_open(path, err, errlen);
    if (!gm->f) return -1;
    const char *arch = gguf_get_str(gm->f, "general.architecture");
    char rkey[160];
    snprintf(rkey, sizeof rkey, "%s.rope.scaling.type", arch ? arch : "");
    if (hparams_load(&gm->hp, arch, gw_get, gm->f, err, errlen) != 0 ||
        hparams_rope_scaling(&gm->hp, gguf_get_str(gm->f, rkey), err, errlen) != 0)
        goto fail;
    const model_hparams *hp = &gm->hp;
    int bad = gw_mat(gm, &gm->w.tok_embd, 1, "token_embd.weight%.0d", 0) |
              gw_mat(gm, &gm->w.output, 1, "output.weight%.0d", 0);
    gm->w.output_norm = gw_vec(gm, "output_norm.weight%.0d", 0);
    gm->w.rope_freqs = gw_vec(gm, "rope_freqs.weight%.0d", 0);
    if (gm->w.rope_freqs) gm->w.n_rope_freqs = (int)gguf_find_tensor(gm->f, "rope_freqs.weight")->ne[0];
    gm->w.layers = calloc((size_t)hp->n_layer, sizeof *gm->w.layers);
    if (!gm->w.layers) goto oom;
    for (int l = 0; l < hp->n_layer; l++) {
        layer_weights *L = &gm->w.layers[l];
        L->attn_norm = gw_vec(gm, "blk.%d.attn_norm.weight", l);
        char ffn_norm[64];
        snprintf(ffn_norm, sizeof ffn_norm, "blk.%%d.%s.weight", hp->arch.ffn_norm_name ? hp->arch.ffn_norm_name : "ffn_norm");
        L->ffn_norm = gw_vec(gm, ffn_norm, l);
        L->q_norm = gw_vec(gm, "blk.%d.attn_q_norm.weight", l);
        L->k_norm = gw_vec(gm, "blk.%d.attn_k_norm.weight", l);
        L->bq = gw_vec(gm, "blk.%d.attn_q.bias", l);
        L->bk = gw_vec(gm, "blk.%d.attn_k.bias", l);
        L->bv = gw_vec(gm, "blk.%d.attn_v.bias", l);
        L->exp_probs_b = gw_vec(gm, "blk.%d.exp_probs_b.bias", l);
        L->bo = gw_vec(gm, "blk.%d.attn_output.bias", l);
        L->sinks = gw_vec(gm, "blk.%d.attn_sinks.weight", l);
        L->router_b = gw_vec(gm, "blk.%d.ffn_gate_inp.bias", l);
        L->exp_gate_b = gw_vec(gm, "blk.%d.ffn_gate_exps.bias", l);
        L->exp_up_b = gw_vec(gm, "blk.%d.ffn_up_exps.bias", l);
        L->exp_down_b = gw_vec(gm, "blk.%d.ffn_down_exps.bias", l);
        L->q_a_norm = gw_vec(gm, "blk.%d.attn_q_a_norm.weight", l);
        L->kv_a_norm = gw_vec(gm, "blk.%d.attn_kv_a_norm.weight", l);
        bad |= gw_mat(gm, &L->wq_a, 1, "blk.%d.attn_q_a.weight", l) | gw_mat(gm, &L->wq_b, 1, "blk.%d.attn_q_b.weight", l) |
               gw_mat(gm, &L->wkv_a, 1, "blk.%d.attn_kv_a_mqa.weight", l) |
               gw_mat(gm, &L->wk_b, 0, "blk.%d.attn_k_b.weight", l) | gw_mat(gm, &L->wv_b, 0, "blk.%d.attn_v_b.weight", l);
        bad |= gw_mat(gm, &L->wq, 1, "blk.%d.attn_q.weight", l) | gw_mat(gm, &L->wk, 1, "blk.%d.attn_k.weight", l) |
               gw_mat(gm, &L->wv, 1, "blk.%d.attn_v.weight", l) |
               gw_mat(gm, &L->wo, 1, "blk.%d.attn_output.weight", l) |
               gw_mat(gm, &L->wqkv, 1, "blk.%d.attn_qkv.weight", l) |
               gw_mat(gm, &L->ffn_gate, 1, "blk.%d.ffn_gate.weight", l) |
               gw_mat(gm, &L->ffn_up, 1, "blk.%d.ffn_up.weight", l) |
               gw_mat(gm, &L->ffn_down, 1, "blk.%d.ffn_down.weight", l) |
               gw_mat(gm, &L->router, 1, "blk.%d.ffn_gate_inp.weight", l) |
               gw_mat(gm, &L->sh_gate, 1, "blk.%d.ffn_gate_shexp.weight", l) |
               gw_mat(gm, &L->sh_up, 1, "blk.%d.ffn_up_shexp.weight", l) |
               gw_mat(gm, &L->sh_down, 1, "blk.%d.ffn_down_shexp.weight", l) |
               gw_mat(gm, &L->sh_router, 1, "blk.%d.ffn_gate_inp_shexp.weight", l);
        if (hparams_layer_moe(hp, l)) {
            size_t n = (size_t)hp->n_expert;
            L->exp_gate = calloc(n, sizeof(weight));
            L->exp_up = calloc(n, sizeof(weight));
            L->exp_down = calloc(n, sizeof(weight));
            if (!L->exp_gate || !L->exp_up || !L->exp_down) goto oom;
            bad |= gw_mat(gm, L->exp_gate, hp->n_expert, "blk.%d.ffn_gate_exps.weight", l) |
                   gw_mat(gm, L->exp_up, hp->n_expert, "blk.%d.ffn_up_exps.weight", l) |
                   gw_mat(gm, L->exp_down, hp->n_expert, "blk.%d.ffn_down_exps.weight", l);
        }
    }
    if (bad) { snprintf(err, errlen, "%s: a tensor has an unexpected shape or cannot be decoded", path); goto fail; }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
fail:
    gguf_model_free(gm);
    return -1;
}

#endif
