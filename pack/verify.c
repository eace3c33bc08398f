/* verify.c: `iq3pack verify` — re-read a pack from disk and prove it.
 * crc32 and size of every file against the manifest; every dense tensor and
 * every transcoded or canonical expert bit-exact against ggml's
 * dequantization of the source; every IQ3-encoded expert decoded, finite,
 * and its rel-RMSE against the source reported per tensor kind. */
#include "pack/pack_cli.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "formats/hadamard.h"
#include "pack/build_common.h"
#include "pack/expert_src.h"
#include "formats/pack_manifest.h"
#include "pack/packdir.h"
#include "pack/source.h"

typedef struct mapped { const uint8_t *p; size_t n; } mapped;

static int map_file(const char *dir, const char *name, mapped *m, FILE *err)
{
    char *path = pack_path(dir, name);
    const int fd = path ? open(path, O_RDONLY) : -1;
    struct stat st;
    m->p = NULL;
    m->n = 0;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(err, "%s: cannot open\n", path ? path : name);
        if (fd >= 0) close(fd);
        free(path);
        return -1;
    }
    m->n = (size_t)st.st_size;
    if (m->n) {
        void *p = mmap(NULL, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
        m->p = p == MAP_FAILED ? NULL : p;
    }
    close(fd);
    free(path);
    return (m->n && !m->p) ? -1 : 0;
}


typedef struct stats { double worst, sum; int n; } stats;

static double rel_rmse(const float *a, const float *ref, size_t n, int *finite)
{
    double num = 0, den = 0;
    *finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) *finite = 0;
        const double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

static int decode_at(const pk_tensor *t, const uint8_t *base, int64_t rows, float *out, FILE *err)
{
    const uint8_t *plane[PLANE_COUNT] = { 0 };
    for (int k = 0; k < PLANE_COUNT; k++)
        if (t->plane_bytes[k]) plane[k] = base + t->plane_off[k];
    char e[256];
    if (planes_decode(&t->d, plane, t->ne[0], rows, out, e, sizeof e) != 0) {
        fprintf(err, "%s: %s\n", t->name, e);
        return -1;
    }
    return 0;
}

static int check_files(const char *dir, const pack_layout *L, FILE *out, FILE *err)
{
    int bad = 0;
    for (int f = 0; f < PACK_NFILES; f++) {
        char e[300];
        char *p = pack_path(dir, PACK_FILE_NAMES[f]);
        uint64_t n = 0;
        uint32_t crc = 0;
        if (!p || pack_file_crc32(p, &n, &crc, e, sizeof e)) {
            fprintf(err, "%s\n", p ? e : "out of memory");
            bad = 1;
        } else if (n != L->files[f].bytes || crc != L->files[f].crc32) {
            fprintf(err, "%s: %llu bytes crc32 %08x, the manifest says %llu bytes crc32 %08x\n", p,
                    (unsigned long long)n, crc, (unsigned long long)L->files[f].bytes, L->files[f].crc32);
            bad = 1;
        } else {
            fprintf(out, "ok   %-15s %12llu bytes crc32 %08x\n", PACK_FILE_NAMES[f], (unsigned long long)n, crc);
        }
        free(p);
    }
    return bad;
}

/* vision.gguf: its size and crc32 as the manifest says, its sha256 the one
 * of the projector it was copied from (so every tensor has its bits), and
 * each tensor the manifest names where the file's own header puts it. */
static int check_vision(const char *dir, const pk_vision *v, FILE *out, FILE *err)
{
    if (!v->present) return 0;
    char e[300], sha[65];
    char *p = pack_path(dir, PACK_VISION);
    uint64_t n = 0;
    uint32_t crc = 0;
    int bad = 0;
    if (!p || pack_file_digest(p, &n, &crc, sha, e, sizeof e)) {
        fprintf(err, "%s\n", p ? e : "out of memory");
        free(p);
        return 1;
    }
    if (n != v->file.bytes || crc != v->file.crc32) {
        fprintf(err, "%s: %llu bytes crc32 %08x, the manifest says %llu bytes crc32 %08x\n", p, (unsigned long long)n, crc,
                (unsigned long long)v->file.bytes, v->file.crc32);
        bad = 1;
    } else if (strcmp(sha, v->source_sha256)) {
        fprintf(err, "%s: sha256 %s, the projector it was built from has %s\n", p, sha, v->source_sha256);
        bad = 1;
    }
    gguf_file *g = bad ? NULL : gguf_open(p, e, sizeof e);
    if (!bad && !g) {
        fprintf(err, "%s\n", e);
        bad = 1;
    }
    if (g && gguf_n_tensors(g) != v->n_tensors) {
        fprintf(err, "%s: %lld tensors, the manifest names %d\n", p, (long long)gguf_n_tensors(g), v->n_tensors);
        bad = 1;
    }
    for (int i = 0; g && !bad && i < v->n_tensors; i++) {
        const pk_vtensor *x = &v->tensors[i];
        const gguf_tensor *t = gguf_find_tensor(g, x->name);
        int same = t && t->type == x->type && (int)t->n_dims == x->n_dims &&
                   gguf_data_offset(g) + t->offset == x->off && t->size == x->bytes;
        for (int d = 0; same && d < x->n_dims; d++) same = t->ne[d] == x->ne[d];
        if (!same) {
            fprintf(err, "%s: %s is %s in the file than the manifest says\n", p, x->name, t ? "otherwise" : "not");
            bad = 1;
        }
    }
    if (g) gguf_close(g);
    if (!bad)
        fprintf(out, "ok   %-15s %12llu bytes crc32 %08x; the projector's sha256; %d tensors where named (%s)\n",
                PACK_VISION, (unsigned long long)n, crc, v->n_tensors, v->projector);
    free(p);
    return bad;
}

static uint64_t tensor_bytes(const pk_tensor *t)
{
    uint64_t b = 0;
    for (int k = 0; k < PLANE_COUNT; k++) b += t->plane_bytes[k];
    return t->file == PACK_EXPERTS ? b * (uint64_t)(t->n_expert > 0 ? t->n_expert : 1) : b;
}

static int check_dense(const pack_layout *L, const mapped files[3], const source *s, build_progress *pg, FILE *out,
                       FILE *err)
{
    int bad = 0, n = 0;
    for (int i = 0; i < L->n_tensors; i++) {
        const pk_tensor *t = &L->tensors[i];
        if (t->file == PACK_EXPERTS) continue;
        const gguf_tensor *g = s ? source_find(s, t->name) : NULL;
        float *a = malloc((size_t)t->elements * sizeof(float));
        float *b = malloc((size_t)t->elements * sizeof(float));
        int ok = a && b && decode_at(t, files[t->file].p, t->elements / t->ne[0], a, err) == 0;
        if (ok && s) {
            ok = g && g->type == t->src_type && g->n_elements == t->elements &&
                 ggml_dequantize(g->type, g->data, b, g->n_elements) == 0 &&
                 memcmp(a, b, (size_t)t->elements * sizeof(float)) == 0;
            if (!ok) fprintf(err, "MISMATCH %s (%s): pack decode != ggml dequantize of the source\n", t->name,
                             pack_form_name(t->d.form));
            if (g) source_release(s, g);
        }
        bad |= !ok;
        n += ok;
        free(a);
        free(b);
        build_progress_step(pg, tensor_bytes(t), t->name);
    }
    fprintf(out, "%s %d dense tensors %s\n", bad ? "FAIL" : "ok  ", n,
            s ? "bit-exact against the source" : "decode (no source to compare)");
    return bad;
}

static int check_experts(const pack_layout *L, const mapped *ex, const source *s, build_progress *pg, FILE *out,
                         FILE *err)
{
    stats st[PACK_MAX_PARTS] = { { 0, 0, 0 } };
    int bad = 0, exact = 0;
    for (int l = 0; l < L->n_layers; l++) {
        const pk_layer *y = &L->layers[l];
        for (int p = 0; p < y->n_parts; p++) {
            const pk_tensor *t = &L->tensors[y->part_tensor[p]];
            expert_src x;
            char why[200] = "";
            const int found = s ? expert_src_find(s, t->layer, t->part, &x, why, sizeof why) : 0;
            if (s && (found != 1 || x.type != t->src_type || x.K != t->ne[0] || x.N != t->ne[1] ||
                      x.n_expert != y->n_expert)) {
                fprintf(err, "MISMATCH %s: the source tensor differs in type or shape%s%s\n", t->name,
                        *why ? ": " : "", why);
                bad = 1;
                continue;
            }
            const size_t n = (size_t)t->ne[0] * (size_t)t->ne[1];
            float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
            for (int e = 0; e < y->n_expert && a && b; e++) {
                const uint8_t *part = ex->p + y->base + (uint64_t)e * y->stride + y->part_off[p];
                if (decode_at(t, part, t->ne[1], a, err)) { bad = 1; break; }
                if (!s) continue;
                ggml_dequantize(x.type, expert_src_slice(s, &x, e), b, (int64_t)n);
                if (t->rotate) hadamard_rows(b, t->ne[1], t->ne[0], t->rotate); /* the rows as stored */
                int finite;
                const double r = rel_rmse(a, b, n, &finite);
                if (t->how != EXP_ENCODED) {
                    if (memcmp(a, b, n * sizeof(float))) {
                        /* a transcoded slice may have been re-encoded (fp16 overflow of 2d): measured then */
                        if (t->how == EXP_TRANSCODED && finite) goto measured;
                        fprintf(err, "MISMATCH %s expert %d: not bit-exact\n", t->name, e);
                        bad = 1;
                    } else exact++;
                    continue;
                }
            measured:
                if (!finite) { fprintf(err, "MISMATCH %s expert %d: decodes to a non-finite value\n", t->name, e); bad = 1; }
                stats *k = &st[t->part];
                if (r > k->worst) k->worst = r;
                k->sum += r;
                k->n++;
            }
            free(a);
            free(b);
            if (s) expert_src_release(s, &x);
            build_progress_step(pg, tensor_bytes(t), t->name);
        }
    }
    if (s && (exact || bad)) fprintf(out, "%s %d expert slices bit-exact (transcoded or canonical)\n", bad ? "FAIL" : "ok  ", exact);
    for (int k = 0; k < PACK_MAX_PARTS; k++)
        if (st[k].n)
            fprintf(out, "     IQ3 %-8s %4d slices  rel-RMSE mean %.6f worst %.6f\n", EXPERT_PART_KEYS[k], st[k].n,
                    st[k].sum / st[k].n, st[k].worst);
    return bad;
}

int pack_verify(const char *dir, const char *source_path, FILE *out, FILE *err)
{
    char e[512];
    pack_layout L;
    /* A missing file is named before anything is read: a pack without its
     * index (or a bin) cannot be loaded, however well the rest checks out. */
    char missing[256];
    const int n_missing = pack_missing_files(dir, missing, sizeof missing);
    if (n_missing) {
        const char *first_comma = strchr(missing, ',');
        char *first = pack_path(dir, missing);
        if (first && first_comma) first[strlen(dir) + 1 + (size_t)(first_comma - missing)] = 0;
        if (n_missing == 1 && !strcmp(missing, PACK_INDEX))
            fprintf(err, "%s: missing; write it with `packindex --pack %s`\n", first ? first : dir, dir);
        else if (first_comma)
            fprintf(err, "%s: missing (also missing: %s); the pack is incomplete: build it again\n", first ? first : dir,
                    first_comma + 2);
        else
            fprintf(err, "%s: missing; the pack is incomplete: build it again\n", first ? first : dir);
        free(first);
        return 1;
    }
    if (pack_layout_from_dir(&L, dir, e, sizeof e)) {
        fprintf(err, "%s\n", e);
        return 1;
    }
    int bad = check_files(dir, &L, out, err);
    bad |= check_vision(dir, &L.vision, out, err);
    source s, *sp = NULL;
    const char *src = source_path ? source_path : L.source_path;
    if (!bad && src && *src) {
        if (source_open(&s, src, e, sizeof e) == 0) {
            sp = &s;
            char sha[65];
            source_sha256(&s, sha);
            if (strcmp(sha, L.source_sha256)) {
                fprintf(err, "%s: sha256 %s, the pack was built from %s\n", src, sha, L.source_sha256);
                bad = 1;
            }
        } else if (source_path) {
            fprintf(err, "%s\n", e);
            bad = 1;
        } else {
            fprintf(out, "note: source %s not readable; checking decode only (pass --source)\n", src);
        }
    }
    mapped m[3] = { { 0 } };
    for (int f = 0; f < 3 && !bad; f++) bad |= map_file(dir, PACK_FILE_NAMES[f], &m[f], err);
    /* a bar on a terminal, else a line every 10 %: a large pack takes minutes */
    build_progress pg = { 0, 0, build_now(), isatty(fileno(err)) ? 1 : 2, 0, "iq3pack verify" };
    for (int i = 0; i < L.n_tensors; i++) pg.total += tensor_bytes(&L.tensors[i]);
    if (!bad) bad |= check_dense(&L, m, sp, &pg, out, err);
    if (!bad) bad |= check_experts(&L, &m[PACK_EXPERTS], sp, &pg, out, err);
    for (int f = 0; f < 3; f++)
        if (m[f].p) munmap((void *)m[f].p, m[f].n);
    if (sp) source_close(sp);
    pack_layout_free(&L);
    fprintf(out, "%s\n", bad ? "verify: FAILED" : "verify: ok");
    return bad;
}
