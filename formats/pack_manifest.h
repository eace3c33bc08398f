/* pack_manifest.h: a pack's layout in memory, the one thing build, verify,
 * info and packindex share, and its manifest.json form, read and written
 * here only (docs/pack-manifest.md).
 *
 * Contract. pack_layout_to_json() writes exactly what the manifest holds;
 * pack_layout_from_json() reads it back with every size and offset checked
 * against the form arithmetic (planes_sizes) and the recorded file sizes, so
 * verify and info never trust a manifest offset they did not re-derive.
 * Errors: one line "<path>: <what>" and -1. pack_layout_free() frees all. */
#ifndef STRATA_PACK_MANIFEST_H
#define STRATA_PACK_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "formats/pack_files.h"
#include "formats/planes.h"

#define PACK_ALIGN        64
#define PACK_EXPERT_ALIGN 4096
#define PACK_MAX_PARTS    4


/* How an expert part came to be, for the summary and for verify's rule:
 * TRANSCODED and CANONICAL must be bit-exact, ENCODED is measured. */
enum { EXP_ENCODED = 0, EXP_TRANSCODED = 1, EXP_CANONICAL = 2 };
/* Which importance the encoder used. */
enum { IMP_NONE = 0, IMP_LAYER = 1, IMP_EXPERT = 2 };

typedef struct pk_tensor {
    char     name[64];
    int      file;            /* PACK_DENSE / PACK_EMBD / PACK_EXPERTS */
    int      n_dims;
    int64_t  ne[4];
    int64_t  elements;
    int      src_type;        /* ggml type id */
    planes_desc d;
    uint64_t plane_off[PLANE_COUNT]; /* dense: in the file; expert: from the part start */
    uint64_t plane_bytes[PLANE_COUNT];
    /* experts only */
    int      layer, part, n_expert, how, importance;
    uint64_t part_bytes;      /* one expert's bytes of this tensor */
    int64_t  rotate;          /* 0, or the Hadamard block its rows were rotated by (formats/hadamard.h) */
} pk_tensor;

typedef struct pk_layer {
    int      layer, n_expert, n_parts;
    int      part_tensor[PACK_MAX_PARTS]; /* index into tensors */
    uint64_t part_off[PACK_MAX_PARTS];    /* inside a blob */
    uint64_t base, stride, blob_bytes;    /* stride: blob_bytes aligned up to 4096 */
} pk_layer;

typedef struct pk_file { uint64_t bytes; uint32_t crc32; } pk_file;

/* A vision projector (`iq3pack build --mmproj`): its GGUF carried byte for
 * byte as PACK_VISION, so every tensor keeps its bits and the runtime reads
 * the projector's settings from the same keys llama.cpp reads; each tensor
 * named with its place in that file. Absent (present 0) in a pack without
 * one, whose manifest then has no `vision` key at all. */
typedef struct pk_vtensor {
    char     name[64];
    int      type; /* ggml type id */
    int      n_dims;
    int64_t  ne[4];
    uint64_t off, bytes; /* in PACK_VISION */
} pk_vtensor;

typedef struct pk_vision {
    int         present;
    char        projector[48]; /* clip.projector_type */
    pk_file     file;
    char       *source_path;
    uint64_t    source_bytes;
    char        source_sha256[65]; /* the file's sha256: the same as the copy's */
    pk_vtensor *tensors;
    int         n_tensors;
} pk_vision;

typedef struct pack_layout {
    pk_tensor *tensors;
    int        n_tensors, cap_tensors;
    pk_layer  *layers;
    int        n_layers;
    pk_file    files[PACK_NFILES];
    char      *source_path;   /* first (or only) source file */
    uint64_t   source_bytes;
    char       source_sha256[65];
    int        source_splits;
    void      *hparams;       /* json_t object, owned */
    pk_vision  vision;
} pack_layout;

uint64_t pk_align_up(uint64_t n, uint64_t a);
pk_tensor *pack_layout_add(pack_layout *L); /* zeroed; NULL when out of memory */
void pack_layout_free(pack_layout *L);

/* Serialises to a NUL-terminated malloc'd string. */
char *pack_layout_to_json(const pack_layout *L);
int pack_layout_from_json(pack_layout *L, const char *path, char *err, size_t errlen);
/* pack_layout_from_json() on DIR/manifest.json, the one manifest of a pack
 * directory (verify and info); "out of memory" when the path cannot be made. */
int pack_layout_from_dir(pack_layout *L, const char *dir, char *err, size_t errlen);

/* How many expert tensors are rotated, and their smallest and largest
 * Hadamard blocks (0 and 0 when none is). */
int pack_layout_rotated(const pack_layout *L, int64_t *lo, int64_t *hi);

/* "Q4_K", "IQ3_XXS", "F32": the manifest's source_type spelling. */
void pk_type_upper(int ggml_type, char out[16]);

#endif
