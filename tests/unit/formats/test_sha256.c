/* test_sha256.c: formats/sha256 against the FIPS 180-2 appendix B examples
 * and the long-message vector, split feeding at every boundary, and every
 * file listed in ../shared/models' SHA256SUMS (the checksums strata pull
 * will be judged by). */
#include "tests/lib/test_util.h"
#include "formats/sha256.h"
#include <glob.h>

static void hex_of(const void *data, size_t len, char hex[65])
{
    sha256_ctx c;
    unsigned char d[32];
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, d);
    sha256_hex(d, hex);
}

static void test_fips_vectors(void **state)
{
    (void)state;
    char hex[65];
    hex_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hex_of("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m448, strlen(m448), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    hex_of(m896, strlen(m896), hex);
    assert_string_equal(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_million_a(void **state)
{
    (void)state;
    sha256_ctx c;
    unsigned char chunk[1000], d[32];
    char hex[65];
    memset(chunk, 'a', sizeof chunk);
    sha256_init(&c);
    for (int i = 0; i < 1000; i++) sha256_update(&c, chunk, sizeof chunk);
    sha256_final(&c, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths around the 55/56/64-byte padding edges, fed whole and split at
 * every point: a buffering bug shows up as a difference. */
static void test_split_feeding(void **state)
{
    (void)state;
    unsigned char msg[200];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (unsigned char)(i * 37 + 11);
    for (size_t len = 0; len <= 130; len++) {
        char whole[65];
        hex_of(msg, len, whole);
        for (size_t cut = 0; cut <= len; cut++) {
            sha256_ctx c;
            unsigned char d[32];
            char hex[65];
            sha256_init(&c);
            sha256_update(&c, msg, cut);
            sha256_update(&c, msg + cut, 0);
            sha256_update(&c, msg + cut, len - cut);
            sha256_final(&c, d);
            sha256_hex(d, hex);
            assert_string_equal(hex, whole);
        }
    }
    /* 55 and 56 bytes straddle the one-block / two-block padding decision */
    char hex[65];
    memset(msg, 'a', 56);
    hex_of(msg, 55, hex);
    assert_string_equal(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    hex_of(msg, 56, hex);
    assert_string_equal(hex, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

/* Every "hex  name" line of one SHA256SUMS, checked by sha256_file. */
static int check_sums(const char *sums)
{
    size_t n;
    char *text = slurp(sums, &n);
    assert_non_null(text);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", sums);
    *strrchr(dir, '/') = 0;
    int checked = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char want[65], name[1024], path[5200], hex[65];
        unsigned char d[32];
        if (sscanf(line, "%64s %1023s", want, name) != 2) continue;
        snprintf(path, sizeof path, "%s/%s", dir, name[0] == '*' ? name + 1 : name);
        assert_int_equal(sha256_file(path, d), 0);
        sha256_hex(d, hex);
        if (strcmp(hex, want)) fprintf(stderr, "%s: got %s want %s\n", path, hex, want);
        assert_string_equal(hex, want);
        checked++;
    }
    free(text);
    return checked;
}

static void test_shared_sha256sums(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED("models/stories260K/SHA256SUMS");
    char pat[4096];
    int files = 0;
    const char *pats[] = { "models/*/SHA256SUMS", "models/*/*/SHA256SUMS" };
    for (size_t p = 0; p < 2; p++) {
        glob_t g;
        if (glob(shared_path(pat, sizeof pat, pats[p]), 0, NULL, &g) != 0) continue;
        for (size_t i = 0; i < g.gl_pathc; i++) files += check_sums(g.gl_pathv[i]);
        globfree(&g);
    }
    assert_true(files > 30); /* stories260K and tinymoe alone list more */
}

static void test_file_errors(void **state)
{
    (void)state;
    unsigned char d[32];
    assert_int_equal(sha256_file("/nonexistent/strata-no-such-file", d), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_split_feeding),
        cmocka_unit_test(test_shared_sha256sums),
        cmocka_unit_test(test_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
