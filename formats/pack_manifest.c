/* pack_manifest.c: the pack layout <-> manifest.json (jansson). */
#include "formats/pack_manifest.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats/ggml_types.h"
#include "formats/hadamard.h"

static const char *const HOW_NAMES[] = { "iq3-encoded", "iq3-transcoded", "canonical" };
static const char *const IMP_NAMES[] = { "none", "layer", "expert" };

uint64_t pk_align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

int pack_layout_rotated(const pack_layout *L, int64_t *lo, int64_t *hi)
{
    int n = 0;
    *lo = *hi = 0;
    for (int i = 0; i < L->n_tensors; i++) {
        const int64_t b = L->tensors[i].rotate;
        if (!b) continue;
        n++;
        if (!*lo || b < *lo) *lo = b;
        if (b > *hi) *hi = b;
    }
    return n;
}

pk_tensor *pack_layout_add(pack_layout *L)
{
    if (L->n_tensors == L->cap_tensors) {
        const int cap = L->cap_tensors ? 2 * L->cap_tensors : 64;
        pk_tensor *t = realloc(L->tensors, (size_t)cap * sizeof *t);
        if (!t) return NULL;
        L->tensors = t;
        L->cap_tensors = cap;
    }
    pk_tensor *t = &L->tensors[L->n_tensors++];
    memset(t, 0, sizeof *t);
    return t;
}

void pack_layout_free(pack_layout *L)
{
    free(L->tensors);
    free(L->layers);
    free(L->source_path);
    free(L->vision.source_path);
    free(L->vision.tensors);
    json_decref(L->hparams);
    memset(L, 0, sizeof *L);
}

void pk_type_upper(int ggml_type, char out[16])
{
    const ggml_type_row *t = ggml_type_info(ggml_type);
    snprintf(out, 16, "%s", t ? t->name : "?");
    for (char *p = out; *p; p++) *p = (char)toupper((unsigned char)*p);
}

static const char *PLANE_NAMES[PLANE_COUNT] = { "codes", "scales", "offsets", "values", "blocks" };

static json_t *plane_json(uint64_t off, uint64_t bytes)
{
    return json_pack("{s:I,s:I}", "offset", (json_int_t)off, "bytes", (json_int_t)bytes);
}

static json_t *tensor_json(const pk_tensor *t)
{
    char st[16];
    pk_type_upper(t->src_type, st);
    json_t *shape = json_array();
    for (int i = 0; i < t->n_dims; i++) json_array_append_new(shape, json_integer(t->ne[i]));
    json_t *o = json_pack("{s:s,s:o,s:I,s:s,s:s}", "file", PACK_FILE_NAMES[t->file], "shape", shape,
                          "elements", (json_int_t)t->elements, "source_type", st, "form",
                          pack_form_name(t->d.form));
    const planes_desc *d = &t->d;
    if (d->form == FORM_S2 || d->form == FORM_S4 || d->form == FORM_S8) {
        const char *cb = codebook_name(d->codebook);
        json_object_set_new(o, "code_bits", json_integer(d->code_bits));
        json_object_set_new(o, "code_bias", json_integer(d->code_bias));
        json_object_set_new(o, "group_elems", json_integer(d->group_elems));
        json_object_set_new(o, "codebook", cb ? json_string(cb) : json_null());
        json_object_set_new(o, "has_offset", json_boolean(d->has_offset));
        json_object_set_new(o, "scales_fp16", json_boolean(d->scales_fp16));
        json_object_set_new(o, "offsets_fp16", json_boolean(d->offsets_fp16));
    } else if (d->form == FORM_P16 || d->form == FORM_P32) {
        json_object_set_new(o, "values_fp16", json_boolean(d->values_fp16));
    } else if (d->form == FORM_NATIVE) {
        json_object_set_new(o, "ggml_type", json_string(ggml_type_info(d->native_type)->name));
    }
    for (int k = 0; k < PLANE_COUNT; k++)
        if (t->plane_bytes[k]) json_object_set_new(o, PLANE_NAMES[k], plane_json(t->plane_off[k], t->plane_bytes[k]));
    if (t->file == PACK_EXPERTS) {
        json_object_set_new(o, "layer", json_integer(t->layer));
        json_object_set_new(o, "part", json_integer(t->part));
        json_object_set_new(o, "n_expert", json_integer(t->n_expert));
        json_object_set_new(o, "part_bytes", json_integer((json_int_t)t->part_bytes));
        json_object_set_new(o, "encoding", json_string(HOW_NAMES[t->how]));
        json_object_set_new(o, "importance", json_string(IMP_NAMES[t->importance]));
        /* only when rotated: every other pack keeps its bytes */
        if (t->rotate) json_object_set_new(o, "rotate", json_pack("{s:s,s:I}", "kind", "hadamard", "block",
                                                                  (json_int_t)t->rotate));
    }
    return o;
}

static json_t *vision_json(const pk_vision *v)
{
    json_t *ts = json_object();
    for (int i = 0; i < v->n_tensors; i++) {
        const pk_vtensor *t = &v->tensors[i];
        char st[16];
        pk_type_upper(t->type, st);
        json_t *shape = json_array();
        for (int d = 0; d < t->n_dims; d++) json_array_append_new(shape, json_integer(t->ne[d]));
        json_object_set_new(ts, t->name, json_pack("{s:s,s:o,s:I,s:I}", "type", st, "shape", shape, "offset",
                                                   (json_int_t)t->off, "bytes", (json_int_t)t->bytes));
    }
    return json_pack("{s:s,s:s,s:I,s:I,s:{s:s,s:I,s:s},s:o}", "file", PACK_VISION, "projector", v->projector, "bytes",
                     (json_int_t)v->file.bytes, "crc32", (json_int_t)v->file.crc32, "source", "path",
                     v->source_path ? v->source_path : "", "bytes", (json_int_t)v->source_bytes, "sha256",
                     v->source_sha256, "tensors", ts);
}

char *pack_layout_to_json(const pack_layout *L)
{
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string("strata-pack"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "source",
                        json_pack("{s:s,s:I,s:s,s:i}", "path", L->source_path ? L->source_path : "",
                                  "bytes", (json_int_t)L->source_bytes, "sha256", L->source_sha256,
                                  "splits", L->source_splits));
    json_object_set(root, "hparams", L->hparams ? (json_t *)L->hparams : json_object());
    if (!L->hparams) json_decref(json_object_get(root, "hparams"));
    json_object_set_new(root, "align", json_integer(PACK_ALIGN));
    json_t *cbs = json_object(), *iq4 = json_array();
    int n = 0;
    const int8_t *v = codebook_values(CODEBOOK_IQ4NL, &n);
    for (int i = 0; i < n; i++) json_array_append_new(iq4, json_integer(v[i]));
    json_object_set_new(cbs, "IQ4NL", iq4);
    json_object_set_new(root, "codebooks", cbs);

    json_t *tensors = json_object(), *etensors = json_object();
    for (int i = 0; i < L->n_tensors; i++)
        json_object_set_new(L->tensors[i].file == PACK_EXPERTS ? etensors : tensors, L->tensors[i].name,
                            tensor_json(&L->tensors[i]));
    json_object_set_new(root, "tensors", tensors);

    json_t *layers = json_array();
    for (int l = 0; l < L->n_layers; l++) {
        const pk_layer *y = &L->layers[l];
        json_t *parts = json_array();
        for (int p = 0; p < y->n_parts; p++)
            json_array_append_new(parts, json_pack("{s:s,s:I,s:I}", "tensor", L->tensors[y->part_tensor[p]].name,
                                                   "offset", (json_int_t)y->part_off[p], "bytes",
                                                   (json_int_t)L->tensors[y->part_tensor[p]].part_bytes));
        json_array_append_new(layers, json_pack("{s:i,s:i,s:I,s:I,s:I,s:o}", "layer", y->layer, "n_expert",
                                                y->n_expert, "base", (json_int_t)y->base, "blob_stride",
                                                (json_int_t)y->stride, "blob_bytes", (json_int_t)y->blob_bytes,
                                                "parts", parts));
    }
    json_object_set_new(root, "experts", json_pack("{s:i,s:o,s:o}", "blob_align", PACK_EXPERT_ALIGN, "tensors",
                                                   etensors, "layers", layers));
    json_t *files = json_object();
    for (int f = 0; f < PACK_NFILES; f++)
        json_object_set_new(files, PACK_FILE_NAMES[f], json_pack("{s:I,s:I}", "bytes", (json_int_t)L->files[f].bytes,
                                                               "crc32", (json_int_t)L->files[f].crc32));
    json_object_set_new(root, "files", files);
    if (L->vision.present) json_object_set_new(root, "vision", vision_json(&L->vision));
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    return s;
}

/* ------------------------------------------------------------------ read */

typedef struct rd { const char *path; char *err; size_t errlen; } rd;

static int fail(rd *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s: %s", r->path, msg);
    return -1;
}

static int get_u64(rd *r, const json_t *o, const char *key, const char *what, uint64_t *out)
{
    const json_t *j = json_object_get(o, key);
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return fail(r, "%s: `%s` is missing or not a non-negative integer", what, key);
    *out = (uint64_t)json_integer_value(j);
    return 0;
}

static int get_int(rd *r, const json_t *o, const char *key, const char *what, int *out)
{
    const json_t *j = json_object_get(o, key);
    if (!json_is_integer(j) || json_integer_value(j) < -1000000 || json_integer_value(j) > 1000000000)
        return fail(r, "%s: `%s` is missing or out of range", what, key);
    *out = (int)json_integer_value(j);
    return 0;
}

static int name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (s && !strcmp(names[i], s)) return i;
    return -1;
}

static int read_tensor(rd *r, pack_layout *L, const char *name, const json_t *v, int expert)
{
    pk_tensor *t = pack_layout_add(L);
    if (!t) return fail(r, "out of memory");
    if (strlen(name) >= sizeof t->name) return fail(r, "%s: name too long", name);
    snprintf(t->name, sizeof t->name, "%s", name);
    const char *f = json_string_value(json_object_get(v, "file"));
    t->file = name_index(PACK_FILE_NAMES, 3, f);
    if (t->file < 0 || (t->file == PACK_EXPERTS) != expert) return fail(r, "%s: unexpected file %s", name, f ? f : "(none)");
    const json_t *shape = json_object_get(v, "shape");
    if (!json_is_array(shape) || json_array_size(shape) < 1 || json_array_size(shape) > 4)
        return fail(r, "%s: `shape` must be 1 to 4 integers", name);
    t->n_dims = (int)json_array_size(shape);
    int64_t elems = 1;
    for (int i = 0; i < 4; i++) {
        const json_t *e = json_array_get(shape, (size_t)i);
        t->ne[i] = i < t->n_dims ? (json_is_integer(e) ? json_integer_value(e) : 0) : 1;
        /* the product must not overflow: a bound on the running product
         * alone refused every matrix of 4M+ elements (2048 x 2048 included) */
        if (t->ne[i] < 1 || t->ne[i] > (1LL << 40) || elems > INT64_MAX / t->ne[i])
            return fail(r, "%s: bad shape", name);
        elems *= t->ne[i];
    }
    uint64_t ue;
    if (get_u64(r, v, "elements", name, &ue)) return -1;
    if ((int64_t)ue != elems) return fail(r, "%s: elements %llu != product of shape %lld", name,
                                          (unsigned long long)ue, (long long)elems);
    t->elements = elems;
    const char *st = json_string_value(json_object_get(v, "source_type"));
    const ggml_type_row *tr = st ? ggml_type_by_name(st) : NULL;
    if (!tr) return fail(r, "%s: unknown source_type %s", name, st ? st : "(none)");
    t->src_type = tr->id;
    const int form = pack_form_parse(json_string_value(json_object_get(v, "form")));
    if (form < 0) return fail(r, "%s: unknown form", name);
    planes_desc *d = &t->d;
    d->form = (pack_form)form;
    d->native_type = t->src_type;
    if (form == FORM_S2 || form == FORM_S4 || form == FORM_S8) {
        if (get_int(r, v, "code_bits", name, &d->code_bits) || get_int(r, v, "code_bias", name, &d->code_bias) ||
            get_int(r, v, "group_elems", name, &d->group_elems))
            return -1;
        const char *cb = json_string_value(json_object_get(v, "codebook"));
        d->codebook = cb ? (strcmp(cb, "IQ4NL") ? -1 : CODEBOOK_IQ4NL) : CODEBOOK_NONE;
        if (d->codebook < 0) return fail(r, "%s: unknown codebook %s", name, cb);
        d->has_offset = json_is_true(json_object_get(v, "has_offset"));
        d->scales_fp16 = json_is_true(json_object_get(v, "scales_fp16"));
        d->offsets_fp16 = json_is_true(json_object_get(v, "offsets_fp16"));
    } else if (form == FORM_P16 || form == FORM_P32) {
        d->values_fp16 = json_is_true(json_object_get(v, "values_fp16"));
        if (d->values_fp16 != (form == FORM_P16)) return fail(r, "%s: values_fp16 disagrees with form", name);
    } else if (form == FORM_NATIVE) {
        const ggml_type_row *nt = ggml_type_by_name(json_string_value(json_object_get(v, "ggml_type")));
        if (!nt || !nt->to_f32) return fail(r, "%s: native form needs a decodable `ggml_type`", name);
        d->native_type = nt->id;
    }
    if (expert) {
        if (get_int(r, v, "layer", name, &t->layer) || get_int(r, v, "part", name, &t->part) ||
            get_int(r, v, "n_expert", name, &t->n_expert) || get_u64(r, v, "part_bytes", name, &t->part_bytes))
            return -1;
        t->how = name_index(HOW_NAMES, 3, json_string_value(json_object_get(v, "encoding")));
        t->importance = name_index(IMP_NAMES, 3, json_string_value(json_object_get(v, "importance")));
        if (t->how < 0 || t->importance < 0) return fail(r, "%s: unknown encoding or importance", name);
        if (t->n_dims != 3 || t->ne[2] != t->n_expert) return fail(r, "%s: an expert tensor is [K, N, n_expert]", name);
        const json_t *rot = json_object_get(v, "rotate");
        if (rot) {
            const json_t *kind = json_object_get(rot, "kind"), *blk = json_object_get(rot, "block");
            if (!json_is_string(kind) || strcmp(json_string_value(kind), "hadamard") || !json_is_integer(blk) ||
                !hadamard_block_ok(t->ne[0], json_integer_value(blk)) || form != FORM_IQ3 || t->how != EXP_ENCODED)
                return fail(r, "%s: `rotate` must be {\"kind\": \"hadamard\", \"block\": B} with B a power of two "
                            "dividing %lld, on an IQ3-encoded part", name, (long long)t->ne[0]);
            t->rotate = json_integer_value(blk);
        }
    }
    const int64_t rows = expert ? t->ne[1] : elems / t->ne[0];
    size_t want[PLANE_COUNT];
    if (planes_sizes(d, t->ne[0], rows, want) != 0)
        return fail(r, "%s: form %s does not fit shape", name, pack_form_name(d->form));
    uint64_t end = 0;
    for (int k = 0; k < PLANE_COUNT; k++) {
        const json_t *pj = json_object_get(v, PLANE_NAMES[k]);
        if (!want[k]) {
            if (pj) return fail(r, "%s: form %s has no `%s` plane", name, pack_form_name(d->form), PLANE_NAMES[k]);
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "%s.%s", name, PLANE_NAMES[k]);
        if (!json_is_object(pj)) return fail(r, "%s: missing", what);
        if (get_u64(r, pj, "offset", what, &t->plane_off[k]) || get_u64(r, pj, "bytes", what, &t->plane_bytes[k]))
            return -1;
        if (t->plane_bytes[k] != want[k])
            return fail(r, "%s: %llu bytes where the form needs %zu", what, (unsigned long long)t->plane_bytes[k], want[k]);
        if (t->plane_off[k] > (1ULL << 50)) return fail(r, "%s: offset out of range", what);
        if (t->plane_off[k] + t->plane_bytes[k] > end) end = t->plane_off[k] + t->plane_bytes[k];
    }
    if (expert && end > t->part_bytes) return fail(r, "%s: planes overrun part_bytes", name);
    return 0;
}

static int read_layers(rd *r, pack_layout *L, const json_t *layers)
{
    if (!json_is_array(layers)) return fail(r, "experts.layers must be an array");
    L->n_layers = (int)json_array_size(layers);
    L->layers = calloc((size_t)L->n_layers + 1, sizeof *L->layers);
    if (!L->layers) return fail(r, "out of memory");
    for (int l = 0; l < L->n_layers; l++) {
        const json_t *y = json_array_get(layers, (size_t)l);
        pk_layer *p = &L->layers[l];
        if (get_int(r, y, "layer", "experts.layers[]", &p->layer) ||
            get_int(r, y, "n_expert", "experts.layers[]", &p->n_expert) ||
            get_u64(r, y, "base", "experts.layers[]", &p->base) ||
            get_u64(r, y, "blob_stride", "experts.layers[]", &p->stride) ||
            get_u64(r, y, "blob_bytes", "experts.layers[]", &p->blob_bytes))
            return -1;
        const json_t *parts = json_object_get(y, "parts");
        if (!json_is_array(parts) || json_array_size(parts) < 1 || json_array_size(parts) > PACK_MAX_PARTS)
            return fail(r, "layer %d: 1 to %d parts", p->layer, PACK_MAX_PARTS);
        p->n_parts = (int)json_array_size(parts);
        if (p->base % PACK_EXPERT_ALIGN || p->stride % PACK_EXPERT_ALIGN || p->stride < p->blob_bytes || p->n_expert < 1)
            return fail(r, "layer %d: blobs must be %d-aligned", p->layer, PACK_EXPERT_ALIGN);
        for (int k = 0; k < p->n_parts; k++) {
            const json_t *pj = json_array_get(parts, (size_t)k);
            const char *tn = json_string_value(json_object_get(pj, "tensor"));
            p->part_tensor[k] = -1;
            for (int i = 0; i < L->n_tensors; i++)
                if (tn && L->tensors[i].file == PACK_EXPERTS && !strcmp(L->tensors[i].name, tn)) p->part_tensor[k] = i;
            if (p->part_tensor[k] < 0) return fail(r, "layer %d: part names unknown tensor %s", p->layer, tn ? tn : "(none)");
            const pk_tensor *t = &L->tensors[p->part_tensor[k]];
            if (get_u64(r, pj, "offset", "experts part", &p->part_off[k])) return -1;
            if (p->part_off[k] % PACK_ALIGN || p->part_off[k] + t->part_bytes > p->blob_bytes ||
                t->n_expert != p->n_expert || t->layer != p->layer)
                return fail(r, "layer %d: part %s does not fit its blob", p->layer, t->name);
        }
        if (p->base + p->stride * (uint64_t)p->n_expert > L->files[PACK_EXPERTS].bytes)
            return fail(r, "layer %d: arena overruns %s", p->layer, PACK_FILE_NAMES[PACK_EXPERTS]);
    }
    return 0;
}

/* The `vision` object: every tensor's type known, its bytes what its shape
 * gives, and inside the file. */
static int read_vision(rd *r, pk_vision *v, const json_t *o)
{
    const char *file = json_string_value(json_object_get(o, "file"));
    const char *proj = json_string_value(json_object_get(o, "projector"));
    const json_t *src = json_object_get(o, "source"), *ts = json_object_get(o, "tensors");
    const char *sp = json_string_value(json_object_get(src, "path")), *sh = json_string_value(json_object_get(src, "sha256"));
    uint64_t crc;
    if (!file || strcmp(file, PACK_VISION) || !proj || strlen(proj) >= sizeof v->projector || !sh || strlen(sh) != 64 ||
        !json_is_object(ts))
        return fail(r, "vision: `file` (%s), `projector`, `source.sha256` and `tensors` are required", PACK_VISION);
    if (get_u64(r, o, "bytes", "vision", &v->file.bytes) || get_u64(r, o, "crc32", "vision", &crc) ||
        get_u64(r, src, "bytes", "vision.source", &v->source_bytes))
        return -1;
    v->file.crc32 = (uint32_t)crc;
    snprintf(v->projector, sizeof v->projector, "%s", proj);
    snprintf(v->source_sha256, sizeof v->source_sha256, "%s", sh);
    if (!(v->source_path = strdup(sp ? sp : ""))) return fail(r, "out of memory");
    if (!(v->tensors = calloc(json_object_size(ts) + 1, sizeof *v->tensors))) return fail(r, "out of memory");
    const char *name;
    const json_t *t;
    json_object_foreach((json_t *)ts, name, t) {
        pk_vtensor *x = &v->tensors[v->n_tensors++];
        const char *type = json_string_value(json_object_get(t, "type"));
        const ggml_type_row *row = type ? ggml_type_by_name(type) : NULL;
        const json_t *shape = json_object_get(t, "shape");
        if (strlen(name) >= sizeof x->name || !row || !json_is_array(shape) || json_array_size(shape) < 1 ||
            json_array_size(shape) > 4)
            return fail(r, "vision: %s: needs a name under 64 bytes, a known `type` and a `shape` of 1 to 4 sizes", name);
        snprintf(x->name, sizeof x->name, "%s", name);
        x->type = row->id;
        x->n_dims = (int)json_array_size(shape);
        int64_t rows = 1;
        for (int d = 0; d < 4; d++) {
            const json_t *e = json_array_get(shape, (size_t)d);
            x->ne[d] = d < x->n_dims ? json_integer_value(e) : 1;
            if (d < x->n_dims && (!json_is_integer(e) || x->ne[d] < 1 || x->ne[d] > ((int64_t)1 << 40)))
                return fail(r, "vision: %s: a shape size is not a positive integer", name);
            if (d > 0) rows *= x->ne[d];
        }
        if (get_u64(r, t, "offset", name, &x->off) || get_u64(r, t, "bytes", name, &x->bytes)) return -1;
        const size_t rb = ggml_row_bytes(x->type, x->ne[0]);
        if (!rb || rows > ((int64_t)1 << 40) || x->bytes != (uint64_t)rb * (uint64_t)rows)
            return fail(r, "vision: %s: %llu bytes, not what a %s tensor of its shape holds", name,
                        (unsigned long long)x->bytes, type);
        if (x->off > v->file.bytes || x->bytes > v->file.bytes - x->off)
            return fail(r, "vision: %s: overruns %s", name, PACK_VISION);
    }
    v->present = 1;
    return 0;
}

int pack_layout_from_json(pack_layout *L, const char *path, char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    rd r = { path, err, errlen };
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        if (je.line < 1) snprintf(err, errlen, "%s: %s", path, je.text);
        else snprintf(err, errlen, "%s: line %d column %d: %s", path, je.line, je.column, je.text);
        return -1;
    }
    int rc = -1;
    const char *fmt = json_string_value(json_object_get(root, "format"));
    const json_t *files = json_object_get(root, "files");
    const json_t *src = json_object_get(root, "source");
    const json_t *ex = json_object_get(root, "experts");
    if (!fmt || strcmp(fmt, "strata-pack") || json_integer_value(json_object_get(root, "version")) != 1) {
        fail(&r, "not a strata-pack version 1 manifest");
        goto out;
    }
    for (int f = 0; f < PACK_NFILES; f++) {
        const json_t *fj = json_object_get(files, PACK_FILE_NAMES[f]);
        uint64_t crc;
        if (get_u64(&r, fj, "bytes", PACK_FILE_NAMES[f], &L->files[f].bytes) || get_u64(&r, fj, "crc32", PACK_FILE_NAMES[f], &crc))
            goto out;
        L->files[f].crc32 = (uint32_t)crc;
    }
    const char *sp = json_string_value(json_object_get(src, "path"));
    const char *sh = json_string_value(json_object_get(src, "sha256"));
    L->source_path = strdup(sp ? sp : "");
    snprintf(L->source_sha256, sizeof L->source_sha256, "%s", sh ? sh : "");
    L->source_bytes = (uint64_t)json_integer_value(json_object_get(src, "bytes"));
    L->source_splits = (int)json_integer_value(json_object_get(src, "splits"));
    L->hparams = json_incref(json_object_get(root, "hparams"));
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(root, "tensors"), name, v)
        if (read_tensor(&r, L, name, v, 0)) goto out;
    json_object_foreach((json_t *)json_object_get(ex, "tensors"), name, v)
        if (read_tensor(&r, L, name, v, 1)) goto out;
    for (int i = 0; i < L->n_tensors; i++) {
        const pk_tensor *t = &L->tensors[i];
        if (t->file == PACK_EXPERTS) continue;
        for (int k = 0; k < PLANE_COUNT; k++)
            if (t->plane_bytes[k] && t->plane_off[k] + t->plane_bytes[k] > L->files[t->file].bytes) {
                fail(&r, "%s: plane %s overruns %s", t->name, PLANE_NAMES[k], PACK_FILE_NAMES[t->file]);
                goto out;
            }
    }
    if (read_layers(&r, L, json_object_get(ex, "layers"))) goto out;
    if (json_object_get(root, "vision") && read_vision(&r, &L->vision, json_object_get(root, "vision"))) goto out;
    rc = 0;
out:
    json_decref(root);
    if (rc) pack_layout_free(L);
    return rc;
}

int pack_layout_from_dir(pack_layout *L, const char *dir, char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    char *mp = pack_path(dir, PACK_MANIFEST);
    if (!mp) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const int rc = pack_layout_from_json(L, mp, err, errlen);
    free(mp);
    return rc;
}
