/* test_tool_calls.c: the answer-side of tool calling (tool_calls.h) and the
 * JSON text it and the templates write (pyjson.h).
 *  - Every answer is fed whole, byte by byte and in uneven pieces: the
 *    content released and the calls parsed must not depend on the split.
 *  - Content before the calls loses only the whitespace that parts them;
 *    a "<tool" that never becomes a call, a malformed call, text after a
 *    call, a call without a name: all released as text, no call.
 *  - pyjson against strings Python 3's json.dumps(x, ensure_ascii=False)
 *    printed for the same values. */
#include "tests/lib/test_util.h"

#include <jansson.h>

#include "runtime/chat/pyjson.h"
#include "runtime/chat/tool_calls.h"

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

/* Qwen3-Coder's calls: values typed by the tools' schemas, whole or split */
static outcome scan_fmt(tool_format f, const char *answer, size_t step, const char *const *tools, size_t n_tools)
{
    tool_scan ts = { .format = f, .tools = tools, .n_tools = n_tools };
    strbuf out = { 0 };
    size_t len = strlen(answer);
    for (size_t i = 0; i < len; i += step) tool_scan_feed(&ts, answer + i, i + step <= len ? step : len - i, &out);
    outcome o = { 0 };
    o.n = tool_scan_finish(&ts, &o.calls, &out);
    tool_scan_free(&ts);
    o.content = strbuf_take(&out);
    return o;
}

static void test_qwen3_coder_calls(void **st)
{
    (void)st;
    const char *tools[] = {
        "{\"type\": \"function\", \"function\": {\"name\": \"edit\", \"parameters\": {\"type\": \"object\", "
        "\"properties\": {\"path\": {\"type\": \"string\"}, \"line\": {\"type\": \"integer\"}, "
        "\"opts\": {\"type\": \"object\"}, \"text\": {\"type\": \"string\"}}}}}",
        "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}",
    };
    const char *answer = "Editing.\n\n<tool_call>\n<function=edit>\n<parameter=path>\n42\n</parameter>\n"
                         "<parameter=line>\n7\n</parameter>\n<parameter=opts>\n{\"dry\": true}\n</parameter>\n"
                         "<parameter=text>\nint x;\n\nint y;\n</parameter>\n<parameter=extra>\n[1, 2]\n</parameter>\n"
                         "<parameter=word>\nhello\n</parameter>\n</function>\n</tool_call>\n"
                         "<tool_call>\n<function=now>\n</function>\n</tool_call>";
    static const size_t steps[] = { 1, 3, 7, 1000 };
    for (size_t k = 0; k < 4; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_CODER, answer, steps[k], tools, 2);
        assert_string_equal(o.content, "Editing.");
        assert_int_equal(o.n, 2);
        assert_string_equal(o.calls[0].name, "edit");
        /* path is a string though it reads as a number; line and opts are JSON; text keeps its inner newlines;
         * unknown parameters are JSON when they are, text otherwise */
        assert_string_equal(o.calls[0].arguments, "{\"path\": \"42\", \"line\": 7, \"opts\": {\"dry\": true}, "
                                                  "\"text\": \"int x;\\n\\nint y;\", \"extra\": [1, 2], \"word\": \"hello\"}");
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].arguments, "{}");
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    /* malformed: the text back, whole */
    const char *bad[] = {
        "x\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>",
        "x\n<tool_call>\n<function=>\n</function>\n</tool_call>",
        "x\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
        "x\n<tool_call>\n<function=f>\n</function>\n</tool_call> after",
    };
    for (size_t i = 0; i < 4; i++) {
        outcome o = scan_fmt(TOOL_FORMAT_CODER, bad[i], 2, tools, 2);
        assert_string_equal(o.content, bad[i]);
        assert_int_equal(o.n, 0);
        free(o.content);
    }
}

/* GLM-4.5's calls: the name on the <tool_call> line, typed arg pairs */
static void test_glm45_calls(void **st)
{
    (void)st;
    const char *tools[] = {
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"properties\": "
        "{\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}}}}",
    };
    const char *answer = "Let me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>2024</arg_value>\n"
                         "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n<arg_key>opts</arg_key>\n"
                         "<arg_value>{\"unit\": \"C\"}</arg_value>\n<arg_key>note</arg_key>\n<arg_value>a\nb</arg_value>\n"
                         "</tool_call>\n<tool_call>now\n</tool_call>";
    static const size_t steps[] = { 1, 4, 1000 };
    for (size_t k = 0; k < 3; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_GLM45, answer, steps[k], tools, 1);
        assert_string_equal(o.content, "Let me check.");
        assert_int_equal(o.n, 2);
        assert_string_equal(o.calls[0].name, "get_weather");
        assert_string_equal(o.calls[0].arguments,
                            "{\"city\": \"2024\", \"days\": 2, \"opts\": {\"unit\": \"C\"}, \"note\": \"a\\nb\"}");
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].arguments, "{}");
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    const char *bad[] = {
        "x\n<tool_call>\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>", /* no name */
        "x\n<tool_call>f\n<arg_key>a</arg_key>\n</tool_call>",                          /* no value */
        "x\n<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1\n</tool_call>",            /* value not closed */
    };
    for (size_t i = 0; i < 3; i++) {
        outcome o = scan_fmt(TOOL_FORMAT_GLM45, bad[i], 3, tools, 1);
        assert_string_equal(o.content, bad[i]);
        assert_int_equal(o.n, 0);
        free(o.content);
    }
}

/* MiniMax-M2's calls: invokes inside <minimax:tool_call> blocks */
static void test_minimax_calls(void **st)
{
    (void)st;
    const char *tools[] = {
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"properties\": "
        "{\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}}}}",
    };
    const char *answer = "Let me check.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n"
                         "<parameter name=\"city\">2024</parameter>\n<parameter name=\"days\">2</parameter>\n"
                         "<parameter name=\"opts\">{\"unit\": \"C\"}</parameter>\n</invoke>\n<invoke name=\"now\">\n</invoke>\n"
                         "</minimax:tool_call>";
    static const size_t steps[] = { 1, 5, 1000 };
    for (size_t k = 0; k < 3; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_MINIMAX, answer, steps[k], tools, 1);
        assert_string_equal(o.content, "Let me check.");
        assert_int_equal(o.n, 2);
        assert_string_equal(o.calls[0].name, "get_weather");
        assert_string_equal(o.calls[0].arguments, "{\"city\": \"2024\", \"days\": 2, \"opts\": {\"unit\": \"C\"}}");
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].arguments, "{}");
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    /* <tool_call> is plain text in this format; a broken invoke is text */
    const char *plain = "see <tool_call> here";
    outcome o = scan_fmt(TOOL_FORMAT_MINIMAX, plain, 2, tools, 1);
    assert_string_equal(o.content, plain);
    free(o.content);
    const char *bad = "x\n<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"a\">1\n</invoke>\n</minimax:tool_call>";
    o = scan_fmt(TOOL_FORMAT_MINIMAX, bad, 3, tools, 1);
    assert_string_equal(o.content, bad);
    assert_int_equal(o.n, 0);
    free(o.content);
}

/* Kimi K2: calls in a tool-calls section, each named by its id
 * functions.NAME:IDX, which is kept; a call whose id is not of that shape,
 * or whose arguments are not an object, is text */
static void test_kimi_calls(void **st)
{
    (void)st;
    const char *answer = "I will check.<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0"
                         "<|tool_call_argument_begin|>{\"city\":\"Paris\",\"days\":2}<|tool_call_end|>\n"
                         "<|tool_call_begin|> functions.now:1 <|tool_call_argument_begin|>{}<|tool_call_end|>"
                         "<|tool_calls_section_end|>";
    static const size_t steps[] = { 1, 3, 7, 1000 };
    for (size_t k = 0; k < 4; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_KIMI, answer, steps[k], NULL, 0);
        assert_string_equal(o.content, "I will check.");
        assert_int_equal(o.n, 2);
        assert_string_equal(o.calls[0].name, "get_weather");
        assert_string_equal(o.calls[0].id, "functions.get_weather:0");
        assert_string_equal(o.calls[0].arguments, "{\"city\": \"Paris\", \"days\": 2}");
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].id, "functions.now:1");
        assert_string_equal(o.calls[1].arguments, "{}");
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    /* the turn may end before the section's end tag */
    outcome o = scan_fmt(TOOL_FORMAT_KIMI,
                         "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}",
                         2, NULL, 0);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.calls[0].name, "f");
    tool_calls_free(o.calls, o.n);
    free(o.content);
    const char *bad[] = {
        "a<|tool_calls_section_begin|><|tool_call_begin|>get_weather<|tool_call_argument_begin|>{}<|tool_call_end|>",
        "a<|tool_calls_section_begin|><|tool_call_begin|>functions.f:x<|tool_call_argument_begin|>{}<|tool_call_end|>",
        "a<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>[1]<|tool_call_end|>",
        "a<|tool_calls_section_begin|><|tool_call_begin|>functions.:0<|tool_call_argument_begin|>{}<|tool_call_end|>",
        "a<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|>x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = scan_fmt(TOOL_FORMAT_KIMI, bad[i], 4, NULL, 0);
        assert_string_equal(o.content, bad[i]);
        assert_int_equal(o.n, 0);
        free(o.content);
    }
    /* Qwen3's tag is plain text here */
    o = scan_fmt(TOOL_FORMAT_KIMI, "see <tool_call> here", 2, NULL, 0);
    assert_string_equal(o.content, "see <tool_call> here");
    free(o.content);
}

/* DeepSeek V3.1: NAME<｜tool▁sep｜>{...} calls chained in one calls block;
 * V3's and R1's older fenced form read too; anything else is text */
#define DSB "\xef\xbd\x9c"
#define DSP "\xe2\x96\x81"
#define DS_CALLS "<" DSB "tool" DSP "calls" DSP "begin" DSB ">"
#define DS_CALLS_END "<" DSB "tool" DSP "calls" DSP "end" DSB ">"
#define DS_CALL "<" DSB "tool" DSP "call" DSP "begin" DSB ">"
#define DS_CALL_END "<" DSB "tool" DSP "call" DSP "end" DSB ">"
#define DS_SEP "<" DSB "tool" DSP "sep" DSB ">"
static void test_deepseek_calls(void **st)
{
    (void)st;
    const char *answer = "Let me check." DS_CALLS DS_CALL "get_weather" DS_SEP "{\"city\":\"Paris\",\"days\":2}" DS_CALL_END
                         DS_CALL "now" DS_SEP "{}" DS_CALL_END DS_CALLS_END;
    static const size_t steps[] = { 1, 3, 7, 1000 };
    for (size_t k = 0; k < 4; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_DEEPSEEK, answer, steps[k], NULL, 0);
        assert_string_equal(o.content, "Let me check.");
        assert_int_equal(o.n, 2);
        assert_string_equal(o.calls[0].name, "get_weather");
        assert_null(o.calls[0].id);
        assert_string_equal(o.calls[0].arguments, "{\"city\": \"Paris\", \"days\": 2}");
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].arguments, "{}");
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    /* the older form: function<｜tool▁sep｜>NAME, the arguments fenced; the turn may end early */
    outcome o = scan_fmt(TOOL_FORMAT_DEEPSEEK,
                         DS_CALLS DS_CALL "function" DS_SEP "get_weather\n```json\n{\"city\": \"Oslo\"}\n```" DS_CALL_END
                         "\n" DS_CALL "now" DS_SEP "{}",
                         2, NULL, 0);
    assert_string_equal(o.content, "");
    assert_int_equal(o.n, 2);
    assert_string_equal(o.calls[0].name, "get_weather");
    assert_string_equal(o.calls[0].arguments, "{\"city\": \"Oslo\"}");
    assert_string_equal(o.calls[1].name, "now");
    tool_calls_free(o.calls, o.n);
    free(o.content);
    const char *bad[] = {
        "a" DS_CALLS DS_CALL "f" DS_SEP "[1]" DS_CALL_END DS_CALLS_END,
        "a" DS_CALLS DS_CALL DS_SEP "{}" DS_CALL_END DS_CALLS_END,
        "a" DS_CALLS DS_CALL "f" DS_SEP "{}" DS_CALL_END DS_CALLS_END "x",
        "a" DS_CALLS DS_CALL "f {}" DS_CALL_END DS_CALLS_END,
        "a" DS_CALLS DS_CALL "function" DS_SEP "f\n{}" DS_CALL_END DS_CALLS_END,
        "a" DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{}" DS_CALL_END DS_CALLS_END,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = scan_fmt(TOOL_FORMAT_DEEPSEEK, bad[i], 4, NULL, 0);
        assert_string_equal(o.content, bad[i]);
        assert_int_equal(o.n, 0);
        free(o.content);
    }
    o = scan_fmt(TOOL_FORMAT_DEEPSEEK, "see <tool_call> here", 2, NULL, 0);
    assert_string_equal(o.content, "see <tool_call> here");
    free(o.content);
}

/* Llama 4: bare JSON objects naming an offered tool, with "parameters";
 * JSON that names no offered tool, or has no parameters, is an answer */
static void test_llama_calls(void **st)
{
    (void)st;
    const char *tools[] = {
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {}}}",
        "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}",
    };
    const char *answer = "Checking. {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; "
                         "{\"name\":\"now\",\"arguments\":\"{}\"}\n";
    static const size_t steps[] = { 1, 3, 7, 1000 };
    for (size_t k = 0; k < 4; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_LLAMA, answer, steps[k], tools, 2);
        assert_string_equal(o.content, "Checking.");
        assert_int_equal(o.n, 2);
        assert_string_equal(o.calls[0].name, "get_weather");
        assert_string_equal(o.calls[0].arguments, "{\"city\": \"Paris\"}");
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].arguments, "{}");
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    const char *answers[] = {
        "{\"name\": \"Bob\", \"parameters\": {}}",                 /* not an offered tool */
        "{\"name\": \"now\", \"age\": 3}",                         /* no parameters */
        "{\"name\": \"now\", \"parameters\": [1]}",                /* not an object */
        "{\"name\": \"now\", \"parameters\": {}} and more text", /* text after */
        "{\"name\": \"now\", \"parameters\": {",                   /* cut short */
    };
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        outcome o = scan_fmt(TOOL_FORMAT_LLAMA, answers[i], 3, tools, 2);
        assert_string_equal(o.content, answers[i]);
        assert_int_equal(o.n, 0);
        free(o.content);
    }
}

/* Mistral v3: [TOOL_CALLS] then a JSON list of {"name", "arguments"} (an "id" of 9 letters and digits
 * kept); anything else after the tag is returned as text */
static void test_mistral_calls(void **st)
{
    (void)st;
    const char *answer = "Checking. [TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                         "{\"name\":\"now\",\"arguments\":\"{}\",\"id\":\"Ab3xY9k2Q\"}, "
                         "{\"name\": \"now\", \"id\": \"call_12\"}]";
    static const size_t steps[] = { 1, 3, 7, 1000 };
    for (size_t k = 0; k < 4; k++) {
        outcome o = scan_fmt(TOOL_FORMAT_MISTRAL, answer, steps[k], NULL, 0);
        assert_string_equal(o.content, "Checking.");
        assert_int_equal(o.n, 3);
        assert_string_equal(o.calls[0].name, "get_weather");
        assert_string_equal(o.calls[0].arguments, "{\"city\": \"Paris\"}");
        assert_null(o.calls[0].id);
        assert_string_equal(o.calls[1].name, "now");
        assert_string_equal(o.calls[1].arguments, "{}");
        assert_string_equal(o.calls[1].id, "Ab3xY9k2Q");
        assert_string_equal(o.calls[2].arguments, "{}");
        assert_null(o.calls[2].id); /* not an id the template takes back: the server makes one */
        tool_calls_free(o.calls, o.n);
        free(o.content);
    }
    /* one object instead of a list; two sections */
    outcome o = scan_fmt(TOOL_FORMAT_MISTRAL, "[TOOL_CALLS]{\"name\": \"a\", \"arguments\": {}}\n[TOOL_CALLS] "
                                              "[{\"name\": \"b\", \"arguments\": {\"x\": [1]}}]", 2, NULL, 0);
    assert_string_equal(o.content, "");
    assert_int_equal(o.n, 2);
    assert_string_equal(o.calls[0].name, "a");
    assert_string_equal(o.calls[1].arguments, "{\"x\": [1]}");
    tool_calls_free(o.calls, o.n);
    free(o.content);
    const char *bad[] = {
        "a [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": [1]}]",           /* arguments not an object */
        "a [TOOL_CALLS] [{\"arguments\": {}}]",                              /* no name */
        "a [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}] and text",   /* text after */
        "a [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}, {\"name\": 3}]", /* one bad: none taken */
        "a [TOOL_CALLS] []",                                                 /* no call */
        "a [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {",               /* cut short */
        "a [TOOL_CALLS]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = scan_fmt(TOOL_FORMAT_MISTRAL, bad[i], 3, NULL, 0);
        assert_string_equal(o.content, bad[i]);
        assert_int_equal(o.n, 0);
        free(o.content);
    }
    /* a forced call's opening and close in this format */
    char *pre = tool_call_prefix(TOOL_FORMAT_MISTRAL, "get_weather");
    assert_string_equal(pre, "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": ");
    free(pre);
    assert_string_equal(tool_call_args_close(TOOL_FORMAT_MISTRAL), "}]");
    const char *const *mark;
    assert_int_equal(tool_format_markers(TOOL_FORMAT_MISTRAL, &mark), 1);
    assert_string_equal(mark[0], "[TOOL_CALLS]");
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

static void pystr(const char *json, const char *want)
{
    json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    strbuf b = { 0 };
    pyjson_add_str(&b, v);
    char *got = strbuf_take(&b);
    if (strcmp(got, want)) fail_msg("str(%s) = [%s], want [%s]", json, got, want);
    free(got);
    json_decref(v);
}

static void lit(const char *py, const char *want)
{
    json_t *v = pyjson_parse_literal(py, strlen(py));
    if (!want) {
        if (v) fail_msg("literal [%s] accepted", py);
        return;
    }
    if (!v) fail_msg("literal [%s] refused", py);
    char *got = pyjson_dumps(v);
    if (strcmp(got, want)) fail_msg("literal [%s] = [%s], want [%s]", py, got, want);
    free(got);
    json_decref(v);
}

/* Python literals (what str() writes, read back): the inverse of pystr's containers */
static void test_python_literals(void **st)
{
    (void)st;
    lit(" {'raw': True, 'tags': ['x', \"it's\"], 'n': None, 'f': -1.5e-07, 'i': 42, 'e': {}, 'l': [],} ",
        "{\"raw\": true, \"tags\": [\"x\", \"it's\"], \"n\": null, \"f\": -1.5e-07, \"i\": 42, \"e\": {}, \"l\": []}");
    lit("['a\\tb\\n', 'q\\'s', \"d\\\"q\", '\\xa0\\u2028\\U0001f600', '\xc3\xa9']",
        "[\"a\\tb\\n\", \"q's\", \"d\\\"q\", \"\xc2\xa0\xe2\x80\xa8\xf0\x9f\x98\x80\", \"\xc3\xa9\"]");
    lit("[[[1]], {'a': {'b': [True, False]}}]", "[[[1]], {\"a\": {\"b\": [true, false]}}]");
    const char *bad[] = { "{'a': 1} x", "{1: 2}", "'str'", "[1, 2", "{'a' 1}", "[True False]", "['\\x00']",
                          "['\\ud800']", "['a\nb']", "[nan]", "{'a': 1,,}", "[1 2]", "", "[\"\\q\"]" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) lit(bad[i], NULL);
    /* as Qwen3-Coder's values: an object parameter in repr form becomes JSON; a string one stays text */
    const char *tools[] = {
        "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"properties\": "
        "{\"o\": {\"type\": \"object\"}, \"s\": {\"type\": \"string\"}}}}}",
    };
    outcome o = scan_fmt(TOOL_FORMAT_CODER, "<tool_call>\n<function=f>\n<parameter=o>\n{'a': True}\n</parameter>\n"
                                            "<parameter=s>\n{'a': True}\n</parameter>\n</function>\n</tool_call>", 7, tools, 1);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.calls[0].arguments, "{\"o\": {\"a\": true}, \"s\": \"{'a': True}\"}");
    tool_calls_free(o.calls, o.n);
    free(o.content);
}

static void test_pyjson(void **st)
{
    (void)st;
    /* Python's str(): strings raw at the top, repr inside containers (printed by Python 3) */
    pystr("\"it's \\\"x\\\"\"", "it's \"x\"");
    pystr("[\"a\", \"it's\", \"both ' and \\\"\", \"tab\\t nl\\n bs\\\\ \\u0001 \\u00a0 \\u00e9 \\u2028\"]",
          "['a', \"it's\", 'both \\' and \"', 'tab\\t nl\\n bs\\\\ \\x01 \\xa0 \xc3\xa9 \\u2028']");
    pystr("{\"k\": true, \"n\": null, \"f\": false, \"x\": 1.5, \"l\": [1, {\"a\": []}]}",
          "{'k': True, 'n': None, 'f': False, 'x': 1.5, 'l': [1, {'a': []}]}");
    pystr("true", "True");
    pystr("1e-7", "1e-07");
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
        cmocka_unit_test(test_qwen3_coder_calls),
        cmocka_unit_test(test_glm45_calls),
        cmocka_unit_test(test_minimax_calls),
        cmocka_unit_test(test_kimi_calls),
        cmocka_unit_test(test_deepseek_calls),
        cmocka_unit_test(test_llama_calls),
        cmocka_unit_test(test_mistral_calls),
        cmocka_unit_test(test_pyjson),
        cmocka_unit_test(test_python_literals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
