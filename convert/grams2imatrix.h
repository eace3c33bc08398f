/* grams2imatrix.h: fold a RADGRAM2 calibration recording into an imatrix GGUF.
 *
 * Contract: behaves as seeds/grams-to-imatrix.py does, message for message:
 * the same files are picked by name, pooled grams SUM across ranks (rows
 * included), per-expert grams are a UNION, an expert under the own-gram floor
 * carries the pooled diagonal (its count never inherits), and the output GGUF
 * is byte-identical to the seed's. Notes, -v lines and the closing
 * "IMATRIX_OK ..." line go to `log`; a refusal writes "REFUSED <KEYWORD> ..."
 * there and returns 2, leaving no output file behind. Differences from the
 * seed, on purpose: a NaN/Inf on a diagonal is refused (NONFINITE); a chunk
 * size beyond u32 is refused (BAD_CHUNK_SIZE) instead of crashing; names or
 * expert indices beyond 64 bits are refused (BAD_NAME / TOO_LARGE).
 * With names = G2I_NAMES_LLAMA the file is what llama.cpp's imatrix writer
 * writes instead (".weight" names, general.type, no shared payloads).
 * Memory: O(k * n_expert) per layer; a k*k matrix is never held. */
#ifndef STRATA_GRAMS2IMATRIX_H
#define STRATA_GRAMS2IMATRIX_H

#include <stdbool.h>
#include <stdio.h>

/* Python ints are unbounded: rows sum past 2^64 and --min-rows may exceed any
 * single file's rows, so command-line numbers are carried at 128 bits. */
__extension__ typedef __int128 g2i_int;

typedef enum g2i_names { G2I_NAMES_SEED = 0, G2I_NAMES_LLAMA = 1 } g2i_names;

typedef struct g2i_options {
    const char *calib_dir;
    const char *out;
    const char *datasets; /* comma-separated; empty names are dropped; NULL = none */
    g2i_int chunk_size;   /* default 4096 */
    g2i_int min_rows;     /* <= 0: the engine's 4*k */
    bool verbose;
    g2i_names names;
} g2i_options;

void g2i_options_default(g2i_options *o);

/* Parses an integer the way Python's int() does for argparse (surrounding
 * blanks, a sign, '_' between digits), saturating far beyond any real value.
 * Returns 0, or -1 when the text is not an integer. */
int g2i_parse_int(const char *s, g2i_int *out);

/* Decimal text of v into buf (at least 48 bytes); returns buf. */
char *g2i_int_str(g2i_int v, char *buf);

/* Runs the whole conversion. Returns 0 on success, 2 on a refusal. */
int grams2imatrix_run(const g2i_options *o, FILE *log);

#endif
