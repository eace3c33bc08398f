/* pull_file.c: the life of each file in strata pull (see pull.h): probe
 * everything first, refuse early (bad names, missing files, no space),
 * then download each file into FILE.part, verify, and publish. */
#include "runtime/pull/pull.h"
#include "runtime/pull/pull_http.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

typedef struct pull_job {
    pull_remote r;
    char final[PATH_MAX];
    char part[PATH_MAX + 8];
    int present;        /* final file already there and matching */
} pull_job;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

int pull_retry_wait(const pull_config *cfg, const char *err, int n)
{
    if (n > cfg->max_failures) return -1;
    long d = pull_backoff_ms(cfg->backoff_ms, n);
    fprintf(cfg->log, "pull: %s; retrying in %.1f s (%d of %d)\n", err, d / 1000.0, n, cfg->max_failures);
    sleep_ms(d);
    return 0;
}

/* Runs a probe until it succeeds, fails for good, or runs out of tries. */
static int probe_with_retries(CURL *h, const pull_config *cfg, pull_remote *r, char *err, size_t errlen)
{
    for (int n = 1;; n++) {
        int rc = pull_probe(h, cfg, r, err, errlen);
        if (rc != PULL_RETRY) return rc;
        if (pull_retry_wait(cfg, err, n)) return PULL_FATAL;
    }
}

static int make_parents(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* An existing final file is never replaced: it is either the same file
 * (skip it) or the user's to move away. */
static int check_existing(const pull_config *cfg, pull_job *j)
{
    int64_t have = file_size(j->final);
    if (have < 0) return 0;
    if (j->r.sha256[0]) {
        unsigned char d[32];
        char hex[65];
        if (sha256_file(j->final, d) != 0) {
            fprintf(cfg->log, "strata pull: %s: exists but cannot be read: %s\n", j->final, strerror(errno));
            return -1;
        }
        sha256_hex(d, hex);
        if (!strcmp(hex, j->r.sha256)) {
            fprintf(cfg->log, "pull: %s: already there (sha256 matches), skipping\n", j->final);
            j->present = 1;
            return 0;
        }
        fprintf(cfg->log, "strata pull: %s: exists with sha256 %s but the server states %s; not "
                "overwriting it (move it away to download again)\n", j->final, hex, j->r.sha256);
        return -1;
    }
    if (j->r.size < 0 || have == j->r.size) {
        fprintf(cfg->log, "pull: %s: already there (same size; the server states no sha256), skipping\n",
                j->final);
        j->present = 1;
        return 0;
    }
    fprintf(cfg->log, "strata pull: %s: exists with %lld bytes but the server states %lld; not "
            "overwriting it (move it away to download again)\n", j->final, (long long)have,
            (long long)j->r.size);
    return -1;
}

/* Free space is checked for the whole set up front: running out at 90% of
 * a 100 GB download is the failure this prevents. */
static int check_space(const pull_config *cfg, pull_job *jobs, size_t n)
{
    int64_t need = 0;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].present || jobs[i].r.size < 0) continue;
        int64_t part = file_size(jobs[i].part);
        need += jobs[i].r.size - (part > 0 && part <= jobs[i].r.size ? part : 0);
    }
    struct statvfs vs;
    if (need == 0 || statvfs(cfg->outdir, &vs) != 0) return 0;
    int64_t avail = (int64_t)vs.f_bavail * (int64_t)vs.f_frsize;
    if (need <= avail) return 0;
    char a[32], b[32];
    pull_human_bytes(a, sizeof a, (double)need);
    pull_human_bytes(b, sizeof b, (double)avail);
    fprintf(cfg->log, "strata pull: not enough free space in %s: the download needs %s, %s are free\n",
            cfg->outdir, a, b);
    return -1;
}

/* Hashes what an earlier attempt left in the .part, so a resumed download
 * is verified whole, not only its tail. */
static int hash_prefix(int fd, int64_t len, sha256_ctx *sha)
{
    unsigned char buf[1 << 16];
    sha256_init(sha);
    for (int64_t off = 0; off < len;) {
        size_t want = (size_t)(len - off < (int64_t)sizeof buf ? len - off : (int64_t)sizeof buf);
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        sha256_update(sha, buf, (size_t)got);
        off += got;
    }
    return lseek(fd, (off_t)len, SEEK_SET) == (off_t)len ? 0 : -1;
}

static int download(CURL *h, const pull_config *cfg, pull_job *j, int fd, sha256_ctx *sha)
{
    char err[8192];
    pull_progress prog;
    pull_progress_start(&prog, cfg->log, cfg->progress, j->r.file, j->r.size, (int64_t)sha->bytes);
    for (int failures = 0;;) {
        if (j->r.size >= 0 && (int64_t)sha->bytes == j->r.size) break;
        uint64_t before = sha->bytes;
        int rc = pull_fetch(h, cfg, &j->r, fd, sha, &prog, err, sizeof err);
        if (rc == PULL_OK) break;
        pull_progress_break(&prog);
        if (rc == PULL_FATAL) {
            fprintf(cfg->log, "strata pull: %s\n", err);
            return -1;
        }
        failures = sha->bytes > before ? 1 : failures + 1;
        if (failures > cfg->max_failures) {
            fprintf(cfg->log, "strata pull: %s: giving up after %d attempts without progress: %s "
                    "(run the command again to resume from %s)\n", j->r.file, failures, err, j->part);
            return -1;
        }
        long d = pull_backoff_ms(cfg->backoff_ms, failures);
        fprintf(cfg->log, "pull: %s; resuming in %.1f s\n", err, d / 1000.0);
        sleep_ms(d);
    }
    pull_progress_done(&prog, (int64_t)sha->bytes);
    return 0;
}

static int pull_one(CURL *h, const pull_config *cfg, pull_job *j)
{
    if (make_parents(j->final) != 0) {
        fprintf(cfg->log, "strata pull: %s: cannot create its directory: %s\n", j->final, strerror(errno));
        return -1;
    }
    int fd = open(j->part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(cfg->log, "strata pull: %s: %s\n", j->part, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(cfg->log, "strata pull: %s: another strata pull is writing it\n", j->part);
        close(fd);
        return -1;
    }
    int rc = -1;
    sha256_ctx sha;
    int64_t len = file_size(j->part);
    if (j->r.size >= 0 && len > j->r.size) {
        fprintf(cfg->log, "pull: %s: longer than the file on the server; starting it again\n", j->part);
        if (ftruncate(fd, 0) != 0) goto out;
        len = 0;
    }
    if (len < 0 || hash_prefix(fd, len, &sha) != 0) {
        fprintf(cfg->log, "strata pull: %s: cannot read it back: %s\n", j->part, strerror(errno));
        goto out;
    }
    if (download(h, cfg, j, fd, &sha) != 0) goto out;

    unsigned char d[32];
    char hex[65];
    sha256_final(&sha, d);
    sha256_hex(d, hex);
    if (j->r.sha256[0] && strcmp(hex, j->r.sha256)) {
        unlink(j->part);
        fprintf(cfg->log, "strata pull: %s: SHA256 MISMATCH: got %s, the server states %s; the download "
                "is corrupt (or the file changed upstream): %s was deleted, nothing was written\n",
                j->r.file, hex, j->r.sha256, j->part);
        goto out;
    }
    if (fsync(fd) != 0) {
        fprintf(cfg->log, "strata pull: %s: fsync failed: %s\n", j->part, strerror(errno));
        goto out;
    }
    if (link(j->part, j->final) != 0) {
        fprintf(cfg->log, "strata pull: %s: %s; the download stays in %s\n", j->final,
                errno == EEXIST ? "appeared while downloading, not overwriting it" : strerror(errno), j->part);
        goto out;
    }
    unlink(j->part);
    if (j->r.sha256[0])
        fprintf(cfg->log, "pull: %s: sha256 verified -> %s\n", j->r.file, j->final);
    else
        fprintf(cfg->log, "pull: %s: the server states no sha256 for it (not an LFS file): size checked "
                "only -> %s\n", j->r.file, j->final);
    rc = 0;
out:
    close(fd);
    return rc;
}

/* FILE arguments -> the list of repo paths, split sets expanded. */
static char **expand(const pull_config *cfg, char *const *files, size_t nfiles, size_t *count)
{
    size_t cap = 0, n = 0;
    char **out = NULL;
    for (size_t i = 0; i < nfiles; i++) {
        if (!pull_safe_relpath(files[i])) {
            fprintf(cfg->log, "strata pull: '%s': not a file path inside a repository\n", files[i]);
            goto fail;
        }
        char *prefix = malloc(strlen(files[i]) + 1);
        int parts = 1;
        if (!prefix) goto fail;
        int split = pull_split_parse(files[i], prefix, &parts);
        if (split && parts > 1)
            fprintf(cfg->log, "pull: %s is part of a split GGUF: pulling all %d parts\n", files[i], parts);
        for (int k = 1; k <= parts; k++) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                char **grown = realloc(out, cap * sizeof *out);
                if (!grown) { free(prefix); goto fail; }
                out = grown;
            }
            size_t len = strlen(files[i]) + 1;
            if (!(out[n] = malloc(len))) { free(prefix); goto fail; }
            if (split) pull_split_name(out[n], len, prefix, k, parts);
            else memcpy(out[n], files[i], len);
            n++;
        }
        free(prefix);
    }
    *count = n;
    return out;
fail:
    for (size_t i = 0; i < n; i++) free(out[i]);
    free(out);
    return NULL;
}

int pull_files(const pull_config *cfg, char *const *files, size_t nfiles)
{
    size_t n = 0;
    char **names = expand(cfg, files, nfiles, &n);
    if (!names) return 1;
    int rc = 1;
    pull_job *jobs = calloc(n, sizeof *jobs);
    CURL *h = curl_easy_init();
    if (!jobs || !h) {
        fprintf(cfg->log, "strata pull: out of memory\n");
        goto out;
    }
    int bad = 0;
    char err[8192];
    for (size_t i = 0; i < n; i++) {
        pull_job *j = &jobs[i];
        if (snprintf(j->final, sizeof j->final, "%s/%s", cfg->outdir, names[i]) >= (int)sizeof j->final ||
            pull_remote_init(&j->r, cfg, names[i], err, sizeof err) != 0) {
            fprintf(cfg->log, "strata pull: %s: path too long\n", names[i]);
            bad = 1;
            continue;
        }
        snprintf(j->part, sizeof j->part, "%s.part", j->final);
        if (probe_with_retries(h, cfg, &j->r, err, sizeof err) != PULL_OK) {
            /* the next file would meet the same missing network or token */
            fprintf(cfg->log, "strata pull: %s\n", err);
            bad = 1;
            break;
        }
        if (check_existing(cfg, j) != 0) bad = 1;
    }
    if (bad || check_space(cfg, jobs, n) != 0) goto out;
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].present && pull_one(h, cfg, &jobs[i]) != 0) goto out;
    rc = 0;
out:
    if (h) curl_easy_cleanup(h);
    free(jobs);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}
