/* image_fetch.c: see image_fetch.h. */
#include "runtime/vision/image_fetch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct body {
    uint8_t *d;
    size_t n, cap, max;
    int over;
} body;

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    body *b = ud;
    const size_t k = sz * nm;
    if (b->n + k > b->max) { b->over = 1; return 0; } /* stops the transfer */
    if (b->n + k > b->cap) {
        size_t c = b->cap ? b->cap : 65536;
        while (c < b->n + k) c *= 2;
        uint8_t *g = realloc(b->d, c);
        if (!g) return 0;
        b->d = g;
        b->cap = c;
    }
    memcpy(b->d + b->n, p, k);
    b->n += k;
    return k;
}

int image_fetch(const char *url, size_t max_bytes, long timeout_s, uint8_t **data, size_t *n, char *mime,
                size_t mimelen, char *err, size_t errlen)
{
    *data = NULL;
    *n = 0;
    if (mimelen) mime[0] = '\0';
    CURL *h = curl_easy_init();
    if (!h) { snprintf(err, errlen, "cannot start an HTTP client"); return -1; }
    body b = { .max = max_bytes };
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout_s);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_bytes);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "strata");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    const CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    const char *ct = NULL;
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
    int ok = 0;
    if (b.over || rc == CURLE_FILESIZE_EXCEEDED)
        snprintf(err, errlen, "the picture at the URL is more than %zu bytes", max_bytes);
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        snprintf(err, errlen, "fetching the picture took more than %ld s", timeout_s);
    else if (rc != CURLE_OK)
        snprintf(err, errlen, "the picture could not be fetched: %s", cerr[0] ? cerr : curl_easy_strerror(rc));
    else if (status != 200)
        snprintf(err, errlen, "fetching the picture: HTTP status %ld", status);
    else
        ok = 1;
    if (ok && ct && mimelen) {
        size_t k = strcspn(ct, "; \t");
        if (k >= mimelen) k = mimelen - 1;
        memcpy(mime, ct, k);
        mime[k] = '\0';
    }
    curl_easy_cleanup(h);
    if (!ok) { free(b.d); return -1; }
    *data = b.d ? b.d : malloc(1);
    *n = b.n;
    return 0;
}
