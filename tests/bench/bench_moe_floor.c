/* bench_moe_floor.c: decode speed of a memory-bound MoE model against the
 * bandwidth floor (issue 6's acceptance: >= 0.7 of the floor on 2 cores).
 *
 * A synthetic Mixtral-style llama MoE GGUF (10 layers, 8 experts of 2048 x
 * 2048, top-2, Q8_0 attention and experts, random but sane values, a
 * 512-token SPM vocabulary) is written with our GGUF writer into a temp
 * dir, built into a pack with the iq3pack build library (--experts keep:
 * the experts stay Q8_0 in their canonical S8 form), loaded with the
 * runtime's loader, and decoded on 2 threads: the median of RUNS runs of
 * N_DECODE tokens after a short prompt. The floor is the measured 2-thread
 * read bandwidth (AVX2 sums over a 1 GiB buffer, median of 5 sweeps)
 * divided by the weight bytes one decode step reads (dense + top-k
 * experts, model_active_bytes). Everything written is removed at the end.
 *
 * STRATA_MOE_FLOOR_IQ3=1 also builds the IQ3-expert variant of the same
 * model (slow: every expert weight is re-encoded) and reports it the same
 * way. STRATA_MOE_FLOOR_LAYERS=N changes the layer count (default 10).
 * STRATA_MOE_FLOOR_PACK=DIR (for profiling) keeps the --experts keep pack
 * in DIR, building it only when DIR does not exist yet (with
 * STRATA_MOE_FLOOR_IQ3=1 it is the --experts iq3 pack instead, and only that
 * one is benched: the IQ3 build is the slow one worth keeping);
 * STRATA_MOE_FLOOR_BUILD_ONLY=1 with it only builds (tests/cuda/device_check.sh
 * makes its several-GB pack this way: STRATA_MOE_FLOOR_LAYERS sizes it, about
 * 0.11 GB per layer). STRATA_MOE_FLOOR_GGUF=FILE writes only the source
 * GGUF, to FILE (for llama-bench to measure the same model).
 * STRATA_MOE_FLOOR_SKEW=1 gives the router favourites, as trained routers
 * have (the random one uses layers 0-3's experts about alike, the RAM
 * tier's worst case): a bias toward low-numbered experts, with which
 * layers 0-3's expert use falls off about like Zipf with s = 1 (the most
 * used expert 6-10x the least, over strata bench's tokens); other
 * strengths scale the bias (2: steeper; 0: off). Every weight but the
 * embedding and the routers is the same as without it ("a router with
 * favourites" below says how, and why layers 4-9 are skewed either way);
 * tests/diag/tier_vs_llamacpp.sh measures the RAM tier on both routers.
 * STRATA_MOE_FLOOR_ARCH=deepseek2 writes DeepSeek V3's attention instead
 * (multi-head latent attention: q rank 768, kv rank 512, heads of 128 + 64
 * rotated, v heads of 128, llama.cpp's absorbed layout) and one shared
 * expert of the same width; the routed experts are the same.
 * STRATA_MOE_FLOOR_ARCH=gpt-oss writes gpt-oss's layers instead: q/k/v/o
 * biases, sinks, a 128-position window on every other layer, a router
 * bias, and the experts (the same shapes) in MXFP4 with bias rows, as
 * gpt-oss ships them; --experts keep keeps the MXFP4 blocks. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "pack/pack_cli.h"
#include "runtime/model/loader.h"
#include "runtime/model/model.h"

#define N_EMBD 2048
#define N_FF 2048
#define N_HEAD 16
#define N_HEAD_KV 4
#define N_EXPERT 8
#define N_USED 2
#define N_VOCAB 512
#define N_CTX 256
#define THREADS 2
#define RUNS 7
#define N_PROMPT 8
#define N_DECODE 32
#define BW_BYTES ((size_t)1 << 30)

/* ------------------------------------------------------- read bandwidth */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include "tests/bench/bench_util.h"
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint64_t *p, size_t n)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 16 <= n; i += 16) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(p + i)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(p + i + 4)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(p + i + 8)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(p + i + 12)));
    }
    uint64_t t[4];
    _mm256_storeu_si256((__m256i *)t, _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
    return t[0] + t[1] + t[2] + t[3];
}
static int have_avx2(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2"); }
#else
static uint64_t sum_avx2(const uint64_t *p, size_t n) { (void)p; (void)n; return 0; }
static int have_avx2(void) { return 0; }
#endif

static uint64_t sum_plain(const uint64_t *p, size_t n)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) { s0 += p[i]; s1 += p[i + 1]; s2 += p[i + 2]; s3 += p[i + 3]; }
    return s0 + s1 + s2 + s3;
}

typedef struct bw_part { const uint64_t *p; size_t n; int avx2; uint64_t sum; } bw_part;

static void *bw_thread(void *v)
{
    bw_part *b = v;
    b->sum = b->avx2 ? sum_avx2(b->p, b->n) : sum_plain(b->p, b->n);
    return NULL;
}

/* A 1 GiB buffer (far past the caches) swept by `threads` threads, each
 * summing its share. The machines are shared and their bandwidth moves by
 * 2x from minute to minute, so a sweep is taken right before every timed
 * decode run (the median of three) and each run is judged against it.
 * When other work shares the cores the medians move a lot; the best run
 * against the best sweep is then the steadier figure, printed too. */
typedef struct bwbuf { uint64_t *buf; size_t n; int avx2; uint64_t sink; } bwbuf;

static int bw_open(bwbuf *b)
{
    b->n = BW_BYTES / sizeof(uint64_t);
    b->buf = aligned_alloc(64, BW_BYTES);
    if (!b->buf) return -1;
    for (size_t i = 0; i < b->n; i++) b->buf[i] = i;
    b->avx2 = have_avx2();
    b->sink = 0;
    return 0;
}

/* Bytes per second of one sweep. */
static double bw_sweep(bwbuf *b, int threads)
{
    bw_part part[8];
    pthread_t th[8];
    double t0 = bench_now();
    for (int i = 0; i < threads; i++) {
        part[i] = (bw_part){ b->buf + b->n / (size_t)threads * (size_t)i, b->n / (size_t)threads, b->avx2, 0 };
        if (i > 0) pthread_create(&th[i], NULL, bw_thread, &part[i]);
    }
    bw_thread(&part[0]);
    for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
    double t = bench_now() - t0;
    for (int i = 0; i < threads; i++) b->sink += part[i].sum;
    return (double)BW_BYTES / t;
}

static double bw_median(bwbuf *b, int threads)
{
    double v[RUNS];
    for (int r = 0; r < RUNS; r++) v[r] = bw_sweep(b, threads);
    return bench_median(v, RUNS);
}

/* ------------------------------------------------------ the synthetic GGUF */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

/* Q8_0 blocks of random codes in [-127, 127] with scale d: values of std ~ 73 d. */
static void fill_q8_0(uint8_t *dst, size_t n_blocks, float d, uint64_t *rng)
{
    const uint16_t dh = f32_to_fp16(d);
    for (size_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = dst + b * 34;
        memcpy(blk, &dh, 2);
        for (int j = 0; j < 32; j += 8) {
            uint64_t r = rng_next(rng);
            for (int k = 0; k < 8; k++) {
                int v = (int)((r >> (8 * k)) & 255u) - 128;
                blk[2 + j + k] = (uint8_t)(int8_t)(v == -128 ? 0 : v);
            }
        }
    }
}

static int add_q8(gguf_writer *w, const char *name, int64_t ne0, int64_t ne1, int64_t ne2, float d, uint64_t *rng)
{
    const size_t blocks = (size_t)(ne0 / 32) * (size_t)ne1 * (size_t)ne2;
    uint8_t *buf = malloc(blocks * 34);
    if (!buf) return -1;
    fill_q8_0(buf, blocks, d, rng);
    const int64_t ne[3] = { ne0, ne1, ne2 };
    int64_t r = gguf_writer_add_tensor(w, name, GGML_TYPE_Q8_0, ne2 > 1 ? 3 : 2, ne, buf, blocks * 34);
    free(buf);
    return r < 0 ? -1 : 0;
}

/* MXFP4 blocks of random E2M1 codes, scale 2^(e-128): values of std ~ 5 x 2^(e-128). */
static int add_mxfp4(gguf_writer *w, const char *name, int64_t ne0, int64_t ne1, int64_t ne2, int e, uint64_t *rng)
{
    const size_t blocks = (size_t)(ne0 / 32) * (size_t)ne1 * (size_t)ne2;
    uint8_t *buf = malloc(blocks * 17);
    if (!buf) return -1;
    for (size_t b = 0; b < blocks; b++) {
        buf[b * 17] = (uint8_t)e;
        uint64_t r0 = rng_next(rng), r1 = rng_next(rng);
        memcpy(buf + b * 17 + 1, &r0, 8);
        memcpy(buf + b * 17 + 9, &r1, 8);
    }
    const int64_t ne[3] = { ne0, ne1, ne2 };
    int64_t r = gguf_writer_add_tensor(w, name, GGML_TYPE_MXFP4, 3, ne, buf, blocks * 17);
    free(buf);
    return r < 0 ? -1 : 0;
}

static int add_f32(gguf_writer *w, const char *name, int64_t ne0, int64_t ne1, float base, float spread,
                   uint64_t *rng)
{
    const size_t n = (size_t)ne0 * (size_t)ne1;
    float *v = malloc(n * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < n; i++) v[i] = base + spread * ((float)(rng_next(rng) >> 40) / 16777216.0f - 0.5f);
    const int64_t ne[2] = { ne0, ne1 };
    int64_t r = gguf_writer_add_tensor(w, name, GGML_TYPE_F32, ne1 > 1 ? 2 : 1, ne, v, n * sizeof *v);
    free(v);
    return r < 0 ? -1 : 0;
}

/* --------------------------------------------- a router with favourites */

/* A trained router uses some experts far more than others, and a RAM tier
 * for experts lives on that. STRATA_MOE_FLOOR_SKEW=S gives this one
 * favourites: one fixed vector v (SKEW_AMP times a sign pattern of its own
 * seed, so the weights' draws stay as they were) is added to every token's
 * embedding, so that the residual stream carries it into every layer, and
 * router row e, after losing its own component along u = v / |v| (else v
 * would add a random bias per expert as well), gains
 * -S SKEW_GAIN ln(e + 1) u / |v|. The router reads the normed residual
 * x / rms(x), whose projection on u is about |v| / rms(x) whatever the
 * token: logit e drops by about S SKEW_GAIN ln(e + 1) / rms(x) against
 * expert 0's, which top-2 of the rest of the logits turns into uses
 * falling with e. SKEW_GAIN was tuned by measuring: with it and S = 1,
 * layers 0-3 use their experts like Zipf with s of 0.8-1.1 (the most used
 * 6-10x the least, over strata bench's 256 tokens). Layers 4-9 are steeper
 * with or without it: deep in this random network every token's residual
 * shares a large common part, which favours a few experts per layer on its
 * own. v is small beside the embedding's values (0.1 against ~0.73), so it
 * does not take the residual over. */
#define SKEW_AMP 0.1f
#define SKEW_GAIN 0.5f

typedef struct skew {
    float strength;      /* S; 0: the random router, as without the variable */
    float sign[N_EMBD];  /* v / SKEW_AMP */
} skew;

/* 0, or -1 with err when STRATA_MOE_FLOOR_SKEW is not a number >= 0. */
static int skew_init(skew *k, char *err, size_t errlen)
{
    const char *e = getenv("STRATA_MOE_FLOOR_SKEW");
    k->strength = 0;
    if (!e || !*e) return 0;
    char *end;
    const float v = strtof(e, &end);
    if (*end || !(v >= 0) || v > 100) {
        snprintf(err, errlen, "STRATA_MOE_FLOOR_SKEW=%s: give a strength (1: Zipf-like; 0: the random router)", e);
        return -1;
    }
    k->strength = v;
    uint64_t r = 0x5ca1ab1e0ddba11ull;
    for (int i = 0; i < N_EMBD; i++) k->sign[i] = (rng_next(&r) >> 63) ? 1.0f : -1.0f;
    return 0;
}

/* token_embd.weight as add_q8 writes it (the same draws), each block plus
 * v and requantized. */
static int add_embd_skewed(gguf_writer *w, const skew *k, float d, uint64_t *rng)
{
    const size_t per_row = N_EMBD / 32, blocks = per_row * N_VOCAB;
    uint8_t *buf = malloc(blocks * 34);
    if (!buf) return -1;
    fill_q8_0(buf, blocks, d, rng);
    for (size_t b = 0; b < blocks; b++) {
        uint8_t *blk = buf + b * 34;
        const float *sign = k->sign + (b % per_row) * 32;
        uint16_t dh;
        memcpy(&dh, blk, 2);
        const float bd = fp16_to_f32(dh);
        float f[32], amax = 0;
        for (int j = 0; j < 32; j++) {
            f[j] = bd * (float)(int8_t)blk[2 + j] + SKEW_AMP * sign[j];
            if (fabsf(f[j]) > amax) amax = fabsf(f[j]);
        }
        const uint16_t nh = f32_to_fp16(amax / 127.0f);
        const float nd = fp16_to_f32(nh), inv = nd > 0 ? 1.0f / nd : 0.0f;
        memcpy(blk, &nh, 2);
        for (int j = 0; j < 32; j++) {
            const long c = lrintf(f[j] * inv);
            blk[2 + j] = (uint8_t)(int8_t)(c > 127 ? 127 : c < -127 ? -127 : c);
        }
    }
    const int64_t ne[2] = { N_EMBD, N_VOCAB };
    int64_t r = gguf_writer_add_tensor(w, "token_embd.weight", GGML_TYPE_Q8_0, 2, ne, buf, blocks * 34);
    free(buf);
    return r < 0 ? -1 : 0;
}

/* A ffn_gate_inp.weight as add_f32 writes it (the same draws), row e
 * without its part along u and plus -S SKEW_GAIN ln(e + 1) u / |v|. */
static int add_router_skewed(gguf_writer *w, const char *name, const skew *k, uint64_t *rng)
{
    const size_t n = (size_t)N_EMBD * N_EXPERT;
    float *v = malloc(n * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < n; i++) v[i] = 0.0f + 0.1f * ((float)(rng_next(rng) >> 40) / 16777216.0f - 0.5f);
    const float unit = 1.0f / sqrtf((float)N_EMBD), v_len = sqrtf((float)N_EMBD) * SKEW_AMP;
    for (int e = 0; e < N_EXPERT; e++) {
        float *row = v + (size_t)e * N_EMBD, along = 0;
        for (int i = 0; i < N_EMBD; i++) along += row[i] * k->sign[i] * unit;
        const float bias = -k->strength * SKEW_GAIN * logf((float)(e + 1)) / v_len;
        for (int i = 0; i < N_EMBD; i++) row[i] += (bias - along) * unit * k->sign[i];
    }
    const int64_t ne[2] = { N_EMBD, N_EXPERT };
    int64_t r = gguf_writer_add_tensor(w, name, GGML_TYPE_F32, 2, ne, v, n * sizeof *v);
    free(v);
    return r < 0 ? -1 : 0;
}

/* A llama SPM vocabulary: <unk> <s> </s>, the 256 byte tokens, then pieces. */
static int add_tokenizer(gguf_writer *w)
{
    char *names[N_VOCAB];
    float scores[N_VOCAB];
    int32_t types[N_VOCAB];
    int rc = 0;
    for (int i = 0; i < N_VOCAB; i++) {
        names[i] = malloc(16);
        if (!names[i]) { for (int j = 0; j < i; j++) free(names[j]); return -1; }
        if (i < 3) { snprintf(names[i], 16, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>"); types[i] = i == 0 ? 2 : 3; }
        else if (i < 259) { snprintf(names[i], 16, "<0x%02X>", i - 3); types[i] = 6; }
        else { snprintf(names[i], 16, "\xe2\x96\x81t%d", i); types[i] = 1; }
        scores[i] = i < 259 ? 0.0f : -(float)i;
    }
    rc |= gguf_writer_add_str(w, "tokenizer.ggml.model", "llama");
    rc |= gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)names, N_VOCAB);
    rc |= gguf_writer_add_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, N_VOCAB);
    rc |= gguf_writer_add_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, N_VOCAB);
    rc |= gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    rc |= gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 1);
    rc |= gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2);
    for (int i = 0; i < N_VOCAB; i++) free(names[i]);
    return rc ? -1 : 0;
}

/* DeepSeek V3's latent attention at this width (write_gguf with mla) */
enum { MLA_QR = 768, MLA_KVR = 512, MLA_NOPE = 128, MLA_ROT = 64, MLA_V = 128 };

static int write_gguf(const char *path, int n_layer, char *err, size_t errlen)
{
    gguf_writer *w = gguf_writer_new();
    if (!w) { snprintf(err, errlen, "out of memory"); return -1; }
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    float eps = 1e-5f, base = 10000.0f;
    const char *arch_env = getenv("STRATA_MOE_FLOOR_ARCH");
    const int mla = arch_env && !strcmp(arch_env, "deepseek2"), oss = arch_env && !strcmp(arch_env, "gpt-oss");
    const char *arch = mla ? "deepseek2" : oss ? "gpt-oss" : "llama";
    int rc = 0;
    char key[96];
#define KEY(s) (snprintf(key, sizeof key, "%s." s, arch), key)
    rc |= gguf_writer_add_str(w, "general.architecture", arch);
    rc |= gguf_writer_add_str(w, "general.name", "moe-floor-synthetic");
    rc |= gguf_writer_add_u32(w, KEY("vocab_size"), N_VOCAB);
    rc |= gguf_writer_add_u32(w, KEY("context_length"), N_CTX);
    rc |= gguf_writer_add_u32(w, KEY("embedding_length"), N_EMBD);
    rc |= gguf_writer_add_u32(w, KEY("feed_forward_length"), N_FF);
    rc |= gguf_writer_add_u32(w, KEY("block_count"), (uint32_t)n_layer);
    rc |= gguf_writer_add_u32(w, KEY("attention.head_count"), N_HEAD);
    rc |= gguf_writer_add_u32(w, KEY("attention.head_count_kv"), mla ? 1 : N_HEAD_KV);
    rc |= gguf_writer_add_u32(w, KEY("rope.dimension_count"), mla ? MLA_ROT : N_EMBD / N_HEAD);
    rc |= gguf_writer_add_kv(w, KEY("rope.freq_base"), GGUF_TYPE_FLOAT32, &base);
    rc |= gguf_writer_add_kv(w, KEY("attention.layer_norm_rms_epsilon"), GGUF_TYPE_FLOAT32, &eps);
    rc |= gguf_writer_add_u32(w, KEY("expert_count"), N_EXPERT);
    rc |= gguf_writer_add_u32(w, KEY("expert_used_count"), N_USED);
    if (mla) {
        const float one = 1.0f;
        rc |= gguf_writer_add_u32(w, KEY("attention.key_length"), MLA_KVR + MLA_ROT);
        rc |= gguf_writer_add_u32(w, KEY("attention.value_length"), MLA_KVR);
        rc |= gguf_writer_add_u32(w, KEY("attention.key_length_mla"), MLA_NOPE + MLA_ROT);
        rc |= gguf_writer_add_u32(w, KEY("attention.value_length_mla"), MLA_V);
        rc |= gguf_writer_add_u32(w, KEY("attention.q_lora_rank"), MLA_QR);
        rc |= gguf_writer_add_u32(w, KEY("attention.kv_lora_rank"), MLA_KVR);
        rc |= gguf_writer_add_u32(w, KEY("expert_feed_forward_length"), N_FF);
        rc |= gguf_writer_add_u32(w, KEY("expert_shared_count"), 1);
        rc |= gguf_writer_add_u32(w, KEY("leading_dense_block_count"), 0);
        rc |= gguf_writer_add_kv(w, KEY("expert_weights_scale"), GGUF_TYPE_FLOAT32, &one);
    }
    if (oss) {
        rc |= gguf_writer_add_u32(w, KEY("expert_feed_forward_length"), N_FF);
        rc |= gguf_writer_add_u32(w, KEY("attention.sliding_window"), 128);
    }
#undef KEY
    rc |= add_tokenizer(w);
    /* weights of std ~ 1/sqrt(fan-in): activations keep their size through the layers */
    const float d = 1.0f / (73.0f * 45.25f);
    const int64_t kv = N_EMBD / N_HEAD * N_HEAD_KV;
    skew sk;
    if (skew_init(&sk, err, errlen)) { gguf_writer_free(w); return -1; }
    if (sk.strength > 0) rc |= add_embd_skewed(w, &sk, 0.01f, &rng);
    else rc |= add_q8(w, "token_embd.weight", N_EMBD, N_VOCAB, 1, 0.01f, &rng);
    rc |= add_f32(w, "output_norm.weight", N_EMBD, 1, 1.0f, 0.2f, &rng);
    rc |= add_q8(w, "output.weight", N_EMBD, N_VOCAB, 1, d, &rng);
    for (int l = 0; l < n_layer && !rc; l++) {
        char nm[64];
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%d." s, l), nm)
        rc |= add_f32(w, NAME("attn_norm.weight"), N_EMBD, 1, 1.0f, 0.2f, &rng);
        if (mla) {
            rc |= add_q8(w, NAME("attn_q_a.weight"), N_EMBD, MLA_QR, 1, d, &rng);
            rc |= add_f32(w, NAME("attn_q_a_norm.weight"), MLA_QR, 1, 1.0f, 0.2f, &rng);
            rc |= add_q8(w, NAME("attn_q_b.weight"), MLA_QR, N_HEAD * (MLA_NOPE + MLA_ROT), 1, 1.0f / (73.0f * 27.7f), &rng);
            rc |= add_q8(w, NAME("attn_kv_a_mqa.weight"), N_EMBD, MLA_KVR + MLA_ROT, 1, d, &rng);
            rc |= add_f32(w, NAME("attn_kv_a_norm.weight"), MLA_KVR, 1, 1.0f, 0.2f, &rng);
            rc |= add_q8(w, NAME("attn_k_b.weight"), MLA_NOPE, MLA_KVR, N_HEAD, 1.0f / (73.0f * 11.3f), &rng);
            rc |= add_q8(w, NAME("attn_v_b.weight"), MLA_KVR, MLA_V, N_HEAD, 1.0f / (73.0f * 22.6f), &rng);
            rc |= add_q8(w, NAME("attn_output.weight"), N_HEAD * MLA_V, N_EMBD, 1, d, &rng);
            rc |= add_q8(w, NAME("ffn_gate_shexp.weight"), N_EMBD, N_FF, 1, d, &rng);
            rc |= add_q8(w, NAME("ffn_up_shexp.weight"), N_EMBD, N_FF, 1, d, &rng);
            rc |= add_q8(w, NAME("ffn_down_shexp.weight"), N_FF, N_EMBD, 1, d, &rng);
        } else {
            rc |= add_q8(w, NAME("attn_q.weight"), N_EMBD, N_EMBD, 1, d, &rng);
            rc |= add_q8(w, NAME("attn_k.weight"), N_EMBD, kv, 1, d, &rng);
            rc |= add_q8(w, NAME("attn_v.weight"), N_EMBD, kv, 1, d, &rng);
            rc |= add_q8(w, NAME("attn_output.weight"), N_EMBD, N_EMBD, 1, d, &rng);
        }
        if (oss) {
            rc |= add_f32(w, NAME("attn_q.bias"), N_EMBD, 1, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("attn_k.bias"), kv, 1, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("attn_v.bias"), kv, 1, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("attn_output.bias"), N_EMBD, 1, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("attn_sinks.weight"), N_HEAD, 1, 0.0f, 1.0f, &rng);
            rc |= add_f32(w, NAME("post_attention_norm.weight"), N_EMBD, 1, 1.0f, 0.2f, &rng);
            if (sk.strength > 0) rc |= add_router_skewed(w, NAME("ffn_gate_inp.weight"), &sk, &rng);
            else rc |= add_f32(w, NAME("ffn_gate_inp.weight"), N_EMBD, N_EXPERT, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("ffn_gate_inp.bias"), N_EXPERT, 1, 0.0f, 0.1f, &rng);
            rc |= add_mxfp4(w, NAME("ffn_gate_exps.weight"), N_EMBD, N_FF, N_EXPERT, 120, &rng);
            rc |= add_mxfp4(w, NAME("ffn_down_exps.weight"), N_FF, N_EMBD, N_EXPERT, 120, &rng);
            rc |= add_mxfp4(w, NAME("ffn_up_exps.weight"), N_EMBD, N_FF, N_EXPERT, 120, &rng);
            rc |= add_f32(w, NAME("ffn_gate_exps.bias"), N_FF, N_EXPERT, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("ffn_down_exps.bias"), N_EMBD, N_EXPERT, 0.0f, 0.1f, &rng);
            rc |= add_f32(w, NAME("ffn_up_exps.bias"), N_FF, N_EXPERT, 0.0f, 0.1f, &rng);
            continue;
        }
        rc |= add_f32(w, NAME("ffn_norm.weight"), N_EMBD, 1, 1.0f, 0.2f, &rng);
        if (sk.strength > 0) rc |= add_router_skewed(w, NAME("ffn_gate_inp.weight"), &sk, &rng);
        else rc |= add_f32(w, NAME("ffn_gate_inp.weight"), N_EMBD, N_EXPERT, 0.0f, 0.1f, &rng);
        rc |= add_q8(w, NAME("ffn_gate_exps.weight"), N_EMBD, N_FF, N_EXPERT, d, &rng);
        rc |= add_q8(w, NAME("ffn_down_exps.weight"), N_FF, N_EMBD, N_EXPERT, d, &rng);
        rc |= add_q8(w, NAME("ffn_up_exps.weight"), N_EMBD, N_FF, N_EXPERT, d, &rng);
#undef NAME
    }
    if (rc) snprintf(err, errlen, "%s: building the GGUF in memory failed", path);
    else rc = gguf_writer_write(w, path, err, errlen);
    gguf_writer_free(w);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------- the pack */

static int build_pack(const char *src, const char *out, const char *experts)
{
    char *argv[] = { "build", (char *)src, "-o", (char *)out, "--experts", (char *)experts, "--threads", "2", NULL };
    fflush(stdout);
    int saved = dup(1);
    FILE *null = freopen("/dev/null", "w", stdout); /* the build's summary is not the benchmark's */
    (void)null;
    int rc = iq3pack_cmd_build(8, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

/* One run: a short prompt, then N_DECODE greedy tokens; decode tokens/s. */
static double decode_run(model *m, float *logits, char *err, size_t errlen)
{
    int32_t prompt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) prompt[i] = 259 + (i * 37) % (N_VOCAB - 259);
    model_rewind(m, 0);
    if (model_forward(m, prompt, N_PROMPT, logits, false, err, errlen)) return -1;
    int32_t tok = argmax(logits, N_VOCAB);
    double t0 = bench_now();
    for (int i = 0; i < N_DECODE; i++) {
        if (model_forward(m, &tok, 1, logits, false, err, errlen)) return -1;
        tok = argmax(logits, N_VOCAB);
    }
    return N_DECODE / (bench_now() - t0);
}

static int bench_pack(const char *label, const char *pack, bwbuf *bw, double build_s)
{
    char err[1024];
    double t0 = bench_now();
    loaded_pack *lp = loader_open(pack, err, sizeof err);
    if (!lp) { printf("%s: %s\n", label, err); return -1; }
    model_options o = model_default_options();
    o.n_threads = THREADS;
    o.n_ctx = N_CTX;
    model *m = model_create(loader_hparams(lp), loader_weights(lp), &o, err, sizeof err);
    if (!m) { printf("%s: %s\n", label, err); loader_close(lp); return -1; }
    const double load_s = bench_now() - t0;
    const double active = (double)model_active_bytes(m);
    float *logits = malloc(N_VOCAB * sizeof *logits);
    double tps[RUNS], bws[RUNS], frac[RUNS];
    int rc = 0;
    /* a first run faults the mmapped experts in: not timed */
    if (!logits || decode_run(m, logits, err, sizeof err) < 0) { printf("%s: %s\n", label, err); rc = -1; }
    for (int r = 0; r < RUNS && !rc; r++) {
        double sw[3];
        for (int k = 0; k < 3; k++) sw[k] = bw_sweep(bw, THREADS);
        bws[r] = bench_median(sw, 3);
        if ((tps[r] = decode_run(m, logits, err, sizeof err)) < 0) { printf("%s: %s\n", label, err); rc = -1; }
        frac[r] = tps[r] / (bws[r] / active);
    }
    if (!rc) {
        const double med = bench_median(tps, RUNS), bwm = bench_median(bws, RUNS), fr = bench_median(frac, RUNS);
        printf("%s: pack %.2f GB (dense pool %.0f MB, experts %.0f MB), built in %.1f s, loaded in %.1f s, kernels %s\n",
               label, (double)(loader_pool_bytes(lp) + loader_expert_bytes(lp)) / 1e9,
               (double)loader_pool_bytes(lp) / 1e6, (double)loader_expert_bytes(lp) / 1e6, build_s, load_s,
               model_kernels_name(m));
        printf("    active weight bytes per token %.1f MB\n", active / 1e6);
        printf("    decode %d threads: %.2f tokens/s (median of %d x %d tokens, min %.2f max %.2f)\n", THREADS, med,
               RUNS, N_DECODE, tps[0], tps[RUNS - 1]);
        printf("    %d-thread read bandwidth before each run: median %.2f GB/s (min %.2f max %.2f); floor %.2f tokens/s\n",
               THREADS, bwm / 1e9, bws[0] / 1e9, bws[RUNS - 1] / 1e9, bwm / active);
        printf("    decode = %.3f of the bandwidth floor (median of the per-run ratios; min %.3f max %.3f)\n", fr,
               frac[0], frac[RUNS - 1]);
        printf("    least disturbed: best run %.2f tokens/s against the best sweep's floor %.2f tokens/s = %.3f\n",
               tps[RUNS - 1], bws[RUNS - 1] / active, tps[RUNS - 1] / (bws[RUNS - 1] / active));
        printf("    effective weight read rate %.1f GB/s\n", med * active / 1e9);
    }
    free(logits);
    model_free(m);
    loader_close(lp);
    return rc;
}

static void rm_rf(const char *path)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "bench_moe_floor: could not remove %s\n", path);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    const char *ly = getenv("STRATA_MOE_FLOOR_LAYERS"), *iq3 = getenv("STRATA_MOE_FLOOR_IQ3");
    const int n_layer = ly && atoi(ly) > 0 ? atoi(ly) : 10;
    char dir[512], src[600], pack[600], pack3[600], err[1024];
    snprintf(dir, sizeof dir, "%s/strata-bench-moe-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(src, sizeof src, "%s/moe.gguf", dir);
    snprintf(pack, sizeof pack, "%s/pack-keep", dir);
    snprintf(pack3, sizeof pack3, "%s/pack-iq3", dir);
    const double t_all = bench_now();

    bwbuf bw;
    if (bw_open(&bw)) { printf("out of memory\n"); rm_rf(dir); return 1; }
    const double bw1 = bw_median(&bw, 1), bw2 = bw_median(&bw, THREADS);
    printf("read bandwidth (1 GiB, %s sums, median of %d): 1 thread %.2f GB/s, %d threads %.2f GB/s\n",
           bw.avx2 ? "AVX2" : "scalar", RUNS, bw1 / 1e9, THREADS, bw2 / 1e9);

    /* the source GGUF alone, for other runtimes (llama-bench) to measure */
    const char *gguf_out = getenv("STRATA_MOE_FLOOR_GGUF");
    if (gguf_out && *gguf_out) {
        rm_rf(dir);
        free(bw.buf);
        if (access(gguf_out, F_OK) == 0) { printf("%s exists; not overwritten\n", gguf_out); return 1; }
        if (write_gguf(gguf_out, n_layer, err, sizeof err)) { printf("%s\n", err); return 1; }
        printf("wrote %s\n", gguf_out);
        return 0;
    }
    const char *keep = getenv("STRATA_MOE_FLOOR_PACK");
    if (keep && *keep) {
        int rc = 0;
        if (access(keep, F_OK) != 0) {
            if (write_gguf(src, n_layer, err, sizeof err)) { printf("%s\n", err); rm_rf(dir); return 1; }
            rc = build_pack(src, keep, iq3 && *iq3 == '1' ? "iq3" : "keep");
        }
        rm_rf(dir);
        const char *only = getenv("STRATA_MOE_FLOOR_BUILD_ONLY");
        if (!rc && only && *only == '1') { printf("built %s\n", keep); free(bw.buf); return 0; }
        rc = rc || bench_pack(iq3 && *iq3 == '1' ? "experts IQ3, kept pack" : "experts keep, kept pack", keep,
                              &bw, 0) ? 1 : 0;
        free(bw.buf);
        return rc;
    }
    double t0 = bench_now();
    if (write_gguf(src, n_layer, err, sizeof err)) { printf("%s\n", err); rm_rf(dir); return 1; }
    const char *arch = getenv("STRATA_MOE_FLOOR_ARCH");
    const int oss = arch && !strcmp(arch, "gpt-oss");
    printf("synthetic %s MoE: %d layers, n_embd %d, %d experts of %d x %d (top %d), %s, vocab %d; GGUF written in "
           "%.1f s\n", arch && *arch ? arch : "llama", n_layer, N_EMBD, N_EXPERT, N_FF, N_EMBD, N_USED,
           oss ? "Q8_0 attention, MXFP4 experts" : "Q8_0", N_VOCAB, bench_now() - t0);
    const char *skewed = getenv("STRATA_MOE_FLOOR_SKEW");
    if (skewed && strtof(skewed, NULL) > 0) printf("router skewed toward low-numbered experts (STRATA_MOE_FLOOR_SKEW=%s)\n", skewed);
    int rc = 0;
    t0 = bench_now();
    if (build_pack(src, pack, "keep")) { printf("iq3pack build --experts keep failed\n"); rc = 1; }
    else rc |= bench_pack(oss ? "experts keep (MXFP4 blocks)" : "experts keep (S8)", pack, &bw, bench_now() - t0) ? 1 : 0;
    rm_rf(pack);
    if (iq3 && *iq3 == '1') {
        t0 = bench_now();
        if (build_pack(src, pack3, "iq3")) { printf("iq3pack build --experts iq3 failed\n"); rc = 1; }
        else rc |= bench_pack("experts IQ3", pack3, &bw, bench_now() - t0) ? 1 : 0;
        rm_rf(pack3);
    } else {
        printf("experts IQ3: skipped (STRATA_MOE_FLOOR_IQ3=1 builds it; re-encoding ~1G weights takes minutes)\n");
    }
    rm_rf(dir);
    free(bw.buf);
    printf("total %.0f s\n", bench_now() - t_all);
    return rc;
}
