/* pull_http.h: the two HTTP exchanges of strata pull, over libcurl.
 *
 * Contract: pull_probe() asks the resolve URL what the file is (HEAD,
 * redirects walked by hand so the LFS headers on the redirect itself are
 * seen): size and stated sha256. pull_fetch() downloads from byte `offset`
 * into an open file descriptor, through redirects, hashing what it writes
 * into the caller's context; if the server ignores the Range it truncates
 * the file and restarts the hash, so fd length == hashed bytes always holds.
 * The bearer token is only ever attached to URLs under cfg->endpoint
 * (curl drops it on redirects to other hosts). Both return PULL_OK,
 * PULL_RETRY (network error, 429, 5xx, short body: worth another try) or
 * PULL_FATAL, with a one-line reason in err. pull_get_doc() fetches the
 * hub's API answers (the file list of a repository) the same way. Nothing
 * global: the CURL handle is the caller's. */
#ifndef STRATA_PULL_HTTP_H
#define STRATA_PULL_HTTP_H

#include <curl/curl.h>
#include "formats/sha256.h"
#include "runtime/pull/pull.h"
#include "runtime/pull/pull_progress.h"

enum { PULL_OK = 0, PULL_RETRY = 1, PULL_FATAL = 2 };

typedef struct pull_remote {
    char file[1024];   /* path in the repository */
    char url[4096];    /* $endpoint/REPO/resolve/REV/FILE, escaped */
    int64_t size;      /* -1: not stated */
    char sha256[65];   /* "": not stated */
} pull_remote;

int pull_remote_init(pull_remote *r, const pull_config *cfg, const char *file, char *err, size_t errlen);
int pull_probe(CURL *h, const pull_config *cfg, pull_remote *r, char *err, size_t errlen);
int pull_fetch(CURL *h, const pull_config *cfg, const pull_remote *r, int fd, sha256_ctx *sha,
               pull_progress *prog, char *err, size_t errlen);

/* The hub's file list of cfg->repo at cfg->revision:
 * $endpoint/api/models/REPO/revision/REV (REV escaped as one segment). */
int pull_api_url(char *out, size_t n, const pull_config *cfg);
/* GETs a small document (an API answer, at most 16 MiB) into a malloc'd,
 * NUL-terminated *body; PULL_OK / PULL_RETRY / PULL_FATAL as above. */
int pull_get_doc(CURL *h, const pull_config *cfg, const char *url, char **body, size_t *len, char *err,
                 size_t errlen);

/* The message for an HTTP error status; x_error is HF's X-Error-Code header
 * ("" if none); file NULL means the repository's file list. Returns
 * PULL_RETRY or PULL_FATAL. */
int pull_status_message(long status, const char *x_error, const pull_config *cfg, const char *file,
                        char *err, size_t errlen);

#endif
