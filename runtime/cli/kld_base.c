/* kld_base.c: see kld_base.h. */
#include "runtime/cli/kld_base.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char k_magic[8] = { '_', 'l', 'o', 'g', 'i', 't', 's', '_' };

int kld_base_is(const uint8_t *data, size_t size) { return size >= 8 && memcmp(data, k_magic, 8) == 0; }

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

int kld_base_parse(kld_base *k, const uint8_t *data, size_t size, char *err, size_t errlen)
{
    memset(k, 0, sizeof *k);
    if (!kld_base_is(data, size) || size < 20) {
        snprintf(err, errlen, "not a llama-perplexity --kl-divergence-base file (no _logits_ header)");
        return -1;
    }
    k->n_ctx = (uint32_t)rd32(data + 8);
    k->n_vocab = rd32(data + 12);
    k->n_chunk = rd32(data + 16);
    if (k->n_ctx < 4 || k->n_ctx > (1u << 24) || k->n_vocab < 1 || k->n_vocab > (1 << 24) || k->n_chunk < 1 ||
        k->n_chunk > (1 << 24)) {
        snprintf(err, errlen, "header says n_ctx %u, n_vocab %d, n_chunk %d: not plausible", k->n_ctx, k->n_vocab,
                 k->n_chunk);
        return -1;
    }
    k->nv = 2 * (((size_t)k->n_vocab + 1) / 2) + 4;
    const size_t n_eval = k->n_ctx - 1 - k->n_ctx / 2;
    const size_t want = 20 + 4 * (size_t)k->n_chunk * k->n_ctx + 2 * k->nv * n_eval * (size_t)k->n_chunk;
    if (size != want) {
        snprintf(err, errlen, "%zu bytes, but n_ctx %u, n_vocab %d and %d chunks make %zu", size, k->n_ctx, k->n_vocab,
                 k->n_chunk, want);
        return -1;
    }
    k->tokens = data + 20;
    k->rows = k->tokens + 4 * (size_t)k->n_chunk * k->n_ctx;
    return 0;
}

int32_t kld_base_token(const kld_base *k, size_t c, size_t j) { return rd32(k->tokens + 4 * (c * k->n_ctx + j)); }

double kld_base_row(const kld_base *k, size_t c, size_t r, const float *logits, int *same_top)
{
    const size_t n_eval = k->n_ctx - 1 - k->n_ctx / 2;
    const uint8_t *row = k->rows + 2 * k->nv * (c * n_eval + r);
    float scale, min_log_prob;
    memcpy(&scale, row, 4);
    memcpy(&min_log_prob, row + 4, 4);
    const uint8_t *q = row + 8;
    const int n = k->n_vocab;
    float max_logit = logits[0];
    int imax = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > max_logit) { max_logit = logits[i]; imax = i; }
    double sum_exp = 0.0;
    for (int i = 0; i < n; i++) sum_exp += expf(logits[i] - max_logit);
    max_logit += (float)log(sum_exp);
    double sum = 0.0;
    int imax_base = 0;
    float p_log_base_max = 0.0f;
    for (int i = 0; i < n; i++) {
        uint16_t qi;
        memcpy(&qi, q + 2 * i, 2);
        const float p_log_base = scale * qi + min_log_prob;
        if (i == 0 || p_log_base > p_log_base_max) { p_log_base_max = p_log_base; imax_base = i; }
        if (p_log_base > -16.0f) sum += expf(p_log_base) * (p_log_base - logits[i] + max_logit);
    }
    *same_top = imax == imax_base;
    return sum;
}
