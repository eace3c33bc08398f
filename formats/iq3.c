/* iq3.c: the IQ3 codec's public face (iq3.h): checks, decode and the
 * threaded encode driver, which hands blocks to the encoders (iq3_ref.c,
 * iq3_quality.c); what they search with is beneath them (iq3_search.c). */
#include "iq3.h"
#include "iq3_impl.h"
#include "fp16.h"
#include "ggml_tables.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t iq3_row_bytes(int64_t k)
{
    if (k <= 0 || k % IQ3_QK) return 0;
    return (size_t)(k / IQ3_QK) * IQ3_BLOCK_BYTES;
}

int iq3_check_k(int64_t k, char *err, size_t errlen)
{
    if (k > 0 && k % IQ3_QK == 0) return 0;
    snprintf(err, errlen, "fmt=5 needs K %% %d == 0, got %lld", IQ3_QK, (long long)k);
    return -1;
}

int iq3_mode_parse(const char *s)
{
    if (!strcmp(s, "quality")) return IQ3_MODE_QUALITY;
    if (!strcmp(s, "reference")) return IQ3_MODE_REFERENCE;
    return -1;
}

const char *iq3_mode_name(iq3_mode m) { return m == IQ3_MODE_REFERENCE ? "reference" : "quality"; }

/* ---------------------------------------------------------------- decode */

static int have_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}


/* Every product here is exact in float32 (11+5+6 significant bits), so the
 * result equals the seed's float64 computation rounded once to float32. */
static void decode_block(const iq3_block *b, float d, float *y)
{
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w = iq3_block_word(b, ib);
        float db = d * (0.5f + (float)(w >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++) {
            uint32_t seven = (w >> (7 * l)) & 0x7F;
            uint32_t signs = seven | (uint32_t)(__builtin_popcount(seven) & 1) << 7;
            for (int h = 0; h < 2; h++) {
                uint32_t e = ggml_iq3xxs_grid[b->grid[8 * ib + 2 * l + h]];
                for (int j = 0; j < 4; j++) {
                    int bit = 4 * h + j;
                    float g = 0.5f * (float)((e >> (8 * j)) & 0xFF); /* exact */
                    float v = (signs >> bit) & 1 ? -g : g;
                    y[32 * ib + 8 * l + bit] = v * db;
                }
            }
        }
    }
}

void iq3_decode_blocks(const uint8_t *in, int64_t nb, float *out, int simd)
{
    for (int64_t i = 0; i < nb; i++) {
        const iq3_block *b = (const iq3_block *)in + i;
        float d = fp16_to_f32(iq3_block_d(b));
        if (simd) iq3_decode_block_avx2(b, d, out + i * IQ3_QK);
        else decode_block(b, d, out + i * IQ3_QK);
    }
}

int iq3_decode(const uint8_t *in, int64_t rows, int64_t k, float *out, char *err, size_t errlen)
{
    if (iq3_check_k(k, err, errlen)) return -1;
    if (rows < 0) { snprintf(err, errlen, "negative row count %lld", (long long)rows); return -1; }
    iq3_decode_blocks(in, rows * (k / IQ3_QK), out, have_avx2());
    return 0;
}

/* ---------------------------------------------------------------- encode */

typedef struct encode_job {
    const iq3_tables *t;
    const float *x;
    const float *imp;
    const double *gptq_u;
    uint8_t *out;
    int64_t k, row0, row1;
    iq3_mode mode;
    int simd;
} encode_job;

static void *encode_rows(void *arg)
{
    const encode_job *j = arg;
    int64_t nsb = j->k / IQ3_QK;
    if (j->gptq_u) { /* non-NULL back: no memory for the row being moved */
        double *work = malloc((size_t)j->k * sizeof *work);
        for (int64_t r = j->row0; work && r < j->row1; r++)
            iq3_encode_row_gptq(j->t, j->x + r * j->k, j->k, j->gptq_u, j->imp,
                                j->out + (size_t)r * (size_t)nsb * IQ3_BLOCK_BYTES, work, j->simd);
        free(work);
        return work ? NULL : (void *)1;
    }
    for (int64_t r = j->row0; r < j->row1; r++) {
        for (int64_t sb = 0; sb < nsb; sb++) {
            const float *x = j->x + r * j->k + sb * IQ3_QK;
            iq3_block *o = (iq3_block *)j->out + r * nsb + sb;
            if (j->mode == IQ3_MODE_REFERENCE)
                iq3_encode_block_ref(j->t, x, o, j->simd);
            else
                iq3_encode_block_quality(j->t, x, j->imp ? j->imp + sb * IQ3_QK : NULL, o, j->simd);
        }
    }
    return NULL;
}

int iq3_encode(const float *x, int64_t rows, int64_t k, const iq3_encode_opts *opts,
               uint8_t *out, char *err, size_t errlen)
{
    iq3_encode_opts def = { .mode = IQ3_MODE_QUALITY, .n_threads = 1 };
    if (!opts) opts = &def;
    if (iq3_check_k(k, err, errlen)) return -1;
    if (rows < 0) { snprintf(err, errlen, "negative row count %lld", (long long)rows); return -1; }
    if (opts->mode != IQ3_MODE_QUALITY && opts->mode != IQ3_MODE_REFERENCE) {
        snprintf(err, errlen, "unknown iq3 mode %d", (int)opts->mode);
        return -1;
    }
    /* A NaN or Inf would poison its block's scale and silently zero or
     * saturate 255 neighbours; refuse and say where it is. */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < k; c++)
            if (!isfinite(x[r * k + c])) {
                snprintf(err, errlen, "non-finite input %g at row %lld column %lld",
                         (double)x[r * k + c], (long long)r, (long long)c);
                return -1;
            }
    if (opts->importance && opts->mode == IQ3_MODE_QUALITY)
        for (int64_t c = 0; c < k; c++)
            if (!isfinite(opts->importance[c]) || opts->importance[c] < 0) {
                snprintf(err, errlen, "importance %g at column %lld is not a finite non-negative number",
                         (double)opts->importance[c], (long long)c);
                return -1;
            }
    iq3_tables *t = aligned_alloc(32, sizeof *t); /* AVX2 loads need 32 */
    if (!t) { snprintf(err, errlen, "out of memory"); return -1; }
    iq3_tables_init(t);

    int nt = opts->n_threads < 1 ? 1 : opts->n_threads;
    if (nt > 256) nt = 256;
    if ((int64_t)nt > rows) nt = rows > 0 ? (int)rows : 1;
    encode_job jobs[256];
    pthread_t tid[256];
    int started = 0, rc = 0;
    for (int i = 0; i < nt; i++) {
        jobs[i] = (encode_job){ t, x, opts->mode == IQ3_MODE_QUALITY ? opts->importance : NULL,
                                opts->mode == IQ3_MODE_QUALITY ? opts->gptq_u : NULL, out, k,
                                rows * i / nt, rows * (i + 1) / nt, opts->mode,
                                !opts->force_scalar && have_avx2() };
    }
    for (int i = 1; i < nt; i++) {
        if (pthread_create(&tid[i], NULL, encode_rows, &jobs[i]) != 0) break;
        started = i;
    }
    /* Rows a thread could not be started for are done here instead. */
    int failed = 0;
    for (int i = started + 1; i < nt; i++) failed |= encode_rows(&jobs[i]) != NULL;
    failed |= encode_rows(&jobs[0]) != NULL;
    for (int i = 1; i <= started; i++) {
        void *r = NULL;
        pthread_join(tid[i], &r);
        failed |= r != NULL;
    }
    free(t);
    if (failed) { snprintf(err, errlen, "out of memory"); rc = -1; }
    return rc;
}
