/* gguf_inspect.c: info and dump for GGUF files (see gguf_inspect.h). */
#include "pack/gguf_inspect.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fileio.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"

static void human_bytes(char *buf, size_t n, double b)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

/* One array element or scalar, printed in its own type. */
static void print_scalar(FILE *out, gguf_type t, const void *p)
{
    switch (t) {
    case GGUF_TYPE_UINT8:  { uint8_t v;  memcpy(&v, p, 1); fprintf(out, "%u", v); break; }
    case GGUF_TYPE_INT8:   { int8_t v;   memcpy(&v, p, 1); fprintf(out, "%d", v); break; }
    case GGUF_TYPE_UINT16: { uint16_t v; memcpy(&v, p, 2); fprintf(out, "%u", v); break; }
    case GGUF_TYPE_INT16:  { int16_t v;  memcpy(&v, p, 2); fprintf(out, "%d", v); break; }
    case GGUF_TYPE_UINT32: { uint32_t v; memcpy(&v, p, 4); fprintf(out, "%" PRIu32, v); break; }
    case GGUF_TYPE_INT32:  { int32_t v;  memcpy(&v, p, 4); fprintf(out, "%" PRId32, v); break; }
    case GGUF_TYPE_FLOAT32:{ float v;    memcpy(&v, p, 4); fprintf(out, "%g", v); break; }
    case GGUF_TYPE_BOOL:   { uint8_t v;  memcpy(&v, p, 1); fprintf(out, "%s", v ? "true" : "false"); break; }
    case GGUF_TYPE_UINT64: { uint64_t v; memcpy(&v, p, 8); fprintf(out, "%" PRIu64, v); break; }
    case GGUF_TYPE_INT64:  { int64_t v;  memcpy(&v, p, 8); fprintf(out, "%" PRId64, v); break; }
    case GGUF_TYPE_FLOAT64:{ double v;   memcpy(&v, p, 8); fprintf(out, "%g", v); break; }
    default: fprintf(out, "?"); break;
    }
}

/* Strings are shown on one line, cut at 60 characters: chat templates are long. */
static void print_str(FILE *out, const char *s)
{
    fputc('"', out);
    int n = 0;
    for (; *s && n < 60; s++, n++) {
        if (*s == '\n') fputs("\\n", out);
        else if (*s == '"') fputs("\\\"", out);
        else if ((unsigned char)*s < 0x20) fprintf(out, "\\x%02x", (unsigned char)*s);
        else fputc(*s, out);
    }
    fputc('"', out);
    if (*s) fprintf(out, "... (%zu bytes)", n + strlen(s));
}

static void print_kv(FILE *out, const gguf_file *f, int64_t i)
{
    gguf_type t = gguf_kv_type(f, i);
    fprintf(out, "  %-40s ", gguf_kv_key(f, i));
    if (t == GGUF_TYPE_STRING) {
        print_str(out, gguf_kv_str(f, i));
    } else if (t == GGUF_TYPE_ARRAY) {
        gguf_type et = gguf_kv_arr_type(f, i);
        uint64_t n = gguf_kv_arr_n(f, i);
        fprintf(out, "[%s x %" PRIu64 "]", gguf_type_name(et), n);
        uint64_t show = n < 4 ? n : 4;
        if (show) fputs(" ", out);
        for (uint64_t j = 0; j < show; j++) {
            if (j) fputs(", ", out);
            if (et == GGUF_TYPE_STRING) print_str(out, gguf_kv_arr_str(f, i, j));
            else if (gguf_type_size(et))
                print_scalar(out, et, (const uint8_t *)gguf_kv_arr_data(f, i) + j * gguf_type_size(et));
        }
        if (n > show) fputs(", ...", out);
    } else {
        print_scalar(out, t, gguf_kv_raw(f, i));
    }
    fputc('\n', out);
}

static int usage_info(FILE *o)
{
    fprintf(o, "usage: iq3pack info FILE.gguf [--tensors]\n"
               "  Prints the architecture, every metadata key (long values cut), and the\n"
               "  tensors grouped by type with element counts and sizes.\n"
               "  --tensors   also list every tensor with its type, shape and offset\n");
    return 2;
}

int gguf_inspect_info(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage_info(out); return 0; }
        else if (!strcmp(argv[i], "--tensors")) list = 1;
        else if (argv[i][0] == '-') { fprintf(err, "iq3pack info: unknown option '%s'\n", argv[i]); return usage_info(err); }
        else if (!path) path = argv[i];
        else { fprintf(err, "iq3pack info: one file at a time\n"); return usage_info(err); }
    }
    if (!path) return usage_info(err);

    char msg[512];
    gguf_file *f = gguf_open(path, msg, sizeof msg);
    if (!f) { fprintf(err, "iq3pack info: %s\n", msg); return 1; }

    char hb[32];
    human_bytes(hb, sizeof hb, (double)gguf_file_size(f));
    const char *arch = gguf_get_str(f, "general.architecture");
    const char *name = gguf_get_str(f, "general.name");
    fprintf(out, "file:       %s (%s)\n", path, hb);
    fprintf(out, "gguf:       v%" PRIu32 ", alignment %" PRIu32 ", %" PRId64 " keys, %" PRId64 " tensors, data at %" PRIu64 "\n",
            gguf_version(f), gguf_alignment(f), gguf_n_kv(f), gguf_n_tensors(f), gguf_data_offset(f));
    fprintf(out, "arch:       %s\n", arch ? arch : "(none)");
    if (name) fprintf(out, "name:       %s\n", name);

    fprintf(out, "\nmetadata:\n");
    for (int64_t i = 0; i < gguf_n_kv(f); i++) print_kv(out, f, i);

    struct { int64_t n, elems; uint64_t bytes; } by_type[GGML_TYPE_COUNT];
    memset(by_type, 0, sizeof by_type);
    int64_t total_elems = 0;
    uint64_t total_bytes = 0;
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        by_type[t->type].n++;
        by_type[t->type].elems += t->n_elements;
        by_type[t->type].bytes += t->size;
        total_elems += t->n_elements;
        total_bytes += t->size;
    }
    fprintf(out, "\ntensors by type:\n");
    for (int ty = 0; ty < GGML_TYPE_COUNT; ty++) {
        if (!by_type[ty].n) continue;
        const ggml_type_row *r = ggml_type_info(ty);
        human_bytes(hb, sizeof hb, (double)by_type[ty].bytes);
        fprintf(out, "  %-8s %5" PRId64 " tensors %14" PRId64 " elements %12s  %6.3f bits/weight%s\n",
                r->name, by_type[ty].n, by_type[ty].elems, hb,
                by_type[ty].elems ? 8.0 * (double)by_type[ty].bytes / (double)by_type[ty].elems : 0.0,
                r->to_f32 ? "" : "  (no decoder)");
    }
    human_bytes(hb, sizeof hb, (double)total_bytes);
    fprintf(out, "  total    %5" PRId64 " tensors %14" PRId64 " elements %12s\n", gguf_n_tensors(f), total_elems, hb);

    if (list) {
        fprintf(out, "\ntensors:\n");
        for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            fprintf(out, "  %-40s %-8s [", t->name, ggml_type_info(t->type)->name);
            for (uint32_t d = 0; d < t->n_dims; d++) fprintf(out, d ? ", %" PRId64 : "%" PRId64, t->ne[d]);
            fprintf(out, "] offset %" PRIu64 " bytes %" PRIu64 "\n", t->offset, t->size);
        }
    }
    gguf_close(f);
    return 0;
}

static int usage_dump(FILE *o)
{
    fprintf(o, "usage: iq3pack dump FILE.gguf TENSOR -o OUT.f32\n"
               "  Writes the tensor dequantized to little-endian f32 (bit-exact with ggml's\n"
               "  dequantization), row-major with ne0 fastest. OUT must not exist.\n");
    return 2;
}

int gguf_inspect_dump(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL, *name = NULL, *dst = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage_dump(out); return 0; }
        else if (!strcmp(argv[i], "-o")) {
            if (++i >= argc) { fprintf(err, "iq3pack dump: -o needs a file name\n"); return usage_dump(err); }
            dst = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) { fprintf(err, "iq3pack dump: unknown option '%s'\n", argv[i]); return usage_dump(err); }
        else if (!path) path = argv[i];
        else if (!name) name = argv[i];
        else { fprintf(err, "iq3pack dump: unexpected argument '%s'\n", argv[i]); return usage_dump(err); }
    }
    if (!path || !name || !dst) return usage_dump(err);

    char msg[512];
    gguf_file *f = gguf_open(path, msg, sizeof msg);
    if (!f) { fprintf(err, "iq3pack dump: %s\n", msg); return 1; }
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        fprintf(err, "iq3pack dump: %s: no tensor named '%s' (iq3pack info --tensors lists them)\n", path, name);
        gguf_close(f);
        return 1;
    }
    const ggml_type_row *r = ggml_type_info(t->type);
    if (!r->to_f32) {
        fprintf(err, "iq3pack dump: %s: tensor '%s' has type %s, which has no decoder\n", path, name, r->name);
        gguf_close(f);
        return 1;
    }
    int64_t ne0 = t->ne[0], rows = t->n_elements / ne0;
    size_t row_bytes = ggml_row_bytes(t->type, ne0);
    float *buf = malloc((size_t)ne0 * sizeof(float));
    atomic_out o;
    if (!buf || atomic_out_open(&o, dst, msg, sizeof msg) != 0) {
        fprintf(err, "iq3pack dump: %s\n", buf ? msg : "out of memory");
        free(buf);
        gguf_close(f);
        return 1;
    }
    /* Row by row keeps memory at one row whatever the tensor's size. */
    for (int64_t i = 0; i < rows; i++) {
        ggml_dequantize(t->type, t->data + (size_t)i * row_bytes, buf, ne0);
        if (fwrite(buf, sizeof(float), (size_t)ne0, o.fp) != (size_t)ne0) break;
    }
    int rc = atomic_out_commit(&o, msg, sizeof msg);
    if (rc != 0) fprintf(err, "iq3pack dump: %s\n", msg);
    else fprintf(out, "wrote %s: %" PRId64 " x %" PRId64 " f32 from %s tensor '%s'\n", dst, rows, ne0, r->name, name);
    free(buf);
    gguf_close(f);
    return rc ? 1 : 0;
}
