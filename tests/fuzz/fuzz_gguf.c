/* fuzz_gguf.c: libFuzzer target for the GGUF reader. Parses the input as a
 * GGUF and touches everything an accessor can return, so an entry that the
 * reader accepted but left dangling (a string, an array, tensor data outside
 * the buffer) is read and caught by ASan. */
#include "formats/gguf.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    gguf_file *f = gguf_open_memory(data, size, "fuzz", err, sizeof err);
    if (!f) {
        /* a refusal is one line that names the input */
        if (strncmp(err, "fuzz: ", 6) != 0 || strchr(err, '\n')) __builtin_trap();
        return 0;
    }
    volatile uint64_t sink = gguf_version(f) + gguf_alignment(f) + gguf_data_offset(f);
    for (int64_t i = 0; i < gguf_n_kv(f); i++) {
        const char *k = gguf_kv_key(f, i);
        sink += strlen(k);
        if (gguf_find_key(f, k) != i) __builtin_trap();
        uint64_t u;
        int64_t s;
        double d;
        if (gguf_kv_u64(f, i, &u) == 0) sink += u;
        if (gguf_kv_i64(f, i, &s) == 0) sink += (uint64_t)s;
        if (gguf_kv_f64(f, i, &d) == 0) sink += d == d;
        const char *str = gguf_kv_str(f, i);
        if (str) sink += strlen(str);
        const uint8_t *raw = gguf_kv_raw(f, i);
        if (raw && gguf_kv_type(f, i) != GGUF_TYPE_STRING)
            for (size_t b = 0; b < gguf_type_size(gguf_kv_type(f, i)); b++) sink += raw[b];
        if (gguf_kv_type(f, i) != GGUF_TYPE_ARRAY) continue;
        uint64_t n = gguf_kv_arr_n(f, i);
        if (gguf_kv_arr_type(f, i) == GGUF_TYPE_STRING) {
            for (uint64_t j = 0; j < n; j++) sink += strlen(gguf_kv_arr_str(f, i, j));
        } else {
            const uint8_t *a = gguf_kv_arr_data(f, i);
            size_t bytes = (size_t)n * gguf_type_size(gguf_kv_arr_type(f, i));
            if (bytes) sink += a[0] + a[bytes - 1];
        }
    }
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (gguf_find_tensor(f, t->name) != t) __builtin_trap();
        if (t->offset % gguf_alignment(f) != 0) __builtin_trap();
        sink += t->data[0] + t->data[t->size - 1]; /* size >= 1: every type has bytes */
    }
    (void)sink;
    gguf_close(f);
    return 0;
}
