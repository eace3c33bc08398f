/* pull.h: `strata pull` — download files of a Hugging Face repository,
 * resumable and verified.
 *
 * Contract: pull_files() fetches each FILE of cfg->repo at cfg->revision from
 * $endpoint/REPO/resolve/REV/FILE into cfg->outdir/FILE. A file is written
 * to FILE.part and only renamed into place (link(2): an existing file is
 * never replaced) after its size and the sha256 the server states for it
 * (LFS X-Linked-Etag, or an ETag that is a sha256) match; a mismatch removes
 * the .part and fails. Interrupted transfers resume with a Range request
 * from the .part's length, in this run or a later one; a server that answers
 * a Range with the whole file restarts the .part from zero. Network errors,
 * 429 and 5xx are retried with exponential backoff, bounded by
 * cfg->max_failures consecutive attempts that made no progress. A FILE named
 * like a split GGUF (name-00001-of-00003.gguf) stands for the whole set.
 * Every file is probed (HEAD) and the free space checked before the first
 * byte is downloaded. Messages go to cfg->log, one line each; the return is
 * 0 when every file is present and verified, 1 otherwise.
 *
 * The caller owns libcurl's process-wide initialisation (curl_global_init):
 * strata_cmd_pull does it once per command. */
#ifndef STRATA_PULL_H
#define STRATA_PULL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum pull_progress_mode { PULL_PROGRESS_LINES, PULL_PROGRESS_BAR, PULL_PROGRESS_NONE };

typedef struct pull_config {
    const char *endpoint;   /* e.g. https://huggingface.co, no trailing slash */
    const char *repo;       /* owner/name */
    const char *revision;   /* branch, tag or commit */
    const char *token;      /* bearer token, NULL for anonymous */
    const char *outdir;     /* existing directory */
    int max_failures;       /* consecutive attempts without progress before giving up */
    long backoff_ms;        /* delay before the first retry; doubles each time */
    long stall_s;           /* a transfer below 1 KiB/s for this long is retried */
    enum pull_progress_mode progress;
    FILE *log;
} pull_config;

int strata_cmd_pull(int argc, char **argv);
int pull_files(const pull_config *cfg, char *const *files, size_t nfiles);

/* `strata pull REPO` (no FILE): the whole pack published as the repository
 * (pull_pack.c). Lists its files through the hub's API
 * ($endpoint/api/models/REPO/revision/REV, "siblings"), refuses a repository
 * without index.txt at its top (not a pack: the user names files instead),
 * downloads every listed file but .gitattributes with pull_files (index.txt
 * last, so an interrupted pull does not look like a whole pack), then checks
 * the folder with loader_check (size and crc32 of every pack file against
 * index.txt, as `strata check` does). 0 when the pack is complete and
 * checked, 1 otherwise. */
int pull_pack(const pull_config *cfg);

/* The hub's API answer (JSON text) -> the repo paths to download for a
 * pack, malloc'd (free each and the array). Returns 0 with the names, 1
 * when the repository is not a pack (err says why and what to do), -1 when
 * the answer is not a usable file list (err says what is wrong). */
int pull_pack_names(const pull_config *cfg, const char *json, size_t len, char ***names, size_t *n,
                    char *err, size_t errlen);

/* After failed attempt n (1-based), err its reason: logs the retry and
 * sleeps the backoff; 0 to try again, -1 once cfg->max_failures attempts
 * in a row have failed. */
int pull_retry_wait(const pull_config *cfg, const char *err, int n);

/* --- pure helpers (pull_names.c), exposed for the tests --- */

/* "dir/name-00002-of-00005.gguf" -> 1 with *count = 5 and prefix
 * "dir/name" (prefix must hold strlen(file)+1); 0 if not a split name. */
int pull_split_parse(const char *file, char *prefix, int *count);
/* The i-th name of a split set (1-based), llama.cpp's spelling. */
void pull_split_name(char *out, size_t n, const char *prefix, int i, int count);

/* 1 if a repo path is safe to join under the output directory: relative,
 * no "." / ".." / empty components, no backslashes or control bytes. */
int pull_safe_relpath(const char *file);

/* A header value (quotes, W/ prefix and spaces allowed) that is a sha256:
 * writes 64 lowercase hex digits + NUL to out and returns 1; else 0. */
int pull_etag_sha256(const char *value, char out[65]);

/* Delay before retry number n (1-based): base * 2^(n-1), capped at 60 s. */
long pull_backoff_ms(long base_ms, int n);

/* "1.5 GiB"-style sizes for messages. */
void pull_human_bytes(char *out, size_t n, double bytes);

#endif
