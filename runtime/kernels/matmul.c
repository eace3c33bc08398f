/* matmul.c: see matmul.h. */
#include "runtime/kernels/matmul.h"
#include "runtime/util/prefetch.h"

#if defined(__has_include)
#if __has_include(<cblas.h>)
#include <cblas.h>
#define HAVE_CBLAS 1
#endif
#endif

/* The fewest rows a mat-vec task takes (and the rows of every task of a
 * mat-vec outside mv_run): contiguous runs long enough that the kernel's
 * read-ahead stays within the thread's own rows, and still 32 tasks for a
 * 2048-row matrix to balance 2..16 threads. */
#define MV_CHUNK 64

/* Rows a task of a mat-vec job takes (mv_chunk): as many as leave every
 * thread MV_TASKS_PER_THREAD tasks, between MV_CHUNK and MV_CHUNK_MAX. A
 * task reads its rows as four streams (stream_len), and each task start
 * restarts them: on one thread, 64-row tasks held the 1.18 GB Q8_0 MoE's
 * decode at 57 tokens/s and 256-row ones gave 65 (its experts 24 -> 30
 * GB/s, the dense weights 27 -> 31); two threads still share out 2048 rows
 * in eight tasks, and many threads get 64-row tasks as before. */
#define MV_CHUNK_MAX 256
#define MV_TASKS_PER_THREAD 4

/* Bytes of each stream's first row (and of its scales) touched ahead at
 * the start of a task: the kernels read ahead within their streams, so
 * without this every stream of every task starts cold. */
#define MV_WARM_BYTES 2048

/* Rows of each stream of the next job warmed by a thread that waits at the
 * barrier. */
#define MV_NEXT_DEPTH 2

typedef struct mm_job {
    mm_ctx *c;
    const weight *w;
    const float *X;
    int B;
    float *Y;
    const qrow *a0; /* integer prefill: the first rounded row (the others follow it) */
} mm_job;

/* How qdot_rows reads the rows [r0, r1) of a task with the four-row kernel:
 * as four streams of `len` consecutive rows starting at r0, r0 + len,
 * r0 + 2 len, r0 + 3 len (the call for rows j, j + len, j + 2 len,
 * j + 3 len, then j + 1 ...), the rows past 4 len one by one. Four groups
 * of four adjacent rows read 2 KiB pieces of four rows at once and jump
 * 8 KiB: neither the hardware prefetchers (which stop at 4 KiB pages) nor a
 * software read-ahead within a row followed that well (a 256 MiB probe on
 * two threads: 35 GB/s, against 51 GB/s for the four streams and 64 for a
 * plain sweep). Each row's result is the same either way (kernels.h). */
static int64_t stream_len(int64_t r0, int64_t r1) { return (r1 - r0) / 4; }

/* Whether a mat-vec reads w in those four streams, or row after row (one
 * stream front to back, the single-row kernel). A K-quant with its factors
 * in planes reads its codes and four planes of factors: in four streams
 * that is twenty (on one thread, 2048 x 2048 Q4_K experts from DRAM: 16-20
 * GB/s against 25-27 row after row, a plain sweep 26-29; the 1.18 GB Q4_K
 * MoE's experts in `strata bench`: 20 against 27 GB/s), so it goes row
 * after row. With its factors as records (weight.h: kfactor; the loader
 * makes them for the tables whose kernels read split codes, whose qdot4
 * meets four rows super-block by super-block) it is eight streams, which
 * one core reads faster than one (docs/runtime.md). Native blocks
 * without a four-row kernel (every type but MXFP4: their qdot4 is four
 * single dots, which read no further ahead than the hardware does) also
 * go row after row: in four streams of a task's 64 rows each stream
 * started cold (one thread, 1.18 GB MoE: Q2_K experts 78 against 113
 * tokens/s, IQ2_XXS 43 against 51). The others share each activation load
 * between four rows, read ahead in each stream, and stream as well. */
static int four_streams(const weight *w)
{
    if (w->kf) return w->kf->rec != NULL;
    return w->form == WF_SCODE || (w->form == WF_GGML && kernels_native_rows4(w->ggml_type));
}

/* Software prefetch of the first `depth` rows of each stream of the task
 * [r0, r1) (of its first 4 x depth rows for weights read row after row:
 * IQ3, the f32/f16 planes, K-quants with factors and native blocks other
 * than MXFP4), and of what the kernels read beside the codes: an
 * S-form's scales, or a K-quant's factors; only a hint, results never
 * depend on it. */
static void warm_rows(const weight *w, int64_t r0, int64_t r1, int64_t depth)
{
    const int64_t len = four_streams(w) ? stream_len(r0, r1) : 0;
    const int64_t n_streams = len > 0 ? 4 : 1, stride = len;
    const int64_t rows = len == 0 ? 4 * depth : depth > len ? len : depth;
    const size_t bytes = w->row_bytes < MV_WARM_BYTES ? w->row_bytes : MV_WARM_BYTES;
    const int64_t per_row = w->form == WF_SCODE ? w->cols / w->group : 0;
    for (int64_t s = 0; s < n_streams; s++) {
        const int64_t r = r0 + s * stride;
        const int64_t n = r + rows <= r1 ? rows : r1 - r;
        if (n <= 0) continue;
        for (int64_t k = 0; k < n; k++) prefetch_bytes((const char *)w->data + (size_t)(r + k) * w->row_bytes, bytes);
        if (w->kf) {
            const kfactor *kf = w->kf;
            const int64_t nsb = w->cols / 256, sb0 = r * nsb, cnt = n * nsb, per_sb = 256 / w->group;
            if (kf->rec) {
                prefetch_bytes(kf_rec_at(kf, sb0), (size_t)(cnt * kf_rec_bytes(kf->style)));
                continue;
            }
            prefetch_bytes(kf->d + sb0, (size_t)cnt * sizeof *kf->d);
            prefetch_bytes(kf->sc + sb0 * per_sb, (size_t)(cnt * per_sb));
            if (kf->dmin) prefetch_bytes(kf->dmin + sb0, (size_t)cnt * sizeof *kf->dmin);
            if (kf->m) prefetch_bytes(kf->m + sb0 * 8, (size_t)cnt * 8);
        } else if (per_row && w->scales_h) {
            prefetch_bytes(w->scales_h + r * per_row, (size_t)(n * per_row) * sizeof(uint16_t));
        } else if (per_row) {
            prefetch_bytes(w->scales + r * per_row, (size_t)(n * per_row) * sizeof(float));
        }
    }
}

/* Rows r0..r1-1 of w through the integer kernels, in the streams above
 * (or row after row); `next` (when not NULL) is warmed before the last two
 * calls, so the read-ahead runs on into the next matrix of the job instead
 * of stopping at the end of this one. */
static void qdot_rows(const kernels *k, const weight *w, const qrow *qa, float *Y, int64_t r0, int64_t r1,
                      const weight *next, int64_t next_r0, int64_t next_r1)
{
    const qdot_fn dot = k->qdot[w->form];
    const qdot4_fn dot4 = k->qdot4[w->form];
    int64_t r = r0;
    int warmed = next == NULL;
    const int64_t len = dot4 && four_streams(w) ? stream_len(r0, r1) : 0;
    for (int64_t j = 0; j < len; j++) {
        if (!warmed && j + 2 >= len) { warm_rows(next, next_r0, next_r1, 1); warmed = 1; }
        dot4(w, r0 + j, len, qa, Y + r0 + j);
    }
    for (r += 4 * len; r < r1; r++) {
        if (!warmed && r + 2 >= r1) { warm_rows(next, next_r0, next_r1, 1); warmed = 1; }
        Y[r] = dot(w, r, qa);
    }
    if (!warmed) warm_rows(next, next_r0, next_r1, 1);
}

static void matvec_task(void *arg, int task, int thread)
{
    mm_job *j = arg;
    const weight *w = j->w;
    float *scratch = j->c->scratch + (size_t)thread * (size_t)j->c->scratch_stride;
    int64_t r0 = (int64_t)task * MV_CHUNK, r1 = r0 + MV_CHUNK;
    if (r1 > w->rows) r1 = w->rows;
    for (int64_t r = r0; r < r1; r++) j->Y[r] = weight_dot(j->c->k, w, r, j->X, scratch);
}

/* Row b of the rounded activations quantize_rows() laid out after a0. */
static qrow qrow_at(const qrow *a0, int b)
{
    const int64_t e = (int64_t)b * a0->n;
    const int blk = qrow_block(a0->kind);
    return (qrow){ a0->kind,         a0->n,           a0->q + e,       a0->d + e / blk,
                   a0->sum16 + e / 16, a0->deq ? a0->deq + e : NULL, a0->s1 + e / 32, a0->sum32 + e / 32,
                   a0->qnib ? a0->qnib + e : NULL };
}

/* Prefill through the integer kernels: a tile of rows (in cache) against
 * every token, each product the same kernel call decode makes, so a prompt
 * gives the bits token-by-token decoding gives (and ggml-cpu's, whose batch
 * path also runs its vec_dot per row and token, or tinyBLAS with the same
 * per-element order). */
static void tile_task_q(void *arg, int task, int thread)
{
    (void)thread;
    mm_job *j = arg;
    const weight *w = j->w;
    const kernels *k = j->c->k;
    int64_t r0 = (int64_t)task * MM_TILE, r1 = r0 + MM_TILE;
    if (r1 > w->rows) r1 = w->rows;
    const int shared = kernels_qdotn_ok(k, w);
    const qdot4n_fn dot4n = k->qdot4n[w->form];
    /* each row (or four) met by up to KQ_NT_MAX tokens at once: the same bits */
    for (int b0 = 0; b0 < j->B; b0 += KQ_NT_MAX) {
        const int nt = j->B - b0 < KQ_NT_MAX ? j->B - b0 : KQ_NT_MAX;
        qrow a[KQ_NT_MAX];
        for (int t = 0; t < nt; t++) a[t] = qrow_at(j->a0, b0 + t);
        float *y = j->Y + (size_t)b0 * w->rows;
        /* a group of one token (B % KQ_NT_MAX == 1) takes decode's single
         * dots below: a batch dot does per row what one token needs plus its
         * sharing, and with the count not a constant some kept their
         * accumulators in memory (from cache, one token: AVX2 K-quants 12 ns
         * a super-block against 6-8.7, IQ1_M 2.5 ns per 32 against 1.9,
         * IQ1_S 2.2 against 1.7, IQ2_XS 2.05 against 1.8); the same bits */
        if (shared && nt > 1) {
            for (int64_t r = r0; r < r1; r++) k->qdotn[w->form](w, r, a, nt, y + r, w->rows);
            continue;
        }
        int64_t r = r0;
        if (dot4n && r1 - r0 >= 4 && dot4n(w, r, a, nt, y + r, w->rows))
            for (r += 4; r + 4 <= r1; r += 4) dot4n(w, r, a, nt, y + r, w->rows);
        if (r < r1)
            for (int t = 0; t < nt; t++) qdot_rows(k, w, &a[t], y + (size_t)t * w->rows, r, r1, NULL, 0, 0);
    }
}

static void tile_task(void *arg, int task, int thread)
{
    mm_job *j = arg;
    const weight *w = j->w;
    const int64_t K = w->cols;
    int64_t r0 = (int64_t)task * MM_TILE, n = w->rows - r0;
    if (n > MM_TILE) n = MM_TILE;
    const float *tile;
    if (w->form == WF_P16 && j->c->as_decode) { /* dot_f16, as weight_dot for one row */
        for (int64_t i = 0; i < n; i++) {
            const uint16_t *row = (const uint16_t *)((const char *)w->data + (size_t)(r0 + i) * w->row_bytes);
            for (int b = 0; b < j->B; b++)
                j->Y[(size_t)b * w->rows + r0 + i] = j->c->k->dot_f16(row, j->X + (size_t)b * K, K);
        }
        return;
    }
    if (w->form == WF_P32) {
        tile = (const float *)((const char *)w->data + (size_t)r0 * w->row_bytes);
    } else {
        float *t = j->c->scratch + (size_t)thread * (size_t)j->c->scratch_stride;
        for (int64_t i = 0; i < n; i++) j->c->k->row_f32[w->form](w, r0 + i, t + i * K);
        tile = t;
    }
    /* llama.cpp runs an f32 batch through llamafile's tinyBLAS when cols %
     * 8 == 0 (gemm8_f32: the same per-element order, register-blocked),
     * else, and for the experts' mul_mat_id, ggml_vec_dot_f32 per row and
     * token (dot_f32). */
    if (K % 8 == 0 && !j->c->rowwise && !j->c->as_decode) {
        j->c->k->gemm8_f32(tile, K, n, j->X, K, j->B, j->Y + r0, w->rows, K);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        for (int b = 0; b < j->B; b++)
            j->Y[(size_t)b * w->rows + r0 + i] = j->c->k->dot_f32(tile + i * K, j->X + (size_t)b * K, K);
}

/* Below this many multiply-adds, waking the pool costs more than the work
 * (stories260K's matrices are 64 x 64). Tasks run the same code either way. */
#define MM_SERIAL_MACS (64 * 1024)

/* n_tasks of fn(arg, task) doing macs multiply-adds in all: on the pool,
 * or on this thread when they are too few. */
static void run_macs(mm_ctx *c, int64_t macs, int n_tasks, pool_fn fn, void *arg)
{
    if (macs < MM_SERIAL_MACS)
        for (int t = 0; t < n_tasks; t++) fn(arg, t, 0);
    else
        pool_run(c->pool, n_tasks, fn, arg);
}

static void run(mm_ctx *c, int n_tasks, pool_fn fn, mm_job *j)
{
    run_macs(c, (int64_t)j->B * j->w->rows * j->w->cols, n_tasks, fn, j);
}

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The arrays of rounded activations for n elements (one row, or B rows of
 * `cols` one after another: qrow_at) laid out from base, each on 64 bytes:
 * the rounded values (q * d), codes, block scales, sums of 16, Q8_1's
 * block sums, Q8_K's sums of 32, and for a table that reads it (nib) Q8_K's
 * codes in qnib order. Returns the bytes they take; base NULL only
 * measures. */
static size_t qrow_lay(char *base, int act, int64_t cols, size_t n, int nib, qrow *a)
{
    nib = nib && act == WA_Q8_K;
    const size_t o_q = up64(n * 4), o_d = o_q + up64(n), o_s = o_d + up64(n / 32 * 4), o_s1 = o_s + up64(n / 16 * 4),
                 o_s32 = o_s1 + up64(n / 32 * 4), o_nib = o_s32 + up64(n / 32 * 2), end = o_nib + (nib ? up64(n) : 0);
    if (base)
        *a = (qrow){ act,           cols, (int8_t *)(base + o_q), (float *)(base + o_d), (int32_t *)(base + o_s),
                     (float *)base, (float *)(base + o_s1), (int16_t *)(base + o_s32),
                     nib ? (int8_t *)(base + o_nib) : NULL };
    return end;
}

typedef struct fill_job {
    const kernels *k;
    const qrow *a0;
    const float *X;
} fill_job;

/* Rounds row `task` of a batch (each row on its own: any thread, the same
 * values). */
static void fill_task(void *arg, int task, int thread)
{
    (void)thread;
    const fill_job *j = arg;
    qrow a = qrow_at(j->a0, task);
    qrow_fill(j->k, &a, j->X + (size_t)task * (size_t)j->a0->n);
}

/* Rows of a batch from which rounding them is a pool job rather than the
 * calling thread's: a 2048-wide row takes a few microseconds, and in a
 * two-thread prefill of 128 tokens on the 1.18 GB Q4_K MoE the calling
 * thread's rounding was about 8 % of its time while the other waited. */
#define MM_FILL_POOL_ROWS 8

/* Rounds the B rows of X into c->qbuf, with their values q * d (a0->deq,
 * B x cols) when deq is set (the integer kernels read only the codes);
 * returns 1 with the first row's qrow view in *a0, or 0 when this weight
 * keeps f32 activations. */
static int quantize_rows(mm_ctx *c, const weight *w, const float *X, int B, int deq, qrow *a0)
{
    const int blk = qrow_block(w->act);
    const size_t n = (size_t)B * (size_t)w->cols;
    const int nib = c->k->reads_qnib;
    if (!blk || w->cols % blk || !c->qbuf || qrow_lay(NULL, w->act, w->cols, n, nib, a0) > c->qbuf_bytes) return 0;
    qrow_lay(c->qbuf, w->act, w->cols, n, nib, a0);
    if (!deq) a0->deq = NULL;
    fill_job j = { c->k, a0, X };
    if (B >= MM_FILL_POOL_ROWS && c->pool && pool_size(c->pool) > 1)
        pool_run(c->pool, B, fill_task, &j);
    else
        for (int b = 0; b < B; b++) fill_task(&j, b, 0);
    return 1;
}

static int mv_run(mm_ctx *c, const mm_vec *v, int n, const mm_next *next);

/* Whether a batch through w, its rows rounded, takes the integer tiles
 * (tile_task_q). */
static int tiles_q(const mm_ctx *c, const weight *w, int B)
{
    return B > 1 && c->k->qdot[w->form] && kernels_qdot_ok(w);
}

static int n_tiles(const weight *w) { return (int)((w->rows + MM_TILE - 1) / MM_TILE); }

void mm_mul(mm_ctx *c, const weight *w, const float *X, int B, float *Y)
{
    if (B == 1) {
        const mm_vec v = { w, X, Y };
        if (mv_run(c, &v, 1, NULL) == 0) return;
    }
    mm_job j = { c, w, X, B, Y, NULL };
    qrow a0;
    const int ints = tiles_q(c, w, B), rounded = quantize_rows(c, w, X, B, !ints, &a0);
    if (rounded && !ints) j.X = a0.deq;
    if (rounded && ints) {
        j.a0 = &a0;
        run(c, n_tiles(w), tile_task_q, &j);
    } else if (B == 1) {
        run(c, (int)((w->rows + MV_CHUNK - 1) / MV_CHUNK), matvec_task, &j);
    } else {
        run(c, n_tiles(w), tile_task, &j);
    }
}

/* Two integer-tile products of one rounded batch as one pool loop: the
 * first n0 tasks are j[0]'s tiles, the rest j[1]'s. */
typedef struct pair_job {
    mm_job j[2];
    int n0;
} pair_job;

static void pair_task(void *arg, int task, int thread)
{
    pair_job *p = arg;
    if (task < p->n0) tile_task_q(&p->j[0], task, thread);
    else tile_task_q(&p->j[1], task - p->n0, thread);
}

void mm_mul2(mm_ctx *c, const weight *w0, const weight *w1, const float *X, int B, float *Y0, float *Y1)
{
    if (B == 1) {
        const mm_vec v[2] = { { w0, X, Y0 }, { w1, X, Y1 } };
        mm_mulv(c, v, 2);
        return;
    }
    qrow a0;
    if (w0->act == w1->act && w0->cols == w1->cols && tiles_q(c, w0, B) && tiles_q(c, w1, B) &&
        quantize_rows(c, w0, X, B, 0, &a0)) {
        pair_job p = { { { c, w0, X, B, Y0, &a0 }, { c, w1, X, B, Y1, &a0 } }, n_tiles(w0) };
        run_macs(c, (int64_t)B * (w0->rows + w1->rows) * w0->cols, p.n0 + n_tiles(w1), pair_task, &p);
        return;
    }
    mm_mul(c, w0, X, B, Y0);
    mm_mul(c, w1, X, B, Y1);
}

/* ----------------------------------------------- several mat-vecs, one job */

typedef struct mv_item {
    const weight *w;
    qrow a;
    float *y;
    int first;                /* its first task in the job */
} mv_item;

typedef struct mv_job {
    const kernels *k;
    int n, n_tasks;
    int64_t chunk;            /* rows a task takes (mv_chunk) */
    mv_item it[MM_VEC_MAX];
} mv_job;

static void mv_locate(const mv_job *j, int task, int *item, int64_t *r0, int64_t *r1)
{
    int i = 0;
    while (i + 1 < j->n && j->it[i + 1].first <= task) i++;
    *item = i;
    *r0 = (int64_t)(task - j->it[i].first) * j->chunk;
    *r1 = *r0 + j->chunk < j->it[i].w->rows ? *r0 + j->chunk : j->it[i].w->rows;
}

/* The task size of a mat-vec job over weights w[0..n-1] on n_threads
 * (MV_CHUNK_MAX above); mm_warm_next splits the next job the same way. */
static int64_t mv_chunk(const weight *const *w, int n, int n_threads)
{
    for (int64_t chunk = MV_CHUNK_MAX; chunk > MV_CHUNK; chunk /= 2) {
        int64_t tasks = 0;
        for (int i = 0; i < n; i++) tasks += (w[i]->rows + chunk - 1) / chunk;
        if (tasks >= (int64_t)MV_TASKS_PER_THREAD * n_threads) return chunk;
    }
    return MV_CHUNK;
}

/* A chunk of one item's rows; before its last group of rows the next
 * task's first rows are warmed (the pool hands a thread consecutive tasks,
 * so that is usually this thread's next chunk, of this matrix or the next). */
static void mv_task(void *arg, int task, int thread)
{
    (void)thread;
    const mv_job *j = arg;
    int i, ni = 0;
    int64_t r0, r1, n0 = 0, n1 = 0;
    mv_locate(j, task, &i, &r0, &r1);
    if (task + 1 < j->n_tasks) mv_locate(j, task + 1, &ni, &n0, &n1);
    const mv_item *t = &j->it[i];
    warm_rows(t->w, r0, r1, 1);
    qdot_rows(j->k, t->w, &t->a, t->y, r0, r1, task + 1 < j->n_tasks ? j->it[ni].w : NULL, n0, n1);
}

/* The integer-kernel mat-vecs as one job; -1 (nothing done) when one of
 * them cannot take that path. */
static int mv_run(mm_ctx *c, const mm_vec *v, int n, const mm_next *next)
{
    mv_job j;
    j.k = c->k;
    j.n = n;
    j.n_tasks = 0;
    size_t used = 0;
    if (n > MM_VEC_MAX || !c->qbuf) return -1;
    int ok = 1;
    const weight *ws[MM_VEC_MAX] = { NULL };
    for (int i = 0; i < n; i++) ws[i] = v[i].w;
    j.chunk = mv_chunk(ws, n, c->pool ? pool_size(c->pool) : 1);
    for (int i = 0; i < n && ok; i++) {
        const weight *w = v[i].w;
        const int blk = qrow_block(w->act);
        ok = c->k->qdot[w->form] && kernels_qdot_ok(w) && blk && w->cols % blk == 0;
        if (!ok) break;
        mv_item *t = &j.it[i];
        t->w = w;
        t->y = v[i].y;
        t->first = j.n_tasks;
        j.n_tasks += (int)((w->rows + j.chunk - 1) / j.chunk);
        int shared = -1;
        for (int k = 0; k < i && shared < 0; k++)
            if (v[k].x == v[i].x && v[k].w->act == w->act && v[k].w->cols == w->cols) shared = k;
        if (shared >= 0) { t->a = j.it[shared].a; continue; }
        /* a slot of qbuf a row, laid out as quantize_rows lays out one, so
         * a single mat-vec takes the integer path exactly when it did
         * before there were slots */
        const size_t need = qrow_lay(NULL, w->act, w->cols, (size_t)w->cols, c->k->reads_qnib, &t->a);
        if (used + need > c->qbuf_bytes) { ok = 0; break; }
        qrow_lay((char *)c->qbuf + used, w->act, w->cols, (size_t)w->cols, c->k->reads_qnib, &t->a);
        t->a.deq = NULL; /* the integer kernels read only the codes */
        qrow_fill(c->k, &t->a, v[i].x);
        used += need;
    }
    if (!ok) return -1;
    int64_t macs = 0;
    for (int i = 0; i < n; i++) macs += v[i].w->rows * v[i].w->cols;
    if (macs < MM_SERIAL_MACS)
        for (int t = 0; t < j.n_tasks; t++) mv_task(&j, t, 0);
    else
        pool_run_then(c->pool, j.n_tasks, mv_task, &j, next && next->n > 0 ? mm_warm_next : NULL, (void *)next);
    return 0;
}

void mm_mulv(mm_ctx *c, const mm_vec *v, int n) { mm_mulv_next(c, v, n, NULL); }

void mm_mulv_next(mm_ctx *c, const mm_vec *v, int n, const mm_next *next)
{
    if (mv_run(c, v, n, next) == 0) return;
    for (int i = 0; i < n; i++) mm_mul(c, v[i].w, v[i].x, 1, v[i].y); /* same results, one job each */
}

/* Thread `thread` of n_threads takes first, in a mat-vec job over next's
 * weights, task n_tasks * thread / n_threads (pool.h); its first rows (and
 * their scales) are prefetched, a hint that changes no result. */
void mm_warm_next(void *arg, int thread, int n_threads)
{
    const mm_next *h = arg;
    if (!h || h->n <= 0 || h->n > MM_VEC_MAX) return;
    const int64_t chunk = mv_chunk(h->w, h->n, n_threads);
    int64_t n_tasks = 0;
    for (int i = 0; i < h->n; i++) n_tasks += (h->w[i]->rows + chunk - 1) / chunk;
    int64_t task = n_tasks * thread / n_threads;
    for (int i = 0; i < h->n; i++) {
        const int64_t nt = (h->w[i]->rows + chunk - 1) / chunk;
        if (task < nt) {
            const int64_t r0 = task * chunk;
            const int64_t r1 = r0 + chunk < h->w[i]->rows ? r0 + chunk : h->w[i]->rows;
            warm_rows(h->w[i], r0, r1, MV_NEXT_DEPTH);
            return;
        }
        task -= nt;
    }
}

void mm_blas_single_thread(void)
{
#ifdef HAVE_CBLAS
    openblas_set_num_threads(1);
#endif
}
