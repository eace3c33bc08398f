/* kernel_check.c: every CUDA kernel (runtime/device/cuda/cuda_backend.h) against
 * the CPU scalar reference on random data, with timings. Built and run only
 * by tests/cuda/device_check.sh on a machine with a GPU (`make` never builds
 * it). Checks:
 *  - dequant of every form (P32, P16, S2, S4, S4+IQ4NL codebook, S4+offsets,
 *    S8, S8+offsets, IQ3): the same floats, bit for bit, as kernels_scalar();
 *  - mat-vec (n = 1) and cuBLAS prefill (n = 17) against weight_dot:
 *    relative error <= 1e-4 of the row's largest |y|;
 *  - activation rounding to Q8_0 / Q8_K, the Hadamard rotation of rotated
 *    experts' inputs: the CPU's values, bit for bit;
 *  - RMSNorm, RoPE (norm and neox), SwiGLU, axpy, the KV store (f16 and
 *    f32) and causal attention (GQA), router top-k (same experts, weights 1e-6);
 *  - timings: decode mat-vec and prefill per form on a 4096 x 4096 weight
 *    (GB/s of weight bytes), attention at 4096 positions.
 * Exit 0 when all pass, 1 on the first failing group (each failure printed),
 * 77 when there is no usable GPU. */
#include "formats/fp16.h"
#include "formats/hadamard.h"
#include "formats/iq3.h"
#include "formats/planes.h"
#include "runtime/device/cuda/cuda_backend.h"
#include "runtime/kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char err[1024];
static int failures;

#define CK(call) do { if ((call) != 0) { fprintf(stderr, "kernel_check: %s\n", err); exit(1); } } while (0)

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static float frand(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *dup_dev(scuda_ctx *c, const void *h, size_t n)
{
    void *d;
    CK(scuda_alloc(c, &d, n, err, sizeof err));
    CK(scuda_upload(c, d, h, n, err, sizeof err));
    return d;
}

typedef struct form_case { const char *name; wform form; int bits, bias, group, codebook, offsets; } form_case;

static const form_case CASES[] = {
    { "P32", WF_P32, 0, 0, 0, 0, 0 },          { "P16", WF_P16, 0, 0, 0, 0, 0 },
    { "S2 (Q2_0)", WF_SCODE, 2, -1, 64, 0, 0 }, { "S4 (Q4_0)", WF_SCODE, 4, -8, 32, 0, 0 },
    { "S4+IQ4NL", WF_SCODE, 4, 0, 32, 1, 0 },  { "S4+offsets (Q4_K)", WF_SCODE, 4, 0, 32, 0, 1 },
    { "S8 (Q8_0)", WF_SCODE, 8, -128, 32, 0, 0 }, { "S8+offsets (Q5_K)", WF_SCODE, 8, 0, 32, 0, 1 },
    { "IQ3", WF_IQ3, 0, 0, 0, 0, 0 },
};

typedef struct made { weight h, d; void *dev[4]; void *host[4]; size_t bytes; } made;

static void make_weight(scuda_ctx *c, const form_case *fc, int64_t rows, int64_t cols, made *m)
{
    memset(m, 0, sizeof *m);
    weight *h = &m->h;
    h->form = fc->form;
    h->rows = rows;
    h->cols = cols;
    size_t nel = (size_t)(rows * cols);
    if (fc->form == WF_P32) {
        float *v = malloc(nel * 4);
        for (size_t i = 0; i < nel; i++) v[i] = frand();
        h->data = m->host[0] = v;
        h->row_bytes = (size_t)cols * 4;
    } else if (fc->form == WF_P16) {
        uint16_t *v = malloc(nel * 2);
        for (size_t i = 0; i < nel; i++) v[i] = f32_to_fp16(frand());
        h->data = m->host[0] = v;
        h->row_bytes = (size_t)cols * 2;
    } else if (fc->form == WF_SCODE) {
        size_t cb = nel * (size_t)fc->bits / 8, ng = nel / (size_t)fc->group;
        uint8_t *codes = malloc(cb);
        for (size_t i = 0; i < cb; i++) codes[i] = (uint8_t)rnd();
        float *sc = malloc(ng * 4), *off = fc->offsets ? malloc(ng * 4) : NULL;
        for (size_t g = 0; g < ng; g++) {
            sc[g] = fp16_to_f32(f32_to_fp16(frand() * 0.01f));   /* a widened fp16 scale, as packs hold */
            if (off) off[g] = fp16_to_f32(f32_to_fp16(frand() * 0.05f));
        }
        h->data = m->host[0] = codes;
        h->scales = m->host[1] = sc;
        h->offsets = m->host[2] = off;
        if (fc->codebook) {
            int n;
            const int8_t *cbv = codebook_values(CODEBOOK_IQ4NL, &n);
            float *book = malloc(16 * 4);
            for (int i = 0; i < 16; i++) book[i] = (float)cbv[i];
            h->codebook = m->host[3] = book;
        }
        h->code_bits = fc->bits;
        h->code_bias = fc->bias;
        h->group = fc->group;
        h->row_bytes = (size_t)cols * (size_t)fc->bits / 8;
    } else {
        float *x = malloc(nel * 4);
        for (size_t i = 0; i < nel; i++) x[i] = frand() * 0.1f;
        size_t rb = iq3_row_bytes(cols);
        uint8_t *q = malloc(rb * (size_t)rows);
        iq3_encode_opts o = { .mode = IQ3_MODE_REFERENCE, .n_threads = 4, .importance = NULL, .force_scalar = 0 };
        CK(iq3_encode(x, rows, cols, &o, q, err, sizeof err));
        free(x);
        h->data = m->host[0] = q;
        h->row_bytes = rb;
    }
    m->d = m->h;
    size_t data_bytes = fc->form == WF_SCODE ? h->row_bytes * (size_t)rows : h->row_bytes * (size_t)rows;
    m->bytes = data_bytes;
    m->d.data = m->dev[0] = dup_dev(c, h->data, data_bytes);
    if (h->scales) {
        size_t ng = nel / (size_t)fc->group * 4;
        m->d.scales = m->dev[1] = dup_dev(c, h->scales, ng);
        m->bytes += ng;
        if (h->offsets) { m->d.offsets = m->dev[2] = dup_dev(c, h->offsets, ng); m->bytes += ng; }
        if (h->codebook) m->d.codebook = m->dev[3] = dup_dev(c, h->codebook, 64);
    }
}

static void free_weight(scuda_ctx *c, made *m)
{
    for (int i = 0; i < 4; i++) { scuda_dfree(c, m->dev[i]); free(m->host[i]); }
}

static double rel_err(const float *a, const float *b, size_t n)
{
    double mx = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(b[i]) > mx) mx = fabs(b[i]);
        if (fabs((double)a[i] - b[i]) > d) d = fabs((double)a[i] - b[i]);
    }
    return mx > 0 ? d / mx : d;
}

static void check(int ok, const char *what, const char *detail)
{
    printf("%-6s %s %s\n", ok ? "ok" : "FAIL", what, detail);
    if (!ok) failures++;
}

static void check_forms(scuda_ctx *c)
{
    const kernels *k = kernels_scalar();
    const int64_t rows = 300, cols = 512;
    const int n = 17;
    for (size_t fi = 0; fi < sizeof CASES / sizeof *CASES; fi++) {
        made m;
        make_weight(c, &CASES[fi], rows, cols, &m);
        float *ref = malloc((size_t)(rows * cols) * 4), *got = malloc((size_t)(rows * cols) * 4);
        for (int64_t r = 0; r < rows; r++) k->row_f32[m.h.form](&m.h, r, ref + r * cols);
        float *dd;
        CK(scuda_alloc(c, (void **)&dd, (size_t)(rows * cols) * 4, err, sizeof err));
        CK(scuda_dequant(c, &m.d, 0, rows, dd, err, sizeof err));
        CK(scuda_download(c, got, dd, (size_t)(rows * cols) * 4, err, sizeof err));
        char what[128], det[128];
        size_t bad = 0;
        for (size_t i = 0; i < (size_t)(rows * cols); i++) bad += memcmp(&ref[i], &got[i], 4) != 0;
        snprintf(what, sizeof what, "dequant %s", CASES[fi].name);
        snprintf(det, sizeof det, "(%zu of %lld values differ in bits)", bad, (long long)(rows * cols));
        check(bad == 0, what, det);

        float *x = malloc((size_t)(n * cols) * 4), *yr = malloc((size_t)(n * rows) * 4), *yg = malloc((size_t)(n * rows) * 4);
        float *scratch = malloc((size_t)cols * 4);
        for (size_t i = 0; i < (size_t)(n * cols); i++) x[i] = frand();
        for (int t = 0; t < n; t++)
            for (int64_t r = 0; r < rows; r++) yr[t * rows + r] = weight_dot(k, &m.h, r, x + t * cols, scratch);
        float *dx, *dy;
        CK(scuda_alloc(c, (void **)&dx, (size_t)(n * cols) * 4, err, sizeof err));
        CK(scuda_alloc(c, (void **)&dy, (size_t)(n * rows) * 4, err, sizeof err));
        CK(scuda_upload(c, dx, x, (size_t)(n * cols) * 4, err, sizeof err));
        CK(scuda_matmul(c, &m.d, dx, dy, 1, err, sizeof err));
        CK(scuda_download(c, yg, dy, (size_t)rows * 4, err, sizeof err));
        double e1 = rel_err(yg, yr, (size_t)rows);
        snprintf(what, sizeof what, "matvec %s", CASES[fi].name);
        snprintf(det, sizeof det, "(relative error %.2e)", e1);
        check(e1 <= 1e-4, what, det);
        CK(scuda_matmul(c, &m.d, dx, dy, n, err, sizeof err));
        CK(scuda_download(c, yg, dy, (size_t)(n * rows) * 4, err, sizeof err));
        double e2 = 0;
        for (int t = 0; t < n; t++) { double e = rel_err(yg + t * rows, yr + t * rows, (size_t)rows); if (e > e2) e2 = e; }
        snprintf(what, sizeof what, "prefill %s", CASES[fi].name);
        snprintf(det, sizeof det, "(%d tokens, relative error %.2e)", n, e2);
        check(e2 <= 1e-4, what, det);
        scuda_dfree(c, dd); scuda_dfree(c, dx); scuda_dfree(c, dy);
        free(ref); free(got); free(x); free(yr); free(yg); free(scratch);
        free_weight(c, &m);
    }
}

static void time_forms(scuda_ctx *c)
{
    const int64_t rows = 4096, cols = 4096;
    const int n = 512;
    float *x = malloc((size_t)(n * cols) * 4);
    for (size_t i = 0; i < (size_t)(n * cols); i++) x[i] = frand();
    float *dx, *dy;
    CK(scuda_alloc(c, (void **)&dx, (size_t)(n * cols) * 4, err, sizeof err));
    CK(scuda_alloc(c, (void **)&dy, (size_t)(n * rows) * 4, err, sizeof err));
    CK(scuda_upload(c, dx, x, (size_t)(n * cols) * 4, err, sizeof err));
    printf("timings on %s, %lld x %lld weights:\n", scuda_device_name(c), (long long)rows, (long long)cols);
    for (size_t fi = 0; fi < sizeof CASES / sizeof *CASES; fi++) {
        made m;
        make_weight(c, &CASES[fi], rows, cols, &m);
        CK(scuda_matmul(c, &m.d, dx, dy, 1, err, sizeof err));
        CK(scuda_sync(c, err, sizeof err));
        const int it = 50;
        double t0 = now();
        for (int i = 0; i < it; i++) CK(scuda_matmul(c, &m.d, dx, dy, 1, err, sizeof err));
        CK(scuda_sync(c, err, sizeof err));
        double tv = (now() - t0) / it;
        t0 = now();
        CK(scuda_matmul(c, &m.d, dx, dy, n, err, sizeof err));
        CK(scuda_sync(c, err, sizeof err));
        double tp = now() - t0;
        printf("  %-18s decode %8.1f us  %7.1f GB/s of weights | prefill %d tokens %8.2f ms  %7.1f GFLOP/s\n",
               CASES[fi].name, tv * 1e6, (double)m.bytes / tv / 1e9, n, tp * 1e3, 2.0 * rows * cols * n / tp / 1e9);
        free_weight(c, &m);
    }
    scuda_dfree(c, dx); scuda_dfree(c, dy);
    free(x);
}

static void check_ops(scuda_ctx *c)
{
    char det[160];
    /* RMSNorm: 5 rows of 1000 */
    const int R = 5, N = 1000;
    float x[5000], w[1000], ref[5000], got[5000];
    for (int i = 0; i < R * N; i++) x[i] = frand() * 3;
    for (int i = 0; i < N; i++) w[i] = frand();
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int i = 0; i < N; i++) ss += (double)(x[r * N + i] * x[r * N + i]);
        float sc = 1.0f / sqrtf((float)(ss / N) + 1e-5f);
        for (int i = 0; i < N; i++) { float v = x[r * N + i] * sc; ref[r * N + i] = v * w[i]; }
    }
    float *dx = dup_dev(c, x, sizeof x), *dw = dup_dev(c, w, sizeof w), *dy;
    CK(scuda_alloc(c, (void **)&dy, sizeof x, err, sizeof err));
    CK(scuda_rmsnorm(c, dx, dw, dy, R, N, 1e-5f, err, sizeof err));
    CK(scuda_download(c, got, dy, sizeof got, err, sizeof err));
    double e = rel_err(got, ref, (size_t)(R * N));
    snprintf(det, sizeof det, "(relative error %.2e)", e);
    check(e <= 1e-6, "rmsnorm", det);

    /* RoPE: 3 tokens x 4 heads x 64, n_rot 64 and 32, norm and neox */
    for (int neox = 0; neox < 2; neox++)
        for (int nr = 32; nr <= 64; nr += 32) {
            const int T = 3, H = 4, D = 64, pos0 = 100;
            float v[768], r2[768], g2[768];
            for (int i = 0; i < T * H * D; i++) v[i] = r2[i] = frand();
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) {
                    float *hv = r2 + (t * H + h) * D;
                    for (int i = 0; i < nr / 2; i++) {
                        double th = (double)(pos0 + t) * pow(10000.0, -2.0 * i / nr);
                        float cs = (float)cos(th), sn = (float)sin(th);
                        int i0 = neox ? i : 2 * i, i1 = neox ? i + nr / 2 : 2 * i + 1;
                        float a = hv[i0], b = hv[i1];
                        hv[i0] = a * cs - b * sn;
                        hv[i1] = a * sn + b * cs;
                    }
                }
            float *dv = dup_dev(c, v, sizeof v);
            CK(scuda_rope(c, dv, T, H, D, nr, pos0, 10000.0f, neox, err, sizeof err));
            CK(scuda_download(c, g2, dv, sizeof g2, err, sizeof err));
            e = rel_err(g2, r2, (size_t)(T * H * D));
            snprintf(det, sizeof det, "(%s, n_rot %d: relative error %.2e)", neox ? "neox" : "norm", nr, e);
            check(e <= 1e-6, "rope", det);
            scuda_dfree(c, dv);
        }

    /* SwiGLU and axpy */
    for (int i = 0; i < N; i++) ref[i] = x[i] / (1.0f + expf(-x[i])) * w[i];
    CK(scuda_swiglu(c, dx, dw, dy, N, err, sizeof err));
    CK(scuda_download(c, got, dy, (size_t)N * 4, err, sizeof err));
    e = rel_err(got, ref, (size_t)N);
    snprintf(det, sizeof det, "(relative error %.2e)", e);
    check(e <= 1e-6, "swiglu", det);
    for (int i = 0; i < N; i++) ref[i] = got[i] + 0.5f * x[i];
    CK(scuda_axpy(c, 0.5f, dx, dy, N, err, sizeof err));
    CK(scuda_download(c, got, dy, (size_t)N * 4, err, sizeof err));
    check(memcmp(got, ref, (size_t)N * 4) == 0, "axpy", "(bit for bit)");
    scuda_dfree(c, dx); scuda_dfree(c, dw); scuda_dfree(c, dy);
}

/* The activation rounding the GPU applies before a Q8_0/Q8_K-family weight
 * (mm in backend_cuda.c) must give the CPU's values bit for bit (qrow_fill's
 * deq, what the CPU's products see): one code rounded the other way moves
 * every later layer of such a model (1e-2 of a logit row on
 * bench_moe_floor's Q8_0 MoE). Values at the rounding ties included. */
static void check_act_round(scuda_ctx *c)
{
    const int R = 3, N = 1024;
    float *x = malloc((size_t)R * N * 4), *got = malloc((size_t)R * N * 4), *ref = malloc((size_t)R * N * 4);
    int8_t *q = malloc((size_t)N);
    float *d = malloc((size_t)N * 4);
    int32_t *s16 = malloc((size_t)N / 16 * 4);
    for (int i = 0; i < R * N; i++) x[i] = frand() * 5;
    for (int i = 0; i < R * N; i += 37) x[i] = (float)(i % 64 - 32) * 0.5f; /* halves: ties once scaled */
    float *dx = dup_dev(c, x, (size_t)R * N * 4), *dy;
    CK(scuda_alloc(c, (void **)&dy, (size_t)R * N * 4, err, sizeof err));
    const int kinds[2] = { WA_Q8_0, WA_Q8_K };
    for (int k = 0; k < 2; k++) {
        for (int r = 0; r < R; r++) {
            qrow a = { .kind = kinds[k], .n = N, .q = q, .d = d, .sum16 = s16, .deq = ref + (size_t)r * N };
            qrow_fill(kernels_scalar(), &a, x + (size_t)r * N);
        }
        CK(scuda_act_round(c, kinds[k], dx, dy, R, N, err, sizeof err));
        CK(scuda_download(c, got, dy, (size_t)R * N * 4, err, sizeof err));
        int bad = 0;
        for (int i = 0; i < R * N; i++) bad += memcmp(&got[i], &ref[i], 4) != 0;
        char det[96];
        snprintf(det, sizeof det, "(%d of %d values differ in bits)", bad, R * N);
        check(bad == 0, kinds[k] == WA_Q8_0 ? "activation rounding Q8_0" : "activation rounding Q8_K", det);
    }
    scuda_dfree(c, dx); scuda_dfree(c, dy);
    free(x); free(got); free(ref); free(q); free(d); free(s16);
}

/* Rotated experts' inputs: the CPU's hadamard_rows, bit for bit, from the
 * smallest block to the largest the GPU takes. */
static void check_hadamard(scuda_ctx *c)
{
    const int R = 3;
    const int64_t N = SCUDA_HADAMARD_MAX, blocks[4] = { 2, 256, 1024, SCUDA_HADAMARD_MAX };
    float *x = malloc((size_t)R * N * 4), *got = malloc((size_t)R * N * 4);
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < R * N; i++) x[i] = frand() * 3;
        float *dx = dup_dev(c, x, (size_t)R * N * 4);
        CK(scuda_hadamard(c, dx, R, N, blocks[k], err, sizeof err));
        CK(scuda_download(c, got, dx, (size_t)R * N * 4, err, sizeof err));
        hadamard_rows(x, R, N, blocks[k]);
        int bad = 0;
        for (int i = 0; i < R * N; i++) bad += memcmp(&got[i], &x[i], 4) != 0;
        char what[64], det[96];
        snprintf(what, sizeof what, "Hadamard rotation, blocks of %lld", (long long)blocks[k]);
        snprintf(det, sizeof det, "(%d of %lld values differ in bits)", bad, (long long)(R * N));
        check(bad == 0, what, det);
        scuda_dfree(c, dx);
    }
    free(x); free(got);
}

/* f32: the cache holds f32 (--kv-type f32); else f16, and the reference
 * rounds K and V to f16 as the cache does. */
static float kv_round(float x, int f32) { return f32 ? x : fp16_to_f32(f32_to_fp16(x)); }

static void check_attention(scuda_ctx *c, int n_ctx_time, int f32)
{
    const size_t el = f32 ? 4 : 2;
    const int NH = 8, NKV = 2, HD = 128, KV = NKV * HD, P0 = 37, T = 5, CTX = 64;
    float *k = malloc((size_t)(CTX * KV) * 4), *v = malloc((size_t)(CTX * KV) * 4);
    float *q = malloc((size_t)(T * NH * HD) * 4), *ref = malloc((size_t)(T * NH * HD) * 4), *got = malloc((size_t)(T * NH * HD) * 4);
    for (int i = 0; i < CTX * KV; i++) { k[i] = frand(); v[i] = frand(); }
    for (int i = 0; i < T * NH * HD; i++) q[i] = frand();
    /* CPU reference over K and V as the cache holds them */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++) {
            int kvh = h / (NH / NKV), np = P0 + t + 1;
            double sc[64], mx = -1e300, sum = 0;
            for (int p = 0; p < np; p++) {
                double s = 0;
                for (int d = 0; d < HD; d++) s += (double)kv_round(k[p * KV + kvh * HD + d], f32) * q[(t * NH + h) * HD + d];
                sc[p] = s / sqrt((double)HD);
                if (sc[p] > mx) mx = sc[p];
            }
            for (int p = 0; p < np; p++) { sc[p] = exp(sc[p] - mx); sum += sc[p]; }
            for (int d = 0; d < HD; d++) {
                double o = 0;
                for (int p = 0; p < np; p++) o += sc[p] / sum * kv_round(v[p * KV + kvh * HD + d], f32);
                ref[(t * NH + h) * HD + d] = (float)o;
            }
        }
    void *kc, *vc;
    CK(scuda_alloc(c, &kc, (size_t)(CTX * KV) * el, err, sizeof err));
    CK(scuda_alloc(c, &vc, (size_t)(CTX * KV) * el, err, sizeof err));
    float *dk = dup_dev(c, k, (size_t)(CTX * KV) * 4), *dv = dup_dev(c, v, (size_t)(CTX * KV) * 4);
    float *dq = dup_dev(c, q, (size_t)(T * NH * HD) * 4), *dout;
    CK(scuda_alloc(c, (void **)&dout, (size_t)(T * NH * HD) * 4, err, sizeof err));
    /* the cache filled in two appends: positions 0..P0-1, then P0..P0+T-1 */
    CK(scuda_kv_store(c, dk, dv, kc, vc, f32, P0, KV, 0, err, sizeof err));
    CK(scuda_kv_store(c, dk + P0 * KV, dv + P0 * KV, kc, vc, f32, T, KV, P0, err, sizeof err));
    CK(scuda_attention(c, dq, kc, vc, f32, dout, T, NH, NKV, HD, P0, err, sizeof err));
    CK(scuda_download(c, got, dout, (size_t)(T * NH * HD) * 4, err, sizeof err));
    double e = rel_err(got, ref, (size_t)(T * NH * HD));
    char det[128];
    snprintf(det, sizeof det, "(%s cache, GQA %d/%d heads, dim %d, %d tokens after %d: relative error %.2e)",
             f32 ? "f32" : "f16", NH, NKV, HD, T, P0, e);
    check(e <= 1e-4, "attention + kv_store", det);
    scuda_dfree(c, kc); scuda_dfree(c, vc); scuda_dfree(c, dk); scuda_dfree(c, dv); scuda_dfree(c, dq); scuda_dfree(c, dout);
    free(k); free(v); free(q); free(ref); free(got);
    if (n_ctx_time > 0) {
        uint16_t *bk, *bv;
        float *bq, *bo;
        CK(scuda_alloc(c, (void **)&bk, (size_t)n_ctx_time * KV * 2, err, sizeof err));
        CK(scuda_alloc(c, (void **)&bv, (size_t)n_ctx_time * KV * 2, err, sizeof err));
        CK(scuda_alloc(c, (void **)&bq, (size_t)NH * HD * 4, err, sizeof err));
        CK(scuda_alloc(c, (void **)&bo, (size_t)NH * HD * 4, err, sizeof err));
        CK(scuda_memset(c, bk, 0, (size_t)n_ctx_time * KV * 2, err, sizeof err));
        CK(scuda_memset(c, bv, 0, (size_t)n_ctx_time * KV * 2, err, sizeof err));
        CK(scuda_memset(c, bq, 0, (size_t)NH * HD * 4, err, sizeof err));
        CK(scuda_sync(c, err, sizeof err));
        double t0 = now();
        for (int i = 0; i < 20; i++) CK(scuda_attention(c, bq, bk, bv, 0, bo, 1, NH, NKV, HD, n_ctx_time - 1, err, sizeof err));
        CK(scuda_sync(c, err, sizeof err));
        printf("  attention decode at %d positions: %.1f us\n", n_ctx_time, (now() - t0) / 20 * 1e6);
        scuda_dfree(c, bk); scuda_dfree(c, bv); scuda_dfree(c, bq); scuda_dfree(c, bo);
    }
}

static void check_router(scuda_ctx *c)
{
    const int T = 33, E = 60, K = 4;
    float lg[33 * 60], w_ref[33 * 4], w_got[33 * 4];
    int32_t s_ref[33 * 4], s_got[33 * 4];
    for (int i = 0; i < T * E; i++) lg[i] = frand() * 4;
    lg[5] = lg[6];   /* a tie: the lower index first */
    for (int renorm = 0; renorm < 2; renorm++) {
        for (int t = 0; t < T; t++) {
            const float *l = lg + t * E;
            float p[60], mx = -INFINITY;
            for (int e = 0; e < E; e++) mx = l[e] > mx ? l[e] : mx;
            double sum = 0;
            for (int e = 0; e < E; e++) { p[e] = expf(l[e] - mx); sum += p[e]; }
            for (int e = 0; e < E; e++) p[e] = (float)(p[e] / sum);
            for (int j = 0; j < K; j++) {
                int best = -1;
                for (int e = 0; e < E; e++) {
                    int taken = 0;
                    for (int i = 0; i < j; i++) taken |= s_ref[t * K + i] == e;
                    if (!taken && (best < 0 || p[e] > p[best])) best = e;
                }
                s_ref[t * K + j] = best;
                w_ref[t * K + j] = p[best];
            }
            if (renorm) {
                float s = 0;
                for (int j = 0; j < K; j++) s += w_ref[t * K + j];
                for (int j = 0; j < K; j++) w_ref[t * K + j] /= s;
            }
        }
        float *dl = dup_dev(c, lg, sizeof lg), *dw;
        int32_t *ds;
        CK(scuda_alloc(c, (void **)&dw, sizeof w_got, err, sizeof err));
        CK(scuda_alloc(c, (void **)&ds, sizeof s_got, err, sizeof err));
        CK(scuda_router_topk(c, dl, T, E, K, renorm, ds, dw, err, sizeof err));
        CK(scuda_download(c, s_got, ds, sizeof s_got, err, sizeof err));
        CK(scuda_download(c, w_got, dw, sizeof w_got, err, sizeof err));
        double e = rel_err(w_got, w_ref, (size_t)(T * K));
        char det[128];
        snprintf(det, sizeof det, "(renorm %d: experts %s, weights relative error %.2e)", renorm,
                 memcmp(s_got, s_ref, sizeof s_ref) ? "DIFFER" : "equal", e);
        check(!memcmp(s_got, s_ref, sizeof s_ref) && e <= 1e-6, "router top-k", det);
        scuda_dfree(c, dl); scuda_dfree(c, dw); scuda_dfree(c, ds);
    }
}

static const void *host_of(void *ctx, int64_t expert) { return (const uint8_t *)ctx + expert * 4096; }

static void check_slots(scuda_ctx *c)
{
    /* the expert cache on real slots: fill from a profile, read a slot back */
    uint8_t *host = malloc(16 * 4096), back[4096];
    for (int i = 0; i < 16 * 4096; i++) host[i] = (uint8_t)rnd();
    CK(scuda_host_register(c, host, 16 * 4096, err, sizeof err));
    scuda_slots s = { c, NULL, 0, 0, host_of, host };
    ec_config cfg = { .n_layer = 2, .n_expert = 8, .n_slots = 4, .slot_bytes = 4096, .decay = 0.99, .miss = EC_MISS_PCIE };
    expert_cache *ec = ec_create(&cfg, scuda_slots_device(&s), err, sizeof err);
    if (!ec) { fprintf(stderr, "kernel_check: %s\n", err); exit(1); }
    ec_profile p;
    CK(ec_profile_init(&p, 2, 8, 1, err, sizeof err));
    int32_t e1 = 5;
    CK(ec_profile_observe(&p, 1, &e1, 1, err, sizeof err));
    int32_t e0 = 2;
    CK(ec_profile_observe(&p, 0, &e0, 1, err, sizeof err));
    CK(ec_fill(ec, &p, err, sizeof err));
    int slot = ec_slot_of(ec, 1, 5);
    CK(scuda_download(c, back, scuda_slot_ptr(&s, slot), 4096, err, sizeof err));
    check(slot >= 0 && !memcmp(back, host + 13 * 4096, 4096), "expert slots", "(profile fill, slot bytes read back)");
    ec_result r;
    ec_begin_token(ec);
    CK(ec_access(ec, 0, 7, &r, err, sizeof err));
    CK(ec_sync(ec, err, sizeof err));
    CK(scuda_download(c, back, scuda_slot_ptr(&s, r.slot), 4096, err, sizeof err));
    check(r.where == EC_MISS_ON_GPU && !memcmp(back, host + 7 * 4096, 4096), "expert slots", "(pcie miss refill)");
    ec_free(ec);
    ec_profile_free(&p);
    scuda_slots_free(&s);
    CK(scuda_host_unregister(c, host, err, sizeof err));
    free(host);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    scuda_ctx *c = scuda_create(0, 0, err, sizeof err);
    if (!c) {
        printf("kernel_check: %s\n", err);
        return 77;
    }
    printf("device: %s\n", scuda_device_name(c));
    check_forms(c);
    check_ops(c);
    check_act_round(c);
    check_hadamard(c);
    check_attention(c, quick ? 0 : 4096, 0);
    check_attention(c, 0, 1);
    check_router(c);
    check_slots(c);
    if (!quick) time_forms(c);
    scuda_free(c);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
