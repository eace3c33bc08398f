/* test_memavail.c: memavail.h: the parsers on the texts the kernel writes
 * (and on what it never writes: other units, signs, overflow, a path
 * outside a cgroup namespace), and memavail_read on fixture trees written
 * here (/proc/meminfo, /proc/self/cgroup and cgroup files under a
 * temporary root): a v2 limit on a parent, a v1 limit, a cgroup over its
 * limit, MemAvailable smaller than the cgroup's room, and nothing at all. */
#include "tests/lib/test_util.h"

#include "runtime/util/memavail.h"

static const char MEMINFO[] = "MemTotal:       32768000 kB\n"
                              "MemFree:         1000000 kB\n"
                              "MemAvailable:    8388608 kB\n"
                              "Buffers:          100000 kB\n";

static void test_parse_meminfo(void **state)
{
    (void)state;
    uint64_t b = 0;
    assert_int_equal(memavail_parse_meminfo(MEMINFO, &b), 0);
    assert_true(b == (uint64_t)8388608 * 1024);
    assert_int_equal(memavail_parse_meminfo("MemAvailable: 12 kB", &b), 0); /* no newline at the end */
    assert_true(b == 12 * 1024);
    assert_int_equal(memavail_parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\n", &b), -1);
    assert_int_equal(memavail_parse_meminfo("MemAvailable: 12 MB\n", &b), -1);
    assert_int_equal(memavail_parse_meminfo("MemAvailable: -12 kB\n", &b), -1);
    assert_int_equal(memavail_parse_meminfo("MemAvailable: kB\n", &b), -1);
    assert_int_equal(memavail_parse_meminfo("MemAvailable: 99999999999999999999 kB\n", &b), -1);
    assert_int_equal(memavail_parse_meminfo("MemAvailable: 18014398509481984 kB\n", &b), -1); /* 2^54 KiB */
    assert_int_equal(memavail_parse_meminfo("", &b), -1);
}

static void test_parse_cgroup(void **state)
{
    (void)state;
    char p[64];
    assert_int_equal(memavail_parse_cgroup("0::/user.slice/session-1.scope\n", 1, p, sizeof p), 0);
    assert_string_equal(p, "/user.slice/session-1.scope");
    assert_int_equal(memavail_parse_cgroup("0::/user.slice\n", 0, p, sizeof p), -1);
    /* hybrid: v1 controllers beside an empty v2 line */
    const char *hy = "9:name=systemd:/\n5:cpu,cpuacct:/c\n4:memory:/docker/abc\n0::/\n";
    assert_int_equal(memavail_parse_cgroup(hy, 0, p, sizeof p), 0);
    assert_string_equal(p, "/docker/abc");
    assert_int_equal(memavail_parse_cgroup(hy, 1, p, sizeof p), 0);
    assert_string_equal(p, "/");
    assert_int_equal(memavail_parse_cgroup("7:cpuacct,memory,pids:/x\n", 0, p, sizeof p), 0);
    assert_string_equal(p, "/x");
    assert_int_equal(memavail_parse_cgroup("3:memoryx:/y\n2:xmemory:/z\n", 0, p, sizeof p), -1);
    /* a cgroup outside the namespace: the mount's root */
    assert_int_equal(memavail_parse_cgroup("0::/../../system.slice\n", 1, p, sizeof p), 0);
    assert_string_equal(p, "/");
    assert_int_equal(memavail_parse_cgroup("0::/a/..\n", 1, p, sizeof p), 0);
    assert_string_equal(p, "/");
    assert_int_equal(memavail_parse_cgroup("0::/a..b\n", 1, p, sizeof p), 0);
    assert_string_equal(p, "/a..b");
    assert_int_equal(memavail_parse_cgroup("0::relative\n", 1, p, sizeof p), 0);
    assert_string_equal(p, "/");
    assert_int_equal(memavail_parse_cgroup("0::/0123456789\n", 1, p, 8), -1); /* longer than the buffer */
    assert_int_equal(memavail_parse_cgroup("garbage\n::\n", 1, p, sizeof p), -1);
    assert_int_equal(memavail_parse_cgroup("", 0, p, sizeof p), -1);
}

static void test_parse_limit(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(memavail_parse_limit("max\n", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(memavail_parse_limit("1073741824\n", &v), 0);
    assert_true(v == 1073741824);
    assert_int_equal(memavail_parse_limit("9223372036854771712", &v), 0); /* v1's "no limit" */
    assert_true(v == 9223372036854771712ull);
    assert_int_equal(memavail_parse_limit("", &v), -1);
    assert_int_equal(memavail_parse_limit("12a\n", &v), -1);
    assert_int_equal(memavail_parse_limit("-1\n", &v), -1);
    assert_int_equal(memavail_parse_limit("maximum\n", &v), -1);
    assert_int_equal(memavail_parse_limit("18446744073709551616\n", &v), -1);
}

/* ---------------------------------------------------- fixture trees */

typedef struct tree { char root[64]; } tree;

static int setup(void **state)
{
    tree *t = calloc(1, sizeof *t);
    if (!t) return -1;
    snprintf(t->root, sizeof t->root, "/tmp/strata-memavail-XXXXXX");
    if (!mkdtemp(t->root)) return -1;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tree *t = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    int rc = system(cmd);
    free(t);
    return rc;
}

/* Writes root/rel (its folders made first) holding text. */
static void put(const tree *t, const char *rel, const char *text)
{
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s", t->root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void test_read_nothing(void **state)
{
    tree *t = *state;
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), -1);
    assert_true(m.bytes == 0);
    assert_string_equal(m.by, "");
}

static void test_read_meminfo_only(void **state)
{
    tree *t = *state;
    put(t, "proc/meminfo", MEMINFO);
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == (uint64_t)8388608 * 1024);
    assert_true(m.cgroup == UINT64_MAX);
    assert_string_equal(m.by, "MemAvailable");
}

/* v2: the leaf has no limit, its parent does; the grandparent's is looser */
static void test_read_v2_parent(void **state)
{
    tree *t = *state;
    put(t, "proc/meminfo", MEMINFO);
    put(t, "proc/self/cgroup", "0::/a/b/c\n");
    put(t, "sys/fs/cgroup/a/b/c/memory.max", "max\n");
    put(t, "sys/fs/cgroup/a/b/c/memory.current", "100\n");
    put(t, "sys/fs/cgroup/a/b/memory.max", "1000000\n");
    put(t, "sys/fs/cgroup/a/b/memory.current", "400000\n");
    put(t, "sys/fs/cgroup/a/memory.max", "5000000\n");
    put(t, "sys/fs/cgroup/a/memory.current", "400000\n");
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 600000);
    assert_true(m.cgroup == 600000);
    assert_true(m.meminfo == (uint64_t)8388608 * 1024);
    assert_string_equal(m.by, "cgroup v2 memory.max");
}

/* v1 in a hybrid layout; the namespace's root (the mount) holds the limit */
static void test_read_v1(void **state)
{
    tree *t = *state;
    put(t, "proc/meminfo", MEMINFO);
    put(t, "proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory:/docker/abc\n0::/\n");
    put(t, "sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n");
    put(t, "sys/fs/cgroup/memory/memory.usage_in_bytes", "268435456\n");
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 805306368);
    assert_string_equal(m.by, "cgroup v1 memory.limit_in_bytes");
}

/* page cache the cgroup counts and the kernel reclaims first is room: v1
 * (total_inactive_file) and v2 (inactive_file); a stat without the key, or
 * malformed, counts nothing */
static void test_read_page_cache(void **state)
{
    tree *t = *state;
    put(t, "proc/meminfo", MEMINFO);
    put(t, "proc/self/cgroup", "4:memory:/c\n0::/d\n");
    put(t, "sys/fs/cgroup/memory/c/memory.limit_in_bytes", "473637021\n");
    put(t, "sys/fs/cgroup/memory/c/memory.usage_in_bytes", "472000000\n");
    put(t, "sys/fs/cgroup/memory/c/memory.stat", "cache 450000000\ninactive_file 1\ntotal_inactive_file 400000000\n");
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 473637021ull - 72000000ull);
    assert_string_equal(m.by, "cgroup v1 memory.limit_in_bytes");
    put(t, "sys/fs/cgroup/d/memory.max", "300000000\n");
    put(t, "sys/fs/cgroup/d/memory.current", "290000000\n");
    put(t, "sys/fs/cgroup/d/memory.stat", "anon 1000\ninactive_file 100000000\nactive_file 5\n");
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 110000000ull);
    assert_string_equal(m.by, "cgroup v2 memory.max");
    put(t, "sys/fs/cgroup/d/memory.stat", "inactive_file lots\n");
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 10000000ull);
    uint64_t v = 0;
    assert_int_equal(memavail_parse_stat("inactive_filex 3\ninactive_file 7\n", "inactive_file", &v), 0);
    assert_true(v == 7);
    assert_int_equal(memavail_parse_stat("inactive_file 7 kB\n", "inactive_file", &v), -1);
    assert_int_equal(memavail_parse_stat("anon 1\n", "inactive_file", &v), -1);
}

/* over the limit: no room at all, which is known, not unknown */
static void test_read_over_limit(void **state)
{
    tree *t = *state;
    put(t, "proc/meminfo", MEMINFO);
    put(t, "proc/self/cgroup", "0::/x\n");
    put(t, "sys/fs/cgroup/x/memory.max", "1000\n");
    put(t, "sys/fs/cgroup/x/memory.current", "4096\n");
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 0);
    assert_string_equal(m.by, "cgroup v2 memory.max");
}

/* MemAvailable below the cgroup's room; a malformed usage file skips its level */
static void test_read_meminfo_smaller(void **state)
{
    tree *t = *state;
    put(t, "proc/meminfo", "MemAvailable: 1024 kB\n");
    put(t, "proc/self/cgroup", "0::/x\n");
    put(t, "sys/fs/cgroup/x/memory.max", "100000000\n");
    put(t, "sys/fs/cgroup/x/memory.current", "1000\n");
    put(t, "sys/fs/cgroup/memory.max", "10\n");
    put(t, "sys/fs/cgroup/memory.current", "lots\n");
    memavail m;
    assert_int_equal(memavail_read(t->root, &m), 0);
    assert_true(m.bytes == 1024 * 1024);
    assert_true(m.cgroup == 100000000 - 1000);
    assert_string_equal(m.by, "MemAvailable");
}

/* this machine: whatever it says, the figure is known on Linux and no
 * more than MemAvailable */
static void test_read_here(void **state)
{
    (void)state;
    memavail m;
    if (access("/proc/meminfo", R_OK)) skip();
    assert_int_equal(memavail_read("", &m), 0);
    assert_true(m.bytes > 0 && m.bytes <= m.meminfo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_meminfo),
        cmocka_unit_test(test_parse_cgroup),
        cmocka_unit_test(test_parse_limit),
        cmocka_unit_test_setup_teardown(test_read_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_meminfo_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_v2_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_page_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_over_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_meminfo_smaller, setup, teardown),
        cmocka_unit_test(test_read_here),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
