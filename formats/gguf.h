/* gguf.h: GGUF v2/v3 reader (mmap, trusts nothing) and writer.
 *
 * Reader contract:
 *  - gguf_open() maps the file and validates the whole header before
 *    returning: magic, version 2 or 3, every count against the bytes that
 *    could hold it (a hostile header never causes a large allocation), every
 *    string and array inside the file, key types known, tensor names < 64
 *    bytes and unique, n_dims 1..4, dims >= 1 whose product does not
 *    overflow, type ids known to ggml_types.h, offsets aligned to
 *    general.alignment, data inside the file, and no two tensors partly
 *    overlapping (two infos with the same offset and size are legal: shared
 *    payloads). On failure it returns NULL and writes ONE line into err:
 *    "<path>: <what is wrong>".
 *  - Strings returned by the reader are NUL-terminated copies owned by the
 *    gguf_file; pointers stay valid until gguf_close().
 *  - Typed getters return 0 on success, -1 when the key is missing or has a
 *    different type (no silent conversions except gguf_get_uint / gguf_get_int,
 *    which accept any integer type whose value fits).
 *
 * Writer contract:
 *  - Collects KVs and tensors in memory order of insertion, then writes the
 *    header, pads to the alignment, and writes each tensor's data at the
 *    running padded offset with trailing padding present: exactly the layout
 *    ggml's own reader requires. A tensor added with gguf_writer_add_tensor_alias
 *    reuses an earlier tensor's payload offset (only when a caller asks).
 *  - gguf_writer_write() writes to "<path>.tmp.<pid>" and renames over nothing:
 *    it refuses an existing path, and leaves no file behind on failure.
 *  - Every add/set call validates what it is given as the reader would. The
 *    first refused call is remembered: serialising then fails with its
 *    message, so an ignored return value cannot yield a file that silently
 *    lacks a key or a tensor. */
#ifndef STRATA_GGUF_H
#define STRATA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_NAME_MAX 64 /* names must be shorter than this (ggml's GGML_MAX_NAME) */

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12, GGUF_TYPE_COUNT = 13
} gguf_type;

const char *gguf_type_name(gguf_type t);
size_t gguf_type_size(gguf_type t); /* 0 for STRING and ARRAY */

/* ---- reader ---- */

typedef struct gguf_tensor {
    const char    *name;
    uint32_t       n_dims;
    int64_t        ne[GGUF_MAX_DIMS]; /* unused dims are 1 */
    int            type;              /* ggml type id */
    uint64_t       offset;            /* relative to the data section */
    uint64_t       size;              /* bytes of payload (ggml_row_bytes * rows) */
    int64_t        n_elements;
    const uint8_t *data;              /* into the mapping */
} gguf_tensor;

typedef struct gguf_file gguf_file;

gguf_file *gguf_open(const char *path, char *err, size_t errlen);
/* Parses a caller-owned buffer (not copied; must outlive the gguf_file).
 * name is used in error messages. For fuzzing and tests. */
gguf_file *gguf_open_memory(const void *data, size_t size, const char *name,
                            char *err, size_t errlen);
void gguf_close(gguf_file *f);

uint32_t    gguf_version(const gguf_file *f);
uint32_t    gguf_alignment(const gguf_file *f);
uint64_t    gguf_data_offset(const gguf_file *f); /* file offset of the data section */
uint64_t    gguf_file_size(const gguf_file *f);
const char *gguf_path(const gguf_file *f);
const uint8_t *gguf_base(const gguf_file *f);    /* start of the whole mapping */

int64_t     gguf_n_kv(const gguf_file *f);
int64_t     gguf_find_key(const gguf_file *f, const char *key); /* -1 if absent */
const char *gguf_kv_key(const gguf_file *f, int64_t i);
gguf_type   gguf_kv_type(const gguf_file *f, int64_t i);
gguf_type   gguf_kv_arr_type(const gguf_file *f, int64_t i);  /* element type of an array */
uint64_t    gguf_kv_arr_n(const gguf_file *f, int64_t i);
/* Raw little-endian element data of a numeric/bool array (NULL for strings);
 * points into the file, so it may be unaligned: memcpy elements out. */
const void *gguf_kv_arr_data(const gguf_file *f, int64_t i);
const char *gguf_kv_arr_str(const gguf_file *f, int64_t i, uint64_t j);
/* Scalars by index; return 0 or -1 on a type mismatch. */
int gguf_kv_u64(const gguf_file *f, int64_t i, uint64_t *out); /* any int type, value >= 0 */
int gguf_kv_i64(const gguf_file *f, int64_t i, int64_t *out);  /* any int type that fits */
int gguf_kv_f64(const gguf_file *f, int64_t i, double *out);   /* f32 or f64 */
const char *gguf_kv_str(const gguf_file *f, int64_t i);        /* NULL unless STRING */
/* Pointer to the scalar's raw bytes (its own type, unaligned), for printing;
 * the string for STRING, NULL for ARRAY. */
const void *gguf_kv_raw(const gguf_file *f, int64_t i);

/* By key. */
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out); /* exactly UINT32 */
int gguf_get_i32(const gguf_file *f, const char *key, int32_t *out);  /* exactly INT32 */
int gguf_get_f32(const gguf_file *f, const char *key, float *out);    /* exactly FLOAT32 */
int gguf_get_bool(const gguf_file *f, const char *key, bool *out);
int gguf_get_uint(const gguf_file *f, const char *key, uint64_t *out); /* any int type */
int gguf_get_int(const gguf_file *f, const char *key, int64_t *out);   /* any int type */
int gguf_get_float(const gguf_file *f, const char *key, double *out);  /* f32 or f64 */
const char *gguf_get_str(const gguf_file *f, const char *key);        /* NULL if absent */
/* The integers of array key `key` (int8/16/32, uint8/16/32 or bool
 * elements), at most cap of them, into out: how many the array holds, or -1
 * when the key is absent or not such an array. */
int64_t gguf_get_int_array(const gguf_file *g, const char *key, int64_t *out, size_t cap);

int64_t gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, int64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name); /* NULL if absent */

/* ---- writer ---- */

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
/* Also writes general.alignment (u32) when it differs from the default, or
 * always when force_key is true. Call before adding tensors. */
void gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment, bool force_key);
void gguf_writer_set_version(gguf_writer *w, uint32_t version); /* 3 by default */

/* Scalars: val points at a value of the given type. STRING takes a const char *. */
int gguf_writer_add_kv(gguf_writer *w, const char *key, gguf_type type, const void *val);
int gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_add_str(gguf_writer *w, const char *key, const char *v);
int gguf_writer_add_arr(gguf_writer *w, const char *key, gguf_type elem, const void *data, uint64_t n);
int gguf_writer_add_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n);
/* Key/value i of f, copied as it is (any type; arrays of strings too). */
int gguf_writer_copy_kv(gguf_writer *w, const gguf_file *f, int64_t i);

/* Data is copied. Returns the tensor's index, or -1 (bad name, dims or size). */
int64_t gguf_writer_add_tensor(gguf_writer *w, const char *name, int type, uint32_t n_dims,
                               const int64_t *ne, const void *data, size_t nbytes);
/* A second tensor info over the payload of tensor `of` (same size required). */
int64_t gguf_writer_add_tensor_alias(gguf_writer *w, const char *name, int type, uint32_t n_dims,
                                     const int64_t *ne, int64_t of);

/* Serialise into a memory buffer (malloc'd; caller frees). */
int gguf_writer_to_memory(const gguf_writer *w, uint8_t **out, size_t *size, char *err, size_t errlen);
/* Atomic file write: refuses an existing path; no partial file on failure. */
int gguf_writer_write(const gguf_writer *w, const char *path, char *err, size_t errlen);

#endif
