/* vision.h: a vision projector (llama.cpp's mmproj GGUF, or a pack's
 * vision.gguf) loaded and run on pictures on the CPU: the tower's image
 * embeddings, which a text model takes in place of token embeddings.
 *
 * Contract:
 *  - vision_open() reads the projector's settings from the keys llama.cpp's
 *    mtmd reads (clip.vision.*) and its weights (F16 matrices kept as fp16,
 *    everything else widened to f32 once); a projector type with no row in the table (vision.c) is refused
 *    by name, as is a file whose tensors do not fit its settings. -1 / NULL
 *    and one line in err.
 *  - The tower runs on its own pool of n_threads (products through the CPU
 *    kernel table, runtime/kernels/kernels.h); its results do not depend
 *    on the thread count.
 *  - vision_encode() preprocesses a decoded picture as mtmd does for that
 *    projector (preprocess.h) and runs the tower: *out holds n_tokens rows
 *    of vision_width() floats (malloc'd), the image tokens in the order the
 *    text model takes them, on a grid of nx x ny. The same picture gives
 *    the same bits every time; nothing is kept between calls; one call at a
 *    time per model (the pool runs one loop at a time).
 *  - Supported: qwen3vl_merger (Qwen3-VL's tower, with its deepstack
 *    mergers: each row is the merger's output, then each deepstack layer's,
 *    in layer order; nx x ny is the merged grid) and llama4 (Llama 4's: the
 *    tiles row by row, then the overview, each slice's rows in llama.cpp's
 *    order; nx is the row count, ny 1). */
#ifndef STRATA_VISION_H
#define STRATA_VISION_H

#include <stddef.h>

#include "runtime/vision/image.h"

typedef struct vision_model vision_model;

vision_model *vision_open(const char *path, int n_threads, char *err, size_t errlen);
void vision_close(vision_model *v);
const char *vision_projector(const vision_model *v);
int vision_width(const vision_model *v);
/* What the weights take in memory: f32, except F16 matrices, kept as fp16 and widened row block by row
 * block as each product reads them (the same bits as widening them once). */
size_t vision_weight_bytes(const vision_model *v);
/* The text llama.cpp's mtmd puts before and after a picture's rows for this
 * projector (Qwen3-VL: "<|vision_start|>", "<|vision_end|>"). */
const char *vision_marker_begin(const vision_model *v);
const char *vision_marker_end(const vision_model *v);
int vision_encode(const vision_model *v, const image_rgb *img, float **out, int *n_tokens, int *nx, int *ny,
                  char *err, size_t errlen);

#endif
