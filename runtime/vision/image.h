/* image.h: the pictures a request or a command line brings, checked and
 * decoded to 8-bit RGB through the distribution's libraries (libpng,
 * libjpeg-turbo, libwebp; no decoder of our own).
 *
 * Contract:
 *  - image_sniff() names the format from the first bytes (the PNG
 *    signature, JPEG's start-of-image marker, a RIFF WEBP header), whatever
 *    name or MIME type came with them. image_mime_agrees() holds a declared
 *    MIME type ("image/png", "image/jpeg" or "image/jpg", "image/webp") to
 *    the sniffed format: a mislabelled upload is refused, never guessed.
 *  - image_decode() refuses, before any pixel memory is allocated: more
 *    than lim->max_bytes of data, an unknown format, a header whose width
 *    or height is 0 or whose pixel count exceeds lim->max_pixels (a 30000 x
 *    30000 header costs nothing), an animated WebP, a CMYK JPEG; then
 *    truncated or corrupt data. On success out->rgb holds w * h * 3 bytes,
 *    rows top to bottom: grey is replicated, alpha dropped, 16-bit samples
 *    cut to their high byte, palettes expanded, no gamma applied (the
 *    values stb_image gives llama.cpp's mtmd for the same PNG).
 *  - Every failure returns -1 with one line in err (starting with the
 *    format's name where known) and nothing allocated; libpng's and
 *    libjpeg's error exits are caught inside the call. No global state:
 *    calls on different threads are independent. */
#ifndef STRATA_IMAGE_H
#define STRATA_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef enum image_format { IMAGE_UNKNOWN = 0, IMAGE_PNG, IMAGE_JPEG, IMAGE_WEBP } image_format;

typedef struct image_limits {
    size_t  max_bytes;  /* the encoded data */
    int64_t max_pixels; /* width x height */
} image_limits;

/* 20 MiB of data, 33.5 million pixels (8192 x 4096): beyond any vision
 * tower's native size by far, and at most 100 MB of RGB in memory. */
#define IMAGE_DEFAULT_MAX_BYTES ((size_t)20 << 20)
#define IMAGE_DEFAULT_MAX_PIXELS ((int64_t)8192 * 4096)

typedef struct image_rgb {
    int      w, h;
    uint8_t *rgb; /* w * h * 3 */
} image_rgb;

image_format image_sniff(const uint8_t *data, size_t n);
const char  *image_format_name(image_format f); /* "PNG", "JPEG", "WebP", "unknown" */
/* 1 when mime names f (case-insensitive, parameters after ';' ignored). */
int image_mime_agrees(const char *mime, image_format f);

int  image_decode(const uint8_t *data, size_t n, const image_limits *lim, image_rgb *out, char *err,
                  size_t errlen);
void image_free(image_rgb *img);

#endif
