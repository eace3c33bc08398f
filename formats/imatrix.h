/* imatrix.h: importance-matrix reader, for the quantizers.
 *
 * Reads the GGUF form in both name styles (the seed's "blk.L.ffn_down_exps"
 * and llama.cpp's "blk.L.ffn_down_exps.weight"), dense ([n] with [1] counts)
 * and per-expert ([n, n_expert] with [1, n_expert] counts), and llama.cpp's
 * legacy .dat form. The format is told by the magic, not the file name.
 *
 * Contract: importance = in_sum2 / count per expert (mean squared
 * activation), 1.0 where the count is 0 (nothing measured: no preference).
 * For .dat, importance = values / ncall, which is the same quantity. A file
 * that is inconsistent (sums without counts or the reverse, widths or expert
 * counts that disagree, non-f32 tensors, negative or non-finite counts, a
 * name twice, truncated records) is refused with ONE line
 * "<path>: <what is wrong>" in err and a NULL result. Nothing is kept mapped:
 * the imatrix owns plain arrays. */
#ifndef STRATA_IMATRIX_H
#define STRATA_IMATRIX_H

#include <stddef.h>
#include <stdint.h>

typedef enum imatrix_format { IMATRIX_FORMAT_GGUF = 0, IMATRIX_FORMAT_DAT = 1 } imatrix_format;

typedef struct imatrix_entry {
    char    *name;       /* weight name without ".weight" */
    int64_t  n_cols;     /* the weight's input width (for .dat: all values) */
    int64_t  n_expert;   /* 1 for a dense entry and for every .dat entry */
    float   *importance; /* n_expert * n_cols, expert-major */
    float   *counts;     /* n_expert: rows per expert (GGUF) or ncall (.dat) */
} imatrix_entry;

typedef struct imatrix {
    imatrix_format format;
    int64_t        n_entries;
    imatrix_entry *entries;     /* in file order */
    uint32_t       chunk_size;  /* 0 when the file does not say (.dat) */
    uint32_t       chunk_count; /* .dat: its last_chunk */
    char         **datasets;
    size_t         n_datasets;
} imatrix;

imatrix *imatrix_load(const char *path, char *err, size_t errlen);
/* Same on a caller-owned buffer; name is used in messages. */
imatrix *imatrix_load_memory(const void *data, size_t size, const char *name,
                             char *err, size_t errlen);
void imatrix_free(imatrix *m);

/* The entry for a weight, by either name style ("x" or "x.weight"). Unfused
 * expert names (ffn_gate_exps, ffn_up_exps) fall back to the seed's fused
 * ffn_gate_up_exps entry. NULL if absent. */
const imatrix_entry *imatrix_find(const imatrix *m, const char *weight_name);

#endif
