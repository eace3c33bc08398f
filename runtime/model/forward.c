/* forward.c: the decoder's forward pass (the graph), one function per block
 * type, read top to bottom like the paper: embed -> per layer (attention
 * block, then a dense FFN block or a MoE block) -> final norm -> logits.
 * Every step is an op of the backend the model runs on (backend.h: the CPU's,
 * backend_cpu.c, or one bound at attach, such as CUDA's); an architecture's
 * feature is written here once, and a backend that lacks it says so in its
 * capability row (backend_check refuses the model then). Everything works on
 * a ubatch of B rows at consecutive positions. */
#include "runtime/model/model_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TRY(x)                       \
    do {                             \
        if ((x) != 0) return -1;     \
    } while (0)

/* Granite's residual multiplier on a block's output (one product each),
 * then the residual add. */
static int residual(model *m, float *y, int B)
{
    const size_t n = (size_t)B * m->hp.n_embd;
    if (m->hp.residual_scale != 0.0f) TRY(m->ops->scale(m->ctx, y, n, m->hp.residual_scale));
    return m->ops->add(m->ctx, m->bufs.x, y, n);
}

/* q/k norms: one weight over each head, or over the full width. */
static int qk_norm(model *m, float *v, int n_heads, const float *w, int B)
{
    const int hd = m->hp.head_dim;
    if (m->hp.arch.qk_norm == QK_NORM_FULL) return m->ops->rmsnorm(m->ctx, v, w, v, B, n_heads * hd);
    return m->ops->rmsnorm(m->ctx, v, w, v, B * n_heads, hd);
}

/* -------------------------------------------------------------- attention */

/* MLA (arch_info.mla), as llama.cpp's deepseek2 graph with absorbed
 * weights: each head's query is [k_b q_nope | rope(q_pe)], the one KV head
 * [norm(compressed) | rope(k_pe)] with the normed compressed row as V, and
 * each head's attention output goes back through v_b before o. With DSA
 * (arch_info.dsa, deepseek32's and glm-dsa's graphs) the lightning indexer
 * first chooses which positions the attention reads. */
static int mla_attention_block(model *m, int l, int B, int pos0)
{
    const backend_ops *op = m->ops;
    void *c = m->ctx;
    const backend_bufs *a = &m->bufs;
    const layer_weights *L = &m->bw->layers[l];
    const model_hparams *hp = &m->hp;
    const int H = hp->n_head, r = hp->n_lora_kv, rot = hp->n_rot, qk = hp->head_k_mla, nope = qk - rot;
    const int vd = hp->head_v_mla, kva_w = r + rot;
    TRY(op->rmsnorm(c, a->x, L->attn_norm, a->h, B, hp->n_embd));
    const bool lora = weight_present(&L->wq_a);
    if (B == 1) { /* decode: both products of h as one job */
        const mm_vec v[2] = { { lora ? &L->wq_a : &L->wq, a->h, lora ? a->mla_qa : a->mla_q },
                              { &L->wkv_a, a->h, a->mla_kva } };
        TRY(op->matvecs(c, v, 2, NULL));
    } else {
        TRY(op->matmul(c, lora ? &L->wq_a : &L->wq, a->h, B, lora ? a->mla_qa : a->mla_q));
        TRY(op->matmul(c, &L->wkv_a, a->h, B, a->mla_kva));
    }
    if (lora) {
        TRY(op->rmsnorm(c, a->mla_qa, L->q_a_norm, a->mla_qa, B, hp->n_lora_q));
        /* DSA: the lightning indexer picks the positions this layer's attention reads */
        if (hp->arch.dsa) TRY(op->indexer(c, l, B, pos0, a->h, a->mla_qa));
        TRY(op->matmul(c, &L->wq_b, a->mla_qa, B, a->mla_q));
    }
    TRY(op->rope(c, a->mla_q + nope, B, (size_t)H * qk, H, (size_t)qk, pos0));
    TRY(op->rope(c, a->mla_kva + r, B, (size_t)kva_w, 1, 0, pos0));
    for (int b = 0; b < B; b++) {
        float *kva = a->mla_kva + (size_t)b * kva_w;
        TRY(op->rmsnorm(c, kva, L->kv_a_norm, kva, 1, r));
    }
    /* K = [compressed | rotated], V = compressed; each head's query ends in its rotated part */
    TRY(op->copy_rows(c, a->kx, (size_t)m->kv_dim, a->mla_kva, (size_t)kva_w, B, kva_w));
    TRY(op->copy_rows(c, a->vx, (size_t)m->kv_dim_v, a->mla_kva, (size_t)kva_w, B, r));
    for (int b = 0; b < B; b++)
        TRY(op->copy_rows(c, a->q + (size_t)b * m->q_dim + r, (size_t)kva_w, a->mla_q + (size_t)b * H * qk + nope,
                          (size_t)qk, H, rot));
    /* the absorbed queries: q_nope through each head's k_b block */
    TRY(op->mla_per_head(c, l, false, B, a->mla_q, (size_t)H * qk, (size_t)qk, nope, a->q, (size_t)m->q_dim,
                         (size_t)kva_w));
    const mm_next next_o = { 0, { NULL } };
    TRY(op->attention(c, l, B, pos0, &next_o));
    TRY(op->mla_per_head(c, l, true, B, a->att, (size_t)m->att_dim, (size_t)r, r, a->mla_o, (size_t)H * vd,
                         (size_t)vd));
    TRY(op->matmul(c, &L->wo, a->mla_o, B, a->o));
    return residual(m, a->o, B);
}

static int attention_block(model *m, int l, int B, int pos0)
{
    const backend_ops *op = m->ops;
    void *c = m->ctx;
    const backend_bufs *a = &m->bufs;
    const layer_weights *L = &m->bw->layers[l];
    const model_hparams *hp = &m->hp;
    TRY(op->rmsnorm(c, a->x, L->attn_norm, a->h, B, hp->n_embd));
    /* Decode: the o projection comes next (after attention), so threads
     * that finish early warm their first rows of it (mm_next). */
    const mm_next next_o = { 1, { &L->wo } };
    /* Qwen3-Next: each head's q is followed by its output gate in wq's rows */
    const bool gated = hp->arch.attn_out_gate;
    float *qout = gated ? a->qg : a->q;
    if (B == 1) { /* decode: q, k and v as one job */
        const mm_vec v[3] = { { &L->wq, a->h, qout }, { &L->wk, a->h, a->kx }, { &L->wv, a->h, a->vx } };
        TRY(op->matvecs(c, v, 3, &next_o));
    } else {
        TRY(op->matmul(c, &L->wq, a->h, B, qout));
        TRY(op->matmul(c, &L->wk, a->h, B, a->kx));
        TRY(op->matmul(c, &L->wv, a->h, B, a->vx));
    }
    if (gated) { /* every (row, head): q from the first head_dim, the gate from the second */
        const size_t hd = (size_t)hp->head_dim;
        TRY(op->copy_rows(c, a->q, hd, a->qg, 2 * hd, B * hp->n_head, (int)hd));
        TRY(op->copy_rows(c, a->qgate, hd, a->qg + hd, 2 * hd, B * hp->n_head, (int)hd));
    }
    TRY(op->add_bias(c, a->q, L->bq, B, m->q_dim));
    TRY(op->add_bias(c, a->kx, L->bk, B, m->kv_dim));
    TRY(op->add_bias(c, a->vx, L->bv, B, m->kv_dim));
    const bool qk_normed = hp->arch.qk_norm != QK_NORM_NONE && L->q_norm;
    if (qk_normed && !hp->arch.qk_norm_after_rope) {
        TRY(qk_norm(m, a->q, hp->n_head, L->q_norm, B));
        TRY(qk_norm(m, a->kx, hp->n_head_kv, L->k_norm, B));
    }
    const bool rope = hparams_layer_rope(hp, l);
    if (rope) {
        TRY(op->rope(c, a->q, B, (size_t)m->q_dim, hp->n_head, (size_t)hp->head_dim, pos0));
        TRY(op->rope(c, a->kx, B, (size_t)m->kv_dim, hp->n_head_kv, (size_t)hp->head_dim, pos0));
    } else if (hp->attn_chunk > 0) {
        TRY(op->attn_temp(c, a->q, B, pos0)); /* Llama 4's no-RoPE layers */
    }
    if (qk_normed && hp->arch.qk_norm_after_rope) {
        TRY(qk_norm(m, a->q, hp->n_head, L->q_norm, B));
        TRY(qk_norm(m, a->kx, hp->n_head_kv, L->k_norm, B));
    }
    /* Llama4TextL2Norm: per head, no weight, after RoPE (not with 128 experts: Maverick) */
    if (rope && hp->arch.l2_qk_norm && hp->n_expert != 128) {
        TRY(op->rmsnorm(c, a->q, NULL, a->q, B * hp->n_head, hp->head_dim));
        TRY(op->rmsnorm(c, a->kx, NULL, a->kx, B * hp->n_head_kv, hp->head_dim));
    }
    TRY(op->attention(c, l, B, pos0, &next_o));
    if (gated) TRY(op->mul_sigmoid(c, a->att, a->qgate, (size_t)B * m->att_dim));
    if (B == 1) {
        /* The FFN's first mat-vec job after o: the router, or gate and up. */
        mm_next next = { 1, { &L->router } };
        if (!hparams_layer_moe(hp, l)) next = (mm_next){ 2, { &L->ffn_gate, &L->ffn_up } };
        const mm_vec v = { &L->wo, a->att, a->o };
        TRY(op->matvecs(c, &v, 1, &next));
    } else {
        TRY(op->matmul(c, &L->wo, a->att, B, a->o));
    }
    TRY(op->add_bias(c, a->o, L->bo, B, hp->n_embd));
    return residual(m, a->o, B);
}

/* Qwen3-Next's linear attention (hparams_layer_recurrent): the backend's
 * Gated DeltaNet over the normed rows, its recurrent state moving on. */
static int gdn_block(model *m, int l, int B)
{
    const backend_bufs *a = &m->bufs;
    TRY(m->ops->rmsnorm(m->ctx, a->x, m->bw->layers[l].attn_norm, a->h, B, m->hp.n_embd));
    TRY(m->ops->gdn(m->ctx, l, B, a->h, a->o));
    return residual(m, a->o, B);
}

/* -------------------------------------------------------------------- FFN */

static int ffn_block(model *m, int l, int B)
{
    const layer_weights *L = &m->bw->layers[l];
    const backend_bufs *a = &m->bufs;
    TRY(m->ops->rmsnorm(m->ctx, a->x, L->ffn_norm, a->h, B, m->hp.n_embd));
    TRY(m->ops->ffn(m->ctx, &L->ffn_gate, &L->ffn_up, &L->ffn_down, a->h, B, a->o));
    return residual(m, a->o, B);
}

/* Router, routed experts (the backend's dispatch), then the shared expert
 * with its optional sigmoid gate. */
static int moe_block(model *m, int l, int B)
{
    const backend_ops *op = m->ops;
    void *c = m->ctx;
    const backend_bufs *a = &m->bufs;
    const layer_weights *L = &m->bw->layers[l];
    const int K = m->hp.n_expert_used, D = m->hp.n_embd;
    TRY(op->rmsnorm(c, a->x, L->ffn_norm, a->h, B, D));
    TRY(op->matmul(c, &L->router, a->h, B, a->rlog));
    TRY(op->add_bias(c, a->rlog, L->router_b, B, m->hp.n_expert));
    const int *sel;
    TRY(op->route(c, l, B, &sel));
    if (m->routing || m->trace)
        for (int b = 0; b < B; b++) model_observe_routing(m, l, sel + b * K);
    if (m->moe_in_fn && m->moe_in_fn(m->moe_in_ctx, l, B, a->h, sel, m->cpu_err, sizeof m->cpu_err)) return -1;
    TRY(op->moe(c, l, B));
    if (weight_present(&L->sh_gate)) {
        TRY(op->ffn(c, &L->sh_gate, &L->sh_up, &L->sh_down, a->h, B, a->gd));
        TRY(op->gate_add(c, &L->sh_router, a->h, a->gd, B, D, a->o));
    }
    return residual(m, a->o, B);
}

/* ------------------------------------------------- next-token prediction */

/* GLM-4.5's, DeepSeek V3's and Ling 2.0's MTP entry (model_create_mtp): the token's
 * embedding (in x) and the main model's output row, each through its own
 * norm, side by side through eh_proj into x. The rows come from the host:
 * a draft model runs on the CPU. */
static int mtp_entry(model *m, const float *hidden, int B)
{
    const backend_ops *op = m->ops;
    void *c = m->ctx;
    const backend_bufs *a = &m->bufs;
    const layer_weights *L = &m->bw->layers[0];
    const int D = m->hp.n_embd;
    TRY(op->rmsnorm(c, a->x, L->enorm, a->x, B, D));
    TRY(op->rmsnorm(c, hidden, L->hnorm, a->h, B, D));
    TRY(op->copy_rows(c, m->mtp_cat, 2 * (size_t)D, a->x, (size_t)D, B, D));
    TRY(op->copy_rows(c, m->mtp_cat + D, 2 * (size_t)D, a->h, (size_t)D, B, D));
    return op->matmul(c, &L->eh_proj, m->mtp_cat, B, a->x);
}

/* ---------------------------------------------------------------- forward */

enum want { WANT_NONE, WANT_LAST, WANT_ALL };

static int forward_ubatch(model *m, const int32_t *tokens, const float *hidden, int B, float *logits,
                          enum want want)
{
    const backend_ops *op = m->ops;
    void *c = m->ctx;
    const backend_bufs *a = &m->bufs;
    const model_hparams *hp = &m->hp;
    const int pos0 = m->n_past;
    const size_t D = (size_t)hp->n_embd;
    /* interleaved M-RoPE: text rows take consecutive positions after the last slot's (a picture's
     * rows were given theirs by model_forward_image) */
    if (hp->arch.mrope_sections && tokens) {
        const int32_t t0 = pos0 > 0 ? m->pos_next[pos0 - 1] : 0;
        for (int b = 0; b < B; b++) {
            m->mpos[3 * b] = m->mpos[3 * b + 1] = m->mpos[3 * b + 2] = t0 + b;
            m->pos_next[pos0 + b] = t0 + b + 1;
        }
    }
    TRY(op->begin(c, tokens, B, pos0));
    if (!tokens) TRY(op->copy_rows(c, a->x, D, m->img_rows, (size_t)m->img_width, B, (int)D));
    if (hp->embd_scale != 0.0f) TRY(op->scale(c, a->x, (size_t)B * hp->n_embd, hp->embd_scale));
    if (hidden) TRY(mtp_entry(m, hidden, B));
    for (int l = 0; l < hp->n_layer; l++) {
        TRY(hparams_layer_recurrent(hp, l) ? gdn_block(m, l, B)
            : hp->arch.mla                 ? mla_attention_block(m, l, B, pos0)
                                           : attention_block(m, l, B, pos0));
        TRY(hparams_layer_moe(hp, l) ? moe_block(m, l, B) : ffn_block(m, l, B));
        /* Qwen3-VL's deepstack: the tower's k-th feature rows join the residual after layer k */
        if (!tokens && l < hp->n_deepstack) {
            TRY(op->copy_rows(c, a->o, D, m->img_rows + (size_t)(l + 1) * D, (size_t)m->img_width, B, (int)D));
            TRY(op->add(c, a->x, a->o, (size_t)B * D));
        }
    }
    const weight *out = weight_present(&m->bw->output) ? &m->bw->output : &m->bw->tok_embd;
    /* a hidden-row sink wants every row normed; each row's norm is the same
     * float code either way, so the logits keep their bits */
    const bool sink = m->hidden_fn != NULL;
    if (want == WANT_ALL || sink) TRY(op->rmsnorm(c, a->x, m->bw->output_norm, a->h, B, hp->n_embd));
    if (want == WANT_ALL) {
        TRY(op->logits(c, out, a->h, B, logits));
    } else if (want == WANT_LAST) {
        if (!sink) TRY(op->rmsnorm(c, a->x + (size_t)(B - 1) * D, m->bw->output_norm, a->h, 1, hp->n_embd));
        TRY(op->logits(c, out, a->h + (sink ? (size_t)(B - 1) * D : 0), 1, logits));
    } else if (op->sync) {
        TRY(op->sync(c));
    }
    if (hp->logit_scale != 0.0f && want != WANT_NONE) {
        const float s = 1.0f / hp->logit_scale; /* llama.cpp scales by the float reciprocal */
        const size_t n = (want == WANT_ALL ? (size_t)B : 1) * (size_t)hp->n_vocab;
        for (size_t i = 0; i < n; i++) logits[i] *= s;
    }
    m->n_past += B;
    /* the sink may run a draft model on the shared threads: this pass is done */
    if (sink && m->hidden_fn(m->hidden_ctx, pos0, B, a->h, m->cpu_err, sizeof m->cpu_err)) return -1;
    return 0;
}

static int forward(model *m, const int32_t *tokens, const float *hidden, int n, float *logits, bool all_logits,
                   char *err, size_t errlen)
{
    if (n < 1) { snprintf(err, errlen, "forward: no tokens"); return -1; }
    if (n > m->n_ctx - m->n_past) {
        snprintf(err, errlen, "context overflow: %d cached + %d new tokens > n_ctx %d", m->n_past, n,
                 m->n_ctx);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab) {
            snprintf(err, errlen, "token %d at index %d is outside the vocabulary (%d)", tokens[i], i,
                     m->hp.n_vocab);
            return -1;
        }
    for (int i = 0; i < n; i += m->opt.n_batch) {
        int B = n - i < m->opt.n_batch ? n - i : m->opt.n_batch;
        /* Without all_logits only the last ubatch's last row is computed. */
        enum want w = all_logits ? WANT_ALL : (i + B == n ? WANT_LAST : WANT_NONE);
        if (forward_ubatch(m, tokens + i, hidden ? hidden + (size_t)i * m->hp.n_embd : NULL, B,
                           all_logits ? logits + (size_t)i * m->hp.n_vocab : logits, w)) {
            snprintf(err, errlen, "%s", m->ops->error(m->ctx));
            return -1;
        }
    }
    return 0;
}

int model_forward(model *m, const int32_t *tokens, int n, float *logits, bool all_logits, char *err,
                  size_t errlen)
{
    if (m->mtp) { snprintf(err, errlen, "a draft model's forward needs the main model's rows"); return -1; }
    return forward(m, tokens, NULL, n, logits, all_logits, err, errlen);
}

int model_forward_mtp(model *m, const int32_t *tokens, const float *hidden, int n, float *logits, bool all_logits,
                      char *err, size_t errlen)
{
    if (!m->mtp || !hidden) { snprintf(err, errlen, "not a draft model over a next-token-prediction block"); return -1; }
    return forward(m, tokens, hidden, n, logits, all_logits, err, errlen);
}

int model_forward_image(model *m, const float *rows, int width, int nx, int ny, char *err, size_t errlen)
{
    const model_hparams *hp = &m->hp;
    const int need = hp->n_embd * (1 + hp->n_deepstack);
    if (m->mtp || hp->arch.gated_delta_net || hp->arch.mla || hp->arch.dsa) {
        snprintf(err, errlen, "%s takes no picture rows", m->mtp ? "a draft model" : hp->arch.name);
        return -1;
    }
    if (m->ops != &backend_cpu) {
        snprintf(err, errlen, "the %s backend does not take pictures yet (--device cpu does)", m->ops->caps->name);
        return -1;
    }
    if (width != need) {
        snprintf(err, errlen, "picture rows of %d floats; this model takes %d (width %d and %d deepstack features): "
                 "the vision projector does not belong to this model", width, need, hp->n_embd, hp->n_deepstack);
        return -1;
    }
    if (nx < 1 || ny < 1 || nx > m->n_ctx || ny > m->n_ctx / nx) {
        snprintf(err, errlen, "a picture of %d x %d rows does not fit the context (%d)", nx, ny, m->n_ctx);
        return -1;
    }
    const int n = nx * ny;
    if (n > m->n_ctx - m->n_past) {
        snprintf(err, errlen, "context overflow: %d cached + %d picture rows > n_ctx %d", m->n_past, n, m->n_ctx);
        return -1;
    }
    /* llama.cpp's mtmd: with M-RoPE every row at t (the next text position), y and x on the grid in
     * raster order, the text after the picture continuing at t + max(nx, ny); else the rows take the
     * next positions one by one, as text does */
    const bool mrope = hp->arch.mrope_sections;
    const int32_t t = mrope && m->n_past > 0 ? m->pos_next[m->n_past - 1] : 0;
    const int32_t next = t + (nx > ny ? nx : ny);
    m->img_width = width;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i += m->opt.n_batch) {
        const int B = n - i < m->opt.n_batch ? n - i : m->opt.n_batch;
        for (int b = 0; mrope && b < B; b++) {
            m->mpos[3 * b] = t;
            m->mpos[3 * b + 1] = t + (i + b) / nx;
            m->mpos[3 * b + 2] = t + (i + b) % nx;
            m->pos_next[m->n_past + b] = next;
        }
        m->img_rows = rows + (size_t)i * (size_t)width;
        rc = forward_ubatch(m, NULL, NULL, B, NULL, WANT_NONE);
        if (rc) snprintf(err, errlen, "%s", m->ops->error(m->ctx));
    }
    m->img_rows = NULL;
    return rc ? -1 : 0;
}
