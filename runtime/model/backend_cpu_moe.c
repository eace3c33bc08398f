/* backend_cpu_moe.c: the CPU backend's FFN and MoE ops (backend.h): a dense
 * or shared FFN, the router (softmax, sigmoid or gpt-oss gating, selection
 * bias, groups, renormalisation), the routed experts (a decode step's K
 * experts as two pool jobs, a batch's gathered per expert) and their
 * weighted sum, the shared expert's gate. */
#include "runtime/model/backend_cpu.h"

#include "formats/hadamard.h"
#include "runtime/model/expert_tier.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* a = silu(a) * b over `rows` rows of ff, each row as ggml_vec_swiglu_f32
 * does it (kernels.h: its expf on whole groups of 8, libm's on the tail). */
static void swiglu_rows(const model *m, float *a, const float *b, int64_t rows, int64_t ff)
{
    for (int64_t r = 0; r < rows; r++) m->k->swiglu_f32(a + r * ff, b + r * ff, ff);
}

static void add_bias(float *y, const float *bias, int B, int n)
{
    if (!bias) return;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++) y[(size_t)b * n + i] += bias[i];
}


int cpu_add_bias(void *c, float *y, const float *bias, int rows, int n)
{
    (void)c;
    add_bias(y, bias, rows, n);
    return 0;
}

/* -------------------------------------------------------------------- FFN */

/* out = down(silu(gate(h)) * up(h)) for B rows of h: a dense or shared
 * FFN, its f32 batch products summed as llama.cpp's mul_mat does (a routed
 * expert's: expert_ffn). */
static void swiglu(model *m, const weight *gate, const weight *up, const weight *down, const float *h,
                   int B, float *out)
{
    const int64_t ff = gate->rows;
    mm_mul2(&m->mm, gate, up, h, B, m->ffa, m->ffb);
    swiglu_rows(m, m->ffa, m->ffb, B, ff);
    mm_mul(&m->mm, down, m->ffa, B, out);
}

/* gpt-oss's GLU (arch.oai_moe) over `rows` rows of ff, as ggml's
 * swiglu_oai: x = min(a, 7), y = clamp(b, -7, 7), a = x sigmoid(1.702 x)
 * (y + 1), with std::min's and std::clamp's comparisons (NaN passes) and
 * libm's expf. */
static void oai_glu_rows(float *a, const float *b, int64_t rows, int64_t ff)
{
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < rows * ff; i++) {
        const float x = limit < a[i] ? limit : a[i];
        const float y = b[i] < -limit ? -limit : limit < b[i] ? limit : b[i];
        const float g = x / (1.0f + expf(alpha * (-x)));
        a[i] = g * (y + 1.0f);
    }
}

/* A routed expert's GLU: SwiGLU, or gpt-oss's */
static void expert_glu_rows(const model *m, float *a, const float *b, int64_t rows, int64_t ff)
{
    if (m->hp.arch.oai_moe) oai_glu_rows(a, b, rows, ff);
    else swiglu_rows(m, a, b, rows, ff);
}

/* Expert e's bias row of one part (n_expert x n rows), added to `rows` rows of y (gpt-oss). */
static void add_expert_bias(float *y, const float *bias, int e, int rows, int64_t n)
{
    if (bias) add_bias(y, bias + (size_t)e * (size_t)n, rows, (int)n);
}

/* Rotated experts (weight.h's rotate): B rows of x as the gate or up
 * (w) takes them: x itself, or rotated into m->hrot (the loader lets gate
 * and up share one block, so one copy serves both). */
static const float *rotated_rows(model *m, const weight *w, const float *x, int B)
{
    if (!w->rotate) return x;
    if (x != m->hrot) memcpy(m->hrot, x, (size_t)B * (size_t)w->cols * sizeof *x);
    hadamard_rows(m->hrot, B, w->cols, w->rotate);
    return m->hrot;
}

/* A rotated down's input, the GLU's rows in place (after the calibration
 * sink has seen them in the model's own basis). */
static void rotate_hidden(const weight *down, float *a, int B)
{
    if (down->rotate) hadamard_rows(a, B, down->cols, down->rotate);
}

/* Routed expert e over B rows of h: the FFN of swiglu(), its f32 batch
 * products summed row by row (mm_ctx.rowwise) as llama.cpp's mul_mat_id
 * does, plus gpt-oss's bias rows after each product and its own GLU. The
 * parts come from the loaded weights or the expert tier's slot. */
static void expert_ffn(model *m, const layer_weights *L, int e, const weight *gate, const weight *up,
                       const weight *down, const float *h, int B, float *out)
{
    const int64_t ff = gate->rows, D = down->rows;
    m->mm.rowwise = 1;
    const float *hr = gate->rotate || up->rotate ? rotated_rows(m, gate->rotate ? gate : up, h, B) : h;
    if (gate->rotate == up->rotate) {
        mm_mul2(&m->mm, gate, up, hr, B, m->ffa, m->ffb);
    } else {
        mm_mul(&m->mm, gate, gate->rotate ? hr : h, B, m->ffa);
        mm_mul(&m->mm, up, up->rotate ? hr : h, B, m->ffb);
    }
    add_expert_bias(m->ffa, L->exp_gate_b, e, B, ff);
    add_expert_bias(m->ffb, L->exp_up_b, e, B, ff);
    expert_glu_rows(m, m->ffa, m->ffb, B, ff);
    if (m->exp_hid_fn && m->exp_hid_fn(m->exp_hid_ctx, m->moe_layer, e, B, m->ffa)) m->exp_hid_failed = true;
    rotate_hidden(down, m->ffa, B);
    mm_mul(&m->mm, down, m->ffa, B, out);
    add_expert_bias(out, L->exp_down_b, e, B, D);
    m->mm.rowwise = 0;
}

/* Reads ahead of the expert being computed in a batch (each pins a slot). */
#define TIER_AHEAD 4

void model_expert_cpu(model *m, int layer, int expert, const float *x, int n, float *out)
{
    const layer_weights *L = &m->w.layers[layer];
    if (!m->opt.tier) {
        expert_ffn(m, L, expert, &L->exp_gate[expert], &L->exp_up[expert], &L->exp_down[expert], x, n, out);
        return;
    }
    /* (the CUDA backend's CPU misses; it does not run with a tier) */
    tier_ref r;
    const weight *g, *u, *d;
    char err[256];
    if (tier_get(m->opt.tier, layer, &expert, 1, &r, err, sizeof err) ||
        tier_wait(m->opt.tier, &r, &g, &u, &d, err, sizeof err)) {
        memset(out, 0, (size_t)n * (size_t)m->hp.n_embd * sizeof *out);
        tier_put(m->opt.tier, &r);
        return;
    }
    expert_ffn(m, L, expert, g, u, d, x, n, out);
    tier_put(m->opt.tier, &r);
}

int cpu_ffn(void *c, const weight *gate, const weight *up, const weight *down, const float *x, int B, float *out)
{
    swiglu(c, gate, up, down, x, B, out);
    return 0;
}

/* -------------------------------------------------------------------- MoE */

/* Softmax (ggml's, runtime/kernels/ggml_order.h) or sigmoid over the router
 * logits, the top-k by probability plus the layer's selection bias if any
 * (ties: lower index first, as a stable sort gives), the weights the
 * unbiased probabilities, optionally renormalised as llama.cpp does (a
 * double sum, clamped, then a float division) and scaled. gpt-oss's
 * SOFTMAX_WEIGHT selects by the logits themselves and takes the softmax
 * of the K chosen as their weights. */
static void route(const model *m, const float *bias, const float *logits, int *sel, float *w)
{
    const int E = m->hp.n_expert, K = m->hp.n_expert_used;
    float p[256], biased[256];
    if (m->hp.gating == GATING_SIGMOID)
        for (int e = 0; e < E; e++) p[e] = 1.0f / (1.0f + expf(-logits[e]));
    else if (m->hp.gating == GATING_SOFTMAX_WEIGHT)
        memcpy(p, logits, (size_t)E * sizeof *p);
    else
        m->k->softmax_f32(logits, E, p, -INFINITY);
    const float *by = p;
    if (bias || m->hp.n_group) {
        for (int e = 0; e < E; e++) biased[e] = bias ? p[e] + bias[e] : p[e];
        by = biased;
    }
    if (m->hp.n_group) {
        /* llama.cpp's build_moe_ffn: a group scores the sum of its two best selection scores; the
         * n_group_used best groups stay, the other experts are masked out (-inf) */
        const int G = m->hp.n_group, per = E / G;
        float score[256];
        bool keep[256] = { false };
        for (int g = 0; g < G; g++) {
            float a = -INFINITY, b = -INFINITY;
            for (int e = g * per; e < (g + 1) * per; e++) {
                if (biased[e] > a) { b = a; a = biased[e]; }
                else if (biased[e] > b) b = biased[e];
            }
            score[g] = per > 1 ? a + b : a;
        }
        for (int j = 0; j < m->hp.n_group_used; j++) {
            int best = -1;
            for (int g = 0; g < G; g++)
                if (!keep[g] && (best < 0 || score[g] > score[best])) best = g;
            keep[best] = true;
        }
        for (int e = 0; e < E; e++)
            if (!keep[e / per]) biased[e] = -INFINITY;
    }
    for (int j = 0; j < K; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int i = 0; i < j; i++) taken |= sel[i] == e;
            if (!taken && (best < 0 || by[e] > by[best])) best = e;
        }
        sel[j] = best;
        w[j] = p[best];
    }
    if (m->hp.gating == GATING_SOFTMAX_WEIGHT) m->k->softmax_f32(w, K, w, -INFINITY);
    if (m->hp.arch.norm_topk) { /* ggml_sum_rows (a double sum), clamp, divide */
        double sd = 0.0;
        for (int j = 0; j < K; j++) sd += (double)w[j];
        float s = (float)sd;
        if (s < 6.103515625e-5f) s = 6.103515625e-5f; /* llama.cpp's clamp: no division by ~0 */
        for (int j = 0; j < K; j++) w[j] /= s;
    }
    if (m->hp.arch.scale_w && m->hp.expert_weights_scale != 0.0f)
        for (int j = 0; j < K; j++) w[j] *= m->hp.expert_weights_scale;
}

/* The next layer's experts, predicted by its router applied to this
 * layer's input (the residual stream changes little from one layer to the
 * next), start reading while this layer computes; the prediction only
 * moves reads earlier (tier_prefetch), never a result. */
static int prefetch_next(model *m, expert_tier *tier, int l)
{
    if (l + 1 >= m->hp.n_layer || !hparams_layer_moe(&m->hp, l + 1)) return 0;
    const layer_weights *N = &m->w.layers[l + 1];
    const int E = m->hp.n_expert, K = m->hp.n_expert_used;
    float lg[256], pw[256];
    int ps[256];
    mm_mul(&m->mm, &N->router, m->h, 1, lg);
    add_bias(lg, N->router_b, 1, E);
    route(m, N->exp_probs_b, lg, ps, pw);
    return tier_prefetch(tier, l + 1, ps, K, m->cpu_err, sizeof m->cpu_err);
}

int cpu_route(void *c, int l, int B, const int **sel)
{
    model *m = c;
    const int E = m->hp.n_expert, K = m->hp.n_expert_used;
    const float *bias = m->w.layers[l].exp_probs_b;
    for (int b = 0; b < B; b++) route(m, bias, m->rlog + (size_t)b * E, m->sel + b * K, m->selw + b * K);
    *sel = m->sel;
    return 0;
}

int cpu_moe(void *c, int l, int B)
{
    model *m = c;
    const layer_weights *L = &m->w.layers[l];
    const int E = m->hp.n_expert, K = m->hp.n_expert_used, D = m->hp.n_embd;
    /* Llama 4: the weight scales each expert's input (a float product, as
     * ggml_mul), and the outputs are summed unweighted */
    const bool wb = m->hp.arch.weight_before_ffn;
    m->moe_layer = l;

    expert_tier *tier = m->opt.tier;
    if (B == 1 && 2 * K <= MM_VEC_MAX) {
        /* Decode: the gates and ups of the K chosen experts as one pool job,
         * then their downs as one (expert j's hidden row in ffa/ffb + j*ff,
         * its output straight into eo + j*D): the same kernel calls as the
         * loop below, two barriers instead of 2K. With a tier, all K reads
         * start before the first wait. */
        const int64_t ff = L->exp_gate[0].rows;
        const weight *G[MM_VEC_MAX], *U[MM_VEC_MAX], *Dn[MM_VEC_MAX];
        tier_ref refs[MM_VEC_MAX];
        if (tier) {
            int rc = tier_get(tier, l, m->sel, K, refs, m->cpu_err, sizeof m->cpu_err);
            if (!rc) rc = prefetch_next(m, tier, l);
            for (int j = 0; j < K && !rc; j++)
                rc = tier_wait(tier, &refs[j], &G[j], &U[j], &Dn[j], m->cpu_err, sizeof m->cpu_err);
            if (rc) {
                for (int j = 0; j < K; j++) tier_put(tier, &refs[j]);
                return -1;
            }
        } else {
            for (int j = 0; j < K; j++) {
                G[j] = &L->exp_gate[m->sel[j]];
                U[j] = &L->exp_up[m->sel[j]];
                Dn[j] = &L->exp_down[m->sel[j]];
            }
        }
        mm_vec v[MM_VEC_MAX] = { { NULL, NULL, NULL } }; /* K >= 1: gcc cannot tell */
        /* a rotated layer's input, rotated once for every chosen expert */
        const weight *rw = G[0]->rotate ? G[0] : U[0];
        const float *hr = rw->rotate && !wb ? rotated_rows(m, rw, m->h, 1) : m->h;
        for (int j = 0; j < K; j++) {
            const float *in = m->h, *in_r = hr;
            if (wb) {
                float *row = m->hg + (size_t)j * D;
                for (int i = 0; i < D; i++) row[i] = m->h[i] * m->selw[j];
                in = in_r = row;
                if (rw->rotate) {
                    float *r = m->hrot + (size_t)j * D;
                    memcpy(r, row, (size_t)D * sizeof *r);
                    hadamard_rows(r, 1, D, rw->rotate);
                    in_r = r;
                }
            }
            v[2 * j] = (mm_vec){ G[j], G[j]->rotate ? in_r : in, m->ffa + j * ff };
            v[2 * j + 1] = (mm_vec){ U[j], U[j]->rotate ? in_r : in, m->ffb + j * ff };
        }
        mm_next next = { K, { NULL } };
        for (int j = 0; j < K; j++) next.w[j] = Dn[j];
        mm_mulv_next(&m->mm, v, 2 * K, &next);
        for (int j = 0; j < K; j++) {
            add_expert_bias(m->ffa + j * ff, L->exp_gate_b, m->sel[j], 1, ff);
            add_expert_bias(m->ffb + j * ff, L->exp_up_b, m->sel[j], 1, ff);
        }
        expert_glu_rows(m, m->ffa, m->ffb, K, ff);
        for (int j = 0; j < K && m->exp_hid_fn; j++)
            if (m->exp_hid_fn(m->exp_hid_ctx, l, m->sel[j], 1, m->ffa + j * ff)) m->exp_hid_failed = true;
        for (int j = 0; j < K; j++) rotate_hidden(Dn[j], m->ffa + j * ff, 1);
        for (int j = 0; j < K; j++) v[j] = (mm_vec){ Dn[j], m->ffa + j * ff, m->eo + (size_t)j * D };
        /* Then the next layer's q, k and v (a shared expert comes first). */
        next.n = 0;
        if (l + 1 < m->hp.n_layer && !weight_present(&L->sh_gate)) {
            const layer_weights *N = &m->w.layers[l + 1];
            next = (mm_next){ 3, { &N->wq, &N->wk, &N->wv } };
        }
        mm_mulv_next(&m->mm, v, K, &next);
        if (tier)
            for (int j = 0; j < K; j++) tier_put(tier, &refs[j]);
        for (int j = 0; j < K; j++) add_expert_bias(m->eo + (size_t)j * D, L->exp_down_b, m->sel[j], 1, D);
    } else {
    /* Each expert runs once over every row routed to it (a gathered batch);
     * with a tier the resident experts go first and the reads of the next
     * TIER_AHEAD run while one is computed (each expert's rows and result
     * are the same in any order). */
    int order[256], n_need = 0;
    for (int e = 0; e < E; e++) {
        int used = 0;
        for (int g = 0; g < B * K && !used; g++) used = m->sel[g] == e;
        if (used) order[n_need++] = e;
    }
    if (tier) {
        int front = 0;
        for (int i = 0; i < n_need; i++)
            if (tier_resident(tier, l, order[i])) {
                const int e = order[i];
                memmove(order + front + 1, order + front, (size_t)(i - front) * sizeof *order);
                order[front++] = e;
            }
    }
    tier_ref refs[TIER_AHEAD + 1];
    int requested = 0, rc = 0;
    for (int i = 0; i < n_need && !rc; i++) {
        const int e = order[i];
        const weight *g = &L->exp_gate[e], *u = &L->exp_up[e], *d = &L->exp_down[e];
        if (tier) {
            for (; requested < n_need && requested <= i + TIER_AHEAD && !rc; requested++)
                rc = tier_get(tier, l, &order[requested], 1, &refs[requested % (TIER_AHEAD + 1)], m->cpu_err,
                              sizeof m->cpu_err);
            if (!rc) rc = tier_wait(tier, &refs[i % (TIER_AHEAD + 1)], &g, &u, &d, m->cpu_err, sizeof m->cpu_err);
            if (rc) break;
        }
        int n = 0;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < K; j++)
                if (m->sel[b * K + j] == e) {
                    m->grp[n] = b * K + j;
                    float *row = m->hg + (size_t)n * D;
                    memcpy(row, m->h + (size_t)b * D, (size_t)D * sizeof(float));
                    if (wb)
                        for (int q = 0; q < D; q++) row[q] *= m->selw[b * K + j];
                    n++;
                }
        expert_ffn(m, L, e, g, u, d, m->hg, n, m->gd);
        if (tier) tier_put(tier, &refs[i % (TIER_AHEAD + 1)]);
        for (int q = 0; q < n; q++)
            memcpy(m->eo + (size_t)m->grp[q] * D, m->gd + (size_t)q * D, (size_t)D * sizeof(float));
    }
    if (rc) {
        /* the refs taken and not yet put: from the failed one to the last requested */
        for (int i = 0; i < requested; i++) tier_put(tier, &refs[i % (TIER_AHEAD + 1)]);
        return -1; /* the tier's message is in m->cpu_err */
    }
    }
    if (m->exp_hid_failed) {
        m->exp_hid_failed = false;
        snprintf(m->cpu_err, sizeof m->cpu_err, "out of memory while recording the experts' inputs");
        return -1;
    }
    if (wb)
        for (int i = 0; i < B * K; i++) m->selw[i] = 1.0f; /* 1 * y is y: the plain sum */
    /* Weighted sum in top-k order, each product rounded before the add. */
    for (int b = 0; b < B; b++) {
        float *out = m->o + (size_t)b * D;
        for (int i = 0; i < D; i++) out[i] = 0.0f;
        for (int j = 0; j < K; j++) {
            const float wj = m->selw[b * K + j], *eo = m->eo + (size_t)(b * K + j) * D;
            for (int i = 0; i < D; i++) {
                float t = wj * eo[i];
                out[i] += t;
            }
        }
    }
    return 0;
}

int cpu_gate_add(void *c, const weight *router, const float *h, const float *y, int B, int n, float *o)
{
    model *m = c;
    for (int b = 0; b < B; b++) {
        float g = 1.0f;
        if (weight_present(router)) {
            mm_mul(&m->mm, router, h + (size_t)b * n, 1, &g);
            /* llama.cpp's sigmoid here is silu(g) / g, rounded twice */
            const float silu = g / (1.0f + expf(-g));
            g = silu / g;
        }
        for (int i = 0; i < n; i++) {
            float t = g * y[(size_t)b * n + i];
            o[(size_t)b * n + i] += t;
        }
    }
    return 0;
}
