/* matmul.c: see matmul.h. */
#include "runtime/matmul.h"

#if defined(__has_include)
#if __has_include(<cblas.h>)
#include <cblas.h>
#define HAVE_CBLAS 1
#endif
#endif

/* Rows per mat-vec task: contiguous runs long enough that the kernel's
 * read-ahead (the next rows) stays within the thread's own rows, and still
 * 32 tasks for a 2048-row matrix to balance 2..16 threads. */
#define MV_CHUNK 64

/* Bytes of each of the first QD-group's rows (and of their scales) touched
 * ahead at the start of a task: the kernels read ahead by one group of rows,
 * so without this the first group of every task starts cold. */
#define MV_WARM_ROWS 4
#define MV_WARM_BYTES 2048

typedef struct mm_job {
    mm_ctx *c;
    const weight *w;
    const float *X;
    int B;
    float *Y;
    const qrow *qa;           /* mat-vec through kernels.qdot, or NULL */
    const weight *w2;         /* fused mat-vec: a second weight of w's shape, or NULL */
    float *Y2;
} mm_job;

/* Software prefetch of the first bytes of rows r.. (and, for SCODE, of
 * their scales); only a hint, results never depend on it. */
static void warm_rows(const weight *w, int64_t r, int64_t r1)
{
#if defined(__GNUC__) || defined(__clang__)
    int64_t n = r1 - r < MV_WARM_ROWS ? r1 - r : MV_WARM_ROWS;
    size_t len = w->row_bytes < MV_WARM_BYTES ? w->row_bytes : MV_WARM_BYTES;
    for (int64_t k = 0; k < n; k++) {
        const char *p = (const char *)w->data + (size_t)(r + k) * w->row_bytes;
        for (size_t o = 0; o < len; o += 64) __builtin_prefetch(p + o, 0, 3);
    }
    if (w->form == WF_SCODE && n > 0) {
        const int64_t per_row = w->cols / w->group;
        const char *s = (const char *)(w->scales + r * per_row);
        for (size_t o = 0; o < (size_t)(n * per_row) * sizeof(float); o += 64) __builtin_prefetch(s + o, 0, 3);
    }
#else
    (void)w; (void)r; (void)r1;
#endif
}

/* Rows r0..r1-1 of w through the integer kernels; `next` (when not NULL)
 * is warmed before the last group, so the read-ahead runs on into the next
 * matrix of the job instead of stopping at the end of this one. */
static void qdot_rows(const kernels *k, const weight *w, const qrow *qa, float *Y, int64_t r0, int64_t r1,
                      const weight *next, int64_t next_r0, int64_t next_r1)
{
    const qdot_fn dot = k->qdot[w->form];
    const qdot4_fn dot4 = k->qdot4[w->form];
    int64_t r = r0;
    if (dot4)
        for (; r + 4 <= r1; r += 4) {
            if (next && r + 8 > r1) warm_rows(next, next_r0, next_r1);
            dot4(w, r, qa, Y + r);
        }
    if (next && r == r0) warm_rows(next, next_r0, next_r1);
    for (; r < r1; r++) Y[r] = dot(w, r, qa);
}

static void matvec_task(void *arg, int task, int thread)
{
    mm_job *j = arg;
    const weight *w = j->w;
    float *scratch = j->c->scratch + (size_t)thread * (size_t)j->c->scratch_stride;
    int64_t r0 = (int64_t)task * MV_CHUNK, r1 = r0 + MV_CHUNK;
    if (r1 > w->rows) r1 = w->rows;
    if (j->qa) {
        warm_rows(w, r0, r1);
        qdot_rows(j->c->k, w, j->qa, j->Y, r0, r1, j->w2, r0, r1);
        if (j->w2) qdot_rows(j->c->k, j->w2, j->qa, j->Y2, r0, r1, NULL, 0, 0);
        return;
    }
    for (int64_t r = r0; r < r1; r++) j->Y[r] = weight_dot(j->c->k, w, r, j->X, scratch);
}

static void tile_task(void *arg, int task, int thread)
{
    mm_job *j = arg;
    const weight *w = j->w;
    const int64_t K = w->cols;
    int64_t r0 = (int64_t)task * MM_TILE, n = w->rows - r0;
    if (n > MM_TILE) n = MM_TILE;
    const float *tile;
    if (w->form == WF_P32) {
        tile = (const float *)((const char *)w->data + (size_t)r0 * w->row_bytes);
    } else {
        float *t = j->c->scratch + (size_t)thread * (size_t)j->c->scratch_stride;
        for (int64_t i = 0; i < n; i++) j->c->k->row_f32[w->form](w, r0 + i, t + i * K);
        tile = t;
    }
#ifdef HAVE_CBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->B, (int)n, (int)K, 1.0f, j->X, (int)K, tile,
                (int)K, 0.0f, j->Y + r0, (int)w->rows);
#else
    for (int b = 0; b < j->B; b++)
        for (int64_t i = 0; i < n; i++)
            j->Y[(size_t)b * w->rows + r0 + i] = j->c->k->dot_f32(tile + i * K, j->X + (size_t)b * K, K);
#endif
}

/* Below this many multiply-adds, waking the pool costs more than the work
 * (stories260K's matrices are 64 x 64). Tasks run the same code either way. */
#define MM_SERIAL_MACS (64 * 1024)

static void run(mm_ctx *c, int n_tasks, pool_fn fn, mm_job *j)
{
    if ((int64_t)j->B * j->w->rows * j->w->cols < MM_SERIAL_MACS)
        for (int t = 0; t < n_tasks; t++) fn(j, t, 0);
    else
        pool_run(c->pool, n_tasks, fn, j);
}

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Rounds the B rows of X into c->qbuf; returns the first row's qrow view in
 * *a0 and the rounded activations (B x cols, q * d), or NULL when this
 * weight keeps f32 activations. */
static const float *quantize_rows(mm_ctx *c, const weight *w, const float *X, int B, qrow *a0)
{
    const int blk = qrow_block(w->act);
    const size_t n = (size_t)B * (size_t)w->cols;
    if (!blk || w->cols % blk || !c->qbuf) return NULL;
    const size_t o_q = up64(n * 4), o_d = o_q + up64(n), o_s = o_d + up64(n / 32 * 4);
    if (o_s + up64(n / 16 * 4) > c->qbuf_bytes) return NULL;
    char *base = c->qbuf;
    for (int b = 0; b < B; b++) {
        const size_t e = (size_t)b * (size_t)w->cols;
        qrow a = { w->act, w->cols, (int8_t *)(base + o_q) + e, (float *)(base + o_d) + e / (size_t)blk,
                   (int32_t *)(base + o_s) + e / 16, (float *)base + e };
        qrow_fill(c->k, &a, X + e);
        if (b == 0) *a0 = a;
    }
    return (const float *)base;
}

void mm_mul(mm_ctx *c, const weight *w, const float *X, int B, float *Y)
{
    mm_job j = { c, w, X, B, Y, NULL, NULL, NULL };
    qrow a0;
    const float *xq = quantize_rows(c, w, X, B, &a0);
    if (xq) {
        j.X = xq;
        if (B == 1 && c->k->qdot[w->form] && kernels_qdot_ok(w)) j.qa = &a0;
    }
    if (B == 1)
        run(c, (int)((w->rows + MV_CHUNK - 1) / MV_CHUNK), matvec_task, &j);
    else
        run(c, (int)((w->rows + MM_TILE - 1) / MM_TILE), tile_task, &j);
}

static int same_shape(const weight *a, const weight *b)
{
    return a->form == b->form && a->rows == b->rows && a->cols == b->cols && a->act == b->act &&
           a->row_bytes == b->row_bytes && a->code_bits == b->code_bits && a->group == b->group;
}

void mm_mul2(mm_ctx *c, const weight *w0, const weight *w1, const float *X, int B, float *Y0, float *Y1)
{
    qrow a0;
    const float *xq;
    if (B != 1 || !same_shape(w0, w1) || !c->k->qdot[w0->form] || !kernels_qdot_ok(w0) || !kernels_qdot_ok(w1) ||
        !(xq = quantize_rows(c, w0, X, 1, &a0))) {
        mm_mul(c, w0, X, B, Y0);
        mm_mul(c, w1, X, B, Y1);
        return;
    }
    mm_job j = { c, w0, xq, 1, Y0, &a0, w1, Y1 };
    const int n_tasks = (int)((w0->rows + MV_CHUNK - 1) / MV_CHUNK);
    if (2 * w0->rows * w0->cols < MM_SERIAL_MACS)
        for (int t = 0; t < n_tasks; t++) matvec_task(&j, t, 0);
    else
        pool_run(c->pool, n_tasks, matvec_task, &j);
}

void mm_blas_single_thread(void)
{
#ifdef HAVE_CBLAS
    openblas_set_num_threads(1);
#endif
}
