/* bench_decode.c: decode and prefill tokens/s of the CPU forward pass on
 * stories260K and tinymoe (through the test-only GGUF adapter), beside
 * baselines measured in the same run: the memory-bandwidth floor (weight
 * bytes one decode step reads / memcpy bandwidth on a 64 MiB buffer) and the
 * scalar reference kernels. Medians of RUNS runs. These models are tiny and
 * sit in the CPU caches, so they run above the DRAM floor; the ratio that
 * issue 6 asks for (>= 0.7 of the floor) is meant for a >= 1 GB model. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/kernels/kernels.h"
#include "runtime/model/model.h"
#include "tests/lib/gguf_weights.h"
#include "tests/bench/bench_util.h"

#define RUNS 5
#define N_DECODE 128
#define N_PREFILL 128
#define BW_BYTES (64u << 20)

/* Bytes per second of memcpy (read + write counted as the bytes read). */
static double memcpy_bandwidth(void)
{
    char *a = malloc(BW_BYTES), *b = malloc(BW_BYTES);
    if (!a || !b) { free(a); free(b); return 0; }
    memset(a, 1, BW_BYTES);
    memset(b, 2, BW_BYTES);
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        memcpy(b, a, BW_BYTES);
        t[r] = bench_now() - t0;
        a[r] = b[BW_BYTES - 1 - r]; /* keep both buffers live */
    }
    free(a);
    free(b);
    return BW_BYTES / bench_median(t, RUNS);
}

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

/* decode tokens/s and prefill tokens/s, medians. */
static int run(model *m, double *decode_tps, double *prefill_tps)
{
    const model_hparams *hp = model_hp(m);
    float *logits = malloc((size_t)hp->n_vocab * sizeof *logits);
    int32_t *prompt = malloc(N_PREFILL * sizeof *prompt);
    char err[256];
    double td[RUNS], tp[RUNS];
    for (int i = 0; i < N_PREFILL; i++) prompt[i] = 1 + (i * 37) % (hp->n_vocab - 1);
    for (int r = 0; r < RUNS; r++) {
        model_rewind(m, 0);
        int32_t tok = 1;
        double t0 = bench_now();
        for (int i = 0; i < N_DECODE; i++) {
            if (model_forward(m, &tok, 1, logits, false, err, sizeof err)) { fprintf(stderr, "%s\n", err); return -1; }
            tok = argmax(logits, hp->n_vocab);
        }
        td[r] = N_DECODE / (bench_now() - t0);
        model_rewind(m, 0);
        t0 = bench_now();
        if (model_forward(m, prompt, N_PREFILL, logits, false, err, sizeof err)) { fprintf(stderr, "%s\n", err); return -1; }
        tp[r] = N_PREFILL / (bench_now() - t0);
    }
    *decode_tps = bench_median(td, RUNS);
    *prefill_tps = bench_median(tp, RUNS);
    free(logits);
    free(prompt);
    return 0;
}

static void bench_model(const char *shared, const char *rel, double bw)
{
    char path[1024], err[1400];
    snprintf(path, sizeof path, "%s/%s", shared, rel);
    gguf_model gm;
    if (gguf_model_load(&gm, path, 0, err, sizeof err)) { printf("%s: skipped (%s)\n", rel, err); return; }
    model_options o = model_default_options();
    double dt[2], pt[2];
    size_t active = 0;
    const char *kname[2] = { "", "" };
    int threads = 0;
    for (int simd = 1; simd >= 0; simd--) {
        o.kernels = simd ? NULL : kernels_scalar();
        model *m = model_create(&gm.hp, &gm.w, &o, err, sizeof err);
        if (!m) { printf("%s: %s\n", rel, err); gguf_model_free(&gm); return; }
        active = model_active_bytes(m);
        kname[simd] = model_kernels_name(m);
        threads = o.n_threads > 0 ? o.n_threads : 0;
        if (run(m, &dt[simd], &pt[simd])) { model_free(m); gguf_model_free(&gm); return; }
        model_free(m);
    }
    double floor_tps = bw / (double)active;
    printf("%s (%s threads): decode %.0f tok/s [%s], %.0f tok/s [%s baseline]; prefill %.0f tok/s [%s], %.0f [%s]\n",
           rel, threads ? "fixed" : "all", dt[1], kname[1], dt[0], kname[0], pt[1], kname[1], pt[0], kname[0]);
    printf("    active weights %.2f MB/token; bandwidth floor %.0f tok/s (memcpy %.1f GB/s); decode = %.2f x floor\n",
           active / 1e6, floor_tps, bw / 1e9, dt[1] / floor_tps);
    gguf_model_free(&gm);
}

int main(void)
{
    const char *shared = getenv("STRATA_SHARED");
    if (!shared || !*shared) shared = "../shared";
    double bw = memcpy_bandwidth();
    printf("memcpy bandwidth: %.2f GB/s (64 MiB, median of %d)\n", bw / 1e9, RUNS);
    bench_model(shared, "models/stories260K/stories260K.gguf", bw);
    bench_model(shared, "models/tinymoe/tinymoe-f32.gguf", bw);
    bench_model(shared, "models/tinymoe/tinymoe-f16.gguf", bw);
    return 0;
}
