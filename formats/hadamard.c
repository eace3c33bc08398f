/* hadamard.c: the block Hadamard rotation (hadamard.h). */
#include "formats/hadamard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int hadamard_block_ok(int64_t k, int64_t b)
{
    return b >= 2 && (b & (b - 1)) == 0 && k > 0 && k % b == 0;
}

int64_t hadamard_default_block(int64_t k)
{
    return k > 0 ? k & -k : 1;
}

int hadamard_parse(const char *s, int64_t *b)
{
    if (!strcmp(s, "hadamard")) { *b = 0; return 0; }
    if (strncmp(s, "hadamard:", 9)) return -1;
    char *end;
    const long long v = strtoll(s + 9, &end, 10);
    if (end == s + 9 || *end || v < 2 || v > (1LL << 30) || (v & (v - 1))) return -1;
    *b = v;
    return 0;
}

void hadamard_rows(float *x, int64_t rows, int64_t k, int64_t b)
{
    const float s = (float)(1.0 / sqrt((double)b));
    for (int64_t r = 0; r < rows; r++)
        for (float *blk = x + r * k, *end = blk + k; blk < end; blk += b) {
            for (int64_t h = 1; h < b; h *= 2)
                for (int64_t i = 0; i < b; i += 2 * h)
                    for (int64_t j = i; j < i + h; j++) {
                        const float u = blk[j], v = blk[j + h];
                        blk[j] = u + v;
                        blk[j + h] = u - v;
                    }
            for (int64_t j = 0; j < b; j++) blk[j] *= s;
        }
}

void hadamard_gram(float *g, int64_t k, int64_t b)
{
    /* R G R^T: every row times R^T (G R^T, R symmetric), then, the result's
     * transpose being R G, its rows once more: (R G) R^T */
    hadamard_rows(g, k, k, b);
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = i + 1; j < k; j++) {
            const float t = g[i * k + j];
            g[i * k + j] = g[j * k + i];
            g[j * k + i] = t;
        }
    hadamard_rows(g, k, k, b);
}
