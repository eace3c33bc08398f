/* pull_http.c: HEAD probe and ranged GET over libcurl (see pull_http.h). */
#include "runtime/pull/pull_http.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The headers of the latest response; redirects produce several blocks and
 * each "HTTP/" status line starts a new one. */
typedef struct hdrs {
    char linked_etag[160], etag[160], x_error[64], content_range[128];
    int64_t linked_size, content_length;
} hdrs;

static void hdrs_clear(hdrs *h)
{
    memset(h, 0, sizeof *h);
    h->linked_size = h->content_length = -1;
}

static void copy_value(char *dst, size_t n, const char *v, size_t len)
{
    while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
    if (len >= n) len = n - 1; /* an overlong value fails the sha/number parse later */
    memcpy(dst, v, len);
    dst[len] = 0;
}

static int64_t parse_size(const char *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    while (*end == ' ') end++;
    return (errno || end == v || *end || x < 0) ? -1 : (int64_t)x;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *user)
{
    hdrs *h = user;
    size_t len = size * nitems;
    if (len >= 5 && !strncmp(line, "HTTP/", 5)) { hdrs_clear(h); return len; }
    const char *colon = memchr(line, ':', len);
    if (!colon) return len;
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    while (v < line + len && (*v == ' ' || *v == '\t')) v++;
    size_t vlen = (size_t)(line + len - v);
    char tmp[64];
#define IS(name) (nlen == sizeof(name) - 1 && !strncasecmp(line, name, nlen))
    if (IS("X-Linked-Etag")) copy_value(h->linked_etag, sizeof h->linked_etag, v, vlen);
    else if (IS("ETag")) copy_value(h->etag, sizeof h->etag, v, vlen);
    else if (IS("X-Error-Code")) copy_value(h->x_error, sizeof h->x_error, v, vlen);
    else if (IS("Content-Range")) copy_value(h->content_range, sizeof h->content_range, v, vlen);
    else if (IS("X-Linked-Size")) { copy_value(tmp, sizeof tmp, v, vlen); h->linked_size = parse_size(tmp); }
    else if (IS("Content-Length")) { copy_value(tmp, sizeof tmp, v, vlen); h->content_length = parse_size(tmp); }
#undef IS
    return len;
}

/* Percent-encodes s into out; '/' kept when keep_slash. */
static int escape_into(char *out, size_t n, size_t *pos, const char *s, int keep_slash)
{
    static const char hx[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
        if (*pos + 4 > n) return -1;
        if (plain) out[(*pos)++] = (char)c;
        else { out[(*pos)++] = '%'; out[(*pos)++] = hx[c >> 4]; out[(*pos)++] = hx[c & 15]; }
    }
    out[*pos] = 0;
    return 0;
}

int pull_remote_init(pull_remote *r, const pull_config *cfg, const char *file, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->size = -1;
    size_t pos = 0;
    if (strlen(file) >= sizeof r->file ||
        snprintf(r->url, sizeof r->url, "%s/", cfg->endpoint) >= (int)sizeof r->url) goto toolong;
    memcpy(r->file, file, strlen(file) + 1);
    pos = strlen(r->url);
    /* HF escapes the revision whole: "refs/pr/1" is one path segment */
    if (escape_into(r->url, sizeof r->url, &pos, cfg->repo, 1) ||
        escape_into(r->url, sizeof r->url, &pos, "/resolve/", 1) ||
        escape_into(r->url, sizeof r->url, &pos, cfg->revision, 0) ||
        escape_into(r->url, sizeof r->url, &pos, "/", 1) ||
        escape_into(r->url, sizeof r->url, &pos, file, 1)) goto toolong;
    return 0;
toolong:
    snprintf(err, errlen, "%s: name too long for a URL", file);
    return -1;
}

/* The token goes only to the endpoint the user chose, never to a CDN. */
static struct curl_slist *auth_headers(const pull_config *cfg, const char *url)
{
    struct curl_slist *l = NULL;
    size_t n = strlen(cfg->endpoint);
    if (cfg->token && *cfg->token && !strncmp(url, cfg->endpoint, n) && url[n] == '/') {
        char line[8192];
        snprintf(line, sizeof line, "Authorization: Bearer %s", cfg->token);
        l = curl_slist_append(NULL, line);
    }
    return l;
}

static void setup(CURL *h, const pull_config *cfg, const char *url, struct curl_slist *hl,
                  hdrs *hd, char *curl_err)
{
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "strata-pull/1");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, cfg->stall_s > 0 ? cfg->stall_s : 60L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, hd);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    if (hl) curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_err[0] = 0;
    hdrs_clear(hd);
}

static int curl_failure(CURLcode rc, const char *curl_err, const char *url, char *err, size_t errlen)
{
    const char *why = curl_err[0] ? curl_err : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        snprintf(err, errlen, "%s: cannot resolve the host (%s): no network or no DNS? "
                 "(HF_ENDPOINT chooses another server)", url, why);
        return PULL_RETRY;
    case CURLE_COULDNT_CONNECT:
        snprintf(err, errlen, "%s: cannot connect (%s): no network, or the server is down", url, why);
        return PULL_RETRY;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        snprintf(err, errlen, "%s: transfer interrupted: %s", url, why);
        return PULL_RETRY;
    default:
        snprintf(err, errlen, "%s: %s", url, why);
        return PULL_FATAL;
    }
}

int pull_status_message(long status, const char *x_error, const pull_config *cfg, const char *file,
                        char *err, size_t errlen)
{
    int tok = cfg->token && *cfg->token;
    if (status == 401) {
        if (tok)
            snprintf(err, errlen, "%s: 401 Unauthorized: the server refused HF_TOKEN (expired, revoked "
                     "or mistyped?)", cfg->repo);
        else
            snprintf(err, errlen, "%s: 401 Unauthorized: the repository is private or gated (or does not "
                     "exist); set HF_TOKEN to an access token (https://huggingface.co/settings/tokens)",
                     cfg->repo);
        return PULL_FATAL;
    }
    if (status == 403) {
        snprintf(err, errlen, "%s: 403 Forbidden: %s has no access to this repository; for a gated model "
                 "accept its terms on the model page and use a token with read access (HF_TOKEN)",
                 cfg->repo, tok ? "HF_TOKEN" : "an anonymous request");
        return PULL_FATAL;
    }
    if (status == 404) {
        if (!file && strcmp(x_error, "RepoNotFound") && strcmp(x_error, "RevisionNotFound")) {
            snprintf(err, errlen, "%s: 404 Not Found: %s lists no files for it at revision '%s' (is "
                     "HF_ENDPOINT a Hugging Face hub? check the name and --revision)", cfg->repo,
                     cfg->endpoint, cfg->revision);
            return PULL_FATAL;
        }
        if (!strcmp(x_error, "RepoNotFound"))
            snprintf(err, errlen, "%s: 404: repository not found on %s (misspelled, or private: set HF_TOKEN)",
                     cfg->repo, cfg->endpoint);
        else if (!strcmp(x_error, "RevisionNotFound"))
            snprintf(err, errlen, "%s: 404: revision '%s' not found (check --revision)", cfg->repo,
                     cfg->revision);
        else if (!strcmp(x_error, "EntryNotFound"))
            snprintf(err, errlen, "%s: 404: file '%s' not found at revision '%s'", cfg->repo, file,
                     cfg->revision);
        else
            snprintf(err, errlen, "%s: 404 Not Found: '%s' at revision '%s' (check the repository, the "
                     "file name and --revision)", cfg->repo, file, cfg->revision);
        return PULL_FATAL;
    }
    char what[1100];
    if (file) snprintf(what, sizeof what, "'%s'", file);
    else snprintf(what, sizeof what, "its file list");
    if (status == 429 || status >= 500) {
        snprintf(err, errlen, "%s: server answered HTTP %ld for %s", cfg->repo, status, what);
        return PULL_RETRY;
    }
    snprintf(err, errlen, "%s: unexpected HTTP %ld for %s", cfg->repo, status, what);
    return PULL_FATAL;
}

int pull_probe(CURL *h, const pull_config *cfg, pull_remote *r, char *err, size_t errlen)
{
    char url[sizeof r->url], curl_err[CURL_ERROR_SIZE];
    hdrs hd;
    memcpy(url, r->url, sizeof url);
    for (int hop = 0; hop < 8; hop++) {
        struct curl_slist *hl = auth_headers(cfg, url);
        setup(h, cfg, url, hl, &hd, curl_err);
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
        CURLcode rc = curl_easy_perform(h);
        curl_slist_free_all(hl);
        if (rc != CURLE_OK) return curl_failure(rc, curl_err, url, err, errlen);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        char sha[65];
        if (status >= 300 && status < 400) {
            /* An LFS file answers with a redirect to its storage; the
             * redirect itself carries the sha256 and size. */
            if (pull_etag_sha256(hd.linked_etag, sha)) {
                memcpy(r->sha256, sha, sizeof sha);
                r->size = hd.linked_size;
                return PULL_OK;
            }
            char *next = NULL;
            curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &next);
            if (!next || strlen(next) >= sizeof url) {
                snprintf(err, errlen, "%s: redirect (HTTP %ld) without a usable Location", url, status);
                return PULL_FATAL;
            }
            memmove(url, next, strlen(next) + 1);
            continue;
        }
        if (status == 200) {
            if (pull_etag_sha256(hd.linked_etag, sha) || pull_etag_sha256(hd.etag, sha))
                memcpy(r->sha256, sha, sizeof sha);
            r->size = hd.linked_size >= 0 ? hd.linked_size : hd.content_length;
            return PULL_OK;
        }
        return pull_status_message(status, hd.x_error, cfg, r->file, err, errlen);
    }
    snprintf(err, errlen, "%s: too many redirects", r->url);
    return PULL_FATAL;
}

typedef struct fetch_state {
    CURL *h;
    const pull_remote *r;
    const pull_config *cfg;
    int fd;
    sha256_ctx *sha;
    int64_t offset;     /* where this request asked to start */
    int started;        /* first body byte seen: status checked */
    int discard;        /* an error body: not ours to keep */
    int fail;           /* PULL_RETRY / PULL_FATAL set by the callback */
    char why[2048];
    pull_progress *prog;
    hdrs hd;
} fetch_state;

static int restart_file(fetch_state *s)
{
    if (ftruncate(s->fd, 0) != 0 || lseek(s->fd, 0, SEEK_SET) != 0) return -1;
    sha256_init(s->sha);
    return 0;
}

/* Content-Range: bytes START-END/TOTAL */
static int64_t range_start(const char *v)
{
    if (strncasecmp(v, "bytes ", 6)) return -1;
    char *end;
    long long x = strtoll(v + 6, &end, 10);
    return (end == v + 6 || *end != '-' || x < 0) ? -1 : (int64_t)x;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    fetch_state *s = user;
    size_t len = size * nmemb;
    if (!s->started) {
        s->started = 1;
        long status = 0;
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
        if (status == 206) {
            if (range_start(s->hd.content_range) != s->offset) {
                snprintf(s->why, sizeof s->why, "%s: asked for bytes %lld- but the server sent '%s'; "
                         "starting the file again", s->r->file, (long long)s->offset, s->hd.content_range);
                s->fail = restart_file(s) ? PULL_FATAL : PULL_RETRY;
                return 0;
            }
        } else if (status == 200) {
            if (s->offset > 0) {
                pull_progress_break(s->prog);
                fprintf(s->cfg->log, "pull: %s: the server ignored the Range request (200, not 206); "
                        "restarting from byte 0\n", s->r->file);
                if (restart_file(s)) {
                    snprintf(s->why, sizeof s->why, "%s.part: cannot truncate: %s", s->r->file, strerror(errno));
                    s->fail = PULL_FATAL;
                    return 0;
                }
                s->offset = 0;
                s->prog->first = 0;
            }
        } else {
            s->discard = 1;
        }
    }
    if (s->discard) return len;
    if (s->r->size >= 0 && (int64_t)(s->sha->bytes + len) > s->r->size) {
        snprintf(s->why, sizeof s->why, "%s: the server sent more than the %lld bytes it stated",
                 s->r->file, (long long)s->r->size);
        s->fail = restart_file(s) ? PULL_FATAL : PULL_RETRY;
        return 0;
    }
    for (size_t done = 0; done < len;) {
        ssize_t w = write(s->fd, data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* keep hash == file: what the short write left is cut off again */
            off_t keep = (off_t)s->sha->bytes;
            if (done) sha256_update(s->sha, data, done), keep = (off_t)s->sha->bytes;
            snprintf(s->why, sizeof s->why, "%s.part: write failed: %s", s->r->file,
                     w < 0 ? strerror(errno) : "no space?");
            if (ftruncate(s->fd, keep) != 0 || lseek(s->fd, keep, SEEK_SET) != keep) restart_file(s);
            s->fail = PULL_FATAL;
            return 0;
        }
        done += (size_t)w;
    }
    sha256_update(s->sha, data, len);
    pull_progress_update(s->prog, (int64_t)s->sha->bytes);
    return len;
}

int pull_fetch(CURL *h, const pull_config *cfg, const pull_remote *r, int fd, sha256_ctx *sha,
               pull_progress *prog, char *err, size_t errlen)
{
    fetch_state s;
    memset(&s, 0, sizeof s);
    s.h = h; s.r = r; s.cfg = cfg; s.fd = fd; s.sha = sha; s.prog = prog;
    s.offset = (int64_t)sha->bytes;
    char curl_err[CURL_ERROR_SIZE], range[32];
    struct curl_slist *hl = auth_headers(cfg, r->url);
    setup(h, cfg, r->url, hl, &s.hd, curl_err);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 8L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    if (s.offset > 0) {
        /* CURLOPT_RANGE, not RESUME_FROM: curl treats a 200 answer to
         * RESUME_FROM as an error, but a clean restart is what we want. */
        snprintf(range, sizeof range, "%lld-", (long long)s.offset);
        curl_easy_setopt(h, CURLOPT_RANGE, range);
    }
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(hl);
    if (s.fail) {
        snprintf(err, errlen, "%s", s.why);
        return s.fail;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) return curl_failure(rc, curl_err, r->url, err, errlen);
    if (status == 416) {
        /* the .part is not a prefix of what the server has now */
        if (restart_file(&s)) {
            snprintf(err, errlen, "%s.part: cannot truncate: %s", r->file, strerror(errno));
            return PULL_FATAL;
        }
        snprintf(err, errlen, "%s: the server refused resuming at byte %lld; starting again", r->file,
                 (long long)s.offset);
        return PULL_RETRY;
    }
    if (status != 200 && status != 206)
        return pull_status_message(status, s.hd.x_error, cfg, r->file, err, errlen);
    if (r->size >= 0 && (int64_t)sha->bytes != r->size) {
        snprintf(err, errlen, "%s: the connection ended at byte %lld of %lld", r->file,
                 (long long)sha->bytes, (long long)r->size);
        return PULL_RETRY;
    }
    return PULL_OK;
}

int pull_api_url(char *out, size_t n, const pull_config *cfg)
{
    size_t pos = 0;
    if (snprintf(out, n, "%s/api/models/", cfg->endpoint) >= (int)n) return -1;
    pos = strlen(out);
    return escape_into(out, n, &pos, cfg->repo, 1) || escape_into(out, n, &pos, "/revision/", 1) ||
           escape_into(out, n, &pos, cfg->revision, 0) ? -1 : 0;
}

typedef struct doc_buf {
    char *data;
    size_t len, cap;
} doc_buf;

/* An API answer is a few KiB; 16 MiB bounds a server that sends garbage. */
enum { DOC_MAX = 16 << 20 };

static size_t on_doc(char *data, size_t size, size_t nmemb, void *user)
{
    doc_buf *b = user;
    size_t len = size * nmemb;
    if (b->len + len + 1 > DOC_MAX) return 0;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return len;
}

int pull_get_doc(CURL *h, const pull_config *cfg, const char *url, char **body, size_t *len, char *err,
                 size_t errlen)
{
    doc_buf b = { 0 };
    hdrs hd;
    char curl_err[CURL_ERROR_SIZE];
    struct curl_slist *hl = auth_headers(cfg, url);
    setup(h, cfg, url, hl, &hd, curl_err);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 8L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_doc);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(hl);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    int out = PULL_OK;
    if (rc == CURLE_WRITE_ERROR)
        snprintf(err, errlen, "%s: the answer is over %d MiB or memory ran out", url, DOC_MAX >> 20),
            out = PULL_FATAL;
    else if (rc != CURLE_OK) out = curl_failure(rc, curl_err, url, err, errlen);
    else if (status != 200) out = pull_status_message(status, hd.x_error, cfg, NULL, err, errlen);
    if (out != PULL_OK) {
        free(b.data);
        return out;
    }
    *body = b.data ? b.data : calloc(1, 1);
    *len = b.len;
    if (!*body) { snprintf(err, errlen, "out of memory"); return PULL_FATAL; }
    return PULL_OK;
}
