/* grams.h: the Gram matrices of the routed experts' inputs, recorded while a
 * model runs a calibration text (`strata calibrate`), written as RADGRAM2
 * files (formats/radgram.h) in the layout grams2imatrix reads.
 *
 * Per recorded MoE layer L: the pooled gram, sum of x x^T over every row
 * that reached the layer, and one per expert e over the rows routed to it,
 * x the layer's ffn_norm output (the input of the experts' gate and up,
 * n_embd wide); and per expert the gram of its down projection's input
 * (its GLU output, n_ff_exp wide); rows counts them. Files, rank R:
 *   gram.rR.blk.L.ffn_down_exps.bin     the pooled gram
 *   gram.rR.blk.L.ffn_down_exps.E.bin   expert E's (only experts with rows)
 *   gram.rR.blk.L.ffn_down_input.E.bin  expert E's down input
 * (the first two are the names grams2imatrix and the seed read; their k is
 * n_embd, which the imatrix's gate/up entries take; grams2imatrix passes
 * over the third, which iq3pack build --grams reads for the down part).
 * Accumulated in place in doubles: gram_set_bytes() = 8 (k^2 (n_expert + 1)
 * + kd^2 n_expert) bytes a recorded layer, held for the whole run. */
#ifndef STRATA_GRAMS_H
#define STRATA_GRAMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct gram_set gram_set;

uint64_t gram_set_bytes(int n_layers, int n_expert, int k, int kd);

/* record[l] != 0 for each of the n_layer layers to record (MoE layers);
 * K experts a row; k the experts' input width, kd their down input's.
 * NULL with err when out of memory. */
gram_set *gram_set_new(int n_layer, const unsigned char *record, int n_expert, int K, int k, int kd, char *err,
                       size_t errlen);
/* Records the inputs rotated by Hadamard blocks (formats/hadamard.h): rk
 * for the gate/up input (k wide), rkd for the down input (kd wide); 0
 * leaves one as it is. The files' domain is the block (the model's own
 * basis, 0, otherwise), the grams those of a pack built with the same
 * `--rotate`. Blocks checked by the caller (hadamard_block_ok). Call
 * before the first add. */
void gram_set_rotate(gram_set *g, int64_t rk, int64_t rkd);
/* n rows (kd floats each) of expert e's down input at layer l. 0, or -1
 * when out of memory. */
int gram_set_add_down(gram_set *g, int l, int e, int n, const float *rows);
uint64_t gram_set_down_rows(const gram_set *g, int l, int e);
double gram_set_down_at(const gram_set *g, int l, int e, int i, int j);
/* B rows x (k floats each) of layer l and their choices sel (B x K); a
 * layer not recorded is skipped. 0, or -1 when out of memory. */
int gram_set_add(gram_set *g, int l, int B, const float *x, const int *sel);
/* Rows counted at layer l: pooled (e < 0) or expert e's. */
uint64_t gram_set_rows(const gram_set *g, int l, int e);
/* Element (i, j) of layer l's pooled (e < 0) or expert gram. */
double gram_set_at(const gram_set *g, int l, int e, int i, int j);
/* Writes the files into dir (which exists). 0, or -1 with one line in err. */
int gram_set_write(const gram_set *g, const char *dir, int rank, char *err, size_t errlen);
void gram_set_free(gram_set *g);

#endif
