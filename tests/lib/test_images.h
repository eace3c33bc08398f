/* test_images.h: pictures made in memory for the image tests, with the
 * libraries' own encoders (libpng, libjpeg, libwebp), so every fixture is
 * made by the test that uses it; and base64 text of bytes for requests.
 *
 * Contract: every function returns malloc'd bytes (*n their count) or
 * NULL; pictures are deterministic (timg_pattern). No global state. */
#ifndef STRATA_TEST_IMAGES_H
#define STRATA_TEST_IMAGES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h> /* WebPFree */
#include <webp/encode.h>
#include <zlib.h>

/* w x h samples of `channels` each, `bytes_per` bytes a sample (1 or 2, big
 * endian as PNG keeps them): a pattern every channel of which differs. */
static inline uint8_t *timg_pattern(int w, int h, int channels, int bytes_per)
{
    const size_t n = (size_t)w * (size_t)h * (size_t)channels * (size_t)bytes_per;
    uint8_t *p = malloc(n);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + i / 13 * 5 + (i >> 8) * 3);
    return p;
}

typedef struct timg_buf {
    uint8_t *d;
    size_t n, cap;
} timg_buf;

static inline void timg_png_write(png_structp png, png_bytep data, size_t len)
{
    timg_buf *b = png_get_io_ptr(png);
    if (b->n + len > b->cap) {
        b->cap = (b->n + len) * 2;
        b->d = realloc(b->d, b->cap);
    }
    memcpy(b->d + b->n, data, len);
    b->n += len;
}

static inline void timg_png_flush(png_structp png) { (void)png; }

/* A PNG of samples (rows packed, as png_write_row takes them) in the given
 * color type, bit depth and interlacing; palette (3 x n_palette bytes)
 * and a tRNS table (trns, n_trns) for palette pictures. */
static inline uint8_t *timg_png(int w, int h, int color_type, int depth, int interlace, const uint8_t *samples,
                                const uint8_t *palette, int n_palette, const uint8_t *trns, int n_trns, size_t *n)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    timg_buf b = { 0 };
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(b.d);
        return NULL;
    }
    png_set_write_fn(png, &b, timg_png_write, timg_png_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color_type,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (palette) png_set_PLTE(png, info, (png_const_colorp)palette, n_palette);
    if (trns) png_set_tRNS(png, info, trns, n_trns, NULL);
    png_write_info(png, info);
    const size_t row = png_get_rowbytes(png, info);
    png_bytep *rows = malloc((size_t)h * sizeof *rows);
    for (int y = 0; y < h; y++) rows[y] = (png_bytep)samples + (size_t)y * row;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    free(rows);
    png_destroy_write_struct(&png, &info);
    *n = b.n;
    return b.d;
}

static inline uint8_t *timg_png_rgb(int w, int h, const uint8_t *rgb, size_t *n)
{
    return timg_png(w, h, PNG_COLOR_TYPE_RGB, 8, 0, rgb, NULL, 0, NULL, 0, n);
}

/* The PNG signature and an IHDR of w x h (8-bit RGB) with its CRC: a valid
 * header with no picture after it. */
static inline uint8_t *timg_png_header(uint32_t w, uint32_t h, size_t *n)
{
    uint8_t *p = malloc(33);
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    memcpy(p, sig, 8);
    const uint8_t ihdr[21] = { 0, 0, 0, 13, 'I', 'H', 'D', 'R', (uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8),
                               (uint8_t)w, (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                               8, 2, 0, 0, 0 };
    memcpy(p + 8, ihdr, 21);
    const uint32_t crc = (uint32_t)crc32(0, ihdr + 4, 17);
    const uint8_t c[4] = { (uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc };
    memcpy(p + 29, c, 4);
    *n = 33;
    return p;
}

/* A baseline JPEG of 1 (grey) or 3 (RGB) components. */
static inline uint8_t *timg_jpeg(int w, int h, int components, const uint8_t *pix, int quality, size_t *n)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long len = 0;
    jpeg_mem_dest(&c, &out, &len);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = components;
    c.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)pix + (size_t)c.next_scanline * (size_t)w * (size_t)components;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    uint8_t *r = malloc(len);
    memcpy(r, out, len);
    free(out);
    *n = len;
    return r;
}

/* A lossless WebP of RGB pixels (the same pixels come back). */
static inline uint8_t *timg_webp_lossless(int w, int h, const uint8_t *rgb, size_t *n)
{
    uint8_t *out = NULL;
    *n = WebPEncodeLosslessRGB(rgb, w, h, w * 3, &out);
    if (!*n) return NULL;
    uint8_t *r = malloc(*n);
    memcpy(r, out, *n);
    WebPFree(out);
    return r;
}

/* base64 text of d[0..n), NUL-terminated. */
static inline char *timg_base64(const uint8_t *d, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *s = malloc(n / 3 * 4 + 5), *o = s;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        *o++ = A[v >> 18];
        *o++ = A[v >> 12 & 63];
        *o++ = A[v >> 6 & 63];
        *o++ = A[v & 63];
    }
    if (n - i == 1) {
        const uint32_t v = (uint32_t)d[i] << 16;
        *o++ = A[v >> 18];
        *o++ = A[v >> 12 & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        const uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
        *o++ = A[v >> 18];
        *o++ = A[v >> 12 & 63];
        *o++ = A[v >> 6 & 63];
        *o++ = '=';
    }
    *o = 0;
    return s;
}

#endif
