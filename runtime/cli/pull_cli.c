/* pull_cli.c: `strata pull` argument parsing and environment (see pull.h
 * and docs/pull.md): REPO FILE... pulls files, REPO alone a whole pack. Owns libcurl's process-wide init for the command. */
#include "runtime/pull/pull.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: strata pull REPO [FILE...] [--revision REV] [-o DIR] [--retries N]\n"
        "  Downloads FILE(s) of the Hugging Face repository REPO (owner/name) into DIR\n"
        "  (default .), resumable (FILE.part) and verified against the sha256 the server\n"
        "  states. A split GGUF (name-00001-of-00003.gguf) pulls the whole set.\n"
        "  With no FILE, REPO must be a pack (index.txt at its top, see docs/pull.md):\n"
        "  every file is downloaded, then checked as `strata check DIR` does.\n"
        "  --revision REV  branch, tag or commit (default main)\n"
        "  -o, --output DIR  where to write (created if missing)\n"
        "  --retries N     give up after N failed attempts in a row (default 6)\n"
        "Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (sent as a\n"
        "  bearer token), STRATA_PULL_BACKOFF_MS (first retry delay, default 1000).\n");
}

static int valid_repo(const char *s)
{
    int slashes = 0;
    if (!*s || *s == '/' || s[strlen(s) - 1] == '/') return 0;
    for (const char *p = s; *p; p++) {
        if (*p == '/') { slashes++; continue; }
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.') return 0;
    }
    return slashes <= 1 && !strstr(s, "..");
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int mkdirs(const char *dir)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) return -1;
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        if (!c) break;
        *p = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

int strata_cmd_pull(int argc, char **argv)
{
    pull_config cfg = {
        .endpoint = "https://huggingface.co", .revision = "main", .outdir = ".",
        .max_failures = 6, .backoff_ms = 1000, .stall_s = 60, .log = stderr,
    };
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (!pos) { fprintf(stderr, "strata pull: out of memory\n"); return 1; }
    size_t npos = 0;
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); rc = 0; goto out; }
        if (!strcmp(a, "--revision") || !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--retries")) {
            if (!val) { fprintf(stderr, "strata pull: %s needs a value\n", a); goto out; }
            i++;
            if (!strcmp(a, "--revision")) cfg.revision = val;
            else if (!strcmp(a, "--retries")) {
                if (parse_long(val, 0, 100, &v)) { fprintf(stderr, "strata pull: --retries wants 0..100\n"); goto out; }
                cfg.max_failures = (int)v;
            } else cfg.outdir = val;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "strata pull: unknown option '%s'\n", a);
            usage(stderr);
            goto out;
        } else {
            pos[npos++] = argv[i];
        }
    }
    if (npos < 1) { usage(stderr); goto out; }
    if (!valid_repo(pos[0])) {
        fprintf(stderr, "strata pull: '%s' is not a repository name (owner/name)\n", pos[0]);
        goto out;
    }
    if (!*cfg.revision) { fprintf(stderr, "strata pull: --revision is empty\n"); goto out; }
    cfg.repo = pos[0];

    char endpoint[1024];
    const char *e = getenv("HF_ENDPOINT");
    snprintf(endpoint, sizeof endpoint, "%s", e && *e ? e : cfg.endpoint);
    for (size_t n = strlen(endpoint); n > 0 && endpoint[n - 1] == '/'; n--) endpoint[n - 1] = 0;
    if (strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)) {
        fprintf(stderr, "strata pull: HF_ENDPOINT '%s' is not an http(s) URL\n", endpoint);
        goto out;
    }
    cfg.endpoint = endpoint;
    const char *t = getenv("HF_TOKEN");
    cfg.token = t && *t ? t : NULL;
    const char *b = getenv("STRATA_PULL_BACKOFF_MS");
    long v;
    if (b && *b) {
        if (parse_long(b, 0, 600000, &v)) {
            fprintf(stderr, "strata pull: STRATA_PULL_BACKOFF_MS='%s' is not 0..600000\n", b);
            goto out;
        }
        cfg.backoff_ms = v;
    }
    if (mkdirs(cfg.outdir) != 0) {
        fprintf(stderr, "strata pull: %s: cannot create the output directory: %s\n", cfg.outdir, strerror(errno));
        rc = 1;
        goto out;
    }
    cfg.progress = isatty(STDERR_FILENO) ? PULL_PROGRESS_BAR : PULL_PROGRESS_LINES;

    /* libcurl's global init is process-wide and not thread-safe; this
     * command is the process's only curl user, so it is done once here,
     * before any handle exists, and undone after the last is freed. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "strata pull: libcurl failed to initialise\n");
        rc = 1;
        goto out;
    }
    rc = npos == 1 ? pull_pack(&cfg) : pull_files(&cfg, pos + 1, npos - 1);
    curl_global_cleanup();
out:
    free(pos);
    return rc;
}
