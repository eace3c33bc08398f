/* server_images.c: the pictures a request brings. Each is decoded and held
 * to the limits (runtime/vision/image.h) so that a hostile or mislabelled
 * upload gets a 400 naming the part and the reason, whatever the model;
 * then a model that takes pictures gets them (decoded, with a marker in
 * the message's text where each stood), and one that does not refuses
 * them by name (the pack has no projector, or strata does not run the one
 * it has) rather than answer as if they were not there. */
#include "runtime/serve/server_internal.h"
#include "runtime/vision/image.h"
#include "runtime/vision/image_fetch.h"
#include "runtime/vision/picture_prompt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Message m's content with PICTURE_MARKER where each picture stood, or NULL
 * when out of memory. */
static char *with_markers(const api_message *msg)
{
    const size_t ml = strlen(PICTURE_MARKER), len = strlen(msg->content);
    char *out = malloc(len + msg->n_images * ml + 1), *o = out;
    if (!out) return NULL;
    size_t from = 0;
    for (size_t i = 0; i < msg->n_images; i++) {
        size_t at = msg->images[i].at < len ? msg->images[i].at : len;
        if (at < from) at = from;
        memcpy(o, msg->content + from, at - from);
        o += at - from;
        memcpy(o, PICTURE_MARKER, ml);
        o += ml;
        from = at;
    }
    memcpy(o, msg->content + from, len - from + 1);
    return out;
}

void server_free_pictures(const server *s, prepared *p)
{
    for (size_t i = 0; i < p->n_pics; i++) image_free(&p->pics[i]);
    free(p->pics);
    if (p->pictures && s->eng->pictures_free) s->eng->pictures_free(p->pictures);
    p->pics = NULL;
    p->n_pics = 0;
    p->pictures = NULL;
}

void server_free_marked(const api_request *r, api_message *msgs)
{
    for (size_t m = 0; msgs && m < r->n_msgs; m++)
        if (msgs[m].content != r->msgs[m].content) free(msgs[m].content);
    free(msgs);
}

int server_pictures(const server *s, const api_request *r, prepared *p, api_message **marked, api_error *e)
{
    const image_limits lim = { IMAGE_DEFAULT_MAX_BYTES, IMAGE_DEFAULT_MAX_PIXELS };
    const api_image *first = NULL;
    size_t n = 0;
    *marked = NULL;
    for (size_t m = 0; m < r->n_msgs; m++) n += r->msgs[m].n_images;
    if (n == 0) return 0;
    if (!(p->pics = calloc(n, sizeof *p->pics))) { e->status = 500; snprintf(e->message, sizeof e->message, "out of memory"); return -1; }
    for (size_t m = 0; m < r->n_msgs; m++)
        for (size_t i = 0; i < r->msgs[m].n_images; i++) {
            const api_image *im = &r->msgs[m].images[i];
            const uint8_t *data = im->data;
            size_t len = im->n;
            const char *mime = im->mime;
            uint8_t *fetched = NULL;
            char why[200], ctype[64];
            if (im->url && !s->remote_images) {
                server_free_pictures(s, p);
                return refuse(e, im->param, "remote image URLs are not fetched (strata serve --allow-remote-images "
                                            "fetches them); send the picture inline as a data: URI (base64)");
            }
            if (im->url) { /* within the limits of an inline picture, in 10 s */
                if (image_fetch(im->url, lim.max_bytes, 10, &fetched, &len, ctype, sizeof ctype, why, sizeof why)) {
                    server_free_pictures(s, p);
                    return refuse(e, im->param, "%s", why);
                }
                data = fetched;
                mime = strncmp(ctype, "image/", 6) ? NULL : ctype; /* held to a type only when it names one */
            }
            const image_format f = image_sniff(data, len);
            if (f != IMAGE_UNKNOWN && mime && !image_mime_agrees(mime, f)) {
                free(fetched);
                server_free_pictures(s, p);
                return refuse(e, im->param, "the data is a %s picture, not %.40s as declared", image_format_name(f),
                              mime);
            }
            const int bad = image_decode(data, len, &lim, &p->pics[p->n_pics], why, sizeof why);
            free(fetched);
            if (bad) {
                server_free_pictures(s, p);
                return refuse(e, im->param, "%s", why);
            }
            p->n_pics++;
            if (!first) first = im;
        }
    const engine *eng = s->eng;
    if (!eng->tokenize_pictures) {
        server_free_pictures(s, p);
        if (eng->vision)
            return refuse(e, first->param, "this model's vision projector (%s) takes no pictures here: %s", eng->vision,
                          eng->vision_off ? eng->vision_off : "not supported");
        return refuse(e, first->param, "this model takes no images (its pack holds no vision projector)");
    }
    /* a marker typed by the client would take a picture's place */
    api_message *msgs = calloc(r->n_msgs, sizeof *msgs);
    for (size_t m = 0; msgs && m < r->n_msgs; m++) {
        msgs[m] = r->msgs[m];
        if (strstr(r->msgs[m].content, PICTURE_MARKER)) {
            char param[48];
            snprintf(param, sizeof param, "messages[%zu].content", m);
            server_free_marked(r, msgs);
            server_free_pictures(s, p);
            return refuse(e, param, "the text %s marks where a picture goes; send pictures as image parts",
                          PICTURE_MARKER);
        }
        if (r->msgs[m].n_images && !(msgs[m].content = with_markers(&r->msgs[m]))) {
            msgs[m].content = r->msgs[m].content;
            server_free_marked(r, msgs);
            msgs = NULL;
        }
    }
    if (!msgs) {
        server_free_pictures(s, p);
        e->status = 500;
        snprintf(e->message, sizeof e->message, "out of memory");
        return -1;
    }
    *marked = msgs;
    return 0;
}
