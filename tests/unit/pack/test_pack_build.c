/* test_pack_build: build packs from the shipped model (and, with ../shared,
 * from stories260K and llama.cpp's tinymoe files) and verify them; hostile
 * inputs refused with nothing left behind; a SIGKILLed build leaves no
 * directory that looks complete. Calls the subcommands directly. */
#include "tests/lib/test_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pack/pack_cli.h"

static int run_cmd(int (*fn)(int, char **), int n, ...)
{
    char *argv[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[n] = NULL;
    fflush(stdout);
    return fn(n, argv);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void rm_pack(const char *dir)
{
    static const char *const F[] = { "manifest.json", "dense.bin", "embd.bin", "experts.bin", "tokenizer.gguf", "index.txt" };
    char p[4608];
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, F[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* src: a path (shared_path() for ../shared's files) */
static void build_and_verify(const char *src, const char *extra_flag, const char *extra_val)
{
    char out[4096];
    char *scratch = make_scratch_dir();
    assert_non_null(scratch);
    snprintf(out, sizeof out, "%s/pack", scratch);
    int rc = extra_flag ? run_cmd(iq3pack_cmd_build, 6, "build", (char *)src, "-o", out, extra_flag, extra_val)
                        : run_cmd(iq3pack_cmd_build, 4, "build", (char *)src, "-o", out);
    assert_int_equal(rc, 0);
    assert_int_equal(run_cmd(iq3pack_cmd_verify, 2, "verify", out), 0);
    assert_int_equal(run_cmd(iq3pack_cmd_packinfo, 2, "info", out), 0);
    /* a second build into the same directory is refused and changes nothing */
    assert_int_equal(run_cmd(iq3pack_cmd_build, 4, "build", (char *)src, "-o", out), 1);
    assert_int_equal(count_entries(scratch), 1);
    /* a flipped byte is caught by verify */
    char bin[4200];
    snprintf(bin, sizeof bin, "%s/dense.bin", out);
    FILE *fp = fopen(bin, "r+b");
    assert_non_null(fp);
    int c = fgetc(fp);
    fseek(fp, 0, SEEK_SET);
    fputc(c ^ 1, fp);
    fclose(fp);
    assert_int_equal(run_cmd(iq3pack_cmd_verify, 2, "verify", out), 1);
    rm_pack(out);
    rmdir(scratch);
    free(scratch);
}

static void test_shipped_and_stories260K(void **state)
{
    (void)state;
    build_and_verify(SHIPPED_MODEL, NULL, NULL);
    build_and_verify(SHIPPED_MODEL, "--experts", "keep");
    char src[4096];
    if (shared_part(src, sizeof src, "models/stories260K/stories260K.gguf")) build_and_verify(src, NULL, NULL);
}

static void test_tinymoe_all(void **state)
{
    (void)state;
    static const char *const M[] = { "f32", "f16", "q8_0", "q4_k", "iq3_xxs" };
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "models/tinymoe/tinymoe-%s.gguf", M[i]);
        if (!have_shared(rel)) { printf("SKIP %s absent\n", rel); continue; }
        char src[4096];
        build_and_verify(shared_path(src, sizeof src, rel), NULL, NULL);
    }
}

static void test_tinymoe_imatrix_and_keep(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("models/tinymoe/tinymoe-q8_0.gguf");
    char im[4096], src[4096];
    if (have_shared("models/tinymoe/tinymoe-imatrix.dat"))
        build_and_verify(shared_path(src, sizeof src, "models/tinymoe/tinymoe-q8_0.gguf"), "--imatrix",
                         shared_path(im, sizeof im, "models/tinymoe/tinymoe-imatrix.dat"));
    build_and_verify(shared_path(src, sizeof src, "models/tinymoe/tinymoe-q4_k.gguf"), "--experts", "keep");
}

static void test_hostile(void **state)
{
    (void)state;
    char *scratch = make_scratch_dir();
    char trunc[4200], out[4200];
    snprintf(trunc, sizeof trunc, "%s/trunc.gguf", scratch);
    snprintf(out, sizeof out, "%s/pack", scratch);
    size_t n = 0;
    unsigned char *data = slurp(SHIPPED_MODEL, &n);
    assert_non_null(data);
    FILE *fp = fopen(trunc, "wb");
    fwrite(data, 1, n / 2, fp);
    fclose(fp);
    free(data);
    assert_int_equal(run_cmd(iq3pack_cmd_build, 4, "build", trunc, "-o", out), 1);
    assert_int_equal(count_entries(scratch), 1); /* only trunc.gguf */
    assert_int_equal(run_cmd(iq3pack_cmd_build, 2, "build", trunc), 2);
    assert_int_equal(run_cmd(iq3pack_cmd_build, 6, "build", trunc, "-o", out, "--experts", "bogus"), 2);
    assert_int_equal(run_cmd(iq3pack_cmd_verify, 2, "verify", scratch), 1); /* no manifest */
    assert_int_equal(run_cmd(iq3pack_cmd_packinfo, 2, "info", scratch), 1);
    unlink(trunc);
    rmdir(scratch);
    free(scratch);
}

/* A build killed mid-way: the target never appears; whatever partial
 * directory remains has no index.txt and no manifest a loader would take. */
static void test_sigkill(void **state)
{
    (void)state;
    char *src = SHIPPED_MODEL, out[4200];
    char *scratch = make_scratch_dir();
    snprintf(out, sizeof out, "%s/pack", scratch);
    int killed_mid = 0;
    for (int delay_ms = 20; delay_ms <= 640 && !killed_mid; delay_ms *= 2) {
        fflush(stdout);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stdout)) _exit(3);
            _exit(run_cmd(iq3pack_cmd_build, 4, "build", src, "-o", out));
        }
        usleep((useconds_t)delay_ms * 1000);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        killed_mid = WIFSIGNALED(st);
        if (killed_mid) assert_false(access(out, F_OK) == 0); /* never published */
        DIR *d = opendir(scratch);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char p[4400], q[4500];
            snprintf(p, sizeof p, "%s/%s", scratch, e->d_name);
            snprintf(q, sizeof q, "%s/index.txt", p);
            if (killed_mid) {
                assert_non_null(strstr(e->d_name, ".partial."));
                assert_false(access(q, F_OK) == 0);
            }
            rm_pack(p);
            unlink(p);
        }
        closedir(d);
    }
    assert_true(killed_mid);
    rmdir(scratch);
    free(scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_and_stories260K),
        cmocka_unit_test(test_tinymoe_all),
        cmocka_unit_test(test_tinymoe_imatrix_and_keep),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_sigkill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
