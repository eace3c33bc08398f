/* loader.c: pack directory -> hparams, engine-form weights, tokenizer
 * (loader.h). Reads as the steps it takes: index, files, hyperparameters,
 * the dense pool, the expert mapping, the names the model wants, the
 * tokenizer. Every refusal names the file or the tensor. */
#include "runtime/model/loader.h"

#include "formats/fileio.h"
#include "formats/fp16.h"
#include "formats/ggml_types.h"
#include "formats/hparam_keys.h"
#include "formats/iq3.h"
#include "formats/pack_files.h"
#include "formats/pack_index.h"
#include "formats/planes.h"
#include "formats/tensor_names.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/kfactor.h"
#include "runtime/model/weight_slots.h"
#include "runtime/util/hugemem.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_INDEX_BYTES (64u << 20)

struct loaded_pack {
    char *dir;
    pack_index x;
    uint8_t *pool;
    size_t pool_bytes;
    uint16_t *halves;            /* the fp16 scales of the rows that keep them (loader_keeps_half_scales) */
    size_t halves_bytes;
    int64_t *half_at;            /* per row: its first scale in halves, or -1 */
    void *map[PACK_NFILES];
    size_t map_bytes[PACK_NFILES];
    model_hparams hp;
    model_weights w;
    tokenizer *tok;
    void **owned;
    int n_owned, cap_owned;
    unsigned char *used_t, *used_e;
    int *xpart;                  /* (n_layer + n_mtp) x 3: the index entry of each routed part (gate, up, down), -1 none */
    int lazy_experts;            /* loader_opts.lazy_experts */
    int split_codes;             /* loader_opts.split_codes */
    int8_t *split_at;            /* per index row: 0, or the code_split its pool codes were given */
    bool resident;               /* experts.bin read into map[PACK_EXPERTS] (owned memory), not mapped */
    int64_t resident_bytes;      /* its size then (0: mapped): the progress counts it first */
    loader_progress_fn progress; /* NULL: none */
    void *progress_ctx;
    float codebook[16];
    char *err;
    size_t errlen;
};

static int fail(loaded_pack *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* bytes of memory the pack owns (freed with it): from malloc, or on huge
 * pages (hugemem.h) when huge. */
static void *own_from(loaded_pack *p, size_t bytes, int huge)
{
    if (p->n_owned == p->cap_owned) {
        int cap = p->cap_owned ? 2 * p->cap_owned : 64;
        void **o = realloc(p->owned, (size_t)cap * sizeof *o);
        if (!o) return NULL;
        p->owned = o;
        p->cap_owned = cap;
    }
    void *m = huge ? hugemem_alloc(bytes) : malloc(bytes ? bytes : 1);
    if (m) p->owned[p->n_owned++] = m;
    return m;
}

static void *own(loaded_pack *p, size_t bytes) { return own_from(p, bytes, 0); }

/* ------------------------------------------------------------ index, files */

static int read_index(loaded_pack *p)
{
    char *path = pack_path(p->dir, PACK_INDEX);
    if (!path) return fail(p, "%s: out of memory", p->dir);
    struct stat st;
    int rc = -1;
    if (stat(path, &st) != 0) {
        fail(p, "%s: %s (no index: not a finished pack; remove it and build it again with iq3pack build MODEL.gguf -o %s)", path, strerror(errno), p->dir);
    } else if ((uint64_t)st.st_size > MAX_INDEX_BYTES) {
        fail(p, "%s: %lld bytes is too large for an index", path, (long long)st.st_size);
    } else {
        unsigned char *text;
        size_t len;
        if (read_file(path, &text, &len, p->err, p->errlen) == 0) {
            rc = pindex_parse(&p->x, (const char *)text, len, path, p->err, p->errlen);
            free(text);
        }
    }
    free(path);
    return rc;
}

/* loader_opts.resident_experts: experts.bin read into memory of our own on
 * 2 MiB boundaries, asking for transparent huge pages before the first
 * touch. Decode streams the chosen experts once per token; through a file
 * mapping they sit in the page cache's 4 KiB pages or huge folios as the
 * cache happens to hold them, and decode swung from run to run (1.18 GB
 * Q8_0 MoE, one thread: 33 to 68 tokens/s in successive runs, against 75
 * to 81 read in). The file's cached pages are dropped piece by piece as
 * they are read, so the bytes are never held twice. */
/* Returns 0, 1 when there is no memory for it (the caller maps the file
 * as without the option: it is a speed-up, never a reason to refuse), or
 * -1 on a read error. */
static int read_resident(loaded_pack *p, int fd, const char *path, size_t bytes)
{
    uint8_t *m = hugemem_alloc(bytes);
    if (!m) return 1;
    for (size_t done = 0; done < bytes;) {
        const size_t want = bytes - done < ((size_t)64 << 20) ? bytes - done : (size_t)64 << 20;
        const ssize_t got = pread(fd, m + done, want, (off_t)done);
        if (got <= 0) {
            free(m);
            return fail(p, "%s: %s", path, got < 0 ? strerror(errno) : "shorter than its size");
        }
#ifdef POSIX_FADV_DONTNEED
        /* each piece's cached pages dropped as it is read: the bytes are never held twice */
        (void)posix_fadvise(fd, (off_t)done, (off_t)got, POSIX_FADV_DONTNEED);
#endif
        done += (size_t)got;
        if (p->progress) p->progress(p->progress_ctx, (int64_t)done, (int64_t)bytes + p->x.pool);
    }
    p->resident_bytes = (int64_t)bytes;
    p->map[PACK_EXPERTS] = m;
    p->map_bytes[PACK_EXPERTS] = bytes;
    return 0;
}

static void unmap_file(loaded_pack *p, int f)
{
    if (!p->map[f]) return;
    if (f == PACK_EXPERTS && p->resident) free(p->map[f]);
    else munmap(p->map[f], p->map_bytes[f]);
    p->map[f] = NULL;
}

/* Sizes first, so a short file is one clear line instead of a fault. */
static int map_files(loaded_pack *p)
{
    for (int f = 0; f < PACK_NFILES; f++) {
        if (!p->x.have_file[f])
            return fail(p, "%s/%s: no @file line for %s (an index from an older packindex: run it again)",
                        p->dir, PACK_INDEX, PACK_FILE_NAMES[f]);
        char *path = pack_path(p->dir, PACK_FILE_NAMES[f]);
        if (!path) return fail(p, "%s: out of memory", p->dir);
        struct stat st;
        int fd = open(path, O_RDONLY);
        if (fd < 0 || fstat(fd, &st) != 0) {
            fail(p, "%s: %s", path, strerror(errno));
            if (fd >= 0) close(fd);
            free(path);
            return -1;
        }
        if ((uint64_t)st.st_size != p->x.file_bytes[f]) {
            fail(p, "%s: %lld bytes, but the index says %llu (%s)", path, (long long)st.st_size,
                 (unsigned long long)p->x.file_bytes[f],
                 (uint64_t)st.st_size < p->x.file_bytes[f] ? "truncated" : "not this pack's file");
            close(fd);
            free(path);
            return -1;
        }
        if (f == PACK_EXPERTS && p->resident && st.st_size > 0) {
            const int rc = read_resident(p, fd, path, (size_t)st.st_size);
            p->resident = rc == 0;
            if (rc <= 0) {
                close(fd);
                free(path);
                if (rc) return -1;
                continue;
            }
        }
        if (f != PACK_TOKENIZER && st.st_size > 0) {
            void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (m == MAP_FAILED) {
                fail(p, "%s: mmap: %s", path, strerror(errno));
                close(fd);
                free(path);
                return -1;
            }
            /* Decode walks the experts' pages once per token: 2 MiB pages
             * (where the kernel maps file pages that way) save the TLB walks.
             * Only a hint: a refusal changes nothing. */
#ifdef MADV_HUGEPAGE
            if (f == PACK_EXPERTS) (void)madvise(m, (size_t)st.st_size, MADV_HUGEPAGE);
#endif
            p->map[f] = m;
            p->map_bytes[f] = (size_t)st.st_size;
        }
        close(fd);
        free(path);
    }
    /* the vision projector is only checked for its size here: nothing reads it yet */
    if (p->x.have_vision) {
        char *path = pack_path(p->dir, PACK_VISION);
        struct stat st;
        if (!path) return fail(p, "%s: out of memory", p->dir);
        const int missing = stat(path, &st) != 0, bad = missing || (uint64_t)st.st_size != p->x.vision_bytes;
        if (bad) fail(p, "%s: %s, but the index names it with %llu bytes", path, missing ? "missing" : "another size",
                      (unsigned long long)p->x.vision_bytes);
        free(path);
        if (bad) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------- hyperparameters */

static int load_hparams(loaded_pack *p)
{
    const char *arch = pindex_hparam(&p->x, "general.architecture");
    if (!arch)
        return fail(p, "%s/%s: no @hparam general.architecture (an index from an older packindex)", p->dir, PACK_INDEX);
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, HPARAM_ROPE_SCALING.key);
    const char *rs = pindex_hparam(&p->x, key);
    char e[256];
    if (hparams_load(&p->hp, arch, pindex_hparam_num, &p->x, e, sizeof e) || hparams_rope_scaling(&p->hp, rs, e, sizeof e))
        return fail(p, "%s: %s", p->dir, e);
    return 0;
}

/* --------------------------------------------------------------- dense pool */

int loader_keeps_half_scales(const pi_tensor *t)
{
    return t->native_type < 0 && t->kind == PI_VERBATIM && t->scales_fp16 &&
           sform_q8_0_shaped(t->code_bits, t->code_bias, t->group, t->has_offset, t->codebook);
}

/* A kept row's fp16 scales: half its f32 plane in the pool (scales_bytes);
 * each row's start on a 64-byte line. */
static int64_t half_bytes(const pi_tensor *t) { return t->scales_bytes / 2; }
static int64_t halves_span(const pi_tensor *t) { return (half_bytes(t) + 63) / 64 * 64; }

uint64_t loader_half_scales_bytes(const pack_index *x)
{
    uint64_t b = 0;
    for (int i = 0; i < x->n_t; i++)
        if (loader_keeps_half_scales(&x->t[i])) b += (uint64_t)halves_span(&x->t[i]);
    return b;
}

static int fill_tensor(loaded_pack *p, const pi_tensor *t)
{
    const uint8_t *src = (const uint8_t *)p->map[t->file] + t->src_off;
    uint8_t *dst = p->pool + t->dst_off;
    if ((uint64_t)t->src_off + (uint64_t)t->src_bytes > p->x.file_bytes[t->file])
        return fail(p, "%s: bytes %lld..%lld are past the end of %s", t->name, (long long)t->src_off,
                    (long long)(t->src_off + t->src_bytes), PACK_FILE_NAMES[t->file]);
    if (t->dst_off % p->x.align || t->dst_off + t->dst_bytes > p->x.pool)
        return fail(p, "%s: pool range %lld+%lld is misaligned or past the pool (%lld)", t->name,
                    (long long)t->dst_off, (long long)t->dst_bytes, (long long)p->x.pool);
    const int64_t n = t->ne0 * t->rows;
    if (t->native_type >= 0) {
        if (ggml_row_bytes(t->native_type, t->ne0) * (size_t)t->rows != (size_t)t->src_bytes)
            return fail(p, "%s: %lld bytes are not %lld rows of %s blocks", t->name, (long long)t->src_bytes,
                        (long long)t->rows, ggml_type_info(t->native_type) ? ggml_type_info(t->native_type)->name : "?");
        memcpy(dst, src, (size_t)t->src_bytes);
    } else if (t->kind == PI_F32 || (t->kind == PI_VERBATIM && !t->code_bits)) {
        memcpy(dst, src, (size_t)t->src_bytes);
    } else if (t->kind == PI_BF16_IN_F32 || t->kind == PI_F16_IN_F32) {
        uint16_t *o = (uint16_t *)dst;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            float f;
            memcpy(&u, src + 4 * i, 4);
            memcpy(&f, &u, 4);
            if (t->kind == PI_F16_IN_F32) { o[i] = f32_to_fp16(f); continue; }
            /* The high half is exact only for a promoted bf16. */
            if (u & 0xFFFFu) return fail(p, "%s: element %lld is not a bf16 promoted to f32", t->name, (long long)i);
            o[i] = (uint16_t)(u >> 16);
        }
    } else {
        /* codes verbatim, then each fp16 plane widened (exact); the scales
         * that stay fp16 as well, as they are */
        memcpy(dst, src, (size_t)t->codes_bytes);
        const uint8_t *s = src + t->codes_bytes;
        const int64_t at = p->half_at[t - p->x.t];
        if (at >= 0) memcpy(p->halves + at, s, (size_t)half_bytes(t));
        uint8_t *d = dst + t->codes_bytes;
        const int64_t planes[2] = { t->scales_bytes, t->offset_bytes };
        const int fp16[2] = { t->scales_fp16, t->offsets_fp16 };
        for (int k = 0; k < 2; k++) {
            const int64_t cnt = planes[k] / 4;
            for (int64_t i = 0; i < cnt; i++) {
                float f;
                if (fp16[k]) { uint16_t h; memcpy(&h, s + 2 * i, 2); f = fp16_to_f32(h); }
                else memcpy(&f, s + 4 * i, 4);
                memcpy(d + 4 * i, &f, 4);
            }
            s += cnt * (fp16[k] ? 2 : 4);
            d += cnt * 4;
        }
    }
    return 0;
}

static int build_pool(loaded_pack *p)
{
    /* decode reads all of the pool once per token: on huge pages (hugemem.h) */
    p->pool_bytes = (size_t)p->x.pool;
    p->pool = hugemem_alloc(p->pool_bytes);
    if (!p->pool) return fail(p, "%s: cannot allocate the %zu-byte pool", p->dir, p->pool_bytes);
    /* S8 rows whose pack holds fp16 scales keep them beside the pool's f32
     * ones: decode's kernel reads those, 34 bytes per 32 weights instead of
     * 36 (weight.h scales_h), as a Q8_0 row is read */
    p->halves_bytes = (size_t)loader_half_scales_bytes(&p->x);
    p->half_at = malloc(((size_t)p->x.n_t + 1) * sizeof *p->half_at);
    p->halves = p->halves_bytes ? hugemem_alloc(p->halves_bytes) : NULL;
    if (!p->half_at || (p->halves_bytes && !p->halves))
        return fail(p, "%s: cannot allocate the %zu bytes of fp16 scales", p->dir, p->halves_bytes);
    int64_t at = 0; /* bytes */
    for (int i = 0; i < p->x.n_t; i++) {
        p->half_at[i] = loader_keeps_half_scales(&p->x.t[i]) ? at / 2 : -1;
        if (p->half_at[i] >= 0) at += halves_span(&p->x.t[i]);
    }
    int64_t done = 0;
    for (int i = 0; i < p->x.n_t; i++) {
        if (fill_tensor(p, &p->x.t[i])) return -1;
        done += p->x.t[i].dst_bytes;
        if (p->progress)
            p->progress(p->progress_ctx, p->resident_bytes + (done < p->x.pool ? done : p->x.pool),
                        p->resident_bytes + p->x.pool);
    }
    /* the tensors' bytes fall short of the pool by its alignment padding: the end is the whole pool */
    if (p->progress) p->progress(p->progress_ctx, p->resident_bytes + p->x.pool, p->resident_bytes + p->x.pool);
    /* The dense files are in the pool now; only experts.bin stays mapped. */
    for (int f = 0; f < 2; f++) unmap_file(p, f);
    return 0;
}

/* A pool tensor as the kernels see it (weight.h). */
static void row_weight(const loaded_pack *p, const pi_tensor *t, weight *w)
{
    memset(w, 0, sizeof *w);
    const uint8_t *d = p->pool + t->dst_off;
    w->rows = t->rows;
    w->cols = t->ne0;
    w->data = d;
    if (t->native_type >= 0) { w->form = WF_GGML; w->ggml_type = t->native_type; w->act = kernels_ggml_act(t->native_type); }
    else if (t->kind == PI_F32) w->form = WF_P32;
    else if (t->kind == PI_BF16_IN_F32) { w->form = WF_GGML; w->ggml_type = GGML_TYPE_BF16; }
    else if (t->kind == PI_F16_IN_F32 || !t->code_bits) w->form = WF_P16;
    else {
        w->form = WF_SCODE;
        w->code_bits = t->code_bits;
        w->code_bias = t->code_bias;
        w->group = t->group;
        w->act = t->act_kind ? WA_Q8_K : WA_Q8_0;
        w->scales = (const float *)(d + t->codes_bytes);
        w->offsets = t->has_offset ? (const float *)(d + t->codes_bytes + t->scales_bytes) : NULL;
        w->codebook = t->codebook ? p->codebook : NULL;
        if (p->half_at && p->half_at[t - p->x.t] >= 0) w->scales_h = p->halves + p->half_at[t - p->x.t];
    }
}

static int find_row(const loaded_pack *p, const char *name)
{
    for (int i = 0; i < p->x.n_t; i++)
        if (!strcmp(p->x.t[i].name, name)) return i;
    return -1;
}

/* A K-quant in S-form gets its super-block factors back (kfactor.h), so its
 * products can follow ggml's order; one that does not factor keeps the
 * per-group kernel. */
static int attach_kfactor(loaded_pack *p, weight *w, int i, const char *name)
{
    const size_t n = kfactor_bytes(w);
    if (!n) return 0;
    void *mem = own(p, n);
    kfactor *kf = own(p, sizeof *kf);
    if (!mem || !kf) return fail(p, "%s: out of memory", name);
    /* the pool is the pack's own memory: K-quant codes split in place,
     * once, however many weights the tensor is bound to; each such weight's
     * factors are records (the kernels read records with split codes) */
    const int split = p->split_codes && kq_split_bits(w);
    if (kfactor_build(w, mem, kf, split)) w->kf = kf;
    if (split && w->kf) {
        if (!p->split_at[i] && kq_split_rows(w, p->pool + p->x.t[i].dst_off)) p->split_at[i] = (int8_t)w->code_split;
        if (p->split_at[i] && !w->code_split) {
            w->code_split = p->split_at[i];
            w->row_bytes = kq_split_row_bytes(w->cols, w->code_split);
        }
    }
    return 0;
}

/* kind SLOT_ROW: a 1-D tensor is taken as a one-row matrix (the shared
 * expert's gate row, which GGUF stores as [n_embd]); SLOT_BLOCKS: a 3-D
 * tensor as one matrix of all its ne1 x ne2 rows (MLA's per-head blocks). */
static int mat_x(loaded_pack *p, weight *w, tensor_role role, int layer, slot_kind kind)
{
    char name[96];
    tensor_name(name, sizeof name, role, layer);
    memset(w, 0, sizeof *w);
    int i = find_row(p, name);
    if (i < 0) return 0;
    const pi_tensor *t = &p->x.t[i];
    if (t->n_dims != 2 && !(kind == SLOT_ROW && t->n_dims == 1) && !(kind == SLOT_BLOCKS && t->n_dims == 3))
        return fail(p, "%s: a matrix with %d dimensions", name, t->n_dims);
    p->used_t[i] = 1;
    row_weight(p, t, w);
    return attach_kfactor(p, w, i, name);
}

static int mat(loaded_pack *p, weight *w, tensor_role role) { return mat_x(p, w, role, 0, SLOT_MAT); }

/* Norms and biases as f32, decoded through the scalar kernels when the pool
 * holds them in another form. want: the length it must have (0: any); a
 * 2-D tensor (want_rows > 0, gpt-oss's expert biases) is read whole, its
 * rows one after another. */
static int vec_x(loaded_pack *p, const float **out, tensor_role role, int layer, int64_t want, int64_t want_rows)
{
    char name[96], e[160];
    tensor_name(name, sizeof name, role, layer);
    *out = NULL;
    int i = find_row(p, name);
    if (i < 0) return 0;
    const pi_tensor *t = &p->x.t[i];
    if (t->n_dims != (want_rows > 0 ? 2 : 1))
        return fail(p, "%s: a %s with %d dimensions", name, want_rows > 0 ? "bias per expert" : "vector", t->n_dims);
    if ((want && t->ne0 != want) || (want_rows > 0 && t->rows != want_rows))
        return fail(p, "%s: %lld x %lld values, the hyperparameters say %lld x %lld", name, (long long)t->ne0,
                    (long long)t->rows, (long long)want, (long long)(want_rows > 0 ? want_rows : 1));
    p->used_t[i] = 1;
    weight w;
    row_weight(p, t, &w);
    if (w.form == WF_P32) { *out = w.data; return 0; }
    float *f = own(p, (size_t)(t->ne0 * t->rows) * sizeof *f);
    if (!f) return fail(p, "%s: out of memory", name);
    if (weight_check(&w, name, e, sizeof e)) return fail(p, "%s", e);
    for (int64_t r = 0; r < t->rows; r++) kernels_scalar()->row_f32[w.form](&w, r, f + r * t->ne0);
    *out = f;
    return 0;
}

static int vec(loaded_pack *p, const float **out, tensor_role role) { return vec_x(p, out, role, 0, 0, 0); }

/* ------------------------------------------------------------------ experts */

/* Part x of an expert over its blob `blob` (the expert's bytes as in
 * experts.bin): the weight's form and shape, data into the blob; an
 * S-form's scales and offsets are left for part_derive(). The planes are
 * checked against the shape (-1 with the tensor named). */
static int part_weight(loaded_pack *p, const pi_expert *x, const uint8_t *blob, weight *w)
{
    const uint8_t *base = blob + x->blob_off;
    const int64_t elems = x->ne0 * x->ne1;
    memset(w, 0, sizeof *w);
    w->rows = x->ne1;
    w->cols = x->ne0;
    w->data = base;
    w->rotate = x->rotate; /* the index checked it: a power of two dividing ne0, on IQ3 only */
    int64_t want = -1;
    if (!strcmp(x->form, "IQ3")) {
        w->form = WF_IQ3;
        w->act = WA_Q8_K; /* as ggml's IQ3_XXS: the container is its block reordered */
        want = (int64_t)iq3_row_bytes(x->ne0) * x->ne1;
        if (x->plane[PLANE_BLOCKS] != want || !want) goto bad;
    } else if (!strcmp(x->form, "P32") || !strcmp(x->form, "P16")) {
        w->form = x->form[1] == '3' ? WF_P32 : WF_P16;
        want = elems * (x->form[1] == '3' ? 4 : 2);
        if (x->plane[PLANE_VALUES] != want) goto bad;
    } else if (!strcmp(x->form, "native")) {
        w->form = WF_GGML;
        w->ggml_type = x->native_type;
        w->act = kernels_ggml_act(x->native_type);
        want = (int64_t)ggml_row_bytes(x->native_type, x->ne0) * x->ne1;
        if (x->plane[PLANE_BLOCKS] != want || !want) goto bad;
    } else if (x->form[0] == 'S' && x->code_bits == x->form[1] - '0' && x->group > 0 && x->ne0 % x->group == 0) {
        const int64_t groups = elems / x->group;
        want = elems * x->code_bits / 8;
        if (x->plane[PLANE_CODES] != want || x->plane[PLANE_SCALES] != groups * (x->scales_fp16 ? 2 : 4) ||
            x->plane[PLANE_OFFSETS] != (x->has_offset ? groups * (x->offsets_fp16 ? 2 : 4) : 0))
            goto bad;
        w->form = WF_SCODE;
        w->code_bits = x->code_bits;
        w->code_bias = x->code_bias;
        w->group = x->group;
        w->act = x->act_kind ? WA_Q8_K : WA_Q8_0;
        w->codebook = x->codebook ? p->codebook : NULL;
    } else {
        return fail(p, "%s: expert form %s is not one the runtime reads", x->name, x->form);
    }
    /* row_bytes, which the kernels address rows by (the planes fit the
     * shape; an S-form has none, and its check wants the scales) */
    char e[256];
    if (w->form != WF_SCODE && weight_check(w, x->name, e, sizeof e)) return fail(p, "%s", e);
    return 0;
bad:
    return fail(p, "%s: expert planes (%lld %lld %lld %lld %lld) do not fit a %s %lld x %lld part", x->name,
                (long long)x->plane[0], (long long)x->plane[1], (long long)x->plane[2], (long long)x->plane[3],
                (long long)x->plane[4], x->form, (long long)x->ne0, (long long)x->ne1);
}

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Bytes part_derive() writes for an S-form part (its scales and offsets
 * widened to f32, its K-quant factors); 0 for other forms. A K-quant's
 * factor bytes are counted from the shape: the scales' values do not
 * change them. */
static size_t part_derived_bytes(const pi_expert *x, const weight *w)
{
    if (w->form != WF_SCODE) return 0;
    const size_t groups = (size_t)(x->ne0 * x->ne1 / x->group);
    weight shape = *w;
    shape.offsets = x->has_offset ? (const float *)w->data : NULL; /* kfactor_bytes reads presence only */
    return up64(groups * sizeof(float)) * (size_t)(1 + x->has_offset) + up64(kfactor_bytes(&shape));
}

/* Widens part x's fp16 (or copies its f32) scale and offset planes into
 * mem (f32 planes need not be 4-aligned after an odd codes plane, and the
 * blob stays read-only), and gives a K-quant its super-block factors back
 * (kfactor.h: its products then follow ggml's order; one that does not
 * factor keeps the per-group kernel), as records when `records` and its
 * codes can be split (the caller splits them). */
static void part_derive(const pi_expert *x, weight *w, uint8_t *mem, kfactor *kf, int records)
{
    if (w->form != WF_SCODE) return;
    const int64_t groups = x->ne0 * x->ne1 / x->group;
    const uint8_t *s = (const uint8_t *)w->data + x->plane[PLANE_CODES];
    for (int k = 0; k < 1 + x->has_offset; k++) {
        const int fp16 = k ? x->offsets_fp16 : x->scales_fp16;
        float *f = (float *)mem;
        for (int64_t i = 0; i < groups; i++) {
            if (fp16) { uint16_t h; memcpy(&h, s + 2 * i, 2); f[i] = fp16_to_f32(h); }
            else memcpy(&f[i], s + 4 * i, 4);
        }
        /* fp16 scales stay where they are too, for the kernels that read them */
        if (!k && fp16 && (uintptr_t)s % 2 == 0) w->scales_h = (const uint16_t *)s;
        s += groups * (fp16 ? 2 : 4);
        mem += up64((size_t)groups * sizeof(float));
        if (k) w->offsets = f; else w->scales = f;
    }
    w->kf = kfactor_bytes(w) && kfactor_build(w, mem, kf, records && kq_split_bits(w)) ? kf : NULL;
    /* its row_bytes, as the model's check would fill it (part_weight checked the shape) */
    char e[64];
    (void)weight_check(w, "", e, sizeof e);
}

/* The index entry of layer l's routed part k (0 gate, 1 up, 2 down), or NULL. */
static const pi_expert *layer_part(const loaded_pack *p, int l, int k)
{
    const int j = p->xpart ? p->xpart[3 * l + k] : -1;
    return j >= 0 ? &p->x.e[j] : NULL;
}

static const pi_layer *expert_layer(const loaded_pack *p, int l)
{
    for (int i = 0; i < p->x.n_l; i++)
        if (p->x.l[i].layer == l) return &p->x.l[i];
    return NULL;
}

static int load_experts(loaded_pack *p)
{
    const model_hparams *hp = &p->hp;
    const int nl = hp->n_layer + p->w.n_mtp;
    for (int i = 0; i < p->x.n_l; i++) {
        const pi_layer *l = &p->x.l[i];
        if (l->layer >= nl || l->n_expert != hp->n_expert)
            return fail(p, "%s/%s: expert layer %d with %d experts does not fit %d layers of %d experts",
                        p->dir, PACK_INDEX, l->layer, l->n_expert, nl, hp->n_expert);
        if ((uint64_t)l->base + (uint64_t)l->stride * (uint64_t)l->n_expert > p->x.file_bytes[PACK_EXPERTS])
            return fail(p, "%s/%s: layer %d's arena ends past the file", p->dir, PACK_FILE_NAMES[PACK_EXPERTS], l->layer);
    }
    if (nl > 0 && !(p->xpart = malloc((size_t)nl * 3 * sizeof *p->xpart)))
        return fail(p, "%s: out of memory", p->dir);
    for (int i = 0; i < 3 * nl; i++) p->xpart[i] = -1;
    for (int j = 0; j < p->x.n_e; j++) {
        const pi_expert *x = &p->x.e[j];
        const pi_layer *l = expert_layer(p, x->layer);
        if (x->blob_off % 64 || x->blob_off + x->part_bytes > l->blob_bytes)
            return fail(p, "%s: part at %lld+%lld does not fit its %lld-byte blob", x->name, (long long)x->blob_off,
                        (long long)x->part_bytes, (long long)l->blob_bytes);
        if (!hparams_layer_moe(hp, x->layer))
            return fail(p, "%s: experts in layer %d, which leading_dense_block_count %d makes dense", x->name,
                        x->layer, hp->n_layer_dense_lead);
        layer_weights *L = &p->w.layers[x->layer];
        weight *arr = x->part == 0 ? L->exp_gate : x->part == 1 ? L->exp_up : x->part == 3 ? L->exp_down : NULL;
        if (!arr) return fail(p, "%s: fused gate_up experts are not supported by the runtime yet", x->name);
        if (arr[0].data) return fail(p, "%s: a second tensor for the same expert part", x->name);
        p->xpart[3 * x->layer + (x->part == 3 ? 2 : x->part)] = j;
        /* every expert's planes are checked now; lazily loaded ones keep
         * only their form and shape (loader_expert_build fills the rest) */
        for (int e = 0; e < l->n_expert; e++) {
            const uint8_t *blob = (const uint8_t *)p->map[PACK_EXPERTS] + l->base + (int64_t)e * l->stride;
            if (part_weight(p, x, blob, &arr[e])) return -1;
        }
        p->used_e[j] = 1;
    }
    for (int i = 0; i < p->x.n_l; i++) {
        /* gate and up read one rotated input (backend_cpu_moe.c): one block, or one of them unrotated */
        const pi_expert *g = layer_part(p, p->x.l[i].layer, 0), *u = layer_part(p, p->x.l[i].layer, 1);
        if (g && u && g->rotate && u->rotate && g->rotate != u->rotate)
            return fail(p, "%s and %s: rotated by Hadamard blocks of %lld and %lld; one input cannot serve both",
                        g->name, u->name, (long long)g->rotate, (long long)u->rotate);
    }
    /* The derived planes of every expert built here, in one block on huge
     * pages (hugemem.h): decode reads a K-quant's factors beside its codes. */
    size_t total = 0;
    for (int i = 0; i < p->x.n_l; i++) {
        const int lay = p->x.l[i].layer;
        /* a tier builds the run layers' experts on demand; a next-token-prediction
         * block is a draft model's, which reads its experts in place */
        if (p->lazy_experts && lay < hp->n_layer) continue;
        total += loader_expert_derived_bytes(p, lay) * (size_t)p->x.l[i].n_expert;
    }
    uint8_t *arena = NULL;
    if (total && !(arena = own_from(p, total, 1))) return fail(p, "%s: out of memory", p->dir);
    for (int i = 0; i < p->x.n_l; i++) {
        const int lay = p->x.l[i].layer;
        if (p->lazy_experts && lay < hp->n_layer) continue;
        const size_t nd = loader_expert_derived_bytes(p, lay);
        if (!nd) continue;
        layer_weights *L = &p->w.layers[lay];
        for (int e = 0; e < p->x.l[i].n_expert; e++) {
            uint8_t *mem = arena;
            arena += nd;
            kfactor *kf = own(p, 3 * sizeof *kf);
            if (!kf) return fail(p, "%s: out of memory", p->dir);
            weight *parts[3] = { &L->exp_gate[e], &L->exp_up[e], &L->exp_down[e] };
            for (int k = 0; k < 3; k++) {
                const pi_expert *x = layer_part(p, lay, k);
                if (!x) continue;
                /* resident codes are memory of the pack's own (the same bytes
                 * as data, through the writable map): split where they can
                 * be, their factors built as records */
                const int split = p->resident && p->split_codes;
                part_derive(x, parts[k], mem, &kf[k], split);
                mem += part_derived_bytes(x, parts[k]);
                if (split && parts[k]->kf) {
                    uint8_t *own_bytes = p->map[PACK_EXPERTS];
                    (void)kq_split_rows(parts[k], own_bytes + ((const uint8_t *)parts[k]->data - own_bytes));
                }
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ weights */

static int load_weights(loaded_pack *p)
{
    const model_hparams *hp = &p->hp;
    int n;
    const int8_t *cb = codebook_values(CODEBOOK_IQ4NL, &n);
    for (int i = 0; i < 16 && cb && i < n; i++) p->codebook[i] = (float)cb[i];
    p->used_t = calloc((size_t)p->x.n_t + 1, 1);
    p->used_e = calloc((size_t)p->x.n_e + 1, 1);
    p->split_at = calloc((size_t)p->x.n_t + 1, 1);
    /* the next-token-prediction blocks (n_nextn after the run ones) are
     * optional: a pack built without them runs, only not as its own draft */
    char eh[96];
    p->w.n_mtp = hp->n_nextn > 0 && hp->arch.mtp && find_row(p, tensor_name(eh, sizeof eh, TN_NEXTN_EH_PROJ, hp->n_layer)) >= 0
                     ? hp->n_nextn : 0;
    p->w.layers = calloc((size_t)(hp->n_layer + p->w.n_mtp), sizeof *p->w.layers);
    if (!p->used_t || !p->used_e || !p->split_at || !p->w.layers) return fail(p, "%s: out of memory", p->dir);
    char rf[96];
    if (mat(p, &p->w.tok_embd, TN_TOKEN_EMBD) || mat(p, &p->w.output, TN_OUTPUT) ||
        vec(p, &p->w.output_norm, TN_OUTPUT_NORM) || vec(p, &p->w.rope_freqs, TN_ROPE_FREQS))
        return -1;
    if (p->w.rope_freqs) p->w.n_rope_freqs = (int)p->x.t[find_row(p, tensor_name(rf, sizeof rf, TN_ROPE_FREQS, 0))].ne0;
    for (int l = 0; l < hp->n_layer + p->w.n_mtp; l++) {
        layer_weights *L = &p->w.layers[l];
        for (int k = 0; k < N_LAYER_SLOTS; k++) {
            const weight_slot *s = &LAYER_SLOTS[k];
            const tensor_role role = tensor_arch_role(hp->arch.name, s->role);
            if (s->kind == SLOT_VEC ? vec_x(p, slot_vec(L, s), role, l, slot_len_of(hp, s->len), slot_len_of(hp, s->rows))
                                    : mat_x(p, slot_mat(L, s), role, l, s->kind))
                return -1;
        }
        char bn[96];
        tensor_name(bn, sizeof bn, TN_FFN_EXP_PROBS_B, l);
        if (L->exp_probs_b && p->x.t[find_row(p, bn)].ne0 != hp->n_expert)
            return fail(p, "%s: %lld values for %d experts", bn, (long long)p->x.t[find_row(p, bn)].ne0, hp->n_expert);
        if (hparams_layer_moe(hp, l)) {
            size_t ne = (size_t)hp->n_expert;
            if (!(L->exp_gate = calloc(ne, sizeof(weight))) || !(L->exp_up = calloc(ne, sizeof(weight))) ||
                !(L->exp_down = calloc(ne, sizeof(weight))))
                return fail(p, "%s: out of memory", p->dir);
        }
    }
    if (load_experts(p)) return -1;
    /* A tensor nobody reads is a model this graph does not implement. */
    for (int i = 0; i < p->x.n_t; i++)
        if (!p->used_t[i]) return fail(p, "%s: the model graph has no use for this tensor", p->x.t[i].name);
    return 0;
}

static int load_tokenizer(loaded_pack *p)
{
    char *path = pack_path(p->dir, PACK_FILE_NAMES[PACK_TOKENIZER]);
    if (!path) return fail(p, "%s: out of memory", p->dir);
    char e[256];
    gguf_file *g = gguf_open(path, e, sizeof e);
    if (g) p->tok = tokenizer_load(g, e, sizeof e);
    gguf_close(g);
    free(path);
    if (!p->tok) return fail(p, "%s", e);
    if (p->hp.n_vocab && tokenizer_n_vocab(p->tok) > p->hp.n_vocab)
        return fail(p, "%s/%s: %d tokens for a model of %d", p->dir, PACK_FILE_NAMES[PACK_TOKENIZER],
                    tokenizer_n_vocab(p->tok), p->hp.n_vocab);
    return 0;
}

/* ---------------------------------------------------------------- the API */

loaded_pack *loader_open(const char *dir, char *err, size_t errlen)
{
    return loader_open_progress(dir, NULL, NULL, err, errlen);
}

loaded_pack *loader_open_progress(const char *dir, loader_progress_fn fn, void *ctx, char *err, size_t errlen)
{
    const loader_opts o = { fn, ctx, 0, 0, 0 };
    return loader_open_opts(dir, &o, err, errlen);
}

loaded_pack *loader_open_opts(const char *dir, const loader_opts *o, char *err, size_t errlen)
{
    loaded_pack *p = calloc(1, sizeof *p);
    if (!p) { snprintf(err, errlen, "%s: out of memory", dir); return NULL; }
    if (o) {
        p->progress = o->progress;
        p->progress_ctx = o->progress_ctx;
        p->lazy_experts = o->lazy_experts;
        p->resident = o->resident_experts && !o->lazy_experts;
        p->split_codes = o->split_codes;
    }
    p->err = err;
    p->errlen = errlen;
    p->dir = strdup(dir);
    if (!p->dir || read_index(p) || map_files(p) || load_hparams(p) || build_pool(p) || load_weights(p) ||
        load_tokenizer(p)) {
        if (!p->dir) snprintf(err, errlen, "%s: out of memory", dir);
        loader_close(p);
        return NULL;
    }
    if (!p->hp.n_vocab) p->hp.n_vocab = (int)p->w.tok_embd.rows;
    p->err = NULL;
    return p;
}

void loader_close(loaded_pack *p)
{
    if (!p) return;
    for (int f = 0; f < PACK_NFILES; f++) unmap_file(p, f);
    for (int i = 0; i < p->n_owned; i++) free(p->owned[i]);
    free(p->owned);
    if (p->w.layers) {
        for (int l = 0; l < p->hp.n_layer + p->w.n_mtp; l++) {
            free(p->w.layers[l].exp_gate);
            free(p->w.layers[l].exp_up);
            free(p->w.layers[l].exp_down);
        }
        free(p->w.layers);
    }
    tokenizer_free(p->tok);
    free(p->pool);
    free(p->halves);
    free(p->half_at);
    free(p->used_t);
    free(p->used_e);
    free(p->split_at);
    free(p->xpart);
    pindex_free(&p->x);
    free(p->dir);
    free(p);
}

const model_hparams *loader_hparams(const loaded_pack *p) { return &p->hp; }
const model_weights *loader_weights(const loaded_pack *p) { return &p->w; }
const tokenizer *loader_tokenizer(const loaded_pack *p) { return p->tok; }
size_t loader_pool_bytes(const loaded_pack *p) { return p->pool_bytes + p->halves_bytes; }
size_t loader_expert_bytes(const loaded_pack *p) { return p->map_bytes[PACK_EXPERTS]; }
int loader_n_tensors(const loaded_pack *p) { return p->x.n_t + p->x.n_e; }

const char *loader_vision(const loaded_pack *p, int *n_tensors, uint64_t *bytes)
{
    if (!p->x.have_vision) return NULL;
    *n_tensors = p->x.n_vt;
    *bytes = p->x.vision_bytes;
    return p->x.vision_projector;
}

char *loader_vision_path(const loaded_pack *p)
{
    return p->x.have_vision ? pack_path(p->dir, PACK_VISION) : NULL;
}

const char *loader_dir(const loaded_pack *p) { return p->dir; }
int loader_lazy_experts(const loaded_pack *p) { return p->lazy_experts; }

int loader_expert_span(const loaded_pack *p, int layer, int e, uint64_t *off, size_t *bytes)
{
    const pi_layer *l = layer >= 0 && layer < p->hp.n_layer ? expert_layer(p, layer) : NULL;
    if (!l || e < 0 || e >= l->n_expert) return -1;
    *off = (uint64_t)l->base + (uint64_t)e * (uint64_t)l->stride;
    *bytes = (size_t)l->blob_bytes;
    return 0;
}

size_t loader_expert_derived_bytes(const loaded_pack *p, int layer)
{
    if (layer < 0 || layer >= p->hp.n_layer + p->w.n_mtp) return 0;
    const layer_weights *L = &p->w.layers[layer];
    const weight *parts[3] = { L->exp_gate, L->exp_up, L->exp_down };
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        const pi_expert *x = layer_part(p, layer, k);
        if (x && parts[k]) n += part_derived_bytes(x, &parts[k][0]);
    }
    return n;
}

size_t loader_expert_weight_bytes(const loaded_pack *p, int layer)
{
    if (layer < 0 || layer >= p->hp.n_layer + p->w.n_mtp) return 0;
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        const pi_expert *x = layer_part(p, layer, k);
        if (!x) continue;
        /* an S-form's codes plane, then its groups' f32 scales (and offsets); other forms' one plane */
        if (x->form[0] == 'S')
            n += (size_t)x->plane[PLANE_CODES] + (size_t)(x->ne0 * x->ne1 / x->group) * 4 * (size_t)(1 + x->has_offset);
        else
            n += (size_t)x->plane[PLANE_BLOCKS] + (size_t)x->plane[PLANE_VALUES];
    }
    return n;
}

void loader_expert_build(const loaded_pack *p, int layer, int e, const uint8_t *blob, void *derived, weight out[3],
                         kfactor kf[3])
{
    const layer_weights *L = &p->w.layers[layer];
    const weight *parts[3] = { L->exp_gate, L->exp_up, L->exp_down };
    uint8_t *mem = derived;
    for (int k = 0; k < 3; k++) {
        const pi_expert *x = layer_part(p, layer, k);
        memset(&out[k], 0, sizeof out[k]);
        if (!x || !parts[k]) continue;
        /* the checked template's fields, the data moved onto this blob */
        out[k] = parts[k][e];
        out[k].data = blob + x->blob_off;
        out[k].scales = out[k].offsets = NULL;
        out[k].kf = NULL;
        part_derive(x, &out[k], mem, &kf[k], 0);
        mem += part_derived_bytes(x, &out[k]);
    }
}
