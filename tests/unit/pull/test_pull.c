/* test_pull.c: the pure parts of strata pull: split-GGUF names, path
 * safety, sha256 in ETag headers, the backoff schedule, the messages
 * for HTTP errors, and a pack's file list from the hub's API answer (the
 * network paths are tested by e2e_pull.sh and e2e_pull_pack.sh). */
#include "tests/lib/test_util.h"
#include "runtime/pull/pull.h"
#include "runtime/pull/pull_http.h"

static void test_split_names(void **state)
{
    (void)state;
    char prefix[256], name[256];
    int count = 0;
    assert_int_equal(pull_split_parse("Q4/model-00002-of-00005.gguf", prefix, &count), 1);
    assert_string_equal(prefix, "Q4/model");
    assert_int_equal(count, 5);
    pull_split_name(name, sizeof name, prefix, 1, count);
    assert_string_equal(name, "Q4/model-00001-of-00005.gguf");
    pull_split_name(name, sizeof name, prefix, 5, count);
    assert_string_equal(name, "Q4/model-00005-of-00005.gguf");
    assert_int_equal(pull_split_parse("a-00001-of-00001.gguf", prefix, &count), 1);
    assert_int_equal(count, 1);
    /* not split names: wrong suffix, index 0 or past the count, short digits */
    assert_int_equal(pull_split_parse("model.gguf", prefix, &count), 0);
    assert_int_equal(pull_split_parse("m-00001-of-00003.bin", prefix, &count), 0);
    assert_int_equal(pull_split_parse("m-00000-of-00003.gguf", prefix, &count), 0);
    assert_int_equal(pull_split_parse("m-00004-of-00003.gguf", prefix, &count), 0);
    assert_int_equal(pull_split_parse("m-0001-of-00003.gguf", prefix, &count), 0);
    assert_int_equal(pull_split_parse("-00001-of-00003.gguf", prefix, &count), 0);
}

static void test_safe_relpath(void **state)
{
    (void)state;
    assert_true(pull_safe_relpath("model.gguf"));
    assert_true(pull_safe_relpath("Q4_K_M/model-00001-of-00002.gguf"));
    assert_true(pull_safe_relpath("a..b.gguf"));
    assert_false(pull_safe_relpath(""));
    assert_false(pull_safe_relpath("/etc/passwd"));
    assert_false(pull_safe_relpath("../x.gguf"));
    assert_false(pull_safe_relpath("a/../../x"));
    assert_false(pull_safe_relpath("a/./x"));
    assert_false(pull_safe_relpath("a//x"));
    assert_false(pull_safe_relpath("a/"));
    assert_false(pull_safe_relpath("a\\x"));
    assert_false(pull_safe_relpath("a\nx"));
}

static void test_etag_sha256(void **state)
{
    (void)state;
    const char *sha = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";
    char out[65], quoted[80];
    assert_int_equal(pull_etag_sha256(sha, out), 1);
    assert_string_equal(out, sha);
    snprintf(quoted, sizeof quoted, "W/\"%s\"\r\n", sha);
    assert_int_equal(pull_etag_sha256(quoted, out), 1);
    assert_string_equal(out, sha);
    assert_int_equal(pull_etag_sha256("\"270CBA1BD5109F42D03350F60406024560464DB173C0E387D91F0426D3BD256D\"", out), 1);
    assert_string_equal(out, sha);
    /* a git blob sha1 (non-LFS file) and near misses are not sha256 */
    assert_int_equal(pull_etag_sha256("\"a9993e364706816aba3e25717850c26c9cd0d89d\"", out), 0);
    snprintf(quoted, sizeof quoted, "%s0", sha);
    assert_int_equal(pull_etag_sha256(quoted, out), 0);
    snprintf(quoted, sizeof quoted, "%.63sg", sha);
    assert_int_equal(pull_etag_sha256(quoted, out), 0);
    assert_int_equal(pull_etag_sha256("", out), 0);
}

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(pull_backoff_ms(1000, 1), 1000);
    assert_int_equal(pull_backoff_ms(1000, 2), 2000);
    assert_int_equal(pull_backoff_ms(1000, 4), 8000);
    assert_int_equal(pull_backoff_ms(1000, 7), 60000);   /* capped */
    assert_int_equal(pull_backoff_ms(1000, 500), 60000); /* no overflow */
    assert_int_equal(pull_backoff_ms(10, 3), 40);
    assert_int_equal(pull_backoff_ms(0, 5), 0);
}

static void test_status_messages(void **state)
{
    (void)state;
    pull_config cfg = { .endpoint = "http://127.0.0.1:1", .repo = "o/r", .revision = "v2" };
    char err[1024];
    assert_int_equal(pull_status_message(401, "", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "set HF_TOKEN"));
    cfg.token = "x";
    assert_int_equal(pull_status_message(401, "", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "refused HF_TOKEN"));
    assert_int_equal(pull_status_message(403, "", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "HF_TOKEN"));
    assert_int_equal(pull_status_message(404, "RepoNotFound", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "repository not found"));
    assert_int_equal(pull_status_message(404, "RevisionNotFound", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "revision 'v2' not found"));
    assert_int_equal(pull_status_message(404, "EntryNotFound", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "file 'f.gguf' not found"));
    assert_int_equal(pull_status_message(404, "", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "f.gguf"));
    assert_int_equal(pull_status_message(500, "", &cfg, "f.gguf", err, sizeof err), PULL_RETRY);
    assert_int_equal(pull_status_message(503, "", &cfg, "f.gguf", err, sizeof err), PULL_RETRY);
    assert_int_equal(pull_status_message(429, "", &cfg, "f.gguf", err, sizeof err), PULL_RETRY);
    assert_int_equal(pull_status_message(418, "", &cfg, "f.gguf", err, sizeof err), PULL_FATAL);
}

static void test_url_layout(void **state)
{
    (void)state;
    pull_config cfg = { .endpoint = "https://hub.example", .repo = "org/Model-1", .revision = "refs/pr/1" };
    pull_remote r;
    char err[256];
    assert_int_equal(pull_remote_init(&r, &cfg, "Q4 K/m+1.gguf", err, sizeof err), 0);
    /* the revision is one escaped segment; the file keeps its slashes */
    assert_string_equal(r.url, "https://hub.example/org/Model-1/resolve/refs%2Fpr%2F1/Q4%20K/m%2B1.gguf");
    assert_int_equal(r.size, -1);
    assert_string_equal(r.sha256, "");
}

static void test_list_url(void **state)
{
    (void)state;
    pull_config cfg = { .endpoint = "https://hub.example", .repo = "org/Model-1", .revision = "refs/pr/1" };
    char url[256];
    assert_int_equal(pull_api_url(url, sizeof url, &cfg), 0);
    assert_string_equal(url, "https://hub.example/api/models/org/Model-1/revision/refs%2Fpr%2F1");
    assert_int_equal(pull_api_url(url, 20, &cfg), -1);
    /* a listing 404 without the hub's error code: one line, no file name */
    char err[1024];
    assert_int_equal(pull_status_message(404, "", &cfg, NULL, err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "lists no files"));
    assert_null(strchr(err, '\n'));
    assert_int_equal(pull_status_message(404, "RepoNotFound", &cfg, NULL, err, sizeof err), PULL_FATAL);
    assert_non_null(strstr(err, "repository not found"));
    assert_int_equal(pull_status_message(500, "", &cfg, NULL, err, sizeof err), PULL_RETRY);
    assert_non_null(strstr(err, "its file list"));
}

static int names_of(const char *json, char ***names, size_t *n, char *err, size_t errlen)
{
    pull_config cfg = { .endpoint = "https://hub.example", .repo = "me/pack", .revision = "main" };
    *names = NULL;
    *n = 0;
    return pull_pack_names(&cfg, json, strlen(json), names, n, err, errlen);
}

static void free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

static void test_pack_names(void **state)
{
    (void)state;
    char **names;
    size_t n;
    char err[1024];
    /* a pack: .gitattributes left out, index.txt moved last, the rest kept in order */
    assert_int_equal(names_of("{\"siblings\":[{\"rfilename\":\".gitattributes\"},{\"rfilename\":\"README.md\"},"
                              "{\"rfilename\":\"dense.bin\"},{\"rfilename\":\"index.txt\"},"
                              "{\"rfilename\":\"tokenizer.gguf\"}]}", &names, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    assert_string_equal(names[0], "README.md");
    assert_string_equal(names[1], "dense.bin");
    assert_string_equal(names[2], "tokenizer.gguf");
    assert_string_equal(names[3], "index.txt");
    free_list(names, n);
    /* not a pack: no index.txt at the top; the message gives the command that works */
    assert_int_equal(names_of("{\"siblings\":[{\"rfilename\":\".gitattributes\"},{\"rfilename\":\"m.gguf\"}]}",
                              &names, &n, err, sizeof err), 1);
    assert_null(names);
    assert_non_null(strstr(err, "not a strata pack (no index.txt"));
    assert_non_null(strstr(err, "strata pull me/pack FILE..."));
    /* a pack in a folder is named */
    assert_int_equal(names_of("{\"siblings\":[{\"rfilename\":\"p/dense.bin\"},{\"rfilename\":\"p/index.txt\"}]}",
                              &names, &n, err, sizeof err), 1);
    assert_non_null(strstr(err, "its index.txt is 'p/index.txt'"));
    /* "xindex.txt" is not index.txt */
    assert_int_equal(names_of("{\"siblings\":[{\"rfilename\":\"xindex.txt\"}]}", &names, &n, err, sizeof err), 1);
    assert_non_null(strstr(err, "no index.txt"));
    /* answers that are not a usable file list */
    assert_int_equal(names_of("<html>", &names, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a file list"));
    assert_int_equal(names_of("{\"id\":\"me/pack\"}", &names, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "no \"siblings\""));
    assert_int_equal(names_of("{\"siblings\":[{\"size\":1}]}", &names, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "without \"rfilename\""));
    assert_int_equal(names_of("{\"siblings\":[{\"rfilename\":\"index.txt\"},{\"rfilename\":\"../x\"}]}",
                              &names, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "'../x', not a file path"));
    assert_null(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_names),
        cmocka_unit_test(test_safe_relpath),
        cmocka_unit_test(test_etag_sha256),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_status_messages),
        cmocka_unit_test(test_url_layout),
        cmocka_unit_test(test_list_url),
        cmocka_unit_test(test_pack_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
