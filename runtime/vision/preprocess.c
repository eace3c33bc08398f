/* preprocess.c: see preprocess.h. The resampler follows Pillow's
 * ImagingResample (what mtmd's resize_pillow reproduces): per output pixel
 * a window of input pixels with bicubic weights normalised to sum 1, made
 * integers of 22 fractional bits, and sums rounded by the half added first. */
#include "runtime/vision/preprocess.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vp_target_size(int w, int h, int align, int64_t min_pixels, int64_t max_pixels, int *tw, int *th)
{
    const float f = (float)align;
#define ROUND_BY(x) ((int)roundf((x) / f) * align)
#define CEIL_BY(x) ((int)ceilf((x) / f) * align)
#define FLOOR_BY(x) ((int)floorf((x) / f) * align)
    if (w <= 0 || h <= 0) { *tw = *th = 0; return; }
    int wb = ROUND_BY((float)w), hb = ROUND_BY((float)h);
    if (wb < align) wb = align;
    if (hb < align) hb = align;
    if (max_pixels > 0 && (int64_t)hb * wb > max_pixels) {
        const float beta = sqrtf((float)h * (float)w / (float)max_pixels);
        hb = FLOOR_BY((float)h / beta);
        wb = FLOOR_BY((float)w / beta);
        if (hb < align) hb = align;
        if (wb < align) wb = align;
    } else if (min_pixels > 0 && (int64_t)hb * wb < min_pixels) {
        const float beta = sqrtf((float)min_pixels / ((float)h * (float)w));
        hb = CEIL_BY((float)h * beta);
        wb = CEIL_BY((float)w * beta);
    }
#undef ROUND_BY
#undef CEIL_BY
#undef FLOOR_BY
    *tw = wb;
    *th = hb;
}

#define PRECISION_BITS (32 - 8 - 2)

static double bicubic(double x)
{
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* For each output index: the first input index, the count, and ksize
 * integer weights. NULL when out of memory. */
static int32_t *weights(int in, int out, int *ksize_out, int *bounds)
{
    double filterscale = (double)in / out, scale = filterscale;
    if (filterscale < 1.0) filterscale = 1.0;
    const double support = 2.0 * filterscale;
    const int ksize = (int)ceil(support) * 2 + 1;
    double *k = malloc((size_t)ksize * sizeof *k);
    int32_t *kk = calloc((size_t)out * (size_t)ksize, sizeof *kk);
    if (!k || !kk) { free(k); free(kk); return NULL; }
    for (int xx = 0; xx < out; xx++) {
        const double center = (xx + 0.5) * scale, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        xmax -= xmin;
        double ww = 0.0;
        for (int x = 0; x < xmax; x++) {
            const double wv = bicubic((x + xmin - center + 0.5) * ss);
            k[x] = wv;
            ww += wv;
        }
        for (int x = 0; x < xmax; x++) {
            if (ww != 0.0) k[x] /= ww;
            const double v = k[x] * (1 << PRECISION_BITS);
            kk[(size_t)xx * ksize + x] = (int32_t)(v < 0 ? v - 0.5 : v + 0.5);
        }
        bounds[2 * xx] = xmin;
        bounds[2 * xx + 1] = xmax;
    }
    free(k);
    *ksize_out = ksize;
    return kk;
}

static uint8_t clip8(int32_t v)
{
    v >>= PRECISION_BITS;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One separable pass over an RGB picture: along x (horizontal) or y. */
static int pass(const image_rgb *in, image_rgb *out, int horizontal, int n_out)
{
    const int n_in = horizontal ? in->w : in->h;
    int ksize, *bounds = malloc((size_t)n_out * 2 * sizeof *bounds);
    int32_t *k = bounds ? weights(n_in, n_out, &ksize, bounds) : NULL;
    out->w = horizontal ? n_out : in->w;
    out->h = horizontal ? in->h : n_out;
    out->rgb = k ? malloc((size_t)out->w * out->h * 3) : NULL;
    if (!out->rgb) { free(bounds); free(k); return -1; }
    for (int y = 0; y < out->h; y++)
        for (int x = 0; x < out->w; x++) {
            const int o = horizontal ? x : y, xmin = bounds[2 * o], cnt = bounds[2 * o + 1];
            const int32_t *kw = k + (size_t)o * ksize;
            for (int c = 0; c < 3; c++) {
                int32_t ss = 1 << (PRECISION_BITS - 1);
                for (int i = 0; i < cnt; i++) {
                    const int sx = horizontal ? xmin + i : x, sy = horizontal ? y : xmin + i;
                    ss += (int32_t)in->rgb[((size_t)sy * in->w + sx) * 3 + c] * kw[i];
                }
                out->rgb[((size_t)y * out->w + x) * 3 + c] = clip8(ss);
            }
        }
    free(bounds);
    free(k);
    return 0;
}

/* Pillow's resample to w x h: the horizontal pass, then the vertical one,
 * each only when its side changes. */
static int resample(const image_rgb *in, int w, int h, image_rgb *out)
{
    image_rgb tmp = { 0 };
    const image_rgb *cur = in;
    if (w != in->w) {
        if (pass(in, &tmp, 1, w)) return -1;
        cur = &tmp;
    }
    if (h != cur->h) {
        const int rc = pass(cur, out, 0, h);
        free(tmp.rgb);
        return rc;
    }
    if (cur == &tmp) { *out = tmp; return 0; }
    out->w = in->w;
    out->h = in->h;
    out->rgb = malloc((size_t)in->w * in->h * 3);
    if (!out->rgb) return -1;
    memcpy(out->rgb, in->rgb, (size_t)in->w * in->h * 3);
    return 0;
}

int vp_resize(const image_rgb *in, int tw, int th, image_rgb *out)
{
    return resample(in, tw, th, out);
}

int vp_resize_pad(const image_rgb *in, int tw, int th, image_rgb *out)
{
    if (tw == in->w && th == in->h) return resample(in, tw, th, out); /* a copy */
    const float sw = (float)tw / (float)in->w, sh = (float)th / (float)in->h, s = sw < sh ? sw : sh;
    int nw = (int)ceilf((float)in->w * s), nh = (int)ceilf((float)in->h * s);
    if (nw > tw) nw = tw;
    if (nh > th) nh = th;
    image_rgb r;
    if (resample(in, nw, nh, &r)) return -1;
    out->w = tw;
    out->h = th;
    out->rgb = calloc((size_t)tw * th * 3, 1); /* black */
    if (!out->rgb) { free(r.rgb); return -1; }
    const int ox = (tw - nw) / 2, oy = (th - nh) / 2;
    for (int y = 0; y < nh; y++)
        memcpy(out->rgb + ((size_t)(y + oy) * tw + ox) * 3, r.rgb + (size_t)y * nw * 3, (size_t)nw * 3);
    free(r.rgb);
    return 0;
}

void vp_normalize(const image_rgb *in, const float mean[3], const float std[3], float *planar)
{
    const size_t n = (size_t)in->w * in->h;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) planar[c * n + i] = ((float)in->rgb[i * 3 + c] / 255.0f - mean[c]) / std[c];
}
