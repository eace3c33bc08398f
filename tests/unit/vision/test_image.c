/* test_image.c: runtime/vision/image.h and runtime/util/base64.h. Every
 * picture is made here by the libraries' encoders (tests/lib/test_images.h):
 * PNG in each colour type and depth (grey replicated, alpha dropped, 16-bit
 * samples cut to the high byte, palettes expanded, Adam7), JPEG within a
 * lossy tolerance (grey too), lossless WebP exactly; refused: a truncated
 * PNG, JPEG and WebP, a 30000 x 30000 header, a zero-size header, too many
 * bytes, unknown bytes, each with its reason; MIME types held to the data;
 * base64 against RFC 4648's vectors and its malformed cases. */
#include "tests/lib/test_util.h"
#include "tests/lib/test_images.h"

#include "runtime/util/base64.h"
#include "runtime/vision/image.h"

#include <stdlib.h>

#define W 37
#define H 23

static void decode_ok(const uint8_t *d, size_t n, image_rgb *out)
{
    char err[200] = "";
    if (image_decode(d, n, NULL, out, err, sizeof err) != 0) fail_msg("decode: %s", err);
}

static void test_png_forms(void **st)
{
    (void)st;
    uint8_t *rgb = timg_pattern(W, H, 3, 1);
    size_t n;
    image_rgb im;
    /* 8-bit RGB, plain and interlaced: the same pixels */
    for (int il = 0; il < 2; il++) {
        uint8_t *png = timg_png(W, H, PNG_COLOR_TYPE_RGB, 8, il, rgb, NULL, 0, NULL, 0, &n);
        assert_int_equal(image_sniff(png, n), IMAGE_PNG);
        decode_ok(png, n, &im);
        assert_int_equal(im.w, W);
        assert_int_equal(im.h, H);
        assert_memory_equal(im.rgb, rgb, W * H * 3);
        image_free(&im);
        free(png);
    }
    /* RGBA: the alpha dropped */
    uint8_t *rgba = timg_pattern(W, H, 4, 1), *png = timg_png(W, H, PNG_COLOR_TYPE_RGBA, 8, 0, rgba, NULL, 0, NULL, 0, &n);
    decode_ok(png, n, &im);
    for (int i = 0; i < W * H; i++) assert_memory_equal(im.rgb + 3 * i, rgba + 4 * i, 3);
    image_free(&im);
    free(png);
    free(rgba);
    /* 16-bit grey with alpha: the high byte of grey, three times */
    uint8_t *ga16 = timg_pattern(W, H, 2, 2);
    png = timg_png(W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, ga16, NULL, 0, NULL, 0, &n);
    decode_ok(png, n, &im);
    for (int i = 0; i < W * H; i++)
        for (int c = 0; c < 3; c++) assert_int_equal(im.rgb[3 * i + c], ga16[4 * i]);
    image_free(&im);
    free(png);
    free(ga16);
    /* 1-bit grey: 0 and 255 */
    uint8_t bits[H * ((W + 7) / 8)];
    for (size_t i = 0; i < sizeof bits; i++) bits[i] = (uint8_t)(0xa5 ^ i);
    png = timg_png(W, H, PNG_COLOR_TYPE_GRAY, 1, 0, bits, NULL, 0, NULL, 0, &n);
    decode_ok(png, n, &im);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int bit = bits[y * ((W + 7) / 8) + x / 8] >> (7 - x % 8) & 1;
            assert_int_equal(im.rgb[3 * (y * W + x) + 1], bit ? 255 : 0);
        }
    image_free(&im);
    free(png);
    /* a palette with transparency: the palette's colours, no alpha */
    uint8_t pal[3 * 16], trns[16], idx[W * H];
    for (int i = 0; i < 48; i++) pal[i] = (uint8_t)(i * 5 + 1);
    for (int i = 0; i < 16; i++) trns[i] = (uint8_t)(i * 16);
    for (int i = 0; i < W * H; i++) idx[i] = (uint8_t)((i * 3) % 16);
    png = timg_png(W, H, PNG_COLOR_TYPE_PALETTE, 8, 0, idx, pal, 16, trns, 16, &n);
    decode_ok(png, n, &im);
    for (int i = 0; i < W * H; i++) assert_memory_equal(im.rgb + 3 * i, pal + 3 * idx[i], 3);
    image_free(&im);
    free(png);
    free(rgb);
}

static void test_jpeg_webp(void **st)
{
    (void)st;
    /* smooth pictures, so that a lossy code keeps them close */
    uint8_t rgb[W * H * 3], grey[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            rgb[3 * (y * W + x)] = (uint8_t)(x * 6);
            rgb[3 * (y * W + x) + 1] = (uint8_t)(y * 10);
            rgb[3 * (y * W + x) + 2] = (uint8_t)(128 + x - y);
            grey[y * W + x] = (uint8_t)(x * 3 + y * 4);
        }
    size_t n;
    image_rgb im;
    uint8_t *jpg = timg_jpeg(W, H, 3, rgb, 95, &n);
    assert_int_equal(image_sniff(jpg, n), IMAGE_JPEG);
    decode_ok(jpg, n, &im);
    assert_int_equal(im.w, W);
    assert_int_equal(im.h, H);
    double err = 0;
    for (int i = 0; i < W * H * 3; i++) err += abs(im.rgb[i] - rgb[i]);
    assert_true(err / (W * H * 3) < 4.0);
    image_free(&im);
    free(jpg);
    jpg = timg_jpeg(W, H, 1, grey, 95, &n);
    decode_ok(jpg, n, &im);
    err = 0;
    for (int i = 0; i < W * H; i++) {
        assert_int_equal(im.rgb[3 * i], im.rgb[3 * i + 1]);
        assert_int_equal(im.rgb[3 * i], im.rgb[3 * i + 2]);
        err += abs(im.rgb[3 * i] - grey[i]);
    }
    assert_true(err / (W * H) < 4.0);
    image_free(&im);
    free(jpg);
    uint8_t *pat = timg_pattern(W, H, 3, 1), *webp = timg_webp_lossless(W, H, pat, &n);
    assert_non_null(webp);
    assert_int_equal(image_sniff(webp, n), IMAGE_WEBP);
    decode_ok(webp, n, &im);
    assert_int_equal(im.w, W);
    assert_memory_equal(im.rgb, pat, W * H * 3);
    image_free(&im);
    free(webp);
    free(pat);
}

/* decode must fail with a message holding `want`, and leave nothing to free */
static void refused(const uint8_t *d, size_t n, const image_limits *lim, const char *want)
{
    char err[200] = "";
    image_rgb im = { 7, 7, (uint8_t *)&im };
    assert_int_equal(image_decode(d, n, lim, &im, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("expected '%s' in: %s", want, err);
    assert_null(im.rgb);
    assert_null(strchr(err, '\n'));
}

static void test_refusals(void **st)
{
    (void)st;
    uint8_t *rgb = timg_pattern(W, H, 3, 1);
    size_t n;
    uint8_t *png = timg_png_rgb(W, H, rgb, &n);
    for (size_t cut = 8; cut < n; cut += n / 7) refused(png, cut, NULL, "PNG: ");
    refused(png, n - 30, NULL, "truncated");
    const image_limits small = { 100, 1000 };
    refused(png, n, &small, "more than the 100 allowed");
    const image_limits few = { 1 << 20, W * H - 1 };
    refused(png, n, &few, "37 x 23 pixels is more than the 850 allowed");
    free(png);
    /* a header of 30000 x 30000: refused by size, before any pixel memory */
    png = timg_png_header(30000, 30000, &n);
    refused(png, n, NULL, "30000 x 30000 pixels is more than");
    free(png);
    png = timg_png_header(0, 5, &n);
    refused(png, n, NULL, "PNG: ");
    free(png);
    png = timg_png_header(12, 9, &n); /* a valid header, no pixels */
    refused(png, n, NULL, "PNG: ");
    free(png);
    uint8_t *jpg = timg_jpeg(W, H, 3, rgb, 90, &n);
    refused(jpg, n / 2, NULL, "JPEG: the data ends early (truncated)");
    refused(jpg, 40, NULL, "JPEG: ");
    free(jpg);
    uint8_t *webp = timg_webp_lossless(W, H, rgb, &n);
    refused(webp, n - 9, NULL, "WebP: ");
    refused(webp, 20, NULL, "WebP: ");
    free(webp);
    refused((const uint8_t *)"GIF89a....", 10, NULL, "not a PNG, JPEG or WebP picture");
    refused((const uint8_t *)"", 0, NULL, "no data");
    free(rgb);
}

static void test_mime(void **st)
{
    (void)st;
    assert_true(image_mime_agrees("image/png", IMAGE_PNG));
    assert_true(image_mime_agrees("IMAGE/PNG ; charset=binary", IMAGE_PNG));
    assert_true(image_mime_agrees("image/jpg", IMAGE_JPEG));
    assert_true(image_mime_agrees("image/jpeg", IMAGE_JPEG));
    assert_true(image_mime_agrees("image/webp", IMAGE_WEBP));
    assert_false(image_mime_agrees("image/jpeg", IMAGE_PNG));
    assert_false(image_mime_agrees("image/pngx", IMAGE_PNG));
    assert_false(image_mime_agrees("text/plain", IMAGE_PNG));
    assert_false(image_mime_agrees("", IMAGE_PNG));
    assert_string_equal(image_format_name(IMAGE_WEBP), "WebP");
}

static void b64_is(const char *text, const char *want)
{
    uint8_t *d;
    size_t n;
    if (base64_decode(text, strlen(text), &d, &n) != 0) fail_msg("refused '%s'", text);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(d, want, n);
    free(d);
}

static void test_base64(void **st)
{
    (void)st;
    /* RFC 4648, section 10 */
    const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    const char *coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    for (int i = 0; i < 7; i++) b64_is(coded[i], plain[i]);
    b64_is("Zm9vYg", "foob");         /* no padding */
    b64_is("Zm9v\r\nYmFy\n", "foobar"); /* wrapped lines */
    const char *bad[] = { "Z", "Zm9vY", "Zg=a", "Zg===", "Zm9v=", "=Zg=", "Zm9v!", "Zg=\0" };
    for (int i = 0; i < 8; i++) {
        uint8_t *d = (uint8_t *)1;
        size_t n = 0;
        if (base64_decode(bad[i], strlen(bad[i]), &d, &n) != -1) fail_msg("accepted '%s'", bad[i]);
    }
    /* every byte value through the encoder and back */
    uint8_t all[256];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    for (size_t len = 250; len <= 256; len++) {
        char *t = timg_base64(all, len);
        uint8_t *d;
        size_t n;
        assert_int_equal(base64_decode(t, strlen(t), &d, &n), 0);
        assert_int_equal(n, len);
        assert_memory_equal(d, all, len);
        free(d);
        free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_forms), cmocka_unit_test(test_jpeg_webp), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_mime),      cmocka_unit_test(test_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
