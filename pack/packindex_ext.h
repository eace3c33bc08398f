/* packindex_ext.h: the index lines beyond the seed's tensor rows: what the
 * runtime needs from a built pack that the 19-column rows cannot say
 * (hyperparameters, file sizes and crc32, the expert tensors and their
 * arena). docs/pack-format.md lists the line kinds.
 *
 * Contract: packindex_ext_text() returns 0 and a malloc'd text (possibly
 * empty: a manifest with none of `hparams`, `files`, `experts`, as every
 * seed vector is) in *text, or -1 with one line "<what>: <problem>" in err.
 * When `files` or `experts` is present, the whole manifest is re-read with
 * pack_layout_from_json(), so every expert size is checked against the form
 * arithmetic before it is written. The lines are spelled by
 * formats/pack_index.h's writers. The caller frees *text. No global state. */
#ifndef STRATA_PACKINDEX_EXT_H
#define STRATA_PACKINDEX_EXT_H

#include <stddef.h>

#include <jansson.h>

int packindex_ext_text(const char *manifest_path, const json_t *man, char **text, char *err, size_t errlen);

#endif
