/* fuzz_image.c: libFuzzer target for the image path of a request: the
 * bytes as a picture (runtime/vision/image.c, through libpng, libjpeg and
 * libwebp) and, when the first byte is odd, the rest as base64 text first
 * (runtime/util/base64.c), as a data: URI brings it. Limits are small so
 * that a header's size is refused without the memory for it. Any input
 * must be decoded to exactly w x h x 3 bytes or refused with one line; no
 * crash, overrun or leak.
 * fuzz-link: runtime/vision/image.c runtime/util/base64.c -lpng16 -ljpeg -lwebp */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/util/base64.h"
#include "runtime/vision/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    uint8_t *dec = NULL;
    if (data[0] & 1) {
        if (base64_decode((const char *)d, n, &dec, &n) != 0) return 0;
        d = dec;
    }
    const image_limits lim = { 1 << 20, 1 << 20 };
    image_rgb im;
    char err[200];
    if (image_decode(d, n, &lim, &im, err, sizeof err) == 0) {
        if (im.w <= 0 || im.h <= 0 || (int64_t)im.w * im.h > lim.max_pixels || !im.rgb) abort();
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < (size_t)im.w * (size_t)im.h * 3; i++) sum ^= im.rgb[i];
        image_free(&im);
    } else if (im.rgb || !memchr(err, 0, sizeof err) || strchr(err, '\n')) {
        abort();
    }
    free(dec);
    return 0;
}
