/* preprocess.h: a decoded picture made into what a vision tower takes, as
 * llama.cpp's mtmd makes it for the dynamic-size towers (Qwen-VL's):
 *  - vp_target_size(): the size kept closest to the picture's aspect whose
 *    sides are multiples of `align` (patch x merge) and whose pixel count
 *    lies in [min_pixels, max_pixels] ("smart resize"), in single-precision
 *    float with roundf, floorf and ceilf as mtmd computes it;
 *  - vp_resize_pad(): the picture scaled to fit that size keeping its aspect
 *    (sides rounded up, at most the target), by Pillow's bicubic resampler
 *    (a = -0.5, separable, 22-bit fixed point, u8 between the passes), and
 *    centred on a black canvas of the target size; the same size is copied;
 *  - vp_resize(): the picture stretched to tw x th by the same resampler
 *    (Llama 4's overview);
 *  - vp_normalize(): u8 RGB to planar f32 [3][h][w], (v / 255 - mean) / std.
 * All functions are pure apart from the buffers they are given; errors
 * are -1 only for a size that cannot be made. */
#ifndef STRATA_VISION_PREPROCESS_H
#define STRATA_VISION_PREPROCESS_H

#include <stdint.h>

#include "runtime/vision/image.h"

void vp_target_size(int w, int h, int align, int64_t min_pixels, int64_t max_pixels, int *tw, int *th);
/* out: a picture of tw x th (malloc'd rgb); 0, or -1 out of memory */
int vp_resize_pad(const image_rgb *in, int tw, int th, image_rgb *out);
int vp_resize(const image_rgb *in, int tw, int th, image_rgb *out);
/* planar: 3 * w * h floats */
void vp_normalize(const image_rgb *in, const float mean[3], const float std[3], float *planar);

#endif
