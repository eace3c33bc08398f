/* radgram.h: RADGRAM2 calibration Gram files: the reader (header and
 * diagonal only) and the writer (`strata calibrate`).
 *
 * Layout (little-endian): "RADGRAM2", u32 k, u32 rank, u64 rows, u32 domain,
 * a u32 pad word (ignored), then k*k f32 row-major. Only the diagonal is an
 * imatrix's business, so the reader never holds the k*k matrix: memory is
 * O(k) per file (small files are read whole, under RADGRAM_WHOLE_MAX bytes;
 * larger ones one pread per diagonal element).
 *
 * Contract: every function validates the header against the real size before
 * touching the payload (a hostile k can never cause a large read or an
 * allocation beyond k floats of a file that really holds k*k). Failures
 * return a radgram_error and write ONE line "<name>: <what>" into err, worded
 * exactly as seeds/grams-to-imatrix.py words it; the caller prefixes
 * "REFUSED <keyword> ". A NaN or Inf on the diagonal is refused
 * (RADGRAM_NONFINITE): it is a corrupt recording, and the seed let it through
 * (see seeds/README.md). */
#ifndef STRATA_RADGRAM_H
#define STRATA_RADGRAM_H

#include <stddef.h>
#include <stdint.h>

#define RADGRAM_MAGIC "RADGRAM2"
#define RADGRAM_HEADER_BYTES 32
#define RADGRAM_WHOLE_MAX (1u << 20)

typedef enum radgram_error {
    RADGRAM_OK = 0,
    RADGRAM_UNREADABLE,
    RADGRAM_SHORT,
    RADGRAM_NOT_RADGRAM2,
    RADGRAM_NONFINITE,
    RADGRAM_NOMEM
} radgram_error;

typedef struct radgram_header {
    uint32_t k;
    uint32_t rank;
    uint64_t rows;
    uint32_t domain; /* 0 = the model's own activations; else a rotated basis */
    uint32_t pad;
} radgram_header;

/* The refusal keyword for an error ("SHORT", "NOT_RADGRAM2", ...). */
const char *radgram_keyword(radgram_error e);

/* Checks the first n bytes of a file whose whole size is file_size: header
 * length, magic, k > 0, and file_size == 32 + 4*k*k. */
radgram_error radgram_parse_header(const void *buf, size_t n, uint64_t file_size,
                                   const char *name, radgram_header *h,
                                   char *err, size_t errlen);

/* A whole file already in memory (not copied). On success *diag is a
 * malloc'd array of h->k floats that the caller frees. */
radgram_error radgram_parse_memory(const void *data, size_t size, const char *name,
                                   radgram_header *h, float **diag,
                                   char *err, size_t errlen);

/* Opens path and reads the header and the diagonal only. */
radgram_error radgram_read(const char *path, radgram_header *h, float **diag,
                           char *err, size_t errlen);

/* The whole k x k matrix of a gram file (its size and magic checked first;
 * *m malloc'd, freed by the caller; a NaN or Inf anywhere is refused):
 * for GPTQ, which needs every element (iq3pack build --grams). */
radgram_error radgram_read_matrix(const char *path, radgram_header *h, float **m, char *err, size_t errlen);

/* An identity of a recording folder for comparing builds (iq3pack's shards):
 * SHA-256, as 64 hex digits, over its gram files' names (gram.r*, in name
 * order) and their 32-byte headers (k, rank, rows): recordings of other
 * texts or models differ in rows or k. 0, or -1 with one line in err. */
int radgram_dir_id(const char *dir, char hex[65], char *err, size_t errlen);

/* Writes a gram file: the header (h->pad written 0), then the k x k matrix
 * given as doubles (its upper triangle, row-major; the lower is mirrored),
 * rounded to f32. Published whole (fileio.h: a temporary, never over an
 * existing file). 0, or -1 with one line in err. */
int radgram_write(const char *path, const radgram_header *h, const double *upper, char *err, size_t errlen);

#endif
