/* packindex.c: manifest.json -> index.txt (see packindex.h, docs/pack-format.md).
 *
 * Reads like seeds/pack_index.py, check for check and in the same order, so
 * that a manifest the seed refuses gets the seed's message. Three places
 * differ on purpose (fp16 offsets are widened, an unknown quantized type is
 * refused, 3-D quantized tensors are supported) and a few refusals are added
 * for manifests the seed accepts but whose index would load plausible
 * garbage (negative sizes, per-plane widths, element counts). The added
 * refusals are DEFERRED until every tensor has passed the seed's checks:
 * where the seed refuses, its message wins. */
#include "pack/packindex.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats/fileio.h"
#include "formats/ggml_types.h"
#include "formats/pack_files.h"
#include "formats/pack_index.h"
#include "pack/packindex_ext.h"

/* ------------------------------------------------------------------ types */

/* The summary's names of the index's kinds (PI_VERBATIM ...). */
static const char *const KIND_NAMES[PI_NKINDS] = { "VERBATIM", "BF16_IN_F32", "F32", "F16_IN_F32" };

/* The plane key is `offsets`, not `mins`: a misspelt key in this list is not
 * an error, it is a shorter span (the seed's bug that dropped 54 planes). */
static const char *const PLANE_KEYS[3] = { "codes", "scales", "offsets" };

typedef struct pi_row {
    const char *name;      /* borrowed from the parsed manifest */
    int64_t col[PI_NCOLS]; /* the index row's columns (pack_index.h) */
    int64_t *dims;         /* more than 2 dims: an @shape line (n_dims of them, owned) */
    int n_dims;
    int offsets_fp16;      /* an fp16 offsets plane was widened: an @offsets_fp16 line */
    int native_type;       /* >= 0: ggml blocks verbatim, an @native line */
} pi_row;

typedef struct pi_ctx {
    FILE *err;
    const char *manifest_path;
    char deferred[1024];   /* first added refusal, reported after the seed's checks */
    char *ext;             /* @hparam/@file/@expert lines (packindex_ext.h) */
    pi_row *rows;
    size_t n_rows, cap_rows;
    int64_t align, pool;
    int64_t kinds[PI_NKINDS];
    int64_t n_reduced, saved, n_widened, widened, n_owidened, owidened;
} pi_ctx;

/* ---------------------------------------------------------------- helpers */

static int fail(pi_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->err, fmt, ap);
    va_end(ap);
    fputc('\n', c->err);
    return -1;
}

static void defer(pi_ctx *c, const char *fmt, ...)
{
    if (c->deferred[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->deferred, sizeof c->deferred, fmt, ap);
    va_end(ap);
}

/* Python's arbitrary-precision ints cannot overflow; ours can, and a wrapped
 * size is a plausible wrong offset, so every sum and product is checked. */
static int overflow(pi_ctx *c, const char *name)
{
    return fail(c, "%s: sizes overflow 64-bit arithmetic - the manifest holds a number too large to be a real size", name);
}
#define CK_ADD(c, n, a, b, r) do { if (__builtin_add_overflow((a), (b), (r))) return overflow((c), (n)); } while (0)
#define CK_SUB(c, n, a, b, r) do { if (__builtin_sub_overflow((a), (b), (r))) return overflow((c), (n)); } while (0)
#define CK_MUL(c, n, a, b, r) do { if (__builtin_mul_overflow((a), (b), (r))) return overflow((c), (n)); } while (0)

/* Python's // rounds toward minus infinity; C's / toward zero. */
static int floordiv(pi_ctx *c, const char *name, int64_t a, int64_t b, int64_t *q)
{
    if (b == -1) { if (a == INT64_MIN) return overflow(c, name); *q = -a; return 0; }
    *q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) (*q)--;
    return 0;
}

static int py_repr_str(char *buf, size_t n, const char *s)
{
    /* Python picks double quotes only when the text holds ' and no ". */
    char q = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';
    size_t o = 0;
    if (n < 8) return -1;
    buf[o++] = q;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 6 < n; p++) {
        if (*p == '\\' || *p == (unsigned char)q) { buf[o++] = '\\'; buf[o++] = (char)*p; }
        else if (*p == '\n') { buf[o++] = '\\'; buf[o++] = 'n'; }
        else if (*p == '\r') { buf[o++] = '\\'; buf[o++] = 'r'; }
        else if (*p == '\t') { buf[o++] = '\\'; buf[o++] = 't'; }
        else if (*p < 0x20 || *p == 0x7f) o += (size_t)snprintf(buf + o, n - o, "\\x%02x", *p);
        else buf[o++] = (char)*p;
    }
    buf[o++] = q;
    buf[o] = 0;
    return 0;
}

/* The text Python's %r gives for a JSON value (exact for strings, None,
 * booleans and integers, the values the seed's messages can show). */
static void py_repr(char *buf, size_t n, const json_t *v)
{
    if (!v || json_is_null(v)) snprintf(buf, n, "None");
    else if (json_is_true(v)) snprintf(buf, n, "True");
    else if (json_is_false(v)) snprintf(buf, n, "False");
    else if (json_is_integer(v)) snprintf(buf, n, "%" PRId64, (int64_t)json_integer_value(v));
    else if (json_is_real(v)) snprintf(buf, n, "%.17g", json_real_value(v));
    else if (json_is_string(v)) py_repr_str(buf, n, json_string_value(v));
    else {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(buf, n, "%s", d ? d : "?");
        free(d);
    }
}

/* Absent and null read as the default; anything but a JSON integer is
 * refused where the seed would have coerced it with int(). */
static int get_int(pi_ctx *c, const char *name, const json_t *obj, const char *key,
                   const char *label, int required, int64_t dflt, int64_t *out)
{
    const json_t *j = json_object_get(obj, key);
    if (!j || json_is_null(j)) {
        if (required) return fail(c, "%s: `%s` is missing", name, label);
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(j)) return fail(c, "%s: `%s` is not an integer", name, label);
    *out = (int64_t)json_integer_value(j);
    return 0;
}

static int get_flag(pi_ctx *c, const char *name, const json_t *obj, const char *key, int *out)
{
    const json_t *j = json_object_get(obj, key);
    if (!j || json_is_null(j)) { *out = 0; return 0; }
    if (!json_is_boolean(j)) return fail(c, "%s: `%s` is not true or false", name, key);
    *out = json_is_true(j);
    return 0;
}

static int get_str(pi_ctx *c, const char *name, const json_t *obj, const char *key, const char **out)
{
    const json_t *j = json_object_get(obj, key);
    if (!j || json_is_null(j)) { *out = NULL; return 0; }
    if (!json_is_string(j)) return fail(c, "%s: `%s` is not a string", name, key);
    *out = json_string_value(j);
    return 0;
}

static int64_t align_up(int64_t n, int64_t a, int *ovf)
{
    int64_t t;
    if (__builtin_add_overflow(n, a - 1, &t)) { *ovf = 1; return 0; }
    return t / a * a;
}

/* ------------------------------------------------------------ one tensor */

typedef struct pi_planes {
    int present[3];
    int64_t off[3], bytes[3];
    int n;
} pi_planes;

static int read_planes(pi_ctx *c, const char *name, const json_t *v, pi_planes *p)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < 3; k++) {
        const json_t *pj = json_object_get(v, PLANE_KEYS[k]);
        if (!pj || json_is_null(pj)) continue;
        if (!json_is_object(pj)) return fail(c, "%s: plane `%s` is not an object", name, PLANE_KEYS[k]);
        char label[32];
        snprintf(label, sizeof label, "%s.offset", PLANE_KEYS[k]);
        if (get_int(c, name, pj, "offset", label, 1, 0, &p->off[k])) return -1;
        snprintf(label, sizeof label, "%s.bytes", PLANE_KEYS[k]);
        if (get_int(c, name, pj, "bytes", label, 0, 0, &p->bytes[k])) return -1;
        if (p->off[k] < 0 || p->bytes[k] < 0)
            defer(c, "%s: plane `%s` has a negative offset or size", name, PLANE_KEYS[k]);
        p->present[k] = 1;
        p->n++;
    }
    return 0;
}

static void planes_repr(char *buf, size_t n, const pi_planes *p)
{
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int k = 0; k < 3 && o < n; k++)
        if (p->present[k]) o += (size_t)snprintf(buf + o, n - o, "%s'%s'", o > 1 ? ", " : "", PLANE_KEYS[k]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* The quantized branch: planes contiguous and filling the span, the S-form
 * attributes sane, and the plane sizes derived from the shape equal to the
 * manifest's own. Fills the engine-form plane sizes and the widening. */
static int quantized(pi_ctx *c, const char *name, const json_t *v, const char *st,
                     int64_t ne0, int64_t rows, int64_t elems, pi_row *r, int64_t *widen_here)
{
    pi_planes p;
    if (read_planes(c, name, v, &p)) return -1;
    if (p.n == 0)
        return fail(c, "%s: neither a `values` plane nor any of codes/scales/offsets", name);

    int64_t lo = INT64_MAX, hi = INT64_MIN, end;
    for (int k = 0; k < 3; k++) {
        if (!p.present[k]) continue;
        CK_ADD(c, name, p.off[k], p.bytes[k], &end);
        if (p.off[k] < lo) lo = p.off[k];
        if (end > hi) hi = end;
    }
    int64_t src_off = lo, src_bytes, expect = lo, span_end;
    CK_SUB(c, name, hi, lo, &src_bytes);
    /* The loader reads the planes as one span; interleaved planes would have
     * it read a scale plane as offsets and decode a plausible weight. */
    for (int k = 0; k < 3; k++) {
        if (!p.present[k]) continue;
        if (p.off[k] != expect)
            return fail(c, "%s: plane '%s' starts at %" PRId64 " but %" PRId64
                        " was expected - planes are not contiguous", name, PLANE_KEYS[k], p.off[k], expect);
        CK_ADD(c, name, expect, p.bytes[k], &expect);
    }
    CK_ADD(c, name, src_off, src_bytes, &span_end);
    if (expect != span_end)
        return fail(c, "%s: plane span %" PRId64 " does not end at %" PRId64, name, expect, span_end);

    int has_offset = 0;
    if (get_flag(c, name, v, "has_offset", &has_offset)) return -1;
    if (has_offset && !p.present[2]) {
        char found[64];
        planes_repr(found, sizeof found, &p);
        return fail(c, "%s says has_offset but has no `offsets` plane (found %s)", name, found);
    }

    int64_t code_bits = 0, group = 0;
    if (get_int(c, name, v, "code_bits", "code_bits", 0, 0, &code_bits) ||
        get_int(c, name, v, "group_elems", "group_elems", 0, 0, &group)) return -1;
    if (code_bits == 0 || group == 0)
        return fail(c, "%s: a quantized tensor with code_bits=%" PRId64 " group_elems=%" PRId64,
                    name, code_bits, group);
    if (group != -1 && ne0 % group)
        return fail(c, "%s: ne0 %" PRId64 " is not a multiple of group_elems %" PRId64, name, ne0, group);
    if (code_bits < 0 || group < 0)
        defer(c, "%s: negative code_bits or group_elems", name);

    int64_t n_groups = 0, codes_bytes = 0, unit = 0, t = 0;
    if (floordiv(c, name, ne0, group, &n_groups)) return -1;
    CK_MUL(c, name, elems, code_bits, &t);
    if (floordiv(c, name, t, 8, &codes_bytes)) return -1;
    int sf16 = 0, of16 = 0;
    if (get_flag(c, name, v, "scales_fp16", &sf16) || get_flag(c, name, v, "offsets_fp16", &of16)) return -1;

    /* Engine-form planes are always 4 bytes per scale or offset: an fp16
     * plane in the pack is widened at load, which is exact. */
    int64_t scales4, offs4 = 0, src_scales, src_offs = 0, src_planes;
    CK_MUL(c, name, rows, n_groups, &unit);
    CK_MUL(c, name, unit, 4, &scales4);
    CK_MUL(c, name, unit, sf16 ? 2 : 4, &src_scales);
    if (has_offset) {
        CK_MUL(c, name, unit, 4, &offs4);
        CK_MUL(c, name, unit, of16 ? 2 : 4, &src_offs);
    }
    CK_ADD(c, name, codes_bytes, src_scales, &src_planes);
    CK_ADD(c, name, src_planes, src_offs, &src_planes);

    /* The seed reads v["codes"]["bytes"] and v["scales"]["bytes"] here
     * directly: a tensor without them cannot be described. */
    for (int k = 0; k < 2; k++) {
        const json_t *pj = json_object_get(v, PLANE_KEYS[k]);
        if (!p.present[k]) return fail(c, "%s: no `%s` plane", name, PLANE_KEYS[k]);
        if (!json_object_get(pj, "bytes")) return fail(c, "%s: `%s.bytes` is missing", name, PLANE_KEYS[k]);
    }
    int64_t man_planes;
    CK_ADD(c, name, p.bytes[0], p.bytes[1], &man_planes);
    CK_ADD(c, name, man_planes, p.bytes[2], &man_planes);
    if (src_planes != man_planes)
        return fail(c, "%s: derived planes %" PRId64 " disagree with the manifest's own plane bytes %" PRId64,
                    name, src_planes, man_planes);
    if (src_planes != src_bytes)
        return fail(c, "%s: derived planes %" PRId64 " do not fill the span %" PRId64, name, src_planes, src_bytes);

    /* The seed compares only the sum; a wide scale plane next to a short
     * code plane would pass it and decode codes as scales. */
    const int64_t want[3] = { codes_bytes, src_scales, src_offs };
    for (int k = 0; k < 3; k++)
        if ((p.present[k] || want[k]) && p.bytes[k] != want[k])
            defer(c, "%s: plane `%s` holds %" PRId64 " bytes but the shape and widths give %" PRId64,
                  name, PLANE_KEYS[k], p.bytes[k], want[k]);

    *widen_here = 0;
    if (sf16) {
        CK_SUB(c, name, scales4, src_scales, widen_here);
        CK_ADD(c, name, c->widened, *widen_here, &c->widened);
        c->n_widened++;
    }
    /* The seed counts only scale planes here, so it refuses every fp16
     * offsets plane; widening one is just as exact. */
    if (has_offset && of16) {
        int64_t ow;
        CK_SUB(c, name, offs4, src_offs, &ow);
        CK_ADD(c, name, *widen_here, ow, widen_here);
        CK_ADD(c, name, c->owidened, ow, &c->owidened);
        c->n_owidened++;
        r->offsets_fp16 = 1;
    }

    /* The seed's comment promises this refusal and its code defaults to Q8_0
     * instead: a guessed activation kind is a plausible wrong dot product. */
    const int act = pindex_act_kind(st);
    if (act < 0) {
        char rep[160];
        py_repr_str(rep, sizeof rep, st);
        return fail(c, "%s: unknown quantized source_type %s - its activation kind (Q8_0 or Q8_K) "
                    "cannot be chosen, so it is refused rather than guessed", name, rep);
    }

    r->col[PI_C_SRC_OFF] = src_off;
    r->col[PI_C_SRC_BYTES] = src_bytes;
    r->col[PI_C_CODES_BYTES] = codes_bytes;
    r->col[PI_C_SCALES_BYTES] = scales4;
    r->col[PI_C_OFFSET_BYTES] = offs4;
    r->col[PI_C_SCALES_FP16] = sf16;
    r->col[PI_C_ACT_KIND] = act;
    return 0;
}

/* A `native` tensor (ggml blocks the canonical forms cannot express) is one
 * verbatim span; the seed refuses it, the @native line says how to read it. */
static int native(pi_ctx *c, const char *name, const json_t *v, int64_t ne0, int64_t rows, pi_row *r)
{
    const char *tn = NULL;
    if (get_str(c, name, v, "ggml_type", &tn)) return -1;
    const ggml_type_row *t = tn ? ggml_type_by_name(tn) : NULL;
    if (!t || !t->to_f32)
        return fail(c, "%s: native form with ggml_type %s, which has no decoder", name, tn ? tn : "None");
    const json_t *b = json_object_get(v, "blocks");
    if (!json_is_object(b)) return fail(c, "%s: native form without a `blocks` plane", name);
    if (get_int(c, name, b, "offset", "blocks.offset", 1, 0, &r->col[PI_C_SRC_OFF]) ||
        get_int(c, name, b, "bytes", "blocks.bytes", 1, 0, &r->col[PI_C_SRC_BYTES])) return -1;
    const size_t rb = ggml_row_bytes(t->id, ne0);
    int64_t want;
    if (rb == 0 || ne0 <= 0) return fail(c, "%s: ne0 %" PRId64 " is not a whole number of %s blocks", name, ne0, t->name);
    CK_MUL(c, name, (int64_t)rb, rows > 0 ? rows : 1, &want);
    if (r->col[PI_C_SRC_OFF] < 0 || r->col[PI_C_SRC_BYTES] != want)
        return fail(c, "%s: %s blocks of %" PRId64 " x %" PRId64 " are %" PRId64 " bytes, but the manifest says %"
                    PRId64, name, t->name, ne0, rows, want, r->col[PI_C_SRC_BYTES]);
    r->native_type = t->id;
    return 0;
}

static int tensor(pi_ctx *c, const char *name, const json_t *v, pi_row *r)
{
    memset(r, 0, sizeof *r);
    r->name = name;
    r->native_type = -1;
    if (!json_is_object(v)) return fail(c, "%s: the tensor entry is not an object", name);
    if (!pindex_name_ok(name))
        defer(c, "%s: a tensor name must be non-empty, without whitespace or control characters, "
              "and not start with # or @ - it is the first column of a space-separated row", name);

    const json_t *fj = json_object_get(v, "file");
    int fid = -1;
    for (int i = 0; i < 3 && json_is_string(fj); i++)
        if (!strcmp(json_string_value(fj), PACK_FILE_NAMES[i])) fid = i;
    if (fid < 0) {
        char rep[256];
        py_repr(rep, sizeof rep, fj);
        return fail(c, "unknown file %s for %s", rep, name);
    }

    /* shape: absent, null or [] reads as [0, 0] as in the seed. */
    const json_t *shape = json_object_get(v, "shape");
    size_t nd = 0;
    if (shape && !json_is_null(shape)) {
        if (!json_is_array(shape)) return fail(c, "%s: `shape` is not an array of integers", name);
        nd = json_array_size(shape);
        for (size_t i = 0; i < nd; i++)
            if (!json_is_integer(json_array_get(shape, i)))
                return fail(c, "%s: `shape` is not an array of integers", name);
    }
    int64_t ne0 = nd > 0 ? (int64_t)json_integer_value(json_array_get(shape, 0)) : 0;
    int64_t ne1 = nd > 1 ? (int64_t)json_integer_value(json_array_get(shape, 1)) : 0;
    /* The seed's arithmetic is 2-D (ne1 rows, 0 for a 1-D shape); an expert
     * tensor [ne0, ne1, n_expert] has ne1 * n_expert rows. */
    int64_t rows = ne1, prod = ne0;
    if (nd > 2) {
        for (size_t i = 2; i < nd; i++)
            CK_MUL(c, name, rows, (int64_t)json_integer_value(json_array_get(shape, i)), &rows);
        r->n_dims = (int)nd;
        r->dims = malloc(nd * sizeof *r->dims);
        if (!r->dims) return fail(c, "%s: out of memory", c->manifest_path);
        for (size_t i = 0; i < nd; i++) r->dims[i] = (int64_t)json_integer_value(json_array_get(shape, i));
    }
    for (size_t i = 0; i < nd; i++) {
        int64_t d = (int64_t)json_integer_value(json_array_get(shape, i));
        if (d < 0) defer(c, "%s: `shape` has a negative dimension", name);
        if (i > 0) CK_MUL(c, name, prod, d, &prod);
    }

    int64_t elems = 0;
    const char *st = NULL;
    if (get_int(c, name, v, "elements", "elements", 0, 0, &elems)) return -1;
    if (get_str(c, name, v, "source_type", &st)) return -1;
    if (!st || !*st) st = "?";
    if (elems < 0) defer(c, "%s: negative `elements`", name);
    if (nd > 0 && elems != prod)
        defer(c, "%s: `elements` %" PRId64 " is not the product of `shape` (%" PRId64 ")", name, elems, prod);

    int64_t widen_here = 0;
    const json_t *values = json_object_get(v, "values");
    const json_t *form = json_object_get(v, "form");
    const int is_native = json_is_string(form) && !strcmp(json_string_value(form), "native");
    if (is_native) {
        if (native(c, name, v, ne0, rows, r)) return -1;
    } else if (values) {
        if (!json_is_object(values)) return fail(c, "%s: `values` is not an object", name);
        if (get_int(c, name, values, "offset", "values.offset", 1, 0, &r->col[PI_C_SRC_OFF]) ||
            get_int(c, name, values, "bytes", "values.bytes", 1, 0, &r->col[PI_C_SRC_BYTES])) return -1;
        if (r->col[PI_C_SRC_OFF] < 0 || r->col[PI_C_SRC_BYTES] < 0)
            defer(c, "%s: plane `values` has a negative offset or size", name);
    } else if (quantized(c, name, v, st, ne0, rows, elems, r, &widen_here)) {
        return -1;
    }
    int64_t src_bytes = r->col[PI_C_SRC_BYTES], dst_bytes, saved;

    /* The engine form as an explicit kind: which of the four cases applies
     * takes source_type AND values_fp16, and guessing wrong is plausible. */
    int vf = 0, kind;
    if (get_flag(c, name, v, "values_fp16", &vf)) return -1;
    if (!strcmp(st, "BF16") || (!strcmp(st, "F16") && !vf)) {
        kind = !strcmp(st, "BF16") ? PI_BF16_IN_F32 : PI_F16_IN_F32;
        CK_MUL(c, name, elems, 2, &dst_bytes);
        CK_SUB(c, name, src_bytes, dst_bytes, &saved);
        CK_ADD(c, name, c->saved, saved, &c->saved);
        c->n_reduced++;
    } else if (!strcmp(st, "F16")) {
        kind = PI_VERBATIM; /* already 2 bytes on disk */
        dst_bytes = src_bytes;
    } else if (!strcmp(st, "F32")) {
        kind = PI_F32;
        CK_MUL(c, name, elems, 4, &dst_bytes);
    } else if (is_native) {
        kind = PI_VERBATIM;
        dst_bytes = src_bytes;
    } else {
        kind = PI_VERBATIM;
        CK_ADD(c, name, r->col[PI_C_CODES_BYTES], r->col[PI_C_SCALES_BYTES], &dst_bytes);
        CK_ADD(c, name, dst_bytes, r->col[PI_C_OFFSET_BYTES], &dst_bytes);
        /* The engine form differs from the pack by exactly the widening;
         * saying so makes the two plane sizes a check, not two guesses. */
        int64_t want;
        CK_ADD(c, name, src_bytes, widen_here, &want);
        if (dst_bytes != want)
            return fail(c, "%s: engine form %" PRId64 " != pack %" PRId64 " + widening %" PRId64,
                        name, dst_bytes, src_bytes, widen_here);
    }
    if (values) {
        /* The seed never checks a values plane against its element count; a
         * short one would have the loader read past the tensor. */
        int width = !strcmp(st, "F16") && vf ? 2 : 4;
        int64_t want;
        CK_MUL(c, name, elems, width, &want);
        if (strcmp(st, "BF16") && strcmp(st, "F16") && strcmp(st, "F32"))
            defer(c, "%s: a `values` plane of source_type %s, which is none of BF16/F16/F32", name, st);
        else if (src_bytes != want)
            defer(c, "%s: a %s `values` plane of %" PRId64 " elements at %d bytes each is %" PRId64
                  " bytes, but the manifest says %" PRId64, name, st, elems, width, want, src_bytes);
    }

    const char *cb = NULL;
    int64_t code_bits = 0, code_bias = 0, group = 0;
    int has_offset = 0;
    if (get_str(c, name, v, "codebook", &cb) ||
        get_int(c, name, v, "code_bits", "code_bits", 0, 0, &code_bits) ||
        get_int(c, name, v, "code_bias", "code_bias", 0, 0, &code_bias) ||
        get_int(c, name, v, "group_elems", "group_elems", 0, 0, &group) ||
        get_flag(c, name, v, "has_offset", &has_offset)) return -1;

    r->col[PI_C_FILE] = fid;
    r->col[PI_C_KIND] = kind;
    r->col[PI_C_DST_BYTES] = dst_bytes;
    r->col[PI_C_NE0] = ne0;
    r->col[PI_C_NE1] = ne1;
    r->col[PI_C_CODE_BITS] = code_bits;
    r->col[PI_C_CODE_BIAS] = code_bias;
    r->col[PI_C_GROUP] = group;
    r->col[PI_C_CODEBOOK] = cb && !strcmp(cb, "IQ4NL");
    r->col[PI_C_HAS_OFFSET] = has_offset;

    int ovf = 0;
    int64_t end;
    r->col[PI_C_DST_OFF] = c->pool;
    CK_ADD(c, name, c->pool, dst_bytes, &end);
    c->pool = align_up(end, c->align, &ovf);
    if (ovf) return overflow(c, name);
    c->kinds[kind]++;
    return 0;
}

/* --------------------------------------------------------------- output */

static void write_index(const pi_ctx *c, FILE *fp)
{
    pindex_put_header(fp, c->align, c->pool, c->n_rows);
    for (size_t i = 0; i < c->n_rows; i++) {
        const pi_row *r = &c->rows[i];
        pindex_put_row(fp, r->name, r->col);
        /* New facts go in lines of their own kind, never as extra columns on
         * the seed's rows, so a v3 row parser keeps working on every row. */
        if (r->dims) pindex_put_shape(fp, r->name, r->n_dims, r->dims);
        if (r->offsets_fp16) pindex_put_offsets_fp16(fp, r->name);
        if (r->native_type >= 0) {
            const ggml_type_row *t = ggml_type_info(r->native_type);
            pindex_put_native(fp, r->name, t->id, t->blck, t->bytes);
        }
    }
    if (c->ext) fputs(c->ext, fp);
}

static void write_summary(const pi_ctx *c, const char *out_path, FILE *out)
{
    const double gib = 1073741824.0;
    fprintf(out, "%s: %zu tensors, engine pool %" PRId64 " B (%.3f GiB)\n", out_path, c->n_rows,
            c->pool, (double)c->pool / gib);
    for (int k = 0; k < PI_NKINDS; k++)
        if (c->kinds[k]) fprintf(out, "   kind %-12s %4" PRId64 " tensors\n", KIND_NAMES[k], c->kinds[k]);
    fprintf(out, "   %" PRId64 " tensors re-rounded to 16 bits, saving %" PRId64 " B (%.3f GiB)\n",
            c->n_reduced, c->saved, (double)c->saved / gib);
    fprintf(out, "   %" PRId64 " tensors widened fp16 scales -> f32, costing %" PRId64 " B (%.3f GiB)\n",
            c->n_widened, c->widened, (double)c->widened / gib);
    if (c->n_owidened)
        fprintf(out, "   %" PRId64 " tensors widened fp16 offsets -> f32, costing %" PRId64 " B (%.3f GiB)\n",
                c->n_owidened, c->owidened, (double)c->owidened / gib);
    /* the reference tool names its own budget script here; ours is `strata budget` */
    fprintf(out, "   compare with `strata budget PACK`: its dense pool should match this pool\n");
}

/* ----------------------------------------------------------------- entry */

/* os.path.join(dir, leaf) */
static char *path_join(const char *dir, const char *leaf)
{
    size_t n = strlen(dir), m = strlen(leaf);
    char *p = malloc(n + m + 2);
    if (!p) return NULL;
    int sep = n > 0 && dir[n - 1] != '/';
    memcpy(p, dir, n);
    if (sep) p[n] = '/';
    memcpy(p + n + sep, leaf, m + 1);
    return p;
}

static int index_manifest(pi_ctx *c, const json_t *man)
{
    if (!json_is_object(man)) return fail(c, "%s: the top level is not a JSON object", c->manifest_path);
    if (get_int(c, c->manifest_path, man, "align", "align", 0, 64, &c->align)) return -1;
    if (c->align <= 0)
        return fail(c, "%s: `align` %" PRId64 " is not a positive alignment", c->manifest_path, c->align);
    const json_t *tensors = json_object_get(man, "tensors");
    if (!tensors) return fail(c, "%s: no `tensors` object", c->manifest_path);
    if (!json_is_object(tensors)) return fail(c, "%s: `tensors` is not an object", c->manifest_path);

    size_t n = json_object_size(tensors);
    c->rows = calloc(n ? n : 1, sizeof *c->rows);
    if (!c->rows) return fail(c, "%s: out of memory", c->manifest_path);
    c->cap_rows = n;
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)tensors, name, v) {
        if (tensor(c, name, v, &c->rows[c->n_rows])) return -1;
        c->n_rows++;
    }
    if (c->deferred[0]) return fail(c, "%s", c->deferred);
    char msg[1024];
    if (packindex_ext_text(c->manifest_path, man, &c->ext, msg, sizeof msg)) return fail(c, "%s", msg);
    return 0;
}

int packindex_run(const char *pack_dir, const char *out_path, FILE *out, FILE *err)
{
    pi_ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    char *mpath = path_join(pack_dir, PACK_MANIFEST);
    char *opath = out_path ? strdup(out_path) : path_join(pack_dir, PACK_INDEX);
    json_t *man = NULL;
    int rc = 1;
    if (!mpath || !opath) {
        fprintf(err, "%s: out of memory\n", pack_dir);
        goto done;
    }
    c.manifest_path = mpath;

    unsigned char *text;
    size_t len;
    char msg[1024];
    if (read_file(mpath, &text, &len, msg, sizeof msg)) {
        fprintf(err, "%s\n", msg);
        goto done;
    }
    /* Duplicate keys are refused: Python keeps the last value at the first
     * key's place, a silent choice between two tensors of one name. */
    json_error_t je;
    man = json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    free(text);
    if (!man) {
        fprintf(err, "%s: invalid JSON at line %d, column %d: %s\n", mpath, je.line, je.column, je.text);
        goto done;
    }
    if (index_manifest(&c, man)) goto done;

    atomic_out ao;
    if (atomic_out_open(&ao, opath, msg, sizeof msg)) {
        fprintf(err, "%s\n", msg);
        goto done;
    }
    write_index(&c, ao.fp);
    if (atomic_out_commit(&ao, msg, sizeof msg)) {
        fprintf(err, "%s\n", msg);
        goto done;
    }
    if (out) write_summary(&c, opath, out);
    rc = 0;
done:
    json_decref(man);
    free(c.ext);
    for (size_t i = 0; i < c.cap_rows; i++) free(c.rows[i].dims);
    free(c.rows);
    free(mpath);
    free(opath);
    return rc;
}
