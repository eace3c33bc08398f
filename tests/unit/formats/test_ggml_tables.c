/* test_ggml_tables.c: formats/ggml_tables.c still equals ggml's tables as
 * data (../shared/reference/ggml-tables.json), value for value. The JSON is
 * parsed just enough: find the table's "values" array and read its numbers. */
#include "tests/lib/test_util.h"
#include "formats/ggml_tables.h"

#include <errno.h>

#define TABLES_JSON "reference/ggml-tables.json"

typedef struct {
    const char *name;
    const void *data;
    size_t count;
    int elem; /* bytes per element */
    int is_signed;
} table_spec;

static const table_spec specs[] = {
    { "kmask_iq2xs", ggml_kmask_iq2xs, 8, 1, 0 },
    { "ksigns_iq2xs", ggml_ksigns_iq2xs, 128, 1, 0 },
    { "ksigns64", ggml_ksigns64, 128, 8, 0 },
    { "iq2xxs_grid", ggml_iq2xxs_grid, 256, 8, 0 },
    { "iq2xs_grid", ggml_iq2xs_grid, 512, 8, 0 },
    { "iq2s_grid", ggml_iq2s_grid, 1024, 8, 0 },
    { "iq3xxs_grid", ggml_iq3xxs_grid, 256, 4, 0 },
    { "iq3s_grid", ggml_iq3s_grid, 512, 4, 0 },
    { "kvalues_iq4nl", ggml_kvalues_iq4nl, 16, 1, 1 },
    { "kvalues_fp4", ggml_kvalues_fp4, 16, 1, 1 },
    { "iq1s_grid", ggml_iq1s_grid, 2048, 8, 0 },
};
#define NSPECS (sizeof specs / sizeof specs[0])

static uint64_t c_value(const table_spec *t, size_t i)
{
    switch (t->elem) {
    case 1: return t->is_signed ? (uint64_t)(int64_t)((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
    case 4: return ((const uint32_t *)t->data)[i];
    default: return ((const uint64_t *)t->data)[i];
    }
}

/* Compare one table; returns the number of values that differ (or -1 when
 * the JSON does not have the table in the expected shape). */
static int compare_table(const char *json, const table_spec *t)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\"", t->name);
    const char *p = strstr(json, key);
    if (!p) return -1;
    p = strstr(p, "\"values\"");
    if (!p || !(p = strchr(p, '['))) return -1;
    p++;
    int bad = 0;
    for (size_t i = 0; i < t->count; i++) {
        char *end;
        errno = 0;
        uint64_t v = t->is_signed ? (uint64_t)strtoll(p, &end, 10) : strtoull(p, &end, 10);
        if (end == p || errno) return -1;
        if (v != c_value(t, i)) {
            if (bad < 5) printf("%s[%zu]: C has %llu, JSON %llu\n", t->name, i, (unsigned long long)c_value(t, i), (unsigned long long)v);
            bad++;
        }
        p = end;
        while (*p == ' ' || *p == '\n') p++;
        if (i + 1 < t->count && *p++ != ',') return -1;
    }
    return *p == ']' ? bad : -1; /* the JSON must not hold more values than we do */
}

static void test_tables_match_json(void **state)
{
    (void)state;
    SKIP_UNLESS_SHARED(TABLES_JSON);
    char *json = slurp_shared(TABLES_JSON, NULL);
    assert_non_null(json);
    for (size_t i = 0; i < NSPECS; i++) {
        int bad = compare_table(json, &specs[i]);
        if (bad != 0) printf("table %s: %d\n", specs[i].name, bad);
        assert_int_equal(bad, 0);
    }
    /* and the JSON has no table we lack */
    size_t n = 0;
    for (const char *p = json; (p = strstr(p, "\"ctype\"")); p++) n++;
    assert_int_equal(n, NSPECS);
    free(json);
}

/* The comparison is not vacuous: a JSON with one value changed fails. */
static void test_compare_detects_change(void **state)
{
    (void)state;
    const char *good = "{\"kmask_iq2xs\": {\"values\": [1, 2, 4, 8, 16, 32, 64, 128]}}";
    const char *bad = "{\"kmask_iq2xs\": {\"values\": [1, 2, 4, 8, 16, 32, 64, 129]}}";
    const char *longer = "{\"kmask_iq2xs\": {\"values\": [1, 2, 4, 8, 16, 32, 64, 128, 0]}}";
    assert_int_equal(compare_table(good, &specs[0]), 0);
    assert_int_equal(compare_table(bad, &specs[0]), 1);
    assert_int_equal(compare_table(longer, &specs[0]), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_match_json),
        cmocka_unit_test(test_compare_detects_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
