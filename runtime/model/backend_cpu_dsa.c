/* backend_cpu_dsa.c: DSA's lightning indexer on the CPU (backend.h's
 * indexer op), as llama.cpp's deepseek32 and glm-dsa graphs compute it:
 * each position's indexer key (attn_k of the normed input, a LayerNorm, its
 * first n_rot dimensions rotated) kept per layer; each query's heads
 * (attn_q_b of the normed q LoRA row, rotated the same way) scored against
 * every visible key, score = sum_h w_h relu(q_h . k) with w = proj of the
 * normed input over sqrt(key width x heads); the top_k positions are the
 * ones its attention reads (backend_cpu.c masks the others, as llama.cpp's
 * mask does). llama.cpp also turns q and k by one orthonormal Hadamard
 * matrix before the products, which changes no product (it is there so a
 * quantized key cache loses less), so it is not done here. While a row sees
 * no more than top_k positions it reads them all, and nothing is scored. */
#include "runtime/model/backend_cpu.h"

#include <math.h>
#include <string.h>

enum { SCORE_SPAN = 256 }; /* positions a scoring task takes */

typedef struct dsa_job {
    model *m;
    int l, B, pos0, spans;
} dsa_job;

static void *key_row(const model *m, int l, int pos)
{
    const size_t hd = (size_t)m->hp.idx_head_dim;
    return (char *)m->dsa_kcache + ((size_t)l * (size_t)m->n_ctx + (size_t)pos) * hd * m->kv_elt;
}

/* One row's scores against positions [SCORE_SPAN * span, ...) up to its own. */
static void score_task(void *arg, int task, int thread)
{
    (void)thread;
    const dsa_job *j = arg;
    const model *m = j->m;
    const int b = task / j->spans, span = task % j->spans, P = j->pos0 + b;
    const int NH = m->hp.n_idx_head, HD = m->hp.idx_head_dim;
    const int p0 = span * SCORE_SPAN, p1 = p0 + SCORE_SPAN <= P + 1 ? p0 + SCORE_SPAN : P + 1;
    const float *q = m->dsa_q + (size_t)b * NH * HD, *w = m->dsa_w + (size_t)b * NH;
    float *sc = m->dsa_score + (size_t)b * m->n_ctx;
    const bool f16 = m->opt.kv == KV_F16;
    for (int p = p0; p < p1; p++) {
        const void *k = key_row(m, j->l, p);
        float s = 0.0f;
        for (int h = 0; h < NH; h++) {
            const float d = f16 ? m->k->dot_f16(k, q + (size_t)h * HD, HD) : m->k->dot_f32(k, q + (size_t)h * HD, HD);
            if (d > 0.0f) s += w[h] * d;
        }
        sc[p] = s;
    }
}

/* The top_k choice as llama.cpp makes it (ggml's top_k: std::partial_sort
 * of the indices by score, greater first), which among equal scores keeps
 * the ones its heap keeps: scores tie exactly where every head's product is
 * negative (0). A heap of the first k indices, smallest score on top; each
 * later index with a strictly greater score replaces the top, which then
 * sifts down as libstdc++'s __adjust_heap does (the hole to the leaf along
 * the smaller child, the later one on a tie, then the value back up). */
static bool worse(const float *sc, int32_t a, int32_t b) { return sc[a] > sc[b]; } /* the heap's "less" */

static void heap_adjust(int32_t *h, int hole, int len, int32_t value, const float *sc)
{
    const int top = hole;
    int child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (worse(sc, h[child], h[child - 1])) child--;
        h[hole] = h[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        h[hole] = h[child - 1];
        hole = child - 1;
    }
    for (int parent = (hole - 1) / 2; hole > top && worse(sc, h[parent], value); parent = (hole - 1) / 2) {
        h[hole] = h[parent];
        hole = parent;
    }
    h[hole] = value;
}

static void top_k_select(int32_t *h, int k, int n, const float *sc, uint8_t *pick)
{
    for (int i = 0; i < k; i++) h[i] = i;
    for (int parent = (k - 2) / 2; k > 1; parent--) {
        heap_adjust(h, parent, k, h[parent], sc);
        if (parent == 0) break;
    }
    for (int i = k; i < n; i++)
        if (worse(sc, i, h[0])) heap_adjust(h, 0, k, i, sc);
    memset(pick, 0, (size_t)n);
    for (int i = 0; i < k; i++) pick[h[i]] = 1;
}

/* Row b's picks: its top_k scores. */
static void select_task(void *arg, int b, int thread)
{
    const dsa_job *j = arg;
    const model *m = j->m;
    const int P = j->pos0 + b, K = m->hp.idx_top_k;
    uint8_t *pick = m->dsa_sel + (size_t)b * m->n_ctx;
    if (P + 1 <= K) {
        memset(pick, 1, (size_t)P + 1);
        return;
    }
    /* attention's scratch, free until it runs */
    int32_t *heap = (int32_t *)(m->att_scores + (size_t)thread * m->att_stride);
    top_k_select(heap, K, P + 1, m->dsa_score + (size_t)b * m->n_ctx, pick);
}

int cpu_indexer(void *c, int l, int B, int pos0, const float *h, const float *qa)
{
    model *m = c;
    const model_hparams *hp = &m->hp;
    const layer_weights *L = &m->w.layers[l];
    const int NH = hp->n_idx_head, HD = hp->idx_head_dim, rot = hp->n_rot;
    /* the ubatch's keys, kept in the cache's type */
    mm_mul(&m->mm, &L->idx_k, h, B, m->dsa_k);
    for (int b = 0; b < B; b++) {
        float *k = m->dsa_k + (size_t)b * HD;
        cpu_layer_norm_row(k, k, L->idx_k_norm, L->idx_k_norm_b, HD, hp->arch.dsa_ln_eps);
        cpu_rope_head(k, m->rope_cs + (size_t)b * rot, rot, hp->arch.dsa_rope);
        if (m->opt.kv == KV_F16) m->k->f32_to_f16(k, key_row(m, l, pos0 + b), HD);
        else memcpy(key_row(m, l, pos0 + b), k, (size_t)HD * sizeof *k);
    }
    /* every row reads all it sees while that is no more than top_k */
    m->dsa_on = pos0 + B > hp->idx_top_k;
    if (!m->dsa_on) return 0;
    mm_mul(&m->mm, &L->idx_q_b, qa, B, m->dsa_q);
    for (int b = 0; b < B; b++)
        for (int hh = 0; hh < NH; hh++)
            cpu_rope_head(m->dsa_q + ((size_t)b * NH + hh) * HD, m->rope_cs + (size_t)b * rot, rot, hp->arch.dsa_rope);
    mm_mul(&m->mm, &L->idx_proj, h, B, m->dsa_w);
    const float ws = 1.0f / sqrtf((float)HD * (float)NH);
    for (size_t i = 0; i < (size_t)B * NH; i++) m->dsa_w[i] *= ws;
    dsa_job j = { m, l, B, pos0, (pos0 + B + SCORE_SPAN - 1) / SCORE_SPAN };
    pool_run(m->pool, B * j.spans, score_task, &j);
    pool_run(m->pool, B, select_task, &j);
    return 0;
}
