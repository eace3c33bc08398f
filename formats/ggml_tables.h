/* ggml_tables.h: ggml's lookup tables as data, declared once and shared by
 * every decoder and kernel (CPU and CUDA). Values are ggml-common.h's
 * initialisers in declaration order: 64-bit grids pack eight int8 lanes and
 * 32-bit grids four uint8 lanes, little-endian. Generated, read-only. */
#ifndef STRATA_GGML_TABLES_H
#define STRATA_GGML_TABLES_H

#include <stdint.h>

extern const uint8_t  ggml_kmask_iq2xs[8];
extern const uint8_t  ggml_ksigns_iq2xs[128];
extern const uint64_t ggml_ksigns64[128];
extern const uint64_t ggml_iq2xxs_grid[256];
extern const uint64_t ggml_iq2xs_grid[512];
extern const uint64_t ggml_iq2s_grid[1024];
extern const uint32_t ggml_iq3xxs_grid[256];
extern const uint32_t ggml_iq3s_grid[512];
extern const int8_t   ggml_kvalues_iq4nl[16];
extern const int8_t   ggml_kvalues_fp4[16];
extern const uint64_t ggml_iq1s_grid[2048];

#endif
