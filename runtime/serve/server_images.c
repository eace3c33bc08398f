/* server_images.c: the pictures a request brings. Each is decoded and held
 * to the limits (runtime/vision/image.h) so that a hostile or mislabelled
 * upload gets a 400 naming the part and the reason, whatever the model;
 * then, because strata runs no vision projector yet, a request with a
 * picture is refused by name (the pack has none, or strata does not run
 * the one it has) rather than answered as if the picture were not there. */
#include "runtime/serve/server_internal.h"
#include "runtime/vision/image.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A 400 for the part `param`, the message starting with its name. */
static int refuse(api_error *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(api_error *e, const char *param, const char *fmt, ...)
{
    e->status = 400;
    snprintf(e->param, sizeof e->param, "%s", param);
    int n = snprintf(e->message, sizeof e->message, "%s: ", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message + n, sizeof e->message - (size_t)n, fmt, ap);
    va_end(ap);
    for (char *c = e->message; *c; c++) /* one line, whatever the client declared */
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
    return -1;
}

int server_check_images(const server *s, const api_request *r, api_error *e)
{
    const image_limits lim = { IMAGE_DEFAULT_MAX_BYTES, IMAGE_DEFAULT_MAX_PIXELS };
    const api_image *first = NULL;
    for (size_t m = 0; m < r->n_msgs; m++)
        for (size_t i = 0; i < r->msgs[m].n_images; i++) {
            const api_image *im = &r->msgs[m].images[i];
            const image_format f = image_sniff(im->data, im->n);
            if (f != IMAGE_UNKNOWN && !image_mime_agrees(im->mime, f))
                return refuse(e, im->param, "the data is a %s picture, not %.40s as declared", image_format_name(f),
                              im->mime);
            char why[200];
            image_rgb px;
            if (image_decode(im->data, im->n, &lim, &px, why, sizeof why) != 0)
                return refuse(e, im->param, "%s", why);
            image_free(&px);
            if (!first) first = im;
        }
    if (first && s->eng->vision)
        return refuse(e, first->param, "this model's vision projector (%s) is not run by strata yet: no images",
                      s->eng->vision);
    if (first) return refuse(e, first->param, "this model takes no images (its pack holds no vision projector)");
    return 0;
}
