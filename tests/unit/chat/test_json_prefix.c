/* test_json_prefix.c: the JSON-object prefix recogniser against jansson on
 * generated documents and their one-byte mutations, every prefix of valid
 * ones, and the refusals the contract names. */
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/chat/json_prefix.h"

static bool whole(const char *s, size_t n, bool *complete)
{
    json_prefix j;
    json_prefix_init(&j);
    bool ok = json_prefix_feed(&j, s, n);
    *complete = ok && json_prefix_complete(&j);
    return ok;
}

static void expect_prefix(const char *s, bool want_ok, bool want_complete)
{
    bool complete, ok = whole(s, strlen(s), &complete);
    if (ok != want_ok || complete != want_complete)
        fail_msg("[%s]: ok %d complete %d, want %d %d", s, ok, complete, want_ok, want_complete);
}

static void test_cases(void **st)
{
    (void)st;
    expect_prefix("", true, false);
    expect_prefix("  \n{", true, false);
    expect_prefix("{}", true, true);
    expect_prefix("{} ", false, false); /* the answer ends at the close */
    expect_prefix("[]", false, false);  /* an object, not any value */
    expect_prefix("\"a\"", false, false);
    expect_prefix("{\"a\": [1, -0.5e+3, true, false, null, {\"b\": \"\\u00e9\\ud83d\\ude00 \xc3\xa9\"}]}", true, true);
    expect_prefix("{\"a\": 01}", false, false);
    expect_prefix("{\"a\": 1.}", false, false);
    expect_prefix("{\"a\": -}", false, false);
    expect_prefix("{\"a\": tru", true, false);
    expect_prefix("{\"a\": trux", false, false);
    expect_prefix("{\"a\" 1}", false, false);
    expect_prefix("{\"a\": 1,}", false, false);
    expect_prefix("{\"a\": [1,]}", false, false);
    expect_prefix("{\"a\": [1}", false, false);
    expect_prefix("{a: 1}", false, false);
    expect_prefix("{\"a\": \"\x01\"}", false, false);         /* a control character */
    expect_prefix("{\"a\": \"\\x\"}", false, false);          /* no such escape */
    expect_prefix("{\"a\": \"\\ud83d\"}", false, false);      /* a lone high surrogate */
    expect_prefix("{\"a\": \"\\ude00\"}", false, false);      /* a lone low one */
    expect_prefix("{\"a\": \"\xc0\x80\"}", false, false);     /* overlong */
    expect_prefix("{\"a\": \"\xed\xa0\x80\"}", false, false); /* a surrogate in UTF-8 */
    expect_prefix("{\"a\": \"\xf4\x90\x80\x80\"}", false, false); /* past U+10FFFF */
    expect_prefix("{\"a\": \"\xe2\x82", true, false);         /* a character cut short: more may come */
    char ws[64];
    memset(ws, ' ', sizeof ws);
    ws[JSON_PREFIX_MAX_BLANKS] = 0;
    expect_prefix(ws, true, false);      /* blanks in a row, up to the bound */
    ws[JSON_PREFIX_MAX_BLANKS] = ' ';
    ws[JSON_PREFIX_MAX_BLANKS + 1] = 0;
    expect_prefix(ws, false, false);     /* past it: a generation must move on */
    expect_prefix("{\"a\":                   \"                                   \"}", true, true); /* in strings, any */
    char deep[2 * JSON_PREFIX_MAX_DEPTH + 8];
    size_t k = 0;
    deep[k++] = '{';
    deep[k++] = '"';
    deep[k++] = '"';
    deep[k++] = ':';
    for (int i = 1; i < JSON_PREFIX_MAX_DEPTH; i++) deep[k++] = '[';
    deep[k] = 0;
    expect_prefix(deep, true, false);
    deep[k++] = '[';
    deep[k] = 0;
    expect_prefix(deep, false, false);
}

/* A random JSON value, blanks and escapes included, into b. */
typedef struct rng { uint64_t s; } rng;
static uint32_t next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}

static void put(char *b, size_t *n, size_t cap, const char *s)
{
    for (; *s && *n + 1 < cap; s++) b[(*n)++] = *s;
    b[*n] = 0;
}

static void blanks(rng *r, char *b, size_t *n, size_t cap)
{
    static const char *const ws[] = { "", "", "", " ", "\n", "\t ", "\r\n" };
    put(b, n, cap, ws[next(r) % 7]);
}

static void gen_string(rng *r, char *b, size_t *n, size_t cap)
{
    static const char *const parts[] = { "a", "Z", " ", "\\\"", "\\\\", "\\/", "\\n", "\\u00e9", "\\ud83d\\ude00",
                                         "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "{", "]", ":", "," };
    put(b, n, cap, "\"");
    for (uint32_t i = next(r) % 5; i > 0; i--) put(b, n, cap, parts[next(r) % 16]);
    put(b, n, cap, "\"");
}

static void gen_value(rng *r, char *b, size_t *n, size_t cap, int depth, bool object)
{
    uint32_t k = object ? 0 : next(r) % (depth > 3 ? 5 : 7);
    if (k == 0 || k == 1) {
        put(b, n, cap, k ? "[" : "{");
        for (uint32_t i = next(r) % 4, first = 1; i > 0; i--, first = 0) {
            if (!first) put(b, n, cap, ",");
            blanks(r, b, n, cap);
            if (!k) {
                gen_string(r, b, n, cap);
                blanks(r, b, n, cap);
                put(b, n, cap, ":");
                blanks(r, b, n, cap);
            }
            gen_value(r, b, n, cap, depth + 1, false);
            blanks(r, b, n, cap);
        }
        put(b, n, cap, k ? "]" : "}");
    } else if (k == 2) {
        gen_string(r, b, n, cap);
    } else if (k == 3) {
        static const char *const nums[] = { "0", "-0", "7", "-12", "3.25", "1e5", "-2.5E-3", "10e+2", "0.0", "123456" };
        put(b, n, cap, nums[next(r) % 10]);
    } else {
        static const char *const lits[] = { "true", "false", "null" };
        put(b, n, cap, lits[next(r) % 3]);
    }
}

/* jansson's verdict on a whole text: an object, nothing but blanks around it.
 * *overflow: jansson refused a number too large for a double or an
 * integer, which JSON's grammar allows (the recogniser reads grammar). */
static bool jansson_object(const char *s, size_t n, bool *overflow)
{
    json_error_t e;
    json_t *v = json_loadb(s, n, JSON_ALLOW_NUL, &e);
    bool ok = json_is_object(v);
    if (overflow) *overflow = !v && (strstr(e.text, "overflow") || strstr(e.text, "too big"));
    json_decref(v);
    return ok;
}

static void test_against_jansson(void **st)
{
    (void)st;
    rng r = { 0x9E3779B97F4A7C15ull };
    static const char mut[] = "{}[]\":,\\ 0-1.eEtfnul\x01\xc3\xa9\x80\xff";
    int valid = 0, mutated_ok = 0, mutated_bad = 0;
    for (int t = 0; t < 20000; t++) {
        char b[4096];
        size_t n = 0;
        b[0] = 0;
        blanks(&r, b, &n, sizeof b);
        gen_value(&r, b, &n, sizeof b, 0, true);
        /* the generated text is an object: every prefix is accepted, complete only when whole */
        json_prefix j;
        json_prefix_init(&j);
        for (size_t i = 0; i < n; i++) {
            if (!json_prefix_feed(&j, b + i, 1)) fail_msg("[%s]: refused at byte %zu", b, i);
            if (json_prefix_complete(&j) != (i + 1 == n)) fail_msg("[%s]: complete at byte %zu", b, i);
        }
        assert_true(jansson_object(b, n, NULL));
        valid++;
        /* a one-byte change: complete exactly when jansson reads an object with nothing after it */
        size_t at = next(&r) % n, m = n;
        char c = mut[next(&r) % (sizeof mut - 1)];
        switch (next(&r) % 3) {
        case 0: b[at] = c; break;
        case 1: memmove(b + at, b + at + 1, n - at); m = n - 1; break;
        default:
            if (n + 1 < sizeof b) { memmove(b + at + 1, b + at, n - at + 1); b[at] = c; m = n + 1; }
        }
        bool complete, ok = whole(b, m, &complete);
        bool trailing_blank = m && (b[m - 1] == ' ' || b[m - 1] == '\n' || b[m - 1] == '\t' || b[m - 1] == '\r');
        bool overflow, want = jansson_object(b, m, &overflow) && !trailing_blank;
        if (overflow) continue;
        if (complete != want) fail_msg("[%.*s]: complete %d, jansson %d", (int)m, b, complete, want);
        if (ok) mutated_ok++;
        else mutated_bad++;
    }
    printf("json_prefix: %d generated objects, every prefix accepted; %d mutations still prefixes, %d refused\n", valid,
           mutated_ok, mutated_bad);
    assert_true(mutated_bad > 1000 && mutated_ok > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_against_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
