/* packindex.h: a pack's manifest.json -> the flat index.txt the runtime loads.
 *
 * Contract: packindex_run() reads <pack_dir>/manifest.json, checks every
 * tensor the way seeds/pack_index.py does (same checks, same order, same
 * one-line messages; the first error wins) plus the corrections and extra
 * refusals listed in docs/pack-format.md, and only when every tensor passes
 * writes the index to out_path (NULL: <pack_dir>/index.txt) atomically:
 * a temporary file linked into place, never overwriting an existing file.
 * The summary goes to `out` (NULL: none), a refusal as exactly one line to `err`.
 * Returns the process exit status: 0 written, 1 refused (nothing written).
 * No global state; everything allocated is freed before returning. */
#ifndef STRATA_PACKINDEX_H
#define STRATA_PACKINDEX_H

#include <stdio.h>

int packindex_run(const char *pack_dir, const char *out_path, FILE *out, FILE *err);

#endif
