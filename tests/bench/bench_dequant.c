/* bench_dequant.c: row dequantization throughput, in GB/s of f32 written,
 * beside memcpy of the same f32 output size measured in the same run (the
 * ratio is the figure to compare across machines). Median of several runs.
 * Input is synthetic: random bytes whose every other byte is masked so that
 * any fp16 scale read from them is finite and not tiny (no NaN/denormal
 * slow paths distort the timing); decoded values are meaningless. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/ggml_types.h"
#include "tests/bench/bench_util.h"

#define N_ELEMS (4 << 20) /* 16 MiB of f32 output: larger than the caches */
#define RUNS 7

/* A sink the compiler cannot prove unused. */
static volatile float sink;

static double bench_memcpy(float *dst, const float *src)
{
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        memcpy(dst, src, (size_t)N_ELEMS * sizeof(float));
        t[r] = bench_now() - t0;
        sink = dst[r];
    }
    return (double)N_ELEMS * sizeof(float) / bench_median(t, RUNS) / 1e9;
}

static double bench_type(int id, const uint8_t *src, float *dst)
{
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        if (ggml_dequantize(id, src, dst, N_ELEMS) != 0) return -1;
        t[r] = bench_now() - t0;
        sink = dst[r];
    }
    return (double)N_ELEMS * sizeof(float) / bench_median(t, RUNS) / 1e9;
}

int main(void)
{
    static const int ids[] = { GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K,
                               GGML_TYPE_Q6_K, GGML_TYPE_IQ4_XS, GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ2_XXS,
                               GGML_TYPE_IQ1_M, GGML_TYPE_MXFP4 };
    const size_t src_bytes = (size_t)N_ELEMS * sizeof(float); /* the widest input: f32 */
    uint8_t *src = malloc(src_bytes);
    float *dst = malloc((size_t)N_ELEMS * sizeof(float));
    float *fsrc = malloc((size_t)N_ELEMS * sizeof(float));
    if (!src || !dst || !fsrc) {
        fprintf(stderr, "bench_dequant: out of memory\n");
        free(src); free(dst); free(fsrc);
        return 1;
    }
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < src_bytes; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        src[i] = (uint8_t)(s >> 24);
        if (i & 1) src[i] = (uint8_t)(0x30 | (src[i] & 0x07)); /* fp16 exponent 12..13 */
    }
    for (size_t i = 0; i < N_ELEMS; i++) fsrc[i] = (float)i;

    const double base = bench_memcpy(dst, fsrc);
    printf("dequantize %d elements, median of %d runs; baseline memcpy of the f32 output: %.2f GB/s\n",
           N_ELEMS, RUNS, base);
    printf("%-8s %10s %10s\n", "type", "GB/s f32", "/ memcpy");
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        const ggml_type_row *t = ggml_type_info(ids[k]);
        double g = bench_type(ids[k], src, dst);
        if (g < 0) {
            printf("%-8s   no decoder\n", t->name);
            continue;
        }
        printf("%-8s %10.2f %10.2f\n", t->name, g, g / base);
    }
    free(src);
    free(dst);
    free(fsrc);
    return 0;
}
