/* pull_pack.c: `strata pull REPO` with no FILE: a whole pack published as a
 * Hugging Face repository (see pull.h and docs/pull.md). The file list comes
 * from the hub's API; the downloads are pull_files' (resumable, sha256
 * verified); the closing check is loader_check's, the code of `strata check`. */
#include "runtime/pull/pull.h"
#include "runtime/pull/pull_http.h"

#include "formats/pack_files.h"
#include "runtime/model/loader.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

int pull_pack_names(const pull_config *cfg, const char *json, size_t len, char ***names, size_t *n,
                    char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(json, len, 0, &je);
    json_t *sib = doc ? json_object_get(doc, "siblings") : NULL;
    if (!json_is_array(sib)) {
        snprintf(err, errlen, "%s: the hub's answer is not a file list (%s); is HF_ENDPOINT a Hugging Face hub?",
                 cfg->repo, doc ? "no \"siblings\" array" : je.text);
        json_decref(doc);
        return -1;
    }
    size_t total = json_array_size(sib), count = 0;
    char **out = calloc(total + 1, sizeof *out);
    const char *nested = NULL; /* an index.txt below the top: a pack in a folder */
    int have_index = 0, rc = -1;
    if (!out) { snprintf(err, errlen, "out of memory"); goto done; }
    for (size_t i = 0; i < total; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(sib, i), "rfilename"));
        if (!name) {
            snprintf(err, errlen, "%s: the hub's file list has an entry without \"rfilename\"", cfg->repo);
            goto done;
        }
        if (!pull_safe_relpath(name)) {
            snprintf(err, errlen, "%s: the hub lists '%s', not a file path inside a repository", cfg->repo, name);
            goto done;
        }
        /* git's own bookkeeping (LFS rules), not a file of the pack */
        if (!strcmp(name, ".gitattributes")) continue;
        size_t nl = strlen(name), il = strlen(PACK_INDEX);
        if (!strcmp(name, PACK_INDEX)) have_index = 1;
        else if (!nested && nl > il && name[nl - il - 1] == '/' && !strcmp(name + nl - il, PACK_INDEX)) nested = name;
        if (!(out[count++] = strdup(name))) { snprintf(err, errlen, "out of memory"); goto done; }
    }
    if (!have_index) {
        if (nested)
            snprintf(err, errlen, "%s: not a pack at the top of the repository: its %s is '%s'; publish the "
                     "pack folder's files at the top (docs/pull.md), or name the files: strata pull %s FILE...",
                     cfg->repo, PACK_INDEX, nested, cfg->repo);
        else
            snprintf(err, errlen, "%s: not a strata pack (no %s at the top of the repository); to download "
                     "some of its files name them: strata pull %s FILE...", cfg->repo, PACK_INDEX, cfg->repo);
        rc = 1;
        goto done;
    }
    /* index.txt last: a folder holding it is taken for a whole pack */
    for (size_t i = 0; i + 1 < count; i++)
        if (!strcmp(out[i], PACK_INDEX)) {
            char *t = out[i];
            memmove(out + i, out + i + 1, (count - i - 1) * sizeof *out);
            out[count - 1] = t;
            break;
        }
    *names = out;
    *n = count;
    out = NULL;
    rc = 0;
done:
    if (out) free_names(out, count);
    json_decref(doc);
    return rc;
}

/* The file list, retried like a probe (network errors, 429, 5xx). */
static int list_files(const pull_config *cfg, char ***names, size_t *n)
{
    char url[4096], err[8192];
    if (pull_api_url(url, sizeof url, cfg)) {
        fprintf(cfg->log, "strata pull: %s: name too long for a URL\n", cfg->repo);
        return -1;
    }
    CURL *h = curl_easy_init();
    if (!h) { fprintf(cfg->log, "strata pull: out of memory\n"); return -1; }
    char *body = NULL;
    size_t len = 0;
    int rc;
    for (int k = 1;; k++) {
        rc = pull_get_doc(h, cfg, url, &body, &len, err, sizeof err);
        if (rc != PULL_RETRY || pull_retry_wait(cfg, err, k)) break;
    }
    curl_easy_cleanup(h);
    if (rc != PULL_OK) {
        fprintf(cfg->log, "strata pull: %s\n", err);
        return -1;
    }
    rc = pull_pack_names(cfg, body, len, names, n, err, sizeof err);
    free(body);
    if (rc) fprintf(cfg->log, "strata pull: %s\n", err);
    return rc ? -1 : 0;
}

int pull_pack(const pull_config *cfg)
{
    char **names = NULL;
    size_t n = 0;
    if (list_files(cfg, &names, &n)) return 1;
    fprintf(cfg->log, "pull: %s: a pack of %zu file%s\n", cfg->repo, n, n == 1 ? "" : "s");
    int rc = pull_files(cfg, names, n);
    free_names(names, n);
    if (rc) return rc;
    char err[4096];
    if (loader_check(cfg->outdir, cfg->log, err, sizeof err)) {
        fprintf(cfg->log, "strata pull: %s; the repository %s does not hold a whole pack\n", err, cfg->repo);
        return 1;
    }
    fprintf(cfg->log, "pull: %s: every pack file matches %s (size and crc32, as strata check does); "
            "next: strata run %s -p \"Once upon a time\"\n", cfg->outdir, PACK_INDEX, cfg->outdir);
    return 0;
}
