/* bench_grams2imatrix.c: folding a recording by its diagonals against reading
 * every gram whole (what the seed does), on a synthetic recording of
 * LAYERS x (2 pooled ranks + EXPERTS) grams at k = K (defaults 8, 16, 2048:
 * the 64 experts take ~2 minutes here, so set BENCH_EXPERTS=64 for
 * that; env BENCH_LAYERS / BENCH_EXPERTS / BENCH_K). Each measurement runs in its
 * own child so its peak RSS is its own. Expert grams are sparse files (header
 * and holes: their diagonal reads as zeros) so the recording costs little
 * disk; pooled grams carry a real diagonal. Files are written, measured warm
 * (the second pass of each), then deleted. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "convert/grams2imatrix.h"
#include "formats/fileio.h"
#include "tests/bench/bench_util.h"

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return (s && atoi(s) > 0) ? atoi(s) : dflt;
}

static int write_gram(const char *path, uint32_t k, uint64_t rows, int with_diag)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    uint8_t h[32] = "RADGRAM2";
    uint32_t rank = 0, domain = 0;
    memcpy(h + 8, &k, 4);
    memcpy(h + 12, &rank, 4);
    memcpy(h + 16, &rows, 8);
    memcpy(h + 24, &domain, 4);
    int rc = pwrite(fd, h, 32, 0) == 32 ? 0 : -1;
    if (!rc && ftruncate(fd, (off_t)(32 + (uint64_t)k * k * 4)) != 0) rc = -1;
    for (uint32_t i = 0; with_diag && !rc && i < k; ++i) {
        float v = 1.0f + (float)i * 0.001f;
        if (pwrite(fd, &v, 4, (off_t)(32 + ((uint64_t)i * k + i) * 4)) != 4) rc = -1;
    }
    close(fd);
    return rc;
}

typedef struct plan { const char *dir; int layers, experts; uint32_t k; } plan;

static void names_for(const plan *p, int l, int j, char *path, size_t n)
{
    if (j < 2) snprintf(path, n, "%s/gram.r%d.blk.%d.ffn_down_exps.bin", p->dir, j, l);
    else snprintf(path, n, "%s/gram.r%d.blk.%d.ffn_down_exps.%d.bin", p->dir, j % 2, l, j - 2);
}

/* The seed's way: every k*k gram read whole. */
static int read_all_whole(const plan *p)
{
    char path[4096], err[512];
    for (int l = 0; l < p->layers; ++l)
        for (int j = 0; j < 2 + p->experts; ++j) {
            unsigned char *buf;
            size_t size;
            names_for(p, l, j, path, sizeof path);
            if (read_file(path, &buf, &size, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
            free(buf);
        }
    return 0;
}

static int fold(const plan *p)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/out.gguf", p->dir);
    unlink(out);
    g2i_options o;
    g2i_options_default(&o);
    o.calib_dir = p->dir;
    o.out = out;
    FILE *devnull = fopen("/dev/null", "w");
    int rc = grams2imatrix_run(&o, devnull ? devnull : stderr);
    if (devnull) fclose(devnull);
    unlink(out);
    return rc;
}

/* Runs fn in a child; seconds, and the child's peak RSS in KiB. */
static int measure(int (*fn)(const plan *), const plan *p, double *secs, long *rss_kb)
{
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) _exit(fn(p));
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return -1;
    *secs = bench_now() - t0;
    *rss_kb = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
    plan p = { NULL, env_int("BENCH_LAYERS", 8), env_int("BENCH_EXPERTS", 16),
               (uint32_t)env_int("BENCH_K", 2048) };
    const char *base = getenv("TMPDIR");
    char tmpl[4096], path[4096];
    snprintf(tmpl, sizeof tmpl, "%s/strata-bench-g2i-XXXXXX", (base && *base) ? base : "/tmp");
    if (!mkdtemp(tmpl)) { perror("mkdtemp"); return 1; }
    p.dir = tmpl;
    int files = p.layers * (2 + p.experts), rc = 0;
    double gib = (double)files * (32 + (double)p.k * p.k * 4) / (1 << 30);
    printf("recording: %d layers x (2 pooled + %d experts) at k=%u: %d files, %.2f GiB apparent"
           " (expert grams sparse)\n", p.layers, p.experts, p.k, files, gib);
    for (int l = 0; l < p.layers && !rc; ++l)
        for (int j = 0; j < 2 + p.experts && !rc; ++j) {
            names_for(&p, l, j, path, sizeof path);
            rc = write_gram(path, p.k, j < 2 ? 100000 : 9000 + (uint64_t)j, j < 2);
        }
    double t_fold = 0, t_whole = 0;
    long rss_fold = 0, rss_whole = 0;
    if (!rc) {
        /* First passes warm the page cache, so both are timed warm. */
        rc |= measure(fold, &p, &t_fold, &rss_fold);
        rc |= measure(fold, &p, &t_fold, &rss_fold);
        rc |= measure(read_all_whole, &p, &t_whole, &rss_whole);
        rc |= measure(read_all_whole, &p, &t_whole, &rss_whole);
    }
    for (int l = 0; l < p.layers; ++l)
        for (int j = 0; j < 2 + p.experts; ++j) { names_for(&p, l, j, path, sizeof path); unlink(path); }
    rmdir(tmpl);
    if (rc) { fprintf(stderr, "bench_grams2imatrix: a run failed\n"); return 1; }
    printf("fold (diagonal only, grams2imatrix_run): %8.3f s  peak RSS %6.1f MiB\n", t_fold, rss_fold / 1024.0);
    printf("baseline (read every gram whole):        %8.3f s  peak RSS %6.1f MiB\n", t_whole, rss_whole / 1024.0);
    printf("ratio whole/fold: %.1fx faster, %.1fx less peak memory\n", t_whole / t_fold,
           (double)rss_whole / (double)rss_fold);
    return 0;
}
