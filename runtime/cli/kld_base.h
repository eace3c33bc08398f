/* kld_base.h: llama-perplexity's --kl-divergence-base files, so `strata
 * perplexity --kld-base` takes the base logits llama.cpp users already have
 * (of an F16/BF16 model, say) and scores a pack against them as
 * `llama-perplexity --kl-divergence` does.
 *
 * Layout (little-endian, no padding): "_logits_", u32 n_ctx, i32 n_vocab,
 * i32 n_chunk, i32 tokens[n_chunk][n_ctx] (the chunks' tokens before BOS
 * goes in), then for each chunk the rows of positions n_ctx/2 .. n_ctx-2,
 * each nv = 2 * ((n_vocab + 1) / 2) + 4 u16: f32 scale, f32 min_log_prob,
 * u16 q[n_vocab] (log p = scale * q + min_log_prob; q = 0 at or below the
 * row's floor of max - 16).
 *
 * Contract: kld_base_parse() checks the magic and that the sizes add up
 * (one line into err otherwise) and points into the caller's buffer;
 * nothing is allocated. kld_base_row() is llama.cpp's per-row KL(base ||
 * ours), terms of base log p <= -16 left out, in its float/double steps. */
#ifndef STRATA_KLD_BASE_H
#define STRATA_KLD_BASE_H

#include <stddef.h>
#include <stdint.h>

typedef struct kld_base {
    uint32_t n_ctx;
    int32_t n_vocab, n_chunk;
    size_t nv;                  /* u16 per row */
    const uint8_t *tokens, *rows;
} kld_base;

/* 1 when data starts with the magic (the caller's other format otherwise). */
int kld_base_is(const uint8_t *data, size_t size);
int kld_base_parse(kld_base *k, const uint8_t *data, size_t size, char *err, size_t errlen);
/* Token j of chunk c, as stored. */
int32_t kld_base_token(const kld_base *k, size_t c, size_t j);
/* KL(base || ours) for scored row r of chunk c (position n_ctx/2 + r);
 * *same_top: the two distributions' top tokens agree. */
double kld_base_row(const kld_base *k, size_t c, size_t r, const float *logits, int *same_top);

#endif
