/* test_pack_build: build packs from the shipped model (and, with ../shared,
 * from stories260K and llama.cpp's tinymoe files) and verify them; hostile
 * inputs refused with nothing left behind; a SIGKILLed build leaves no
 * directory that looks complete. Calls the subcommands directly. */
#include "tests/lib/test_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "pack/pack_cli.h"
#include "runtime/model/loader.h"

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
    static const char *const F[] = { "manifest.json", "dense.bin",  "embd.bin", "experts.bin",
                                     "tokenizer.gguf", "index.txt", "vision.gguf" };
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

/* An mmproj-shaped GGUF (qwen3vl's keys; tensors of three types and 1 to 4
 * dimensions, random bytes: they are carried, not read) at path. */
static void write_mmproj(const char *path, const char *arch)
{
    gguf_writer *w = gguf_writer_new();
    const bool yes = true;
    assert_int_equal(gguf_writer_add_str(w, "general.architecture", arch), 0);
    assert_int_equal(gguf_writer_add_kv(w, "clip.has_vision_encoder", GGUF_TYPE_BOOL, &yes), 0);
    assert_int_equal(gguf_writer_add_str(w, "clip.projector_type", "qwen3vl_merger"), 0);
    assert_int_equal(gguf_writer_add_u32(w, "clip.vision.embedding_length", 64), 0);
    static const struct { const char *name; int type; uint32_t nd; int64_t ne[4]; size_t bytes; } T[] = {
        { "v.patch_embd.weight", 1 /* F16 */, 4, { 16, 16, 3, 64 }, 16 * 16 * 3 * 64 * 2 },
        { "v.blk.0.attn_qkv.weight", 0 /* F32 */, 2, { 64, 192 }, 64 * 192 * 4 },
        { "mm.0.weight", 8 /* Q8_0 */, 2, { 256, 64 }, 256 / 32 * 34 * 64 },
        { "v.post_ln.bias", 0, 1, { 64 }, 64 * 4 },
    };
    uint64_t rs = 5;
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        unsigned char *d = malloc(T[i].bytes);
        for (size_t k = 0; k < T[i].bytes; k++) d[k] = (unsigned char)((rs = rs * 6364136223846793005ull + 1) >> 56);
        assert_true(gguf_writer_add_tensor(w, T[i].name, T[i].type, T[i].nd, T[i].ne, d, T[i].bytes) >= 0);
        free(d);
    }
    char err[256];
    if (gguf_writer_write(w, path, err, sizeof err)) fail_msg("%s", err);
    gguf_writer_free(w);
}

static void flip_byte(const char *path, long at)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, at, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, at, SEEK_SET);
    fputc(c ^ 1, fp);
    fclose(fp);
}

/* iq3pack build --mmproj: the projector carried byte for byte as
 * vision.gguf, named in the manifest and the index, checked by verify,
 * strata check and the loader, shown by info; a pack without one has no
 * trace of it; a GGUF that is no projector, a missing file and --shard
 * refused with nothing written. */
static void test_vision_projector(void **state)
{
    (void)state;
    char *scratch = make_scratch_dir();
    char mm[4200], out[4200], plain[4200], p[4400], err[512];
    snprintf(mm, sizeof mm, "%s/mmproj.gguf", scratch);
    snprintf(out, sizeof out, "%s/pack", scratch);
    snprintf(plain, sizeof plain, "%s/plain", scratch);
    write_mmproj(mm, "clip");
    assert_int_equal(run_cmd(iq3pack_cmd_build, 6, "build", SHIPPED_MODEL, "-o", out, "--mmproj", mm), 0);
    size_t n_src = 0, n_copy = 0;
    unsigned char *src = slurp(mm, &n_src), *copy = NULL;
    snprintf(p, sizeof p, "%s/vision.gguf", out);
    copy = slurp(p, &n_copy);
    assert_non_null(copy);
    assert_int_equal(n_copy, n_src);
    assert_memory_equal(copy, src, n_src);
    free(src);
    free(copy);
    size_t n;
    snprintf(p, sizeof p, "%s/index.txt", out);
    char *idx = (char *)slurp(p, &n);
    assert_non_null(strstr(idx, "\n@vision vision.gguf "));
    assert_non_null(strstr(idx, " qwen3vl_merger 4\n"));
    assert_non_null(strstr(idx, "\n@vision_tensor v.patch_embd.weight 1 "));
    assert_non_null(strstr(idx, " 16 16 3 64\n"));
    assert_non_null(strstr(idx, "\n@vision_tensor mm.0.weight 8 "));
    free(idx);
    snprintf(p, sizeof p, "%s/manifest.json", out);
    char *man = (char *)slurp(p, &n);
    assert_non_null(strstr(man, "\"vision\": {"));
    assert_non_null(strstr(man, "\"projector\": \"qwen3vl_merger\""));
    free(man);
    assert_int_equal(run_cmd(iq3pack_cmd_verify, 2, "verify", out), 0);
    assert_int_equal(run_cmd(iq3pack_cmd_packinfo, 2, "info", out), 0);
    assert_int_equal(loader_check(out, NULL, err, sizeof err), 0);
    loaded_pack *lp = loader_open(out, err, sizeof err);
    if (!lp) fail_msg("%s", err);
    int nt = 0;
    uint64_t vb = 0;
    assert_string_equal(loader_vision(lp, &nt, &vb), "qwen3vl_merger");
    assert_int_equal(nt, 4);
    assert_int_equal(vb, n_src);
    loader_close(lp);
    /* without --mmproj: no vision key, no @vision line, no file */
    assert_int_equal(run_cmd(iq3pack_cmd_build, 4, "build", SHIPPED_MODEL, "-o", plain), 0);
    snprintf(p, sizeof p, "%s/manifest.json", plain);
    man = (char *)slurp(p, &n);
    assert_null(strstr(man, "vision"));
    free(man);
    snprintf(p, sizeof p, "%s/index.txt", plain);
    idx = (char *)slurp(p, &n);
    assert_null(strstr(idx, "@vision"));
    free(idx);
    lp = loader_open(plain, err, sizeof err);
    assert_non_null(lp);
    assert_null(loader_vision(lp, &nt, &vb));
    loader_close(lp);
    rm_pack(plain);
    /* a flipped byte: verify and strata check catch it; a short file: the loader refuses it */
    snprintf(p, sizeof p, "%s/vision.gguf", out);
    flip_byte(p, (long)n_src - 3);
    assert_int_equal(run_cmd(iq3pack_cmd_verify, 2, "verify", out), 1);
    assert_int_equal(loader_check(out, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "vision.gguf: crc32"));
    assert_int_equal(truncate(p, (off_t)n_src - 1), 0);
    assert_null(loader_open(out, err, sizeof err));
    assert_non_null(strstr(err, "vision.gguf: another size"));
    unlink(p);
    assert_null(loader_open(out, err, sizeof err));
    assert_non_null(strstr(err, "vision.gguf: missing"));
    rm_pack(out);
    /* refused, nothing written: a model GGUF, a GGUF of another architecture, no file, --shard */
    snprintf(p, sizeof p, "%s/other.gguf", scratch);
    write_mmproj(p, "llama");
    assert_int_equal(run_cmd(iq3pack_cmd_build, 6, "build", SHIPPED_MODEL, "-o", out, "--mmproj", SHIPPED_MODEL), 1);
    assert_int_equal(run_cmd(iq3pack_cmd_build, 6, "build", SHIPPED_MODEL, "-o", out, "--mmproj", p), 1);
    assert_int_equal(run_cmd(iq3pack_cmd_build, 6, "build", SHIPPED_MODEL, "-o", out, "--mmproj", "/nonexistent.gguf"), 1);
    assert_int_equal(run_cmd(iq3pack_cmd_build, 8, "build", SHIPPED_MODEL, "-o", out, "--mmproj", mm, "--shard", "0/2"), 2);
    assert_int_equal(count_entries(scratch), 2); /* mmproj.gguf, other.gguf */
    unlink(p);
    unlink(mm);
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
        cmocka_unit_test(test_vision_projector),
        cmocka_unit_test(test_sigkill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
