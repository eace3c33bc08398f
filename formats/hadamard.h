/* hadamard.h: the block Hadamard rotation of rotated experts
 * (`iq3pack build --rotate hadamard[:B]`, `strata calibrate --rotate`).
 *
 * Contract. A vector of k floats is cut into k/B blocks of B (B a power of
 * two >= 2 dividing k); each block x becomes H x / sqrt(B), H the Sylvester
 * Hadamard matrix of order B (H[i][j] = (-1)^popcount(i & j)). The map is
 * orthonormal and its own inverse, so an expert row stored as w H/sqrt(B)
 * times the input rotated the same way gives w . x back. hadamard_rows() is
 * the one definition: the build rotates weights with it, the CPU runtime and
 * the calibration recorder rotate activations with it, and the CUDA kernel
 * (runtime/device/cuda) does the same butterflies in the same order.
 * Butterflies of stride 1, 2, 4, ... B/2, each a float add and subtract,
 * then one multiply by the float 1/sqrt(B): results never depend on threads.
 * No global state, no allocation. */
#ifndef STRATA_HADAMARD_H
#define STRATA_HADAMARD_H

#include <stdint.h>

/* 1 when b is a power of two >= 2 dividing k. */
int hadamard_block_ok(int64_t k, int64_t b);

/* The largest power of two dividing k (the default block: whole rows when k
 * is a power of two); 1 for an odd k (no rotation possible). */
int64_t hadamard_default_block(int64_t k);

/* "hadamard" -> *b = 0 (each tensor's default); "hadamard:B" -> B, a power
 * of two >= 2. 0, or -1 for anything else. */
int hadamard_parse(const char *s, int64_t *b);

/* In place: each of rows rows of k floats, blockwise (hadamard_block_ok). */
void hadamard_rows(float *x, int64_t rows, int64_t k, int64_t b);

/* In place on a symmetric k x k Gram of inputs x (row-major): G becomes the
 * Gram of the rotated inputs, R G R^T with R = the block rotation. */
void hadamard_gram(float *g, int64_t k, int64_t b);

#endif
