/* shard.c: see shard.h. */
#include "pack/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "formats/fileio.h"
#include "formats/pack_files.h"
#include "formats/version.h"
#include "pack/packdir.h"
#include "pack/packindex.h"

int shard_parse(const char *s, int *k, int *n)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/') return -1;
    const char *b0 = end + 1;
    long b = strtol(b0, &end, 10);
    if (end == b0 || *end || b < 1 || b > 4096 || a < 0 || a >= b) return -1;
    *k = (int)a;
    *n = (int)b;
    return 0;
}

void shard_range(const pack_layout *L, uint64_t experts_bytes, int k, int n, int *l0, int *l1, uint64_t *lo,
                 uint64_t *hi)
{
    /* shard j starts at the first layer whose blob starts at or past j/n of
     * the bytes: contiguous runs of about equal bytes, every layer in one */
    int first[4097];
    for (int j = 0; j <= n; j++) {
        const uint64_t at = (uint64_t)((double)experts_bytes * j / n);
        int l = 0;
        while (l < L->n_layers && L->layers[l].base < at) l++;
        first[j] = j == n ? L->n_layers : l;
    }
    *l0 = first[k];
    *l1 = first[k + 1] < *l0 ? *l0 : first[k + 1];
    *lo = *l0 < L->n_layers ? L->layers[*l0].base : experts_bytes;
    *hi = *l1 < L->n_layers ? L->layers[*l1].base : experts_bytes;
}

int shard_write_info(const char *dir, int k, int n, const pack_layout *L, const char *experts_mode, int drop_nextn,
                     int64_t rotate, const char *imatrix_sha256, const char *grams_id, int l0, int l1, uint64_t lo, uint64_t hi,
                     uint64_t experts_bytes, uint32_t part_crc, char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s, s:i, s:s, s:i, s:i, s:s, s:I, s:s, s:b, s:o, s:o, s:[i,i], s:[I,I], s:I, s:I}",
                          "format", "strata-pack-shard", "version", 1, "strata", strata_version(), "shard", k,
                          "shards", n, "source_sha256", L->source_sha256, "source_bytes", (json_int_t)L->source_bytes,
                          "experts", experts_mode, "no_nextn", drop_nextn, "imatrix_sha256",
                          imatrix_sha256 ? json_string(imatrix_sha256) : json_null(), "grams_id",
                          grams_id ? json_string(grams_id) : json_null(), "layers", l0, l1,
                          "experts_range", (json_int_t)lo, (json_int_t)hi, "experts_bytes", (json_int_t)experts_bytes,
                          "part_crc32", (json_int_t)part_crc);
    if (o) json_object_set_new(o, "rotate", json_integer((json_int_t)rotate));
    char *p = pack_path(dir, SHARD_INFO);
    int rc = -1;
    if (o && p && json_dump_file(o, p, JSON_INDENT(2) | JSON_SORT_KEYS) == 0) rc = 0;
    else snprintf(err, errlen, "%s/%s: cannot write", dir, SHARD_INFO);
    json_decref(o);
    free(p);
    return rc;
}

/* ------------------------------------------------------------------ merge */

typedef struct shard_in {
    const char *dir;
    json_t *info;
    int k, n;
    uint64_t lo, hi;
} shard_in;

static const char *str_of(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

static int64_t int_of(json_t *o, const char *k, int i)
{
    json_t *v = json_object_get(o, k);
    if (i >= 0) v = json_array_get(v, (size_t)i);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The same value of field f in a and b (strings, null, or numbers). */
static int same(json_t *a, json_t *b, const char *f)
{
    return json_equal(json_object_get(a, f), json_object_get(b, f));
}

static int copy_range(int to, const char *path, uint64_t at, uint64_t expect, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); return -1; }
    char *buf = malloc(1 << 20);
    uint64_t done = 0;
    int rc = buf ? 0 : -1;
    if (!buf) snprintf(err, errlen, "out of memory");
    while (!rc) {
        const ssize_t r = read(fd, buf, 1 << 20);
        if (r < 0) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); rc = -1; break; }
        if (r == 0) break;
        for (ssize_t w = 0; w < r && !rc;) {
            const ssize_t x = pwrite(to, buf + w, (size_t)(r - w), (off_t)(at + done + (uint64_t)w));
            if (x <= 0) { snprintf(err, errlen, "write: %s", strerror(errno)); rc = -1; }
            else w += x;
        }
        done += (uint64_t)r;
    }
    if (!rc && done != expect) {
        snprintf(err, errlen, "%s: %llu bytes, %llu expected", path, (unsigned long long)done,
                 (unsigned long long)expect);
        rc = -1;
    }
    free(buf);
    close(fd);
    return rc;
}

/* dir/leaf copied (or, parts, appended at `at`) into tmp/leaf_out. */
static int copy_into(const char *tmp, const char *leaf_out, const char *dir, const char *leaf, uint64_t at,
                     uint64_t expect, int append, char *err, size_t errlen)
{
    char *src = pack_path(dir, leaf), *dst = pack_path(tmp, leaf_out);
    int rc = -1;
    if (src && dst) {
        struct stat st;
        if (expect == UINT64_MAX) expect = stat(src, &st) == 0 ? (uint64_t)st.st_size : 0;
        int fd = open(dst, O_WRONLY | O_CREAT | (append ? 0 : O_EXCL), 0644);
        if (fd < 0) snprintf(err, errlen, "%s: %s", dst, strerror(errno));
        else {
            rc = copy_range(fd, src, at, expect, err, errlen);
            if (close(fd) != 0 && !rc) { snprintf(err, errlen, "%s: %s", dst, strerror(errno)); rc = -1; }
        }
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(src);
    free(dst);
    return rc;
}

static int load_shards(const char *const *dirs, int n_dirs, shard_in *in, char *err, size_t errlen)
{
    for (int i = 0; i < n_dirs; i++) {
        in[i].dir = dirs[i];
        char *p = pack_path(dirs[i], SHARD_INFO);
        json_error_t je;
        in[i].info = p ? json_load_file(p, 0, &je) : NULL;
        free(p);
        if (!in[i].info || strcmp(str_of(in[i].info, "format"), "strata-pack-shard")) {
            snprintf(err, errlen, "%s: not a shard directory of iq3pack build --shard (no readable %s)", dirs[i],
                     SHARD_INFO);
            return -1;
        }
        in[i].k = (int)int_of(in[i].info, "shard", -1);
        in[i].n = (int)int_of(in[i].info, "shards", -1);
        in[i].lo = (uint64_t)int_of(in[i].info, "experts_range", 0);
        in[i].hi = (uint64_t)int_of(in[i].info, "experts_range", 1);
        if (in[i].n < 1 || in[i].n > 4096 || in[i].k < 0 || in[i].k >= in[i].n || in[i].hi < in[i].lo) {
            snprintf(err, errlen, "%s/%s: a shard number or range that makes no sense", dirs[i], SHARD_INFO);
            return -1;
        }
    }
    return 0;
}

/* Every refusal before anything is written: the set, then each part. */
static int check_shards(shard_in *in, int n_dirs, shard_in **by_k, char *err, size_t errlen)
{
    json_t *a = in[0].info;
    const int n = in[0].n;
    static const char *const fields[] = { "source_sha256", "source_bytes", "experts", "no_nextn", "imatrix_sha256",
                                          "grams_id", "rotate", "strata", "experts_bytes", "shards" };
    static const char *const what[] = { "another source file", "another source file", "other --experts",
                                        "another --no-nextn", "another --imatrix", "another --grams",
                                        "another --rotate", "another strata version", "another plan", "another shard count" };
    for (int i = 1; i < n_dirs; i++)
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            if (!same(a, in[i].info, fields[f])) {
                snprintf(err, errlen, "%s: built from %s than %s (%s differs); every shard must come from one "
                         "source with the same flags", in[i].dir, what[f], in[0].dir, fields[f]);
                return -1;
            }
    for (int i = 0; i < n_dirs; i++) {
        if (by_k[in[i].k]) {
            snprintf(err, errlen, "shard %d of %d given twice: %s and %s", in[i].k, n, by_k[in[i].k]->dir, in[i].dir);
            return -1;
        }
        by_k[in[i].k] = &in[i];
    }
    for (int k = 0; k < n; k++)
        if (!by_k[k]) {
            snprintf(err, errlen, "shard %d of %d is missing (build it with iq3pack build SRC --shard %d/%d)", k, n, k, n);
            return -1;
        }
    const uint64_t eb = (uint64_t)int_of(a, "experts_bytes", -1);
    for (int k = 0; k < n; k++) {
        const shard_in *s = by_k[k];
        if (s->lo != (k ? by_k[k - 1]->hi : 0) || (k == n - 1 && s->hi != eb)) {
            snprintf(err, errlen, "%s: its range of experts.bin does not follow the shard before it", s->dir);
            return -1;
        }
        char *p = pack_path(s->dir, SHARD_PART);
        uint64_t bytes = 0;
        uint32_t crc = 0;
        char e2[512];
        const int rc = p ? pack_file_crc32(p, &bytes, &crc, e2, sizeof e2) : -1;
        free(p);
        if (rc || bytes != s->hi - s->lo || (int64_t)crc != int_of(s->info, "part_crc32", -1)) {
            snprintf(err, errlen, "%s/%s: %s; build shard %d/%d again", s->dir, SHARD_PART,
                     rc ? e2 : bytes != s->hi - s->lo ? "not the size its shard.json says" : "damaged (crc32 differs)",
                     k, n);
            return -1;
        }
    }
    return 0;
}

int pack_merge(const char *const *dirs, int n_dirs, const char *out_dir, FILE *out, FILE *err)
{
    char e[2048] = "";
    shard_in *in = calloc((size_t)(n_dirs > 0 ? n_dirs : 1), sizeof *in);
    shard_in **by_k = NULL;
    pack_layout L;
    memset(&L, 0, sizeof L);
    char *tmp = NULL;
    int rc = 1;
    if (!in) { fprintf(err, "out of memory\n"); return 1; }
    if (n_dirs < 1) { snprintf(e, sizeof e, "no shard directory given"); goto out; }
    if (access(out_dir, F_OK) == 0) { snprintf(e, sizeof e, "%s: already exists; a pack is never overwritten", out_dir); goto out; }
    if (load_shards(dirs, n_dirs, in, e, sizeof e)) goto out;
    by_k = calloc((size_t)in[0].n, sizeof *by_k);
    if (!by_k) { snprintf(e, sizeof e, "out of memory"); goto out; }
    if (check_shards(in, n_dirs, by_k, e, sizeof e)) goto out;
    const char *d0 = by_k[0]->dir;
    char *lp = pack_path(d0, SHARD_LAYOUT);
    const int lrc = lp ? pack_layout_from_json(&L, lp, e, sizeof e) : -1;
    free(lp);
    if (lrc) goto out;
    const uint64_t eb = (uint64_t)int_of(in[0].info, "experts_bytes", -1);
    if (!(tmp = outdir_begin(out_dir, L.files[PACK_DENSE].bytes + L.files[PACK_EMBD].bytes + eb + (16u << 20), e,
                              sizeof e)))
        goto out;
    for (int f = 0; f < PACK_NFILES; f++) {
        if (f == PACK_EXPERTS) continue;
        if (copy_into(tmp, PACK_FILE_NAMES[f], d0, PACK_FILE_NAMES[f], 0,
                      f == PACK_TOKENIZER ? UINT64_MAX : L.files[f].bytes, 0, e, sizeof e))
            goto out;
    }
    for (int k = 0; k < in[0].n; k++)
        if (copy_into(tmp, PACK_FILE_NAMES[PACK_EXPERTS], by_k[k]->dir, SHARD_PART, by_k[k]->lo,
                      by_k[k]->hi - by_k[k]->lo, k > 0, e, sizeof e))
            goto out;
    if (packdir_checksums(&L, tmp, 1, e, sizeof e)) goto out;
    if (packdir_write_manifest(&L, tmp, e, sizeof e)) goto out;
    const int irc = packindex_run(tmp, NULL, NULL, err);
    if (outdir_publish(tmp, out_dir, e, sizeof e)) goto out;
    free(tmp);
    tmp = NULL;
    if (irc != 0) fprintf(err, "warning: the index step refused this pack (above): run `packindex --pack %s`\n", out_dir);
    fprintf(out, "iq3pack merge: %s from %d shards (%.2f MiB of experts)\n", out_dir, in[0].n, (double)eb / 1048576.0);
    rc = 0;
out:
    if (rc && e[0]) fprintf(err, "iq3pack merge: %s\n", e);
    if (tmp) outdir_discard(tmp);
    free(tmp);
    pack_layout_free(&L);
    for (int i = 0; i < n_dirs; i++) json_decref(in[i].info);
    free(in);
    free(by_k);
    return rc;
}
