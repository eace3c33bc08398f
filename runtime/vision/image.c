/* image.c: see image.h. One section per format, each reading from memory
 * and checking the header against the limits before the pixels. */
#include "runtime/vision/image.h"

#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <webp/decode.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

image_format image_sniff(const uint8_t *d, size_t n)
{
    static const uint8_t png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (n >= 8 && !memcmp(d, png_sig, 8)) return IMAGE_PNG;
    if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff) return IMAGE_JPEG;
    if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4)) return IMAGE_WEBP;
    return IMAGE_UNKNOWN;
}

const char *image_format_name(image_format f)
{
    switch (f) {
    case IMAGE_PNG: return "PNG";
    case IMAGE_JPEG: return "JPEG";
    case IMAGE_WEBP: return "WebP";
    default: return "unknown";
    }
}

int image_mime_agrees(const char *mime, image_format f)
{
    static const struct { const char *mime; image_format f; } names[] = {
        { "image/png", IMAGE_PNG }, { "image/jpeg", IMAGE_JPEG }, { "image/jpg", IMAGE_JPEG }, { "image/webp", IMAGE_WEBP },
    };
    size_t len = strcspn(mime, ";");
    while (len && (mime[len - 1] == ' ' || mime[len - 1] == '\t')) len--;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].mime) == len && !strncasecmp(mime, names[i].mime, len)) return names[i].f == f;
    return 0;
}

void image_free(image_rgb *img)
{
    if (!img) return;
    free(img->rgb);
    img->rgb = NULL;
    img->w = img->h = 0;
}

/* The header's size against the limits; 0 when it may be decoded. */
static int check_size(image_format f, int64_t w, int64_t h, const image_limits *lim, char *err, size_t errlen)
{
    if (w <= 0 || h <= 0) {
        snprintf(err, errlen, "%s: the header gives an empty picture (%lld x %lld)", image_format_name(f),
                 (long long)w, (long long)h);
        return -1;
    }
    if (w > lim->max_pixels || h > lim->max_pixels || w * h > lim->max_pixels) {
        snprintf(err, errlen, "%s: %lld x %lld pixels is more than the %lld allowed", image_format_name(f),
                 (long long)w, (long long)h, (long long)lim->max_pixels);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- PNG */

typedef struct png_src {
    const uint8_t *p;
    size_t n, off;
    char msg[160];
} png_src;

static void png_read_mem(png_structp png, png_bytep out, size_t len)
{
    png_src *s = png_get_io_ptr(png);
    if (len > s->n - s->off) png_error(png, "the data ends early (truncated)");
    memcpy(out, s->p + s->off, len);
    s->off += len;
}

static void png_fail(png_structp png, png_const_charp msg)
{
    png_src *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_quiet(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static int decode_png(const uint8_t *d, size_t n, const image_limits *lim, image_rgb *out, char *err, size_t errlen)
{
    /* The size from IHDR (the first chunk) before libpng reads on: an
     * oversized picture is refused for its size whatever follows. */
    if (n >= 24 && !memcmp(d + 12, "IHDR", 4) && check_size(IMAGE_PNG, be32(d + 16), be32(d + 20), lim, err, errlen))
        return -1;
    png_src src = { d, n, 0, "" };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_quiet);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        snprintf(err, errlen, "PNG: out of memory");
        return -1;
    }
    /* written between setjmp and a longjmp back to it: volatile */
    uint8_t *volatile pix = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(pix);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        snprintf(err, errlen, "PNG: %s", src.msg[0] ? src.msg : "corrupt data");
        return -1;
    }
    png_set_read_fn(png, &src, png_read_mem);
    png_read_info(png, info);
    const int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (check_size(IMAGE_PNG, w, h, lim, err, errlen)) {
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    const int ct = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (ct == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ct == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png); /* the high byte, as stb_image keeps it */
    if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_strip_alpha(png); /* an alpha channel, or the one a palette's tRNS expands to */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 3) {
        png_destroy_read_struct(&png, &info, NULL);
        snprintf(err, errlen, "PNG: a pixel layout that does not come out as 8-bit RGB");
        return -1;
    }
    pix = malloc((size_t)(w * h * 3));
    rows = malloc((size_t)h * sizeof *rows);
    if (!pix || !rows) png_error(png, "out of memory");
    for (int64_t y = 0; y < h; y++) rows[y] = pix + (size_t)(y * w * 3);
    png_read_image(png, rows);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    out->w = (int)w;
    out->h = (int)h;
    out->rgb = pix;
    return 0;
}

/* ---------------------------------------------------------------- JPEG */

typedef struct jpeg_fail_mgr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    int truncated; /* libjpeg only warns at a premature end and fills the rest with grey */
    char msg[JMSG_LENGTH_MAX];
} jpeg_fail_mgr;

static void jpeg_fail(j_common_ptr c)
{
    jpeg_fail_mgr *e = (jpeg_fail_mgr *)c->err;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jb, 1);
}

static void jpeg_note(j_common_ptr c, int level)
{
    jpeg_fail_mgr *e = (jpeg_fail_mgr *)c->err;
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) e->truncated = 1;
}

static int decode_jpeg(const uint8_t *d, size_t n, const image_limits *lim, image_rgb *out, char *err, size_t errlen)
{
    struct jpeg_decompress_struct ci;
    jpeg_fail_mgr e;
    memset(&e, 0, sizeof e);
    ci.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_fail;
    e.pub.emit_message = jpeg_note;
    uint8_t *volatile pix = NULL;
    if (setjmp(e.jb)) {
        free(pix);
        jpeg_destroy_decompress(&ci);
        snprintf(err, errlen, "JPEG: %s", e.msg);
        return -1;
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, d, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    const int64_t w = ci.image_width, h = ci.image_height;
    const char *why = NULL;
    if (check_size(IMAGE_JPEG, w, h, lim, err, errlen)) why = "";
    else if (ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK) why = "JPEG: CMYK pictures are not supported (convert it to RGB)";
    if (why) {
        jpeg_destroy_decompress(&ci);
        if (*why) snprintf(err, errlen, "%s", why);
        return -1;
    }
    ci.out_color_space = JCS_RGB;
    jpeg_start_decompress(&ci);
    if (ci.output_components != 3 || ci.output_width != (JDIMENSION)w || ci.output_height != (JDIMENSION)h) {
        jpeg_destroy_decompress(&ci);
        snprintf(err, errlen, "JPEG: a pixel layout that does not come out as 8-bit RGB");
        return -1;
    }
    pix = malloc((size_t)(w * h * 3));
    if (!pix) {
        jpeg_destroy_decompress(&ci);
        snprintf(err, errlen, "JPEG: out of memory");
        return -1;
    }
    while (ci.output_scanline < ci.output_height && !e.truncated) {
        JSAMPROW row = pix + (size_t)ci.output_scanline * (size_t)w * 3;
        jpeg_read_scanlines(&ci, &row, 1);
    }
    jpeg_destroy_decompress(&ci); /* not finish: it would read on past a truncation */
    if (e.truncated) {
        free(pix);
        snprintf(err, errlen, "JPEG: the data ends early (truncated)");
        return -1;
    }
    out->w = (int)w;
    out->h = (int)h;
    out->rgb = pix;
    return 0;
}

/* ---------------------------------------------------------------- WebP */

static int decode_webp(const uint8_t *d, size_t n, const image_limits *lim, image_rgb *out, char *err, size_t errlen)
{
    WebPBitstreamFeatures f;
    if (WebPGetFeatures(d, n, &f) != VP8_STATUS_OK) {
        snprintf(err, errlen, "WebP: the header is corrupt or truncated");
        return -1;
    }
    if (check_size(IMAGE_WEBP, f.width, f.height, lim, err, errlen)) return -1;
    if (f.has_animation) {
        snprintf(err, errlen, "WebP: animated pictures are not supported");
        return -1;
    }
    const size_t stride = (size_t)f.width * 3, bytes = stride * (size_t)f.height;
    uint8_t *pix = malloc(bytes);
    if (!pix) {
        snprintf(err, errlen, "WebP: out of memory");
        return -1;
    }
    if (!WebPDecodeRGBInto(d, n, pix, bytes, (int)stride)) {
        free(pix);
        snprintf(err, errlen, "WebP: the data is corrupt or truncated");
        return -1;
    }
    out->w = f.width;
    out->h = f.height;
    out->rgb = pix;
    return 0;
}

int image_decode(const uint8_t *data, size_t n, const image_limits *lim, image_rgb *out, char *err, size_t errlen)
{
    const image_limits dflt = { IMAGE_DEFAULT_MAX_BYTES, IMAGE_DEFAULT_MAX_PIXELS };
    if (!lim) lim = &dflt;
    memset(out, 0, sizeof *out);
    if (n > lim->max_bytes) {
        snprintf(err, errlen, "%zu bytes of image data is more than the %zu allowed", n, lim->max_bytes);
        return -1;
    }
    switch (image_sniff(data, n)) {
    case IMAGE_PNG: return decode_png(data, n, lim, out, err, errlen);
    case IMAGE_JPEG: return decode_jpeg(data, n, lim, out, err, errlen);
    case IMAGE_WEBP: return decode_webp(data, n, lim, out, err, errlen);
    default:
        snprintf(err, errlen, "not a PNG, JPEG or WebP picture (%s)", n ? "unrecognised first bytes" : "no data");
        return -1;
    }
}
