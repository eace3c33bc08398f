/* test_gguf.c: the GGUF reader and writer. A round trip of every value type
 * and several tensor types through our writer, the shipped model and every
 * real GGUF in ../shared, and hostile files: truncated at every byte and with each header field
 * corrupted, each of which must be refused with a message naming the file
 * and the problem. */
#include "tests/lib/test_util.h"
#include "formats/gguf.h"
#include "formats/ggml_types.h"

#include <dirent.h>
#include <unistd.h>

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void fill_random(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)lcg(&seed);
}

static uint64_t pad32(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ------------------------------------------------------------ round trip */

typedef struct tspec {
    const char *name;
    int type;
    uint32_t n_dims;
    int64_t ne[4];
} tspec;

static const tspec TENSORS[] = {
    { "tok_embd.weight", GGML_TYPE_F32, 2, { 8, 3, 1, 1 } },
    { "blk.0.attn_q.weight", GGML_TYPE_F16, 2, { 16, 2, 1, 1 } },
    { "blk.0.ffn_up.weight", GGML_TYPE_Q4_0, 3, { 64, 2, 2, 1 } },
    { "blk.0.ffn_down_exps.weight", GGML_TYPE_Q4_K, 4, { 256, 1, 2, 1 } },
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

static const char *const STRS[] = { "alpha", "", "γάμμα", "a string with spaces" };

static void build_full(gguf_writer *w, uint8_t **payloads, size_t *sizes)
{
    uint8_t u8 = 200; int8_t i8 = -5; uint16_t u16 = 60000; int16_t i16 = -30000;
    uint32_t u32 = 4000000000u; int32_t i32 = -2000000000; float f32 = 1.5f; uint8_t b = 1;
    uint64_t u64 = (1ull << 63) + 5; int64_t i64 = -(1ll << 62); double f64 = 3.25;
    assert_int_equal(gguf_writer_add_kv(w, "t.u8", GGUF_TYPE_UINT8, &u8), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.i8", GGUF_TYPE_INT8, &i8), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.u16", GGUF_TYPE_UINT16, &u16), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.i16", GGUF_TYPE_INT16, &i16), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.u32", GGUF_TYPE_UINT32, &u32), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.i32", GGUF_TYPE_INT32, &i32), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.f32", GGUF_TYPE_FLOAT32, &f32), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.bool", GGUF_TYPE_BOOL, &b), 0);
    assert_int_equal(gguf_writer_add_str(w, "t.str", "hello, gguf"), 0);
    assert_int_equal(gguf_writer_add_str(w, "t.empty_str", ""), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.u64", GGUF_TYPE_UINT64, &u64), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.i64", GGUF_TYPE_INT64, &i64), 0);
    assert_int_equal(gguf_writer_add_kv(w, "t.f64", GGUF_TYPE_FLOAT64, &f64), 0);
    assert_int_equal(gguf_writer_add_u32(w, "t.u32b", 7), 0);

    /* arrays of every numeric type: element i holds bytes seeded by the type */
    for (int t = 0; t < GGUF_TYPE_COUNT; t++) {
        if (t == GGUF_TYPE_STRING || t == GGUF_TYPE_ARRAY) continue;
        uint8_t data[5 * 8];
        fill_random(data, sizeof data, (uint32_t)t + 100);
        char key[64];
        snprintf(key, sizeof key, "arr.%s", gguf_type_name((gguf_type)t));
        assert_int_equal(gguf_writer_add_arr(w, key, (gguf_type)t, data, 5), 0);
    }
    assert_int_equal(gguf_writer_add_arr(w, "arr.empty", GGUF_TYPE_UINT32, NULL, 0), 0);
    assert_int_equal(gguf_writer_add_arr_str(w, "arr.strs", STRS, 4), 0);
    assert_int_equal(gguf_writer_add_arr_str(w, "arr.empty_strs", NULL, 0), 0);

    for (size_t i = 0; i < N_TENSORS; i++) {
        const tspec *t = &TENSORS[i];
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        sizes[i] = ggml_row_bytes(t->type, t->ne[0]) * (size_t)(n / t->ne[0]);
        payloads[i] = malloc(sizes[i]);
        assert_non_null(payloads[i]);
        fill_random(payloads[i], sizes[i], (uint32_t)i * 7 + 1);
        assert_int_equal(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne,
                                                payloads[i], sizes[i]), (int64_t)i);
    }
    /* a second view of tensor 0's 96 bytes: 24 f32 in one row */
    int64_t ne_alias[1] = { 24 };
    assert_int_equal(gguf_writer_add_tensor_alias(w, "tok_embd.flat", GGML_TYPE_F32, 1, ne_alias, 0),
                     (int64_t)N_TENSORS);
}

static void check_full(const gguf_file *f, uint8_t **payloads, const size_t *sizes, uint32_t align)
{
    uint64_t u; int64_t s; double d; float fl; uint32_t u32; int32_t i32; bool bo;
    assert_int_equal(gguf_version(f), 3);
    assert_int_equal(gguf_alignment(f), align);
    assert_int_equal(gguf_get_uint(f, "t.u8", &u), 0);   assert_int_equal(u, 200);
    assert_int_equal(gguf_get_int(f, "t.i8", &s), 0);    assert_int_equal(s, -5);
    assert_int_equal(gguf_get_uint(f, "t.i8", &u), -1);  /* negative does not fit */
    assert_int_equal(gguf_get_uint(f, "t.u16", &u), 0);  assert_int_equal(u, 60000);
    assert_int_equal(gguf_get_int(f, "t.i16", &s), 0);   assert_int_equal(s, -30000);
    assert_int_equal(gguf_get_u32(f, "t.u32", &u32), 0); assert_int_equal(u32, 4000000000u);
    assert_int_equal(gguf_get_i32(f, "t.u32", &i32), -1); /* no silent conversion */
    assert_int_equal(gguf_get_i32(f, "t.i32", &i32), 0); assert_int_equal(i32, -2000000000);
    assert_int_equal(gguf_get_u32(f, "t.i32", &u32), -1);
    assert_int_equal(gguf_get_f32(f, "t.f32", &fl), 0);  assert_true(fl == 1.5f);
    assert_int_equal(gguf_get_float(f, "t.f32", &d), 0); assert_true(d == 1.5);
    assert_int_equal(gguf_get_bool(f, "t.bool", &bo), 0); assert_true(bo);
    assert_int_equal(gguf_get_uint(f, "t.bool", &u), -1);
    assert_string_equal(gguf_get_str(f, "t.str"), "hello, gguf");
    assert_string_equal(gguf_get_str(f, "t.empty_str"), "");
    assert_null(gguf_get_str(f, "t.u8"));
    assert_null(gguf_get_str(f, "no.such.key"));
    assert_int_equal(gguf_get_uint(f, "t.u64", &u), 0); assert_true(u == (1ull << 63) + 5);
    assert_int_equal(gguf_get_int(f, "t.u64", &s), -1); /* does not fit in i64 */
    assert_int_equal(gguf_get_int(f, "t.i64", &s), 0);  assert_true(s == -(1ll << 62));
    assert_int_equal(gguf_get_float(f, "t.f64", &d), 0); assert_true(d == 3.25);
    assert_int_equal(gguf_get_f32(f, "t.f64", &fl), -1);
    assert_int_equal(gguf_get_u32(f, "t.u32b", &u32), 0); assert_int_equal(u32, 7);

    for (int t = 0; t < GGUF_TYPE_COUNT; t++) {
        if (t == GGUF_TYPE_STRING || t == GGUF_TYPE_ARRAY) continue;
        uint8_t data[5 * 8];
        fill_random(data, sizeof data, (uint32_t)t + 100);
        char key[64];
        snprintf(key, sizeof key, "arr.%s", gguf_type_name((gguf_type)t));
        int64_t i = gguf_find_key(f, key);
        assert_true(i >= 0);
        assert_string_equal(gguf_kv_key(f, i), key);
        assert_int_equal(gguf_kv_type(f, i), GGUF_TYPE_ARRAY);
        assert_int_equal(gguf_kv_arr_type(f, i), t);
        assert_int_equal(gguf_kv_arr_n(f, i), 5);
        assert_memory_equal(gguf_kv_arr_data(f, i), data, 5 * gguf_type_size((gguf_type)t));
    }
    int64_t e = gguf_find_key(f, "arr.empty");
    assert_int_equal(gguf_kv_arr_type(f, e), GGUF_TYPE_UINT32);
    assert_int_equal(gguf_kv_arr_n(f, e), 0);
    int64_t si = gguf_find_key(f, "arr.strs");
    assert_int_equal(gguf_kv_arr_type(f, si), GGUF_TYPE_STRING);
    assert_int_equal(gguf_kv_arr_n(f, si), 4);
    assert_null(gguf_kv_arr_data(f, si));
    for (uint64_t j = 0; j < 4; j++) assert_string_equal(gguf_kv_arr_str(f, si, j), STRS[j]);
    assert_null(gguf_kv_arr_str(f, si, 4));
    int64_t es = gguf_find_key(f, "arr.empty_strs");
    assert_int_equal(gguf_kv_arr_type(f, es), GGUF_TYPE_STRING);
    assert_int_equal(gguf_kv_arr_n(f, es), 0);

    /* tensors: offsets are the running padded sum, the alias shares tensor 0 */
    assert_int_equal(gguf_n_tensors(f), N_TENSORS + 1);
    assert_int_equal(gguf_data_offset(f) % align, 0);
    uint64_t run = 0;
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tspec *ts = &TENSORS[i];
        const gguf_tensor *t = gguf_tensor_at(f, (int64_t)i);
        assert_non_null(t);
        assert_ptr_equal(gguf_find_tensor(f, ts->name), t);
        assert_string_equal(t->name, ts->name);
        assert_int_equal(t->type, ts->type);
        assert_int_equal(t->n_dims, ts->n_dims);
        for (int k = 0; k < 4; k++) assert_int_equal(t->ne[k], ts->ne[k]);
        assert_int_equal(t->size, sizes[i]);
        assert_int_equal(t->offset, run);
        assert_ptr_equal(t->data, gguf_base(f) + gguf_data_offset(f) + t->offset);
        assert_memory_equal(t->data, payloads[i], sizes[i]);
        run += pad32(sizes[i], align);
    }
    /* trailing padding of the last payload is present */
    assert_int_equal(gguf_file_size(f), gguf_data_offset(f) + run);
    const gguf_tensor *a = gguf_find_tensor(f, "tok_embd.flat");
    assert_non_null(a);
    assert_int_equal(a->offset, 0);
    assert_int_equal(a->n_dims, 1);
    assert_int_equal(a->ne[0], 24);
    assert_int_equal(a->ne[1], 1);
    assert_ptr_equal(a->data, gguf_tensor_at(f, 0)->data);
    assert_null(gguf_find_tensor(f, "absent"));
    assert_null(gguf_tensor_at(f, (int64_t)N_TENSORS + 1));
}

static void test_round_trip_memory(void **state)
{
    (void)state;
    uint8_t *payloads[N_TENSORS];
    size_t sizes[N_TENSORS];
    gguf_writer *w = gguf_writer_new();
    build_full(w, payloads, sizes);
    uint8_t *buf;
    size_t n;
    char err[512];
    assert_int_equal(gguf_writer_to_memory(w, &buf, &n, err, sizeof err), 0);
    gguf_file *f = gguf_open_memory(buf, n, "rt", err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_int_equal(gguf_find_key(f, "general.alignment"), -1); /* default: no key */
    check_full(f, payloads, sizes, GGUF_DEFAULT_ALIGNMENT);
    gguf_close(f);
    free(buf);
    gguf_writer_free(w);
    for (size_t i = 0; i < N_TENSORS; i++) free(payloads[i]);
}

static void test_round_trip_alignment_64_file(void **state)
{
    (void)state;
    uint8_t *payloads[N_TENSORS];
    size_t sizes[N_TENSORS];
    gguf_writer *w = gguf_writer_new();
    gguf_writer_set_alignment(w, 64, false);
    build_full(w, payloads, sizes);
    char *dir = make_scratch_dir();
    assert_non_null(dir);
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/rt.gguf", dir);
    assert_int_equal(gguf_writer_write(w, path, err, sizeof err), 0);
    /* never overwrite, never leave a temporary behind */
    assert_int_equal(gguf_writer_write(w, path, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "exists"));
    gguf_file *f = gguf_open(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    uint32_t a;
    assert_int_equal(gguf_get_u32(f, "general.alignment", &a), 0);
    assert_int_equal(a, 64);
    check_full(f, payloads, sizes, 64);
    assert_string_equal(gguf_path(f), path);
    gguf_close(f);
    DIR *dh = opendir(dir);
    int entries = 0;
    for (struct dirent *de; (de = readdir(dh));)
        if (de->d_name[0] != '.') entries++;
    closedir(dh);
    assert_int_equal(entries, 1);
    unlink(path);
    rmdir(dir);
    free(dir);
    gguf_writer_free(w);
    for (size_t i = 0; i < N_TENSORS; i++) free(payloads[i]);
}

static void test_writer_refusals(void **state)
{
    (void)state;
    char err[512];
    uint8_t *buf;
    size_t n;
    int64_t ne[2] = { 32, 2 };
    uint8_t data[256] = {0};

    gguf_writer *w = gguf_writer_new();
    assert_int_equal(gguf_writer_add_u32(w, "k", 1), 0);
    assert_int_equal(gguf_writer_add_u32(w, "k", 2), -1);
    assert_int_equal(gguf_writer_to_memory(w, &buf, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "duplicate key"));
    gguf_writer_free(w);

    const struct { const char *name; int type; uint32_t nd; int64_t ne0; size_t bytes; const char *msg; } bad[] = {
        { "a_name_that_is_exactly_sixty_four_bytes_long_xxxxxxxxxxxxxxxxxxx", 0, 2, 32, 256, "shorter" },
        { "t", 4, 2, 32, 256, "unknown" },
        { "t", 99, 2, 32, 256, "unknown" },
        { "t", 0, 0, 32, 256, "n_dims" },
        { "t", 0, 5, 32, 256, "n_dims" },
        { "t", 2, 2, 33, 36, "block size" },
        { "t", 0, 2, 32, 255, "bytes of data" },
        { "t", 0, 2, 0, 0, "dimension" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        w = gguf_writer_new();
        int64_t e[5] = { bad[i].ne0, 2, 1, 1, 1 };
        assert_int_equal(gguf_writer_add_tensor(w, bad[i].name, bad[i].type, bad[i].nd, e, data,
                                                bad[i].bytes), -1);
        assert_int_equal(gguf_writer_to_memory(w, &buf, &n, err, sizeof err), -1);
        if (!strstr(err, bad[i].msg)) fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].msg);
        gguf_writer_free(w);
    }

    w = gguf_writer_new();
    assert_int_equal(gguf_writer_add_tensor(w, "t", 0, 2, ne, data, 256), 0);
    assert_int_equal(gguf_writer_add_tensor(w, "t", 0, 2, ne, data, 256), -1);
    gguf_writer_free(w);

    w = gguf_writer_new();
    assert_int_equal(gguf_writer_add_tensor(w, "t", 0, 2, ne, data, 256), 0);
    int64_t small[1] = { 32 };
    assert_int_equal(gguf_writer_add_tensor_alias(w, "u", 0, 1, small, 0), -1); /* 128 != 256 bytes */
    gguf_writer_free(w);

    w = gguf_writer_new();
    gguf_writer_set_alignment(w, 3, false);
    assert_int_equal(gguf_writer_to_memory(w, &buf, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "power of two"));
    gguf_writer_free(w);
}

/* ------------------------------------------------------------ real files */

static void open_one(const char *path, int64_t min_tensors)
{
    char err[512];
    gguf_file *f = gguf_open(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_true(gguf_n_tensors(f) >= min_tensors);
    assert_true(gguf_n_tensors(f) < 100000);
    assert_true(gguf_n_kv(f) > 0);
    /* models and vocabularies name an architecture; llama.cpp's imatrix files a type */
    assert_true(gguf_get_str(f, "general.architecture") || gguf_get_str(f, "general.type"));
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        assert_ptr_equal(gguf_find_tensor(f, t->name), t);
        assert_true(gguf_data_offset(f) + t->offset + t->size <= gguf_file_size(f));
    }
    gguf_close(f);
}

static void open_all_in(const char *rel, const char *suffix, int64_t min_tensors)
{
    char dirp[4096];
    DIR *d = opendir(shared_path(dirp, sizeof dirp, rel));
    if (!d) return;
    int seen = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name), sl = strlen(suffix);
        if (l < sl || strcmp(de->d_name + l - sl, suffix) != 0) continue;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dirp, de->d_name);
        open_one(path, min_tensors);
        seen++;
    }
    closedir(d);
    assert_true(seen > 0);
}

static void test_real_models(void **state)
{
    (void)state;
    open_one(SHIPPED_MODEL, 1);
    char path[4096];
    if (!shared_part(path, sizeof path, "models/stories260K/stories260K.gguf")) return;
    open_all_in("models/stories260K", ".gguf", 1);
    open_all_in("models/tinymoe", ".gguf", 1);
    const char *archs[] = { "olmoe", "qwen2", "qwen3", "qwen3moe" };
    for (size_t i = 0; i < 4; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "models/archs/%s", archs[i]);
        if (have_shared(rel)) open_all_in(rel, ".gguf", 1);
    }
}

/* The seed's imatrix files: shared payloads, and no padding after the last
 * payload (the seed writes none), which the reader must accept. */
static void test_real_imatrix(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vectors/imatrix");
    char dirp[4096];
    DIR *d = opendir(shared_path(dirp, sizeof dirp, "vectors/imatrix"));
    assert_non_null(d);
    int seen = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        char rel[512];
        snprintf(rel, sizeof rel, "vectors/imatrix/%s/out.gguf", de->d_name);
        if (!have_shared(rel)) continue;
        char path[4096], err[512];
        gguf_file *f = gguf_open(shared_path(path, sizeof path, rel), err, sizeof err);
        if (!f) fail_msg("%s", err);
        assert_true(gguf_n_tensors(f) > 0);
        gguf_close(f);
        seen++;
    }
    closedir(d);
    open_all_in("vectors/imatrix/llama.cpp-written", ".gguf", 1);
    assert_true(seen > 0);
}

static void test_real_vocab(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("vocab");
    open_all_in("vocab", ".gguf", 0);
    char p[4096], err[512];
    SKIP_UNLESS_SHARED("vocab/ggml-vocab-llama-spm.gguf");
    gguf_file *f = gguf_open(shared_path(p, sizeof p, "vocab/ggml-vocab-llama-spm.gguf"), err, sizeof err);
    if (!f) fail_msg("%s", err);
    int64_t i = gguf_find_key(f, "tokenizer.ggml.tokens");
    assert_true(i >= 0);
    assert_int_equal(gguf_kv_arr_type(f, i), GGUF_TYPE_STRING);
    assert_int_equal(gguf_kv_arr_n(f, i), 32000);
    assert_string_equal(gguf_kv_arr_str(f, i, 0), "<unk>");
    gguf_close(f);
}

/* A real model's F32 tensors hold exactly the bytes at data_offset + offset:
 * each checked against a plain read of the file, independent of the
 * mapping; the shipped model's, and stories260K's where ../shared has it. */
static void f32_bytes_exact(const char *p, const char *arch)
{
    char err[512];
    gguf_file *f = gguf_open(p, err, sizeof err);
    if (!f) fail_msg("%s", err);
    size_t n;
    uint8_t *raw = slurp(p, &n);
    assert_non_null(raw);
    assert_int_equal(n, gguf_file_size(f));
    assert_string_equal(gguf_get_str(f, "general.architecture"), arch);
    int f32s = 0;
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->type != GGML_TYPE_F32) continue;
        assert_int_equal(t->size, (uint64_t)t->n_elements * 4);
        assert_memory_equal(t->data, raw + gguf_data_offset(f) + t->offset, t->size);
        float v;
        for (int64_t k = 0; k < t->n_elements; k++) {
            memcpy(&v, t->data + 4 * k, 4);
            assert_true(v == v && v < 1e6f && v > -1e6f); /* weights: finite, modest */
        }
        f32s++;
    }
    assert_true(f32s > 0);
    free(raw);
    gguf_close(f);
}

static void test_real_f32(void **state)
{
    (void)state;
    f32_bytes_exact(SHIPPED_MODEL, "glm4moe");
    char p[4096];
    if (shared_part(p, sizeof p, "models/stories260K/stories260K.gguf")) f32_bytes_exact(p, "llama");
}


/* --------------------------------------------------------------- hostile */

/* A small valid file: a string, a string array, a numeric array, an explicit
 * general.alignment and three tensors. The last payload (q8_0, 544 bytes) is
 * a multiple of the alignment, so the file ends exactly where the data does
 * and cutting even its last byte must be refused. */
static uint8_t *make_fixture(size_t *n)
{
    gguf_writer *w = gguf_writer_new();
    gguf_writer_set_alignment(w, 32, true);
    static const char *const toks[] = { "a", "bb", "ccc" };
    int32_t ints[2] = { 1, -2 };
    assert_int_equal(gguf_writer_add_str(w, "general.architecture", "llama"), 0);
    assert_int_equal(gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, 3), 0);
    assert_int_equal(gguf_writer_add_arr(w, "key.ints", GGUF_TYPE_INT32, ints, 2), 0);
    assert_int_equal(gguf_writer_add_u32(w, "key.blk1", 1), 0);
    uint8_t data[544];
    fill_random(data, sizeof data, 42);
    int64_t a[1] = { 8 }, b[1] = { 16 }, c[2] = { 32, 16 };
    assert_int_equal(gguf_writer_add_tensor(w, "tens.aaaa", GGML_TYPE_F32, 1, a, data, 32), 0);
    assert_int_equal(gguf_writer_add_tensor(w, "tens.bbbb", GGML_TYPE_F32, 1, b, data, 64), 1);
    assert_int_equal(gguf_writer_add_tensor(w, "tens.cccc", GGML_TYPE_Q8_0, 2, c, data, 544), 2);
    uint8_t *buf;
    char err[512];
    assert_int_equal(gguf_writer_to_memory(w, &buf, n, err, sizeof err), 0);
    gguf_writer_free(w);
    return buf;
}

/* Offset of the first occurrence of a GGUF string's bytes (after its length). */
static size_t find_str(const uint8_t *buf, size_t n, const char *s)
{
    size_t l = strlen(s);
    for (size_t i = 8; i + l <= n; i++) {
        uint64_t len;
        memcpy(&len, buf + i - 8, 8);
        if (len == l && memcmp(buf + i, s, l) == 0) return i;
    }
    fail_msg("'%s' not in the fixture", s);
    return 0;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Field offsets in a tensor info (all tensor infos of the fixture have
 * 9-byte names; c has two dims). */
static size_t ti_ndims(const uint8_t *b, size_t n, const char *name) { return find_str(b, n, name) + 9; }
static size_t ti_dim(const uint8_t *b, size_t n, const char *name, int d) { return ti_ndims(b, n, name) + 4 + 8 * (size_t)d; }
static size_t ti_type(const uint8_t *b, size_t n, const char *name)
{
    size_t nd = ti_ndims(b, n, name);
    uint32_t k;
    memcpy(&k, b + nd, 4);
    return nd + 4 + 8 * k;
}
static size_t ti_offset(const uint8_t *b, size_t n, const char *name) { return ti_type(b, n, name) + 4; }

static void expect_refused(const uint8_t *buf, size_t n, const char *what, const char *needle)
{
    char err[512] = "";
    gguf_file *f = gguf_open_memory(buf, n, "fixture", err, sizeof err);
    if (f) {
        gguf_close(f);
        fail_msg("%s: accepted", what);
    }
    if (strncmp(err, "fixture: ", 9) != 0 || strchr(err, '\n'))
        fail_msg("%s: message is not one line naming the file: '%s'", what, err);
    if (!strstr(err, needle)) fail_msg("%s: '%s' does not mention '%s'", what, err, needle);
}

static void test_hostile_truncation(void **state)
{
    (void)state;
    size_t n;
    uint8_t *full = make_fixture(&n);
    char err[512];
    gguf_file *f = gguf_open_memory(full, n, "fixture", err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_int_equal(gguf_file_size(f), gguf_data_offset(f) + 32 + 64 + 544);
    gguf_close(f);
    /* each prefix in its own exact-size allocation, so ASan sees any overread;
     * a cut shows up as a short read, as a count the rest cannot hold, or as
     * tensor data past the end */
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, full, cut);
        char what[64];
        snprintf(what, sizeof what, "cut at %zu of %zu", cut, n);
        expect_refused(p, cut, what, "");
        f = gguf_open_memory(p, cut, "fixture", err, sizeof err);
        assert_null(f);
        if (!strstr(err, "truncated") && !strstr(err, "absurd") && !strstr(err, "past the end"))
            fail_msg("%s: '%s' does not say the file is cut short", what, err);
        free(p);
    }
    free(full);
}

typedef void (*mutator)(uint8_t *b, size_t n);

#define MUT(NAME, BODY) static void NAME(uint8_t *b, size_t n) { (void)n; BODY; }
MUT(m_magic, b[0] = 'X')
MUT(m_version1, put32(b + 4, 1))
MUT(m_version4, put32(b + 4, 4))
MUT(m_ntensors_huge, put64(b + 8, 1ull << 60))
MUT(m_nkv_huge, put64(b + 16, 1ull << 60))
MUT(m_strlen_huge, put64(b + find_str(b, n, "llama") - 8, 1ull << 62))
MUT(m_keylen_huge, put64(b + 24, UINT64_MAX))
MUT(m_strarr_huge, put64(b + find_str(b, n, "tokenizer.ggml.tokens") + 21 + 8, 1ull << 61))
MUT(m_numarr_huge, put64(b + find_str(b, n, "key.ints") + 8 + 8, 1ull << 62))
MUT(m_nested, put32(b + find_str(b, n, "key.ints") + 8 + 4, GGUF_TYPE_ARRAY))
MUT(m_keytype13, put32(b + find_str(b, n, "key.blk1") + 8, 13))
/* a key holding a newline, then a bad type: the message quoting the key
 * must stay one line (found by fuzz_gguf) */
MUT(m_key_newline, b[find_str(b, n, "key.blk1") + 3] = '\n'; put32(b + find_str(b, n, "key\nblk1") + 8, 99))
MUT(m_keytype255, put32(b + find_str(b, n, "key.blk1") + 8, 255))
MUT(m_ndims0, put32(b + ti_ndims(b, n, "tens.aaaa"), 0))
MUT(m_ndims5, put32(b + ti_ndims(b, n, "tens.cccc"), 5))
MUT(m_dim0, put64(b + ti_dim(b, n, "tens.cccc", 1), 0))
MUT(m_dim_negative, put64(b + ti_dim(b, n, "tens.cccc", 1), (uint64_t)-16))
MUT(m_nel_overflow, put64(b + ti_dim(b, n, "tens.cccc", 1), 1ull << 62))
MUT(m_bytes_overflow, put64(b + ti_dim(b, n, "tens.aaaa", 0), 1ull << 62))
MUT(m_type4, put32(b + ti_type(b, n, "tens.bbbb"), 4))
MUT(m_type31, put32(b + ti_type(b, n, "tens.bbbb"), 31))
MUT(m_type99, put32(b + ti_type(b, n, "tens.bbbb"), 99))
MUT(m_type_neg, put32(b + ti_type(b, n, "tens.bbbb"), 0xFFFFFFFFu))
MUT(m_block, put64(b + ti_dim(b, n, "tens.cccc", 0), 33))
MUT(m_unaligned, put64(b + ti_offset(b, n, "tens.bbbb"), 33))
MUT(m_past_eof, put64(b + ti_offset(b, n, "tens.cccc"), 1u << 20))
MUT(m_offset_huge, put64(b + ti_offset(b, n, "tens.cccc"), UINT64_MAX - 31))
MUT(m_overlap, put64(b + ti_offset(b, n, "tens.cccc"), 64))
MUT(m_overlap_start, put64(b + ti_offset(b, n, "tens.bbbb"), 0))
MUT(m_name64, put64(b + find_str(b, n, "tens.aaaa") - 8, 64))
MUT(m_name_nul, b[find_str(b, n, "tens.aaaa") + 2] = 0)
MUT(m_align0, put32(b + find_str(b, n, "general.alignment") + 17 + 4, 0))
MUT(m_align3, put32(b + find_str(b, n, "general.alignment") + 17 + 4, 3))
MUT(m_align_type, put32(b + find_str(b, n, "general.alignment") + 17, GGUF_TYPE_INT32))
MUT(m_dup_name, memcpy(b + find_str(b, n, "tens.bbbb"), "tens.aaaa", 9))
MUT(m_dup_key, memcpy(b + find_str(b, n, "key.blk1"), "key.ints", 8))

static void test_hostile_fields(void **state)
{
    (void)state;
    static const struct { const char *what; mutator m; const char *needle; } cases[] = {
        { "magic", m_magic, "bad magic" },
        { "version 1", m_version1, "version 1" },
        { "version 4", m_version4, "version 4" },
        { "n_tensors huge", m_ntensors_huge, "n_tensors" },
        { "n_kv huge", m_nkv_huge, "n_kv" },
        { "string length huge", m_strlen_huge, "string of" },
        { "key length huge", m_keylen_huge, "string of" },
        { "string array huge", m_strarr_huge, "strings" },
        { "numeric array huge", m_numarr_huge, "array of" },
        { "nested array", m_nested, "nested" },
        { "key type 13", m_keytype13, "unknown value type 13" },
        { "newline in a key", m_key_newline, "key 'key?blk1'" },
        { "key type 255", m_keytype255, "unknown value type 255" },
        { "n_dims 0", m_ndims0, "n_dims 0" },
        { "n_dims 5", m_ndims5, "n_dims 5" },
        { "dim 0", m_dim0, "dimension 1" },
        { "dim negative", m_dim_negative, "dimension 1" },
        { "element count overflow", m_nel_overflow, "overflows" },
        { "byte size overflow", m_bytes_overflow, "overflows" },
        { "type id 4", m_type4, "type id 4" },
        { "type id 31", m_type31, "type id 31" },
        { "type id 99", m_type99, "type id 99" },
        { "type id 2^32-1", m_type_neg, "type id" },
        { "ne0 off block", m_block, "block size" },
        { "offset unaligned", m_unaligned, "not aligned" },
        { "offset past EOF", m_past_eof, "past the end" },
        { "offset near 2^64", m_offset_huge, "past the end" },
        { "partial overlap", m_overlap, "overlap" },
        { "overlap at same start", m_overlap_start, "overlap" },
        { "name 64 bytes", m_name64, "shorter than 64" },
        { "name with NUL", m_name_nul, "NUL" },
        { "alignment 0", m_align0, "power of two" },
        { "alignment 3", m_align3, "power of two" },
        { "alignment not u32", m_align_type, "must be u32" },
        { "duplicate tensor name", m_dup_name, "duplicate tensor name 'tens.aaaa'" },
        { "duplicate key", m_dup_key, "duplicate key 'key.ints'" },
    };
    size_t n;
    uint8_t *full = make_fixture(&n);
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, full, n);
        cases[i].m(b, n);
        assert_memory_not_equal(b, full, n); /* the mutation did something */
        expect_refused(b, n, cases[i].what, cases[i].needle);
    }
    free(b);
    free(full);
}

/* Identical (offset, size) is a shared payload, not an overlap. */
static void test_shared_payload_accepted(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = make_fixture(&n);
    /* make tens.bbbb an 8-element f32 at tens.aaaa's offset 0 */
    put64(b + ti_dim(b, n, "tens.bbbb", 0), 8);
    put64(b + ti_offset(b, n, "tens.bbbb"), 0);
    char err[512];
    gguf_file *f = gguf_open_memory(b, n, "fixture", err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_ptr_equal(gguf_find_tensor(f, "tens.aaaa")->data, gguf_find_tensor(f, "tens.bbbb")->data);
    gguf_close(f);
    free(b);
}

static void test_open_errors(void **state)
{
    (void)state;
    char err[512];
    assert_null(gguf_open("/nonexistent/strata.gguf", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/strata.gguf: "));
    char *dir = make_scratch_dir();
    assert_non_null(dir);
    assert_null(gguf_open(dir, err, sizeof err));
    assert_non_null(strstr(err, dir));
    char path[4200];
    snprintf(path, sizeof path, "%s/empty.gguf", dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fclose(fp);
    assert_null(gguf_open(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "truncated"));
    unlink(path);
    rmdir(dir);
    free(dir);
    /* a tiny err buffer is never overrun */
    char tiny[8];
    assert_null(gguf_open_memory("GGUF", 4, "a-long-name", tiny, sizeof tiny));
    assert_int_equal(strlen(tiny), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_memory),
        cmocka_unit_test(test_round_trip_alignment_64_file),
        cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_real_models),
        cmocka_unit_test(test_real_imatrix),
        cmocka_unit_test(test_real_vocab),
        cmocka_unit_test(test_real_f32),
        cmocka_unit_test(test_hostile_truncation),
        cmocka_unit_test(test_hostile_fields),
        cmocka_unit_test(test_shared_payload_accepted),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
