/* test_json_schema.c: the schema subset json_schema.h holds, on documents
 * that follow a schema (every prefix accepted, complete at the end) and on
 * ones that break it one way each (refused before the end, or never
 * complete), and the schemas it refuses to compile. */
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/chat/json_schema.h"

static js_schema *compile_ok(const char *schema)
{
    char err[200] = "";
    js_schema *s = js_compile(schema, err, sizeof err);
    if (!s) fail_msg("%s: %s", schema, err);
    return s;
}

/* Every prefix of doc accepted, complete only when whole. */
static void follows(const js_schema *s, const char *doc)
{
    js_prefix p;
    js_prefix_init(&p, s);
    size_t n = strlen(doc);
    for (size_t i = 0; i < n; i++) {
        if (!js_prefix_feed(&p, doc + i, 1)) fail_msg("[%s]: refused at byte %zu ('%c')", doc, i, doc[i]);
        if (js_prefix_complete(&p) != (i + 1 == n)) fail_msg("[%s]: complete at byte %zu", doc, i);
    }
}

/* Refused at some byte, or not complete at the end. */
static void breaks(const js_schema *s, const char *doc)
{
    js_prefix p;
    js_prefix_init(&p, s);
    if (js_prefix_feed(&p, doc, strlen(doc)) && js_prefix_complete(&p)) fail_msg("[%s]: accepted", doc);
}

static const char PERSON[] =
    "{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"name\", \"age\", \"tags\"],"
    " \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\"},"
    " \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"enum\": [\"a\", \"b\\u00e9\"]}},"
    " \"score\": {\"type\": \"number\"}, \"note\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}}}";

static void test_object(void **st)
{
    (void)st;
    js_schema *s = compile_ok(PERSON);
    follows(s, "{\"name\": \"Bob\", \"age\": 7, \"tags\": [\"a\", \"b\xc3\xa9\"]}");
    breaks(s, "{\"name\": \"Bob\", \"age\": 7, \"tags\": [\"b\\u00e9\"]}"); /* an enum string is spelled one way */
    follows(s, "{\"tags\": [], \"age\": -3, \"name\": \"\", \"score\": 1.5e3, \"note\": null}");
    follows(s, "{\"name\": \"x\", \"note\": \"free text\", \"age\": 0, \"tags\": []}");
    breaks(s, "{\"name\": \"Bob\", \"age\": 7}");                              /* a required key missing */
    breaks(s, "{\"name\": 5, \"age\": 7, \"tags\": []}");                      /* a wrong type */
    breaks(s, "{\"name\": \"a\", \"age\": 7.5, \"tags\": []}");                /* not an integer */
    breaks(s, "{\"name\": \"a\", \"age\": 1e3, \"tags\": []}");
    breaks(s, "{\"name\": \"a\", \"age\": 7, \"tags\": [\"c\"]}");             /* outside the enum */
    breaks(s, "{\"name\": \"a\", \"age\": 7, \"tags\": [\"ab\"]}");
    breaks(s, "{\"name\": \"a\", \"age\": 7, \"tags\": [], \"other\": 1}");   /* no other keys */
    js_schema *two = compile_ok("{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {\"a\": {}}}");
    js_prefix e;
    js_prefix_init(&e, two);
    assert_true(js_prefix_feed(&e, "{\"a\": 1", 7));
    js_prefix f = e;
    assert_false(js_prefix_feed(&f, ",", 1)); /* no key could follow it */
    assert_true(js_prefix_feed(&e, "}", 1));
    js_free(two);
    breaks(s, "{\"name\": \"a\", \"name\": \"b\", \"age\": 7, \"tags\": []}"); /* a key twice */
    /* no dead ends: a written key's name is refused as soon as it parts from the unwritten ones ("note") */
    js_prefix p;
    js_prefix_init(&p, s);
    assert_true(js_prefix_feed(&p, "{\"name\": \"a\", \"n", 16));
    js_prefix q = p;
    assert_false(js_prefix_feed(&q, "a", 1));
    assert_true(js_prefix_feed(&p, "ote\": null", 10));
    breaks(s, "{\"name\": \"a\", \"age\": 7, \"tags\": [], \"note\": 3}");     /* neither alternative */
    breaks(s, "[]");
    js_free(s);
}

static void test_additional_and_any(void **st)
{
    (void)st;
    js_schema *s = compile_ok("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}}}");
    follows(s, "{\"zzz\": [1, {\"q\": null}], \"a\": true}"); /* other keys allowed, any value */
    breaks(s, "{\"a\": 1}");
    breaks(s, "{\"a\": true, \"a\": false}"); /* a declared key twice, other keys allowed or not */
    follows(s, "{\"a\": true, \"ab\": 1}");
    js_free(s);
    s = compile_ok("{}"); /* anything: an object of anything */
    follows(s, "{\"k\": [1, 2, {\"x\": \"y\"}]}");
    js_free(s);
}

static void test_refs(void **st)
{
    (void)st;
    js_schema *s = compile_ok("{\"$defs\": {\"node\": {\"type\": \"object\", \"additionalProperties\": false,"
                              " \"required\": [\"v\"], \"properties\": {\"v\": {\"type\": \"integer\"},"
                              " \"kids\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/node\"}},"
                              " \"next\": {\"anyOf\": [{\"$ref\": \"#/$defs/node\"}, {\"type\": \"null\"}]}}}},"
                              " \"$ref\": \"#/$defs/node\"}");
    follows(s, "{\"v\": 1, \"kids\": [{\"v\": 2, \"kids\": []}, {\"v\": 3}], \"next\": {\"v\": 4, \"next\": null}}");
    breaks(s, "{\"v\": 1, \"kids\": [{\"w\": 2}]}");
    breaks(s, "{\"v\": 1, \"next\": {\"v\": \"x\"}}");
    js_free(s);
}

static void test_refusals(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "{\"type\": \"array\"}",                                                    /* the top is no object */
        "{\"type\": \"object\", \"properties\": {\"a\": {\"anyOf\": [{\"type\": \"object\"}, {\"type\": \"object\"}]}}}",
        "{\"type\": \"object\", \"properties\": {\"a\": {\"$ref\": \"#/$defs/none\"}}}",
        "{\"type\": \"object\", \"required\": [\"b\"], \"properties\": {\"a\": {}}}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[200] = "";
        js_schema *s = js_compile(bad[i], err, sizeof err);
        if (s) fail_msg("%s: compiled", bad[i]);
        assert_true(err[0] != 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object),
        cmocka_unit_test(test_additional_and_any),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
