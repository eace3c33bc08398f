/* source.h: a GGUF checkpoint as one source, whether one file or split.
 *
 * Contract: source_open() opens PATH, and when PATH ends in
 * "-00001-of-0000N.gguf" (llama.cpp's gguf-split naming) every part 1..N,
 * refusing a missing part, a tensor name in two parts, or a part numbered
 * differently from the first. Metadata is the first part's. Tensors are
 * looked up across parts; data pointers are into read-only mappings.
 * source_release() drops the pages of a tensor already consumed, so a
 * build's resident memory stays a few tensors, not the model. */
#ifndef STRATA_SOURCE_H
#define STRATA_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"

typedef struct source {
    gguf_file **parts;
    int         n_parts;
    uint64_t    bytes;   /* all parts */
} source;

int source_open(source *s, const char *path, char *err, size_t errlen);
void source_close(source *s);

const gguf_file *source_meta(const source *s);
int64_t source_n_tensors(const source *s);
const gguf_tensor *source_tensor_at(const source *s, int64_t i); /* across parts, in order */
const gguf_tensor *source_find(const source *s, const char *name);
void source_release(const source *s, const gguf_tensor *t);

/* sha256 of the parts concatenated in order, as 64 hex digits. */
int source_sha256(const source *s, char out[65]);

#endif
