/* test_util.h: small helpers shared by the cmocka suites.
 *
 * Contract: shared_path() builds a path under the shared reference folder
 * ($STRATA_SHARED, else ../shared); have_shared() tells whether a file there
 * exists so a test can skip() and say so when the data is absent;
 * shared_part() gives the path for the part of a test that needs it.
 * slurp() reads a whole file or returns NULL. No global state.
 * SHIPPED_MODEL is the model the repository ships, for the tests that need
 * "a real model" or "a real tokenizer" rather than reference data: they run
 * without ../shared and fail (never skip) when the file is missing. */
#ifndef STRATA_TEST_UTIL_H
#define STRATA_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

/* glm4moe, F16, a 1536-token SentencePiece vocabulary (<unk> <s> </s>, then
 * the 256 byte tokens <0x00>..<0xFF> at ids 3..258, as stories260K's); the
 * path is relative to the project root, where make test runs. */
#define SHIPPED_MODEL "models/tiny-moe/tiny-moe.gguf"

static inline const char *shared_root(void)
{
    const char *s = getenv("STRATA_SHARED");
    return (s && *s) ? s : "../shared";
}

static inline char *shared_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", shared_root(), rel);
    return buf;
}

static inline int have_shared(const char *rel)
{
    char p[4096];
    struct stat st;
    return stat(shared_path(p, sizeof p, rel), &st) == 0;
}

/* Skip the current test, saying which shared file is missing. */
#define SKIP_UNLESS_SHARED(rel)                                              \
    do {                                                                     \
        if (!have_shared(rel)) {                                             \
            printf("SKIP %s: %s/%s is absent\n", __func__, shared_root(), rel); \
            skip();                                                          \
        }                                                                    \
    } while (0)

/* The path of rel under the shared folder, for the part of a test that
 * needs it; NULL, after a line "SKIP (part) PATH is absent", where it is not
 * there (the rest of the test has run: the test passes, not skips). */
static inline const char *shared_part(char *buf, size_t n, const char *rel)
{
    if (have_shared(rel)) return shared_path(buf, n, rel);
    printf("SKIP (part) %s/%s is absent\n", shared_root(), rel);
    return NULL;
}

static inline void *slurp(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    if (fseek(fp, 0, SEEK_END) != 0) { fclose(fp); return NULL; }
    long len = ftell(fp);
    if (len < 0 || fseek(fp, 0, SEEK_SET) != 0) { fclose(fp); return NULL; }
    unsigned char *buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, fp) != (size_t)len) { free(buf); buf = NULL; }
    fclose(fp);
    if (buf) { buf[len] = 0; if (size) *size = (size_t)len; }
    return buf;
}

static inline void *slurp_shared(const char *rel, size_t *size)
{
    char p[4096];
    return slurp(shared_path(p, sizeof p, rel), size);
}

/* A command's entry point (argv[0] its verb, as `iq3pack build ...`) run
 * with stdout sent to /dev/null: its summaries are not the test's output.
 * Returns the command's exit status. */
static inline int run_quiet(int (*cmd)(int, char **), int argc, char **argv)
{
    fflush(stdout);
    const int saved = dup(1);
    if (saved < 0 || !freopen("/dev/null", "w", stdout)) return -1;
    const int rc = cmd(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

/* Removes a scratch directory (make_scratch_dir) with everything in it, and frees its name. */
static inline void remove_scratch_dir(char *dir)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* A private scratch directory for one test program; caller frees. */
static inline char *make_scratch_dir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/strata-test-XXXXXX", (base && *base) ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

#endif
