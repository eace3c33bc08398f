/* test_tool_calls.c: the answer-side of tool calling (tool_calls.h) and the
 * JSON text it and the templates write (pyjson.h).
 *  - Every answer is fed whole, byte by byte and in uneven pieces: the
 *    content released and the calls parsed must not depend on the split.
 *  - Content before the calls loses only the whitespace that parts them;
 *    a "<tool" that never becomes a call, a malformed call, text after a
 *    call, a call without a name: all released as text, no call.
 *  - pyjson against strings Python 3's json.dumps(x, ensure_ascii=False)
 *    printed for the same values. */
#include "test_util.h"

#include <jansson.h>

#include "runtime/pyjson.h"
#include "runtime/tool_calls.h"

typedef struct outcome {
    char     *content;
    tool_call *calls;
    size_t    n;
} outcome;

/* step 0: whole; otherwise pieces of step bytes, then of 1..7 varying */
static outcome scan(const char *answer, size_t step)
{
    tool_scan ts = { 0 };
    strbuf out = { 0 };
    size_t len = strlen(answer), i = 0, k = 1;
    while (i < len) {
        size_t n = step ? step : len;
        if (step == 99) n = 1 + (k++ % 7);
        if (n > len - i) n = len - i;
        size_t before = out.len;
        tool_scan_feed(&ts, answer + i, n, &out);
        /* what is released is never taken back, and never holds a call's start */
        assert_true(out.len >= before);
        i += n;
    }
    outcome o = { 0 };
    o.n = tool_scan_finish(&ts, &o.calls, &out);
    tool_scan_free(&ts);
    assert_false(out.oom);
    o.content = strbuf_take(&out);
    return o;
}

static void expect(const char *answer, const char *content, size_t n, const char *const *names,
                   const char *const *args)
{
    static const size_t steps[] = { 0, 1, 2, 3, 5, 11, 99 };
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        outcome o = scan(answer, steps[s]);
        if (strcmp(o.content, content))
            fail_msg("step %zu: content [%s], want [%s] for [%s]", steps[s], o.content, content, answer);
        assert_int_equal(o.n, n);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(o.calls[i].name, names[i]);
            assert_string_equal(o.calls[i].arguments, args[i]);
        }
        if (n == 0) assert_null(o.calls);
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
}

static void test_calls_parsed(void **st)
{
    (void)st;
    const char *names[] = { "get_weather", "now" };
    const char *args[] = { "{\"city\": \"Paris\", \"days\": [1, 2]}", "{}" };
    expect("I will check.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"days\":[1,2]}}\n"
           "</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
           "I will check.", 2, names, args);
    /* no text before; arguments as a JSON string; absent; the last close tag missing; trailing blanks */
    expect("<tool_call>{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": [1, 2]}\"}</tool_call>"
           "<tool_call>\n{\"name\": \"now\"}\n \n",
           "", 2, names, args);
    /* unicode in arguments stays raw */
    const char *n1[] = { "say" }, *a1[] = { "{\"text\": \"h\xc3\xa9 \\\"q\\\"\\n\"}" };
    expect("  <tool_call>\n{\"name\": \"say\", \"arguments\": {\"text\": \"h\\u00e9 \\\"q\\\"\\n\"}}\n</tool_call>", "", 1, n1, a1);
}

static void test_not_calls(void **st)
{
    (void)st;
    /* plain text, trailing whitespace and a prefix of the tag released at the end */
    expect("Hello there.  \n", "Hello there.  \n", 0, NULL, NULL);
    expect("a <tool", "a <tool", 0, NULL, NULL);
    expect("use <tool_cal> tags", "use <tool_cal> tags", 0, NULL, NULL);
    /* malformed calls come back as the text they were, whitespace included */
    const char *bad[] = {
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>",
        "x\n<tool_call>\n{\"arguments\": {}}\n</tool_call>",
        "x\n<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call>",
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>",
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": \"not json\"}\n</tool_call>",
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> and then more text",
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}} junk</tool_call>",
        "x\n<tool_call>\n{\"name\": \"f\", \"name\": \"g\", \"arguments\": {}}</tool_call>",
        "x\n<tool_call>\n[\"f\"]</tool_call>",
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}",  /* fine: no close at the end */
    };
    for (size_t i = 0; i + 1 < sizeof bad / sizeof bad[0]; i++) expect(bad[i], bad[i], 0, NULL, NULL);
    const char *nf[] = { "f" }, *af[] = { "{}" };
    expect(bad[9], "x", 1, nf, af);
}

static void py(const char *json, const char *want)
{
    json_error_t je;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &je);
    if (!v) fail_msg("%s: %s", json, je.text);
    char *got = pyjson_dumps(v);
    if (strcmp(got, want)) fail_msg("pyjson(%s) = [%s], want [%s]", json, got, want);
    free(got);
    json_decref(v);
}

static void test_pyjson(void **st)
{
    (void)st;
    py("{\"b\":1,\"a\":[true,false,null,{}],\"c\":[]}", "{\"b\": 1, \"a\": [true, false, null, {}], \"c\": []}");
    py("\"q\\\" b\\\\ n\\n r\\r t\\t b\\b f\\f u\\u0001 \\u001f del\\u007f \\u00e9 \\u2028 \\ud83d\\ude00 /\"",
       "\"q\\\" b\\\\ n\\n r\\r t\\t b\\b f\\f u\\u0001 \\u001f del\x7f \xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80 /\"");
    /* floats as Python's repr: shortest round trip, exponent outside [-4, 16) */
    py("[1.0, -0.0, 0.1, 1e-7, 1e16, 1e15, 123.456, 1.5e300, 2.5e-5, 0.0001, 100.0, 5e-324, 1.7976931348623157e308]",
       "[1.0, -0.0, 0.1, 1e-07, 1e+16, 1000000000000000.0, 123.456, 1.5e+300, 2.5e-05, 0.0001, 100.0, 5e-324, "
       "1.7976931348623157e+308]");
    py("[123456789012345678, -9223372036854775808, 0.30000000000000004, 12345678.9]",
       "[123456789012345678, -9223372036854775808, 0.30000000000000004, 12345678.9]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_parsed),
        cmocka_unit_test(test_not_calls),
        cmocka_unit_test(test_pyjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
