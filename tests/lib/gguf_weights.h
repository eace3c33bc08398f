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
 * weight per expert (slice e along the slowest axis). The tensors and their
 * names are the pack loader's (weight_slots.h, formats/tensor_names.h). Returns 0 or -1 with
 * one line in err. gguf_model_free() releases everything. */
#ifndef STRATA_TEST_GGUF_WEIGHTS_H
#define STRATA_TEST_GGUF_WEIGHTS_H

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "formats/hparam_keys.h"
#include "formats/tensor_names.h"
#include "runtime/kernels/kernels.h"
#include "runtime/model/model.h"
#include "runtime/model/weight_slots.h"

#include <math.h>
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
    char base[160];
    int e;
    if (hparam_elem_split(key, base, sizeof base, &e)) { /* an array's element: "<key>[e]" */
        int64_t v[8];
        const int64_t n = gguf_get_int_array(f, base, v, 8);
        if (n < 0) return -1;
        *out = e < n && e < 8 ? (double)v[e] : NAN;
        return 0;
    }
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

static const float *gw_vec(gguf_model *gm, tensor_role role, int layer)
{
    char n[96];
    tensor_name(n, sizeof n, role, layer);
    const gguf_tensor *t = gguf_find_tensor(gm->f, n);
    return t ? gw_f32(gm, t) : NULL;
}

/* Fills n_slices weights from a 2-D (n_slices 1) or 3-D tensor, or (n_slices 0) one weight of
 * all its rows. Absent: data NULL. */
static int gw_mat(gguf_model *gm, weight *w, int n_slices, tensor_role role, int layer)
{
    char n[96];
    tensor_name(n, sizeof n, role, layer);
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
        for (int l = 0; l < gm->hp.n_layer + gm->w.n_mtp; l++) {
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
    int bad = gw_mat(gm, &gm->w.tok_embd, 1, TN_TOKEN_EMBD, 0) | gw_mat(gm, &gm->w.output, 1, TN_OUTPUT, 0);
    gm->w.output_norm = gw_vec(gm, TN_OUTPUT_NORM, 0);
    gm->w.rope_freqs = gw_vec(gm, TN_ROPE_FREQS, 0);
    char rf[96];
    if (gm->w.rope_freqs)
        gm->w.n_rope_freqs = (int)gguf_find_tensor(gm->f, tensor_name(rf, sizeof rf, TN_ROPE_FREQS, 0))->ne[0];
    /* the next-token-prediction blocks too, when the file has them (as the pack loader) */
    gm->w.n_mtp = hp->n_nextn > 0 && hp->arch.mtp && gguf_find_tensor(gm->f, tensor_name(rf, sizeof rf, TN_NEXTN_EH_PROJ, hp->n_layer))
                      ? hp->n_nextn : 0;
    gm->w.layers = calloc((size_t)(hp->n_layer + gm->w.n_mtp), sizeof *gm->w.layers);
    if (!gm->w.layers) goto oom;
    for (int l = 0; l < hp->n_layer + gm->w.n_mtp; l++) {
        layer_weights *L = &gm->w.layers[l];
        for (int k = 0; k < N_LAYER_SLOTS; k++) { /* the pack loader's table; lengths are model_create()'s to check */
            const weight_slot *s = &LAYER_SLOTS[k];
            const tensor_role role = tensor_arch_role(hp->arch.name, s->role);
            if (s->kind == SLOT_VEC) *slot_vec(L, s) = gw_vec(gm, role, l);
            else bad |= gw_mat(gm, slot_mat(L, s), s->kind == SLOT_BLOCKS ? 0 : 1, role, l);
        }
        if (hparams_layer_moe(hp, l)) {
            size_t n = (size_t)hp->n_expert;
            L->exp_gate = calloc(n, sizeof(weight));
            L->exp_up = calloc(n, sizeof(weight));
            L->exp_down = calloc(n, sizeof(weight));
            if (!L->exp_gate || !L->exp_up || !L->exp_down) goto oom;
            bad |= gw_mat(gm, L->exp_gate, hp->n_expert, TN_FFN_GATE_EXPS, l) |
                   gw_mat(gm, L->exp_up, hp->n_expert, TN_FFN_UP_EXPS, l) |
                   gw_mat(gm, L->exp_down, hp->n_expert, TN_FFN_DOWN_EXPS, l);
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
