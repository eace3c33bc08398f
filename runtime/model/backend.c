/* backend.c: what binds a backend to a model (backend.h): the capability
 * check that refuses a model the backend cannot run, the binding itself, and
 * the few things of the host model a backend reads. */
#include "runtime/model/model_impl.h"

#include <stdio.h>

/* The first feature of the model the row lacks, as the refusal names it. */
static const char *missing_attention(const backend_caps *c, const arch_info *a, const model_hparams *hp)
{
    const bool llama4 = a->l2_qk_norm || a->weight_before_ffn || hp->no_rope_step > 0 || hp->attn_chunk > 0;
    const bool sinks_swa = a->attn_sinks || a->swa_pattern > 0;
    if (a->mla && !c->mla) return "multi-head latent attention";
    if (a->dsa && !c->dsa) return "the lightning indexer's sparse attention (DSA)";
    if (sinks_swa && !c->sinks_swa) return "attention sinks and sliding-window layers";
    if (a->qk_norm_after_rope && !c->qk_norm_after_rope) return "q/k norms after RoPE";
    if (a->qk_norm_optional && !c->qk_norm_optional) return "q/k norms on some layers only";
    if (llama4 && !c->llama4) return "no-RoPE layers, chunked attention and L2 q/k norms";
    return NULL;
}

int backend_check(const backend_caps *c, const model *m, char *err, size_t errlen)
{
    const model_hparams *hp = &m->hp;
    if (m->opt.kv != KV_F16 && !c->kv_f32) {
        snprintf(err, errlen, "the %s backend keeps an f16 KV cache (--kv-type f32 runs on the CPU: --device cpu)",
                 c->name);
        return -1;
    }
    if ((hp->embd_scale != 0 || hp->residual_scale != 0 || hp->attn_scale != 0 || hp->logit_scale != 0) &&
        !c->granite_scales) {
        snprintf(err, errlen, "the %s backend does not apply Granite's multipliers yet (--device cpu)", c->name);
        return -1;
    }
    if (!hparams_mrope_text_plain(hp) && !c->mrope) {
        snprintf(err, errlen, "the %s backend does not run %s's M-RoPE sections yet (--device cpu)", c->name,
                 hp->arch.name);
        return -1;
    }
    if ((hp->arch.gated_delta_net || hp->arch.attn_out_gate) && !c->gated_delta_net) {
        snprintf(err, errlen, "the %s backend does not run %s's Gated DeltaNet layers yet (--device cpu)", c->name,
                 hp->arch.name);
        return -1;
    }
    bool probs_b = false;
    for (int l = 0; l < hp->n_layer; l++) probs_b |= m->w.layers[l].exp_probs_b != NULL;
    if ((hp->gating != GATING_SOFTMAX || probs_b || (hp->arch.scale_w && hp->expert_weights_scale != 0) ||
         hp->n_group) &&
        !c->routing) {
        snprintf(err, errlen, "the %s router does softmax top-k only (sigmoid or gpt-oss gating, a selection bias, "
                 "a weight scale or grouped routing: --device cpu)", c->name);
        return -1;
    }
    if ((hp->n_layer_dense_lead > 0 || hp->n_moe_layer_step > 1) && !c->mixed_layers) {
        snprintf(err, errlen, "the %s backend runs all-MoE or all-dense models (this one starts with %d dense "
                 "layers: --device cpu)", c->name, hp->n_layer_dense_lead);
        return -1;
    }
    /* Most models refused here are also refused for their routing above;
     * this says what the backend lacks even where the routing would pass
     * (Hunyuan routes by softmax). */
    const char *att = missing_attention(c, &hp->arch, hp);
    if (att) {
        snprintf(err, errlen, "the %s backend does not run %s's attention yet (%s: --device cpu)", c->name,
                 hp->arch.name, att);
        return -1;
    }
    if ((hparams_rope_scaled(hp) || m->w.rope_freqs) && !c->rope_scaled) {
        snprintf(err, errlen, "the %s backend has plain RoPE only (this model scales its angles: --device cpu)",
                 c->name);
        return -1;
    }
    if ((c->max_head_dim > 0 && hp->head_dim > c->max_head_dim) || (!c->gqa_uneven && hp->n_head % hp->n_head_kv)) {
        snprintf(err, errlen, "the %s attention needs head_dim <= %d and n_head a multiple of n_head_kv (%d, %d/%d)",
                 c->name, c->max_head_dim, hp->head_dim, hp->n_head, hp->n_head_kv);
        return -1;
    }
    return 0;
}

int model_bind_backend(model *m, const backend_ops *ops, void *ctx, const model_weights *w,
                       const backend_bufs *bufs, char *err, size_t errlen)
{
    if (m->ops != &backend_cpu || m->n_past) {
        snprintf(err, errlen, "device_attach: the model is already attached or has evaluated tokens");
        return -1;
    }
    m->ops = ops;
    m->ctx = ctx;
    m->bw = w;
    m->bufs = *bufs;
    return 0;
}

void *model_backend_ctx(const model *m, const backend_ops *ops) { return m->ops == ops ? m->ctx : NULL; }

const model_weights *model_host_weights(const model *m) { return &m->w; }

const model_options *model_opts(const model *m) { return &m->opt; }
