/* build.c: `iq3pack build` — plan, write into a partial directory, index,
 * publish. The plan is complete before the first byte is written, so every
 * refusal happens with nothing on disk. */
#include "pack/build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "convert/transcode.h"
#include "formats/arch_table.h"
#include "formats/fileio.h"
#include "formats/ggml_types.h"
#include "formats/hparam_keys.h"
#include "formats/imatrix.h"
#include "formats/radgram.h"
#include "formats/tensor_names.h"
#include "pack/expert_src.h"
#include "pack/packdir.h"
#include "pack/packindex.h"
#include "pack/shard.h"
#include "formats/sha256.h"

/* The hyperparameters the runtime needs, from the source's arch keys. */
static json_t *hparams_json(const gguf_file *g)
{
    json_t *h = json_object();
    const char *arch = gguf_get_str(g, "general.architecture");
    json_object_set_new(h, "arch", json_string(arch ? arch : ""));
    char key[128];
    for (size_t i = 0; i < HPK_COUNT; i++) {
        const hparam_key *k = &HPARAM_KEYS[i];
        uint64_t u;
        double f;
        bool b;
        snprintf(key, sizeof key, "%s.%s", arch ? arch : "", k->key);
        if (k->kind == HPARAM_UINT && gguf_get_uint(g, key, &u) == 0)
            json_object_set_new(h, k->json, json_integer((json_int_t)u));
        else if (k->kind == HPARAM_FLOAT && gguf_get_float(g, key, &f) == 0)
            json_object_set_new(h, k->json, json_real(f));
        else if (k->kind == HPARAM_BOOL && gguf_get_bool(g, key, &b) == 0)
            json_object_set_new(h, k->json, json_boolean(b));
        else if (k->kind == HPARAM_UINT4) {
            int64_t v[4];
            if (gguf_get_int_array(g, key, v, 4) != 4) continue; /* another length: refuse_sections names it */
            json_t *a = json_array();
            for (int j = 0; j < 4; j++) json_array_append_new(a, json_integer((json_int_t)v[j]));
            json_object_set_new(h, k->json, a);
        }
    }
    /* rope.scale_linear: llama.cpp's older name for the factor. */
    const char *factor = HPARAM_KEYS[HPK_ROPE_SCALING_FACTOR].json;
    double old_factor;
    snprintf(key, sizeof key, "%s.%s", arch ? arch : "", HPARAM_ROPE_SCALE_LINEAR);
    if (!json_object_get(h, factor) && gguf_get_float(g, key, &old_factor) == 0)
        json_object_set_new(h, factor, json_real(old_factor));
    snprintf(key, sizeof key, "%s.%s", arch ? arch : "", HPARAM_ROPE_SCALING.key);
    /* llama.cpp reads a missing type as "linear": a factor alone scales. */
    const char *rs = gguf_get_str(g, key);
    if (!rs) rs = json_object_get(h, factor) ? "linear" : "none";
    json_object_set_new(h, HPARAM_ROPE_SCALING.json, json_string(rs));
    /* llama.cpp decides the rope layout by architecture, not by a key; an
     * architecture without a row rotates adjacent pairs. */
    const arch_info *af = arch_table_find(arch);
    json_object_set_new(h, "rope_type", json_string(rope_kind_name(af ? af->rope : ROPE_NORM)));
    if (!json_object_get(h, "vocab")) {
        const int64_t k = gguf_find_key(g, "tokenizer.ggml.tokens");
        if (k >= 0) json_object_set_new(h, "vocab", json_integer((json_int_t)gguf_kv_arr_n(g, k)));
    }
    static const char *const SPECIAL[] = { "bos", "eos", "unknown", "padding", "eot", "sep" };
    json_t *sp = json_object();
    for (size_t i = 0; i < sizeof SPECIAL / sizeof SPECIAL[0]; i++) {
        uint64_t v;
        snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", SPECIAL[i]);
        if (gguf_get_uint(g, key, &v) == 0) json_object_set_new(sp, SPECIAL[i], json_integer((json_int_t)v));
    }
    json_object_set_new(h, "special_tokens", sp);
    return h;
}

/* Dense tensors: every plane of a tensor contiguous (codes, scales,
 * offsets), the tensor's span starting 64-aligned in its file. */
static int plan_dense(pack_layout *L, const source *s, int drop_nextn, uint64_t fbytes[2], char *err, size_t errlen)
{
    const int dropped = build_first_dropped_layer(s, drop_nextn);
    char embd[32];
    tensor_name(embd, sizeof embd, TN_TOKEN_EMBD, 0);
    for (int64_t i = 0; i < source_n_tensors(s); i++) {
        const gguf_tensor *g = source_tensor_at(s, i);
        if (expert_src_is_part(g)) continue; /* build_experts.c's */
        if (build_tensor_dropped(g->name, dropped)) continue;
        pk_tensor *t = pack_layout_add(L);
        if (!t) { snprintf(err, errlen, "out of memory"); return -1; }
        snprintf(t->name, sizeof t->name, "%s", g->name);
        t->file = strcmp(g->name, embd) ? PACK_DENSE : PACK_EMBD;
        t->n_dims = (int)g->n_dims;
        memcpy(t->ne, g->ne, sizeof t->ne);
        t->elements = g->n_elements;
        t->src_type = g->type;
        if (transcode_form_for(g->type, &t->d) != 0) {
            snprintf(err, errlen, "%s: type %s has no decoder; refused rather than approximated", g->name,
                     ggml_type_info(g->type) ? ggml_type_info(g->type)->name : "?");
            return -1;
        }
        size_t b[PLANE_COUNT];
        if (planes_sizes(&t->d, g->ne[0], g->n_elements / g->ne[0], b) != 0) {
            snprintf(err, errlen, "%s: form %s does not fit ne0 %lld", g->name, pack_form_name(t->d.form),
                     (long long)g->ne[0]);
            return -1;
        }
        uint64_t pos = pk_align_up(fbytes[t->file], PACK_ALIGN);
        for (int k = 0; k < PLANE_COUNT; k++) {
            if (!b[k]) continue;
            t->plane_off[k] = pos;
            t->plane_bytes[k] = b[k];
            pos += b[k];
        }
        fbytes[t->file] = pos;
    }
    return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        const ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w <= 0) return -1;
        p += w; n -= (size_t)w; off += (uint64_t)w;
    }
    return 0;
}

/* Row chunks keep a big embedding from needing its whole pack form in RAM. */
static int write_dense(const pack_layout *L, const source *s, const int fds[2], build_progress *pg, char *err,
                       size_t errlen)
{
    for (int i = 0; i < L->n_tensors; i++) {
        const pk_tensor *t = &L->tensors[i];
        if (t->file == PACK_EXPERTS) continue;
        const gguf_tensor *g = source_find(s, t->name);
        const int64_t ne0 = t->ne[0], rows = t->elements / ne0;
        size_t per_row[PLANE_COUNT];
        planes_sizes(&t->d, ne0, 1, per_row);
        size_t row_total = 0;
        for (int k = 0; k < PLANE_COUNT; k++) row_total += per_row[k];
        int64_t chunk = (int64_t)((32u << 20) / (row_total ? row_total : 1));
        if (chunk < 1) chunk = 1;
        if (chunk > rows) chunk = rows;
        uint8_t *buf = malloc(row_total * (size_t)chunk);
        if (!buf) { snprintf(err, errlen, "out of memory"); return -1; }
        const size_t src_row = ggml_row_bytes(g->type, ne0);
        int rc = 0;
        for (int64_t r0 = 0; r0 < rows && !rc; r0 += chunk) {
            const int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
            uint8_t *plane[PLANE_COUNT] = { 0 };
            size_t o = 0;
            for (int k = 0; k < PLANE_COUNT; k++)
                if (per_row[k]) { plane[k] = buf + o; o += per_row[k] * (size_t)n; }
            rc = transcode(&t->d, g->type, g->data + src_row * (size_t)r0, ne0, n, plane);
            if (rc) snprintf(err, errlen, "%s: transcode failed", t->name);
            for (int k = 0; k < PLANE_COUNT && !rc; k++)
                if (per_row[k] && pwrite_all(fds[t->file], plane[k], per_row[k] * (size_t)n,
                                             t->plane_off[k] + per_row[k] * (uint64_t)r0)) {
                    snprintf(err, errlen, "%s: write failed: %s", PACK_FILE_NAMES[t->file], strerror(errno));
                    rc = -1;
                }
        }
        free(buf);
        source_release(s, g);
        build_progress_step(pg, g->size, t->name);
        if (!rc && build_interrupted()) { snprintf(err, errlen, "interrupted"); rc = -1; }
        if (rc) return -1;
    }
    return 0;
}

/* tokenizer.* keys (vocabulary, merges, special ids, chat template) into a
 * metadata-only GGUF: the runtime's tokenizer reads nothing else. */
static int write_tokenizer(const gguf_file *g, const char *path, char *err, size_t errlen)
{
    gguf_writer *w = gguf_writer_new();
    int rc = w ? 0 : -1;
    for (int64_t i = 0; i < gguf_n_kv(g) && !rc; i++)
        if (strncmp(gguf_kv_key(g, i), "tokenizer.", 10) == 0) rc = gguf_writer_copy_kv(w, g, i);
    if (rc == 0) rc = gguf_writer_write(w, path, err, errlen);
    else snprintf(err, errlen, "%s: could not copy the tokenizer keys", path);
    gguf_writer_free(w);
    return rc;
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* Counts of zero are left out and the per-tensor detail is for --verbose:
 * the normal output says what the pack is and where to go next. */
static void summary(const pack_layout *L, const build_opts *o, const expert_counts *cnt, double secs, FILE *out)
{
    int n_form[FORM_COUNT] = { 0 }, n_how[3] = { 0 };
    int64_t rot_lo, rot_hi;
    const int n_rot = pack_layout_rotated(L, &rot_lo, &rot_hi);
    for (int i = 0; i < L->n_tensors; i++) {
        const pk_tensor *t = &L->tensors[i];
        n_form[t->d.form]++;
        if (t->file == PACK_EXPERTS) {
            n_how[t->how]++;
            if (t->how == EXP_CANONICAL && !o->experts_keep)
                fprintf(out, "note: %s keeps form %s: its input width %lld is not a multiple of 256\n", t->name,
                        pack_form_name(t->d.form), (long long)t->ne[0]);
            if (t->how == EXP_ENCODED && o->verbose)
                fprintf(out, "  %s: IQ3 quality, importance %s%s\n", t->name,
                        t->importance == IMP_EXPERT ? "per expert" : t->importance == IMP_LAYER ? "layer" : "none",
                        t->rotate ? ", rotated" : "");
        }
    }
    fprintf(out, "pack %s: %d tensors (", o->out, L->n_tensors);
    for (int f = 0; f < FORM_COUNT; f++)
        if (n_form[f]) fprintf(out, " %s %d", pack_form_name(f), n_form[f]);
    fprintf(out, " )\n");
    if (n_how[EXP_ENCODED] || n_how[EXP_TRANSCODED] || n_how[EXP_CANONICAL]) {
        static const char *const HOW[3] = { "IQ3-encoded", "IQ3_XXS moved losslessly", "kept in their source form" };
        const char *sep = "";
        fprintf(out, "  expert tensors:");
        for (int k = 0; k < 3; k++)
            if (n_how[k]) { /* indexed by EXP_ENCODED, EXP_TRANSCODED, EXP_CANONICAL */
                fprintf(out, "%s %d %s", sep, n_how[k], HOW[k]);
                sep = ",";
            }
        if (cnt->reencoded) fprintf(out, " (%d expert slices re-encoded: 2*d overflows fp16)", cnt->reencoded);
        if (o->grams)
            fprintf(out, "; GPTQ from %s on %d expert slices (%d with no gram or under 4 x width rows: imatrix only)",
                    o->grams, cnt->gptq, cnt->gptq_few);
        if (n_rot && rot_lo == rot_hi) fprintf(out, "; %d rotated (Hadamard blocks of %lld)", n_rot, (long long)rot_lo);
        else if (n_rot) fprintf(out, "; %d rotated (Hadamard blocks of %lld to %lld)", n_rot, (long long)rot_lo,
                                (long long)rot_hi);
        fprintf(out, "\n");
    }
    for (int f = 0; f < PACK_NFILES; f++)
        if (L->files[f].bytes || o->verbose)
            fprintf(out, "  %-15s %12llu bytes\n", PACK_FILE_NAMES[f], (unsigned long long)L->files[f].bytes);
    if (L->vision.present)
        fprintf(out, "  %-15s %12llu bytes (vision projector %s, %d tensors, copied byte for byte)\n", PACK_VISION,
                (unsigned long long)L->vision.file.bytes, L->vision.projector, L->vision.n_tensors);
    fprintf(out, "  %.1f s on %d thread%s, peak RSS %.1f MiB\n", secs, o->threads, o->threads == 1 ? "" : "s",
            (double)peak_rss_kib() / 1024.0);
    fprintf(out, "next: `strata budget %s` (the memory it needs), `strata run %s -p \"Hello\"`\n", o->out, o->out);
}

/* An architecture the runtime cannot run (a pack_only row, or no row) is
 * refused before any work: a pack of it could only be refused by `strata
 * run` afterwards. The list is the table's, as the runtime's refusal is. */
static int refuse_arch(const char *src, const char *arch, char *e, size_t n)
{
    const arch_info *a = arch_table_find(arch);
    if (a && !a->pack_only) return 0;
    char names[1024];
    arch_table_runnable_names(names, sizeof names);
    snprintf(e, n, "%s: architecture '%s' is not one strata runs (it runs %s); nothing was written", src,
             arch && *arch ? arch : "(none)", names);
    return -1;
}

/* Qwen3.5's and Qwen3-VL's interleaved M-RoPE (arch_info.mrope_sections):
 * the runtime needs the four sections that assign each rotated pair a
 * position (t, y, x or the fourth); llama.cpp asserts they fit the head. */
static int refuse_sections(const char *src, const gguf_file *g, const char *arch, char *e, size_t n)
{
    const arch_info *a = arch_table_find(arch);
    if (!a || !a->mrope_sections) return 0;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
    int64_t v[4] = { -1, -1, -1, -1 };
    const int64_t cnt = gguf_get_int_array(g, key, v, 4);
    /* the head's width: key_length, else embd / heads, as llama.cpp reads it */
    uint64_t head = 0, embd = 0, heads = 0;
    snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_HEAD_DIM].key);
    if (gguf_get_uint(g, key, &head) != 0) {
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_EMBD].key);
        const int ok = gguf_get_uint(g, key, &embd) == 0;
        snprintf(key, sizeof key, "%s.%s", arch, HPARAM_KEYS[HPK_HEADS].key);
        head = ok && gguf_get_uint(g, key, &heads) == 0 && heads ? embd / heads : 0;
    }
    const int64_t sum = v[0] + v[1] + v[2] + v[3];
    if (cnt == 4 && v[0] >= 0 && v[1] >= 0 && v[2] >= 0 && v[3] >= 0 && sum > 0 && (uint64_t)sum <= head)
        return 0;
    snprintf(e, n, "%s: %s's rope.dimension_sections must be 4 counts whose sum is 1 to the head's width (%llu); "
             "nothing was written", src, arch, (unsigned long long)head);
    return -1;
}

/* DSA (arch_info.dsa): every layer must run its own indexer; the layers
 * that reuse an earlier one's choice (GLM-5.2) are not run yet. */
static int refuse_shared_indexers(const char *src, const gguf_file *g, const char *arch, char *e, size_t n)
{
    const arch_info *a = arch_table_find(arch);
    if (!a || !a->dsa) return 0;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.indexer.types", arch);
    const bool keyed = gguf_find_key(g, key) >= 0;
    bool shared = false;
    if (keyed) {
        enum { MAX_TYPES = 4096 };
        int64_t *t = malloc(MAX_TYPES * sizeof *t);
        const int64_t cnt = t ? gguf_get_int_array(g, key, t, MAX_TYPES) : -1;
        shared = cnt < 0 || cnt > MAX_TYPES; /* a kind or a length llama.cpp would not read: refused */
        for (int64_t k = 0; !shared && k < cnt; k++) shared = t[k] == 0;
        free(t);
    } else if (a->dsa_shared_ctx > 0) {
        char ck[128];
        uint64_t ctx = 0;
        snprintf(ck, sizeof ck, "%s.%s", arch, HPARAM_KEYS[HPK_CONTEXT].key);
        shared = gguf_get_uint(g, ck, &ctx) == 0 && ctx >= (uint64_t)a->dsa_shared_ctx;
    }
    if (!shared) return 0;
    if (keyed)
        snprintf(e, n, "%s: %s has layers that reuse an earlier layer's indexer choice (a 0 in %s); strata runs only "
                 "models whose every layer has its own indexer; nothing was written", src, arch, key);
    else
        snprintf(e, n, "%s: %s with a context of %d or more and no %s is GLM-5.2's pattern of layers that reuse an "
                 "earlier layer's indexer choice; strata runs only models whose every layer has its own indexer; "
                 "nothing was written", src, arch, a->dsa_shared_ctx, key);
    return -1;
}

/* layout.json (the plan, for the merge) and shard.json into a shard's directory. */
static int finish_shard(const build_opts *o, const pack_layout *L, const char *tmp, int l0, int l1, uint64_t lo,
                        uint64_t hi, uint64_t eb, char *e, size_t n)
{
    char *pp = pack_path(tmp, SHARD_PART), *lp = pack_path(tmp, SHARD_LAYOUT), *js = pack_layout_to_json(L);
    uint64_t bytes = 0;
    uint32_t crc = 0;
    char ish[65], gid[65];
    unsigned char dg[32];
    int rc = pp && lp && js ? 0 : -1;
    if (rc) snprintf(e, n, "out of memory");
    if (!rc) rc = pack_file_crc32(pp, &bytes, &crc, e, n);
    if (!rc && o->imatrix) {
        if (sha256_file(o->imatrix, dg) != 0) { snprintf(e, n, "%s: %s", o->imatrix, strerror(errno)); rc = -1; }
        else sha256_hex(dg, ish);
    }
    if (!rc && o->grams) rc = radgram_dir_id(o->grams, gid, e, n);
    if (!rc) {
        FILE *f = fopen(lp, "wx");
        if (!f || fputs(js, f) < 0 || fputc('\n', f) < 0) rc = -1;
        if (f && fclose(f) != 0) rc = -1;
        if (rc) snprintf(e, n, "%s: cannot write", lp);
    }
    if (!rc) rc = shard_write_info(tmp, o->shard_k, o->shard_n, L, o->experts_keep ? "keep" : "iq3", o->drop_nextn,
                                   o->rotate, o->imatrix ? ish : NULL, o->grams ? gid : NULL, l0, l1, lo, hi, eb, crc, e, n);
    free(pp);
    free(lp);
    free(js);
    return rc;
}

int pack_build(const build_opts *o, FILE *out, FILE *err)
{
    char e[2048] = "";
    source s;
    imatrix *im = NULL;
    pack_layout L;
    memset(&L, 0, sizeof L);
    char *tmp = NULL;
    int fds[3] = { -1, -1, -1 }, rc = 1, caught = 0;
    expert_counts cnt = { 0, 0, 0 };
    build_signals sigs;
    const double t0 = build_now();
    if (path_exists(o->out)) {
        fprintf(err, "%s: already exists; a pack is never overwritten\n", o->out);
        return 1;
    }
    if (source_open(&s, o->src, e, sizeof e) != 0) {
        fprintf(err, "%s\n", e);
        return 1;
    }
    const char *arch = gguf_get_str(source_meta(&s), "general.architecture");
    if (refuse_arch(o->src, arch, e, sizeof e) || refuse_sections(o->src, source_meta(&s), arch, e, sizeof e) ||
        refuse_shared_indexers(o->src, source_meta(&s), arch, e, sizeof e))
        goto out;
    if (o->imatrix && !(im = imatrix_load(o->imatrix, e, sizeof e))) goto out;
    uint64_t fb[2] = { 0, 0 }, eb = 0;
    if (plan_dense(&L, &s, o->drop_nextn, fb, e, sizeof e) ||
        build_plan_experts(&L, &s, im, o->experts_keep, o->drop_nextn, o->rotate, &eb, e, sizeof e)) {
        char what[sizeof e];
        snprintf(what, sizeof what, "%s", e);
        snprintf(e, sizeof e, "%.200s: %.300s", o->src, what); /* the tensor, in this file */
        goto out;
    }
    if (o->mmproj && build_plan_vision(&L, o->mmproj, e, sizeof e)) goto out;
    L.files[PACK_DENSE].bytes = fb[0];
    L.files[PACK_EMBD].bytes = fb[1];
    L.files[PACK_EXPERTS].bytes = eb;
    /* a shard: expert layers [l0, l1), experts.bin bytes [lo, hi); shard 0 writes the dense part too */
    const int sharded = o->shard_n > 0, dense_here = !sharded || o->shard_k == 0;
    int l0 = 0, l1 = L.n_layers;
    uint64_t lo = 0, hi = eb;
    if (sharded) shard_range(&L, eb, o->shard_k, o->shard_n, &l0, &l1, &lo, &hi);
    if (o->grams && build_check_grams(&L, o->grams, l0, l1, e, sizeof e)) goto out;
    char stale[4096];
    if (outdir_find_stale(o->out, stale, sizeof stale))
        fprintf(err, "note: %s is left from an interrupted build of %s; remove it with: rm -r '%s'\n", stale, o->out,
                stale);
    if (!(tmp = outdir_begin(o->out, (dense_here ? fb[0] + fb[1] + L.vision.file.bytes : 0) + (hi - lo) + (16u << 20),
                             e, sizeof e)))
        goto out;
    build_catch_signals(&sigs);
    caught = 1;
    L.source_path = strdup(o->src);
    L.source_bytes = s.bytes;
    L.source_splits = s.n_parts;
    L.hparams = hparams_json(source_meta(&s));
    source_sha256(&s, L.source_sha256);
    build_progress pg = { 0, 0, build_now(), o->progress, 0, "iq3pack build" };
    const int dropped = build_first_dropped_layer(&s, o->drop_nextn);
    for (int64_t i = 0; i < source_n_tensors(&s); i++)
        if (!build_tensor_dropped(source_tensor_at(&s, i)->name, dropped)) pg.total += source_tensor_at(&s, i)->size;
    if (sharded) { /* a shard's share: the source bytes of its experts, and of the dense part in shard 0 */
        uint64_t all_exp = 0, mine = 0;
        for (int i = 0; i < L.n_tensors; i++) {
            const pk_tensor *t = &L.tensors[i];
            if (t->file != PACK_EXPERTS) continue;
            const uint64_t b = (uint64_t)ggml_row_bytes(t->src_type, t->ne[0]) * (uint64_t)t->ne[1] * (uint64_t)t->n_expert;
            all_exp += b;
            for (int l = l0; l < l1; l++) mine += L.layers[l].layer == t->layer ? b : 0;
        }
        pg.total = mine + (dense_here && pg.total > all_exp ? pg.total - all_exp : 0);
    }
    for (int f = 0; f < 3; f++) {
        if (!dense_here && f != PACK_EXPERTS) continue;
        char *p = pack_path(tmp, sharded && f == PACK_EXPERTS ? SHARD_PART : PACK_FILE_NAMES[f]);
        fds[f] = p ? open(p, O_WRONLY | O_CREAT | O_EXCL, 0644) : -1;
        free(p);
        const uint64_t size = f == PACK_EXPERTS ? hi - lo : L.files[f].bytes;
        if (fds[f] < 0 || ftruncate(fds[f], (off_t)size) != 0) {
            snprintf(e, sizeof e, "%s/%s: %s", tmp, PACK_FILE_NAMES[f], strerror(errno));
            goto out;
        }
    }
    if ((dense_here && write_dense(&L, &s, fds, &pg, e, sizeof e)) ||
        build_write_experts(&L, &s, im, o->grams, fds[PACK_EXPERTS], o->threads, l0, l1, lo, &pg, &cnt, e, sizeof e))
        goto out;
    for (int f = 0; f < 3; f++) {
        if (fds[f] < 0) continue;
        if (fsync(fds[f]) != 0 || close(fds[f]) != 0) {
            fds[f] = -1;
            snprintf(e, sizeof e, "%s: %s", PACK_FILE_NAMES[f], strerror(errno));
            goto out;
        }
        fds[f] = -1;
    }
    char *tp = dense_here ? pack_path(tmp, PACK_FILE_NAMES[PACK_TOKENIZER]) : NULL;
    const int trc = !dense_here ? 0 : tp ? write_tokenizer(source_meta(&s), tp, e, sizeof e) : -1;
    free(tp);
    if (trc) goto out;
    if (L.vision.present && build_write_vision(&L, tmp, e, sizeof e)) goto out;
    if (sharded) {
        if (finish_shard(o, &L, tmp, l0, l1, lo, hi, eb, e, sizeof e)) goto out;
        if (build_interrupted()) { snprintf(e, sizeof e, "interrupted"); goto out; }
        if (outdir_publish(tmp, o->out, e, sizeof e)) goto out;
        free(tmp);
        tmp = NULL;
        char what[96];
        if (l1 > l0) snprintf(what, sizeof what, "expert layers %d-%d of %d", l0, l1 - 1, L.n_layers);
        else snprintf(what, sizeof what, "no expert layer (more shards than the %d layers)", L.n_layers);
        fprintf(out, "iq3pack build: shard %d of %d in %s: %s (%.2f MiB of experts.bin)%s, %.1f s; assemble with "
                     "iq3pack merge\n",
                o->shard_k, o->shard_n, o->out, what, (double)(hi - lo) / 1048576.0,
                dense_here ? " and the dense part" : "", build_now() - t0);
        rc = 0;
        goto out;
    }
    if (packdir_checksums(&L, tmp, 1, e, sizeof e)) goto out;
    if (packdir_write_manifest(&L, tmp, e, sizeof e)) goto out;
    /* The index is written inside the partial directory, so the published
     * directory is complete the moment it appears. */
    /* packindex's summary (under the temporary name) is for --verbose */
    const int irc = packindex_run(tmp, NULL, o->verbose ? out : NULL, err);
    if (build_interrupted()) { snprintf(e, sizeof e, "interrupted"); goto out; }
    if (outdir_publish(tmp, o->out, e, sizeof e)) goto out;
    free(tmp);
    tmp = NULL;
    if (irc != 0)
        fprintf(err, "warning: the index step refused this pack (above); it has no index.txt yet: run "
                     "`packindex --pack %s` once packindex knows every form in it\n", o->out);
    if (dropped != INT_MAX)
        fprintf(out, "  left out: layer %d on (next-token prediction: %s)\n", dropped,
                o->drop_nextn ? "--no-nextn" : "strata does not draft with this architecture's");
    summary(&L, o, &cnt, build_now() - t0, out);
    rc = 0;
out:
    if (caught && build_interrupted())
        snprintf(e, sizeof e, "%s: interrupted; the partial pack was removed", o->out);
    if (rc && e[0]) fprintf(err, "%s\n", e);
    for (int f = 0; f < 3; f++)
        if (fds[f] >= 0) close(fds[f]);
    if (tmp) outdir_discard(tmp);
    free(tmp);
    if (caught) build_release_signals(&sigs); /* re-raises a caught signal, now that nothing is left */
    pack_layout_free(&L);
    imatrix_free(im);
    source_close(&s);
    return rc;
}
