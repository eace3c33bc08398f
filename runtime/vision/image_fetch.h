/* image_fetch.h: a picture named by an http(s) URL, fetched for a request
 * (strata serve --allow-remote-images), within limits.
 *
 * Contract: image_fetch() GETs url with libcurl: http and https only (for
 * redirects too, at most 3), the whole exchange within timeout_s seconds,
 * at most max_bytes of body (the transfer stops as soon as more arrive, and
 * a stated Content-Length above it is refused before any body is read),
 * status 200. *data (malloc'd) and *n hold the body, mime its Content-Type
 * without parameters ("" when none). -1 with one line in err (the status,
 * the limit, curl's reason), nothing allocated. Thread-safe once libcurl is
 * initialised (curl_global_init by the caller). */
#ifndef STRATA_IMAGE_FETCH_H
#define STRATA_IMAGE_FETCH_H

#include <stddef.h>
#include <stdint.h>

int image_fetch(const char *url, size_t max_bytes, long timeout_s, uint8_t **data, size_t *n, char *mime,
                size_t mimelen, char *err, size_t errlen);

#endif
