/* test_api_request.c: request bodies of both APIs: what is accepted and
 * normalised, and that every refusal is a 400 naming the field the client
 * got wrong (malformed JSON, wrong types, huge numbers, invalid UTF-8,
 * unknown roles, unsupported meaning-changing fields, limits). */
#include "tests/lib/test_util.h"
#include "runtime/chat/api_request.h"

static void expect_refused(api_kind k, const char *body, size_t len, const char *param)
{
    api_request r;
    api_error e;
    int rc = api_request_parse(k, body, len, 256, &r, &e);
    if (rc == 0) { api_request_free(&r); fail_msg("accepted: %s", body); }
    assert_int_equal(e.status, 400);
    if (strcmp(e.param, param)) fail_msg("param '%s' (message '%s'), want '%s' for %s", e.param, e.message, param, body);
    assert_true(strlen(e.message) > 0);
    for (const char *c = e.message; *c; c++) assert_true((unsigned char)*c >= 0x20); /* one line, no control bytes */
}
#define REFUSE(k, body, param) expect_refused(k, body, sizeof(body) - 1, param)

static void test_openai_chat_ok(void **st)
{
    (void)st;
    static const char body[] =
        "{\"model\":\"x\",\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null}],"
        "\"max_completion_tokens\":7,\"temperature\":0.5,\"top_p\":0.9,\"seed\":42,\"stop\":\"END\","
        "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"logprobs\":true,\"top_logprobs\":3,"
        "\"n\":1,\"presence_penalty\":0,\"user\":\"ignored\",\"max_tokens\":null,\"unknown_field\":{}}";
    api_request r;
    api_error e;
    assert_int_equal(api_request_parse(API_CHAT, body, sizeof body - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_msgs, 3);
    assert_string_equal(r.msgs[0].role, "system");
    assert_string_equal(r.msgs[1].content, "a\nb");
    assert_string_equal(r.msgs[2].content, "");
    assert_int_equal(r.max_tokens, 7);
    assert_true(r.temperature == 0.5 && r.top_p == 0.9);
    assert_true(r.has_seed && r.seed == 42);
    assert_int_equal(r.n_stops, 1);
    assert_string_equal(r.stops[0], "END");
    assert_true(r.stream && r.include_usage && r.logprobs);
    assert_int_equal(r.top_logprobs, 3);
    api_request_free(&r);
}

static void test_openai_refusals(void **st)
{
    (void)st;
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}", "body");       /* truncated */
    REFUSE(API_CHAT, "[1,2]", "body");
    REFUSE(API_COMPLETION, "{\"promp\\\n\t\":\"\"}", "body"); /* jansson quotes the newline back (fuzz find) */
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "body"); /* bad UTF-8 */
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}", "body");
    REFUSE(API_CHAT, "{\"messages\":[],\"messages\":[]}", "body");                        /* duplicate key */
    REFUSE(API_CHAT, "{}", "messages");
    REFUSE(API_CHAT, "{\"messages\":[]}", "messages");
    REFUSE(API_CHAT, "{\"messages\":{}}", "messages");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"a\"}]}", "messages[0].role");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"function\",\"content\":\"a\"}]}", "messages[0].role");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":5,\"content\":\"a\"}]}", "messages[0].role");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\"}]}", "messages[0].content");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
           "messages[0].content[0]"); /* no url */
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}",
           "messages[0].content[0].type");
#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]"
    REFUSE(API_CHAT, "{" MSG ",\"max_tokens\":1e400}", "body");                  /* real overflow */
    REFUSE(API_CHAT, "{" MSG ",\"max_tokens\":123456789012345678901234567890}", "body");
    REFUSE(API_CHAT, "{" MSG ",\"max_tokens\":257}", "max_tokens");              /* over the limit */
    REFUSE(API_CHAT, "{" MSG ",\"max_tokens\":0}", "max_tokens");
    REFUSE(API_CHAT, "{" MSG ",\"max_tokens\":\"5\"}", "max_tokens");
    REFUSE(API_CHAT, "{" MSG ",\"max_tokens\":5.5}", "max_tokens");
    REFUSE(API_CHAT, "{" MSG ",\"max_completion_tokens\":100000}", "max_completion_tokens");
    REFUSE(API_CHAT, "{" MSG ",\"temperature\":3}", "temperature");
    REFUSE(API_CHAT, "{" MSG ",\"temperature\":\"hot\"}", "temperature");
    REFUSE(API_CHAT, "{" MSG ",\"top_p\":1.5}", "top_p");
    REFUSE(API_CHAT, "{" MSG ",\"seed\":1.5}", "seed");
    REFUSE(API_CHAT, "{" MSG ",\"stream\":\"yes\"}", "stream");
    REFUSE(API_CHAT, "{" MSG ",\"stop\":5}", "stop");
    REFUSE(API_CHAT, "{" MSG ",\"stop\":[\"a\",5]}", "stop");
    REFUSE(API_CHAT, "{" MSG ",\"n\":2}", "n");
    REFUSE(API_CHAT, "{" MSG ",\"tools\":[{\"type\":\"function\"}]}", "tools[0]");
    REFUSE(API_CHAT, "{" MSG ",\"tools\":{}}", "tools");
    REFUSE(API_CHAT, "{" MSG ",\"tools\":[{\"type\":\"retrieval\",\"function\":{\"name\":\"f\"}}]}", "tools[0]");
    REFUSE(API_CHAT, "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]}",
           "tools[0].function.name");
    REFUSE(API_CHAT, "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[]}}]}",
           "tools[0].function");
    REFUSE(API_CHAT, "{" MSG ",\"tool_choice\":\"required\"}", "tool_choice");
    REFUSE(API_CHAT, "{" MSG ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}", "tool_choice");
    REFUSE(API_CHAT, "{" MSG ",\"functions\":[{\"name\":\"f\"}]}", "functions");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"function_call\":{\"name\":\"f\"}}]}",
           "messages[0].function_call");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"tool_calls\":[]}]}", "messages[0].tool_calls");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":5}}]}]}",
           "messages[0].tool_calls[0].function.arguments");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"type\":\"function\"}]}]}",
           "messages[0].tool_calls[0]");
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"tool\",\"content\":\"a\",\"tool_call_id\":7}]}", "messages[0].tool_call_id");
    REFUSE(API_CHAT, "{" MSG ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":5}}}", "response_format");
    REFUSE(API_CHAT, "{" MSG ",\"response_format\":\"json\"}", "response_format");
    REFUSE(API_CHAT, "{" MSG ",\"logit_bias\":{\"x5\":1}}", "logit_bias");
    REFUSE(API_CHAT, "{" MSG ",\"logit_bias\":{\"5\":101}}", "logit_bias");
    REFUSE(API_CHAT, "{" MSG ",\"logit_bias\":[5]}", "logit_bias");
    REFUSE(API_CHAT, "{" MSG ",\"frequency_penalty\":2.5}", "frequency_penalty");
    REFUSE(API_CHAT, "{" MSG ",\"presence_penalty\":\"high\"}", "presence_penalty");
    REFUSE(API_CHAT, "{" MSG ",\"top_logprobs\":3}", "top_logprobs");             /* needs logprobs */
    REFUSE(API_CHAT, "{" MSG ",\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs");
    REFUSE(API_CHAT, "{" MSG ",\"stream_options\":{\"include_usage\":1}}", "stream_options.include_usage");
    REFUSE(API_CHAT, "{" MSG ",\"model\":7}", "model");
    REFUSE(API_COMPLETION, "{}", "prompt");
    REFUSE(API_COMPLETION, "{\"prompt\":[1,2,3]}", "prompt");
    REFUSE(API_COMPLETION, "{\"prompt\":\"a\",\"echo\":true}", "echo");
    REFUSE(API_COMPLETION, "{\"prompt\":\"a\",\"logprobs\":6}", "logprobs");
}

/* Tools kept as Python's json.dumps writes them; tool turns with their calls. */
static void test_openai_tools(void **st)
{
    (void)st;
    static const char body[] =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"w?\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
        "\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"q\\\":1}\"}},"
        "{\"function\":{\"name\":\"put\",\"arguments\":{\"x\":[1,2.5,\"\\u00e9\\n\"]}}},{\"function\":{\"name\":\"nil\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"description\":\"G\","
        "\"parameters\":{\"type\":\"object\",\"b\":1e-5,\"a\":true}}}],\"tool_choice\":\"auto\",\"parallel_tool_calls\":true}";
    api_request r;
    api_error e;
    assert_int_equal(api_request_parse(API_CHAT, body, sizeof body - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_tools, 1);
    assert_string_equal(r.tools[0], "{\"type\": \"function\", \"function\": {\"name\": \"get\", \"description\": \"G\", "
                                    "\"parameters\": {\"type\": \"object\", \"b\": 1e-05, \"a\": true}}}");
    assert_int_equal(r.n_msgs, 3);
    assert_string_equal(r.msgs[1].content, "");
    assert_int_equal(r.msgs[1].n_calls, 3);
    assert_string_equal(r.msgs[1].calls[0].id, "c1");
    assert_string_equal(r.msgs[1].calls[0].arguments, "{\"q\":1}"); /* a string: as sent */
    assert_string_equal(r.msgs[1].calls[1].id, "");
    assert_string_equal(r.msgs[1].calls[1].arguments, "{\"x\": [1, 2.5, \"\xc3\xa9\\n\"]}"); /* an object: pyjson */
    assert_string_equal(r.msgs[1].calls[2].arguments, "{}");
    assert_string_equal(r.msgs[2].role, "tool");
    assert_string_equal(r.msgs[2].content, "ok");
    assert_string_equal(r.msgs[2].tool_call_id, "c1");
    api_request_free(&r);
    /* reasoning sent back */
    static const char rs[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\","
                             "\"reasoning_content\":\"why\"},{\"role\":\"user\",\"content\":\"c\",\"reasoning_content\":5}]}";
    assert_int_equal(api_request_parse(API_CHAT, rs, sizeof rs - 1, 256, &r, &e), 0);
    assert_string_equal(r.msgs[1].reasoning, "why");
    assert_null(r.msgs[0].reasoning);
    assert_null(r.msgs[2].reasoning); /* only an assistant's is read */
    api_request_free(&r);
    REFUSE(API_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"content\":\"b\",\"reasoning_content\":[]}]}",
           "messages[0].reasoning_content");
    /* the whole templates' kwargs */
    static const char kw[] = "{" MSG ",\"reasoning_effort\":\"high\",\"chat_template_kwargs\":{\"enable_thinking\":false,\"x\":1}}";
    assert_int_equal(api_request_parse(API_CHAT, kw, sizeof kw - 1, 256, &r, &e), 0);
    assert_string_equal(r.reasoning_effort, "high");
    assert_true(r.no_thinking && !r.thinking_on);
    api_request_free(&r);
    /* asked for in so many words: enable_thinking or DeepSeek's own thinking kwarg */
    static const char on1[] = "{" MSG ",\"chat_template_kwargs\":{\"thinking\":true}}";
    assert_int_equal(api_request_parse(API_CHAT, on1, sizeof on1 - 1, 256, &r, &e), 0);
    assert_true(r.thinking_on && !r.no_thinking);
    api_request_free(&r);
    static const char on2[] = "{" MSG ",\"chat_template_kwargs\":{\"enable_thinking\":true}}";
    assert_int_equal(api_request_parse(API_CHAT, on2, sizeof on2 - 1, 256, &r, &e), 0);
    assert_true(r.thinking_on && !r.no_thinking);
    api_request_free(&r);
    static const char off1[] = "{" MSG ",\"reasoning_effort\":\"high\",\"chat_template_kwargs\":{\"thinking\":false}}";
    assert_int_equal(api_request_parse(API_CHAT, off1, sizeof off1 - 1, 256, &r, &e), 0);
    assert_true(!r.thinking_on && r.no_thinking); /* an effort alone does not turn it on */
    api_request_free(&r);
    REFUSE(API_CHAT, "{" MSG ",\"chat_template_kwargs\":{\"thinking\":1}}", "chat_template_kwargs.thinking");
    REFUSE(API_CHAT, "{" MSG ",\"reasoning_effort\":\"max\"}", "reasoning_effort");
    REFUSE(API_CHAT, "{" MSG ",\"reasoning_effort\":1}", "reasoning_effort");
    REFUSE(API_CHAT, "{" MSG ",\"chat_template_kwargs\":[]}", "chat_template_kwargs");
    REFUSE(API_CHAT, "{" MSG ",\"chat_template_kwargs\":{\"enable_thinking\":\"no\"}}", "chat_template_kwargs.enable_thinking");
    /* OpenAI's penalties and logit_bias, kept for the sampler */
    static const char pen[] = "{" MSG ",\"presence_penalty\":0.5,\"frequency_penalty\":-1,\"logit_bias\":{\"5\":-100,\"12\":2.5}}";
    assert_int_equal(api_request_parse(API_CHAT, pen, sizeof pen - 1, 256, &r, &e), 0);
    assert_true(r.presence_penalty == 0.5f && r.frequency_penalty == -1.0f);
    assert_int_equal(r.n_bias, 2);
    assert_true(r.bias_id[0] == 5 && r.bias[0] == -100.0f && r.bias_id[1] == 12 && r.bias[1] == 2.5f);
    assert_true(r.repeat_penalty == 1.0f && r.min_p == 0.0f && r.top_k == 0); /* absent: off */
    api_request_free(&r);
    /* the local servers' extensions: top_k, min_p, repetition_penalty (vLLM) or repeat_penalty (llama.cpp) */
    static const char ext[] = "{" MSG ",\"top_k\":40,\"min_p\":0.05,\"repeat_penalty\":1.1}";
    assert_int_equal(api_request_parse(API_CHAT, ext, sizeof ext - 1, 256, &r, &e), 0);
    assert_true(r.top_k == 40 && r.min_p == 0.05f && r.repeat_penalty == 1.1f);
    api_request_free(&r);
    static const char ext2[] = "{\"prompt\":\"a\",\"repetition_penalty\":1.3}";
    assert_int_equal(api_request_parse(API_COMPLETION, ext2, sizeof ext2 - 1, 256, &r, &e), 0);
    assert_true(r.repeat_penalty == 1.3f);
    api_request_free(&r);
    REFUSE(API_CHAT, "{" MSG ",\"repeat_penalty\":1.1,\"repetition_penalty\":1.2}", "repeat_penalty");
    REFUSE(API_CHAT, "{" MSG ",\"min_p\":2}", "min_p");
    REFUSE(API_CHAT, "{" MSG ",\"repetition_penalty\":0}", "repetition_penalty");
    /* tool_choice forcing a call, or a named one among the tools */
    static const char req[] = "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"required\"}";
    assert_int_equal(api_request_parse(API_CHAT, req, sizeof req - 1, 256, &r, &e), 0);
    assert_true(r.force_tool);
    assert_null(r.force_name);
    api_request_free(&r);
    static const char named[] = "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
                                "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}";
    assert_int_equal(api_request_parse(API_CHAT, named, sizeof named - 1, 256, &r, &e), 0);
    assert_true(r.force_tool);
    assert_string_equal(r.force_name, "f");
    api_request_free(&r);
    REFUSE(API_CHAT, "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
           "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", "tool_choice");
    REFUSE(API_CHAT, "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"any\"}",
           "tool_choice");
    /* tool_choice "none" drops the tools */
    static const char none[] = "{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\"}";
    assert_int_equal(api_request_parse(API_CHAT, none, sizeof none - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_tools, 0);
    api_request_free(&r);
}

static void test_completion_ok(void **st)
{
    (void)st;
    static const char body[] = "{\"prompt\":[\"Once\"],\"max_tokens\":3,\"logprobs\":2,\"stop\":[\"x\",\"y\"]}";
    api_request r;
    api_error e;
    assert_int_equal(api_request_parse(API_COMPLETION, body, sizeof body - 1, 256, &r, &e), 0);
    assert_string_equal(r.prompt, "Once");
    assert_int_equal(r.max_tokens, 3);
    assert_true(r.logprobs);
    assert_int_equal(r.top_logprobs, 2);
    assert_int_equal(r.n_stops, 2);
    api_request_free(&r);
}

static void test_anthropic(void **st)
{
    (void)st;
    static const char body[] =
        "{\"model\":\"claude-whatever\",\"max_tokens\":10,\"system\":[{\"type\":\"text\",\"text\":\"sys\"}],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\",\"cache_control\":{}}]}],"
        "\"stop_sequences\":[\"\\n\\nHuman:\"],\"temperature\":0.2,\"top_k\":40,\"metadata\":{\"user_id\":\"u\"}}";
    api_request r;
    api_error e;
    assert_int_equal(api_request_parse(API_MESSAGES, body, sizeof body - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_msgs, 2);
    assert_string_equal(r.msgs[0].role, "system");
    assert_string_equal(r.msgs[0].content, "sys");
    assert_string_equal(r.msgs[1].content, "hi");
    assert_int_equal(r.top_k, 40);
    assert_string_equal(r.stops[0], "\n\nHuman:");
    api_request_free(&r);

#define AMSG "\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]"
    REFUSE(API_MESSAGES, "{" AMSG "}", "max_tokens");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":-1}", "max_tokens");
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"tool\",\"content\":\"a\"}]}", "messages[0].role");
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"image\"}]}]}",
           "messages[0].content[0].type");
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]}",
           "messages[0].content[0]"); /* no source */
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\"}]}]}",
           "messages[0].content[0].type");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"system\":5}", "system");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"temperature\":1.5}", "temperature");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"stop_sequences\":\"x\"}", "stop_sequences");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"thinking\":{\"type\":\"on\"}}", "thinking");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":0}}",
           "thinking.budget_tokens");
    /* disabled, said so: as enable_thinking false */
    static const char off[] = "{" AMSG ",\"max_tokens\":5,\"thinking\":{\"type\":\"disabled\"}}";
    assert_int_equal(api_request_parse(API_MESSAGES, off, sizeof off - 1, 256, &r, &e), 0);
    assert_true(r.no_thinking && !r.thinking);
    api_request_free(&r);
    /* enabled: the reasoning as a thinking block */
    static const char th[] = "{" AMSG ",\"max_tokens\":5,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}}";
    assert_int_equal(api_request_parse(API_MESSAGES, th, sizeof th - 1, 256, &r, &e), 0);
    assert_true(r.thinking && r.thinking_on);
    api_request_free(&r);
    /* adaptive (Claude Code): as enabled; output_config.effort as reasoning_effort ("max": "high");
     * a system message among the messages (Claude Code sends one after the first user turn), in place */
    static const char cc[] =
        "{\"max_tokens\":64000,\"thinking\":{\"type\":\"adaptive\"},\"output_config\":{\"effort\":\"max\"},"
        "\"context_management\":{\"edits\":[]},\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
        "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"b\"},{\"type\":\"text\",\"text\":\"c\"}]}]}";
    assert_int_equal(api_request_parse(API_MESSAGES, cc, sizeof cc - 1, 1 << 30, &r, &e), 0);
    assert_true(r.thinking && !r.no_thinking && !r.thinking_on); /* the model decides: DeepSeek V3.1's default, off */
    assert_string_equal(r.reasoning_effort, "high");
    assert_int_equal(r.n_msgs, 2);
    assert_string_equal(r.msgs[1].role, "system");
    assert_string_equal(r.msgs[1].content, "b\nc");
    api_request_free(&r);
    static const char low[] = "{" AMSG ",\"max_tokens\":5,\"output_config\":{\"effort\":\"low\"}}";
    assert_int_equal(api_request_parse(API_MESSAGES, low, sizeof low - 1, 256, &r, &e), 0);
    assert_string_equal(r.reasoning_effort, "low");
    api_request_free(&r);
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"output_config\":{\"effort\":\"huge\"}}", "output_config.effort");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"output_config\":3}", "output_config");
    REFUSE(API_CHAT, "{" MSG ",\"reasoning_effort\":\"max\"}", "reasoning_effort");
    /* tools in OpenAI's shape; tool_use and tool_result blocks as tool turns */
    static const char tu[] =
        "{\"max_tokens\":5,\"tools\":[{\"name\":\"rd\",\"description\":\"Read\",\"input_schema\":{\"type\":\"object\"},"
        "\"cache_control\":{\"type\":\"ephemeral\"}},{\"type\":\"custom\",\"name\":\"ls\",\"input_schema\":{}}],"
        "\"tool_choice\":{\"type\":\"auto\"},\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"},"
        "{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"tool_use\",\"id\":\"u1\",\"name\":\"rd\",\"input\":{\"p\":\"x\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"u1\",\"content\":\"data\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"u2\"},{\"type\":\"text\",\"text\":\"more\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"u3\",\"name\":\"ls\",\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"u3\",\"content\":[{\"type\":\"text\",\"text\":\"f\"}]}]}]}";
    assert_int_equal(api_request_parse(API_MESSAGES, tu, sizeof tu - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_tools, 2);
    assert_string_equal(r.tools[0], "{\"type\": \"function\", \"function\": {\"name\": \"rd\", \"description\": \"Read\", "
                                    "\"parameters\": {\"type\": \"object\"}}}");
    assert_string_equal(r.tools[1], "{\"type\": \"function\", \"function\": {\"name\": \"ls\", \"parameters\": {}}}");
    static const char *const roles[] = { "user", "assistant", "tool", "tool", "user", "assistant", "tool" };
    assert_int_equal(r.n_msgs, 7);
    for (size_t i = 0; i < 7; i++) assert_string_equal(r.msgs[i].role, roles[i]);
    assert_string_equal(r.msgs[1].content, "a");
    assert_string_equal(r.msgs[1].reasoning, "t");
    assert_null(r.msgs[5].reasoning);
    assert_int_equal(r.msgs[1].n_calls, 1);
    assert_string_equal(r.msgs[1].calls[0].name, "rd");
    assert_string_equal(r.msgs[1].calls[0].id, "u1");
    assert_string_equal(r.msgs[1].calls[0].arguments, "{\"p\": \"x\"}");
    assert_string_equal(r.msgs[2].content, "data");
    assert_string_equal(r.msgs[2].tool_call_id, "u1");
    assert_string_equal(r.msgs[3].content, "");
    assert_string_equal(r.msgs[4].content, "more");
    assert_string_equal(r.msgs[5].content, "");
    assert_int_equal(r.msgs[5].n_calls, 1);
    assert_string_equal(r.msgs[6].content, "f");
    api_request_free(&r);
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"tools\":[{\"name\":\"f\"}]}", "tools[0]");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]}", "tools[0]");
    REFUSE(API_MESSAGES, "{" AMSG ",\"max_tokens\":5,\"tool_choice\":{\"type\":\"any\"}}", "tool_choice");
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\",\"name\":\"f\",\"input\":{}}]}]}",
           "messages[0].content[0].type");
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":1}]}]}",
           "messages[0].content[0].thinking");
    static const char two[] = "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\","
                              "\"content\":[{\"type\":\"thinking\",\"thinking\":\"a\"},{\"type\":\"redacted_thinking\",\"data\":\"x\"},"
                              "{\"type\":\"thinking\",\"thinking\":\"b\"},{\"type\":\"text\",\"text\":\"t\"}]}]}";
    assert_int_equal(api_request_parse(API_MESSAGES, two, sizeof two - 1, 256, &r, &e), 0);
    assert_string_equal(r.msgs[1].reasoning, "a\nb");
    assert_string_equal(r.msgs[1].content, "t");
    api_request_free(&r);
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"name\":\"f\",\"input\":[]}]}]}",
           "messages[0].content[0].input");
    REFUSE(API_MESSAGES, "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"x\","
           "\"content\":[{\"type\":\"image\"}]}]}]}", "messages[0].content[0].content[0].type");
    /* count_tokens does not need max_tokens */
    static const char ct[] = "{\"model\":\"m\"," AMSG "}";
    assert_int_equal(api_request_parse(API_COUNT_TOKENS, ct, sizeof ct - 1, 256, &r, &e), 0);
    api_request_free(&r);
}

/* OpenAI Responses (Codex): instructions and input items become the chat's
 * messages; a reasoning item goes to the assistant message that follows,
 * function_call items onto it, function_call_output items are tool turns;
 * function tools are kept in chat's shape, hosted tools and namespaces
 * left out; what this server cannot do is refused by field. */
static void test_responses(void **st)
{
    (void)st;
    static const char body[] =
        "{\"model\":\"m\",\"instructions\":\"be brief\",\"max_output_tokens\":64,\"store\":false,"
        "\"reasoning\":{\"effort\":\"high\",\"summary\":\"auto\"},\"include\":[\"reasoning.encrypted_content\"],"
        "\"prompt_cache_key\":\"k\",\"parallel_tool_calls\":true,\"tool_choice\":\"auto\","
        "\"tools\":[{\"type\":\"function\",\"name\":\"exec\",\"description\":\"Run\",\"strict\":false,"
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"cmd\":{\"type\":\"string\"}}}},"
        "{\"type\":\"web_search\",\"external_web_access\":false},{\"type\":\"namespace\",\"name\":\"n\",\"tools\":[]}],"
        "\"input\":[{\"type\":\"message\",\"role\":\"developer\",\"content\":[{\"type\":\"input_text\",\"text\":\"d\"}]},"
        "{\"role\":\"user\",\"content\":\"list\"},"
        "{\"type\":\"reasoning\",\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"think\"}]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"I will.\"}]},"
        "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"exec\",\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"a.txt\"},"
        "{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"again\"}]},"
        "{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"exec\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":[{\"type\":\"input_text\",\"text\":\"b\"}]}]}";
    api_request r;
    api_error e;
    assert_int_equal(api_request_parse(API_RESPONSES, body, sizeof body - 1, 256, &r, &e), 0);
    assert_int_equal(r.max_tokens, 64);
    assert_string_equal(r.reasoning_effort, "high");
    assert_int_equal(r.n_tools, 1);
    assert_non_null(strstr(r.tools[0], "\"function\": {\"name\": \"exec\""));
    assert_int_equal(r.n_msgs, 7);
    const char *roles[7] = { "system", "system", "user", "assistant", "tool", "assistant", "tool" };
    for (int i = 0; i < 7; i++) assert_string_equal(r.msgs[i].role, roles[i]);
    assert_string_equal(r.msgs[0].content, "be brief");
    assert_string_equal(r.msgs[1].content, "d");
    assert_string_equal(r.msgs[3].content, "I will.");
    assert_string_equal(r.msgs[3].reasoning, "think");
    assert_int_equal(r.msgs[3].n_calls, 1);
    assert_string_equal(r.msgs[3].calls[0].id, "c1");
    assert_string_equal(r.msgs[3].calls[0].arguments, "{\"cmd\":\"ls\"}");
    assert_string_equal(r.msgs[4].tool_call_id, "c1");
    assert_string_equal(r.msgs[4].content, "a.txt");
    assert_string_equal(r.msgs[5].content, "");
    assert_string_equal(r.msgs[5].reasoning, "again");
    assert_string_equal(r.msgs[5].calls[0].id, "c2");
    assert_string_equal(r.msgs[6].content, "b");
    api_request_free(&r);
    /* a string input is one user message; effort none: no thinking */
    static const char one[] = "{\"input\":\"hi\",\"reasoning\":{\"effort\":\"none\"}}";
    assert_int_equal(api_request_parse(API_RESPONSES, one, sizeof one - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_msgs, 1);
    assert_string_equal(r.msgs[0].role, "user");
    assert_true(r.no_thinking);
    api_request_free(&r);
    REFUSE(API_RESPONSES, "{\"model\":\"m\"}", "input");
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"previous_response_id\":\"resp_1\"}", "previous_response_id");
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"text\":{\"format\":{\"type\":\"yaml\"}}}", "text.format");
    static const char rschema[] = "{\"input\":\"a\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"x\","
                                  "\"schema\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}}}}}}";
    assert_int_equal(api_request_parse(API_RESPONSES, rschema, sizeof rschema - 1, 256, &r, &e), 0);
    assert_true(r.json_mode);
    assert_string_equal(r.json_schema, "{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}}}");
    api_request_free(&r);
    static const char rjson[] = "{\"input\":\"a\",\"text\":{\"format\":{\"type\":\"json_object\"}}}";
    assert_int_equal(api_request_parse(API_RESPONSES, rjson, sizeof rjson - 1, 256, &r, &e), 0);
    assert_true(r.json_mode);
    api_request_free(&r);
    /* JSON mode: the answer held to a JSON object; text is the default */
    static const char cjson[] = "{" MSG ",\"response_format\":{\"type\":\"json_object\"}}";
    assert_int_equal(api_request_parse(API_CHAT, cjson, sizeof cjson - 1, 256, &r, &e), 0);
    assert_true(r.json_mode);
    api_request_free(&r);
    static const char ctext[] = "{" MSG ",\"response_format\":{\"type\":\"text\"}}";
    assert_int_equal(api_request_parse(API_CHAT, ctext, sizeof ctext - 1, 256, &r, &e), 0);
    assert_false(r.json_mode);
    api_request_free(&r);
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"background\":true}", "background");
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"tool_choice\":\"required\"}", "tool_choice");
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"max_output_tokens\":0}", "max_output_tokens");
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"reasoning\":{\"effort\":\"huge\"}}", "reasoning.effort");
    REFUSE(API_RESPONSES, "{\"input\":[{\"type\":\"local_shell_call\"}]}", "input[0].type");
    REFUSE(API_RESPONSES, "{\"input\":[{\"role\":\"tool\",\"content\":\"a\"}]}", "input[0].role");
    REFUSE(API_RESPONSES, "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\"}]}]}",
           "input[0].content[0]"); /* no image_url */
    REFUSE(API_RESPONSES, "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\"}]}]}",
           "input[0].content[0].type");
    REFUSE(API_RESPONSES, "{\"input\":[{\"type\":\"function_call\",\"name\":\"\"}]}", "input[0].name");
    REFUSE(API_RESPONSES, "{\"input\":[{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":{}}]}", "input[0]");
    REFUSE(API_RESPONSES, "{\"input\":\"a\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":3}]}",
           "tools[0]");
}

/* Pictures in user messages of all three APIs: kept with their bytes, MIME
 * type, place in the text and path; refused by path elsewhere, as remote
 * URLs, as data: URIs that are not base64 and as invalid base64. */
static void expect_message(api_kind k, const char *body, const char *param, const char *words)
{
    api_request r;
    api_error e;
    if (api_request_parse(k, body, strlen(body), 256, &r, &e) == 0) { api_request_free(&r); fail_msg("accepted: %s", body); }
    if (strcmp(e.param, param) || !strstr(e.message, words))
        fail_msg("got %s: '%s', want %s: '...%s...'", e.param, e.message, param, words);
}

static void test_images(void **st)
{
    (void)st;
    api_request r;
    api_error e;
    static const char chat[] =
        "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":["
        "{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAEC/w==\","
        "\"detail\":\"auto\"}},{\"type\":\"text\",\"text\":\"what?\"},{\"type\":\"image_url\",\"image_url\":"
        "\"data:image/jpeg;name=x.jpg;base64,\\r\\nQUJD\"}]}]}";
    assert_int_equal(api_request_parse(API_CHAT, chat, sizeof chat - 1, 256, &r, &e), 0);
    assert_int_equal(r.msgs[0].n_images, 0);
    const api_message *m = &r.msgs[1];
    assert_string_equal(m->content, "look\nwhat?");
    assert_int_equal(m->n_images, 2);
    assert_int_equal(m->images[0].n, 4);
    assert_memory_equal(m->images[0].data, "\x00\x01\x02\xff", 4);
    assert_string_equal(m->images[0].mime, "image/png");
    assert_int_equal(m->images[0].at, 4);
    assert_string_equal(m->images[0].param, "messages[1].content[1]");
    assert_memory_equal(m->images[1].data, "ABC", 3);
    assert_string_equal(m->images[1].mime, "image/jpeg");
    assert_int_equal(m->images[1].at, strlen("look\nwhat?"));
    api_request_free(&r);
    static const char anth[] =
        "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":"
        "{\"type\":\"base64\",\"media_type\":\"image/webp\",\"data\":\"UklGRg\"}},{\"type\":\"text\",\"text\":\"hi\"}]}]}";
    assert_int_equal(api_request_parse(API_MESSAGES, anth, sizeof anth - 1, 256, &r, &e), 0);
    assert_int_equal(r.n_msgs, 1);
    assert_string_equal(r.msgs[0].content, "hi");
    assert_int_equal(r.msgs[0].n_images, 1);
    assert_memory_equal(r.msgs[0].images[0].data, "RIFF", 4);
    assert_string_equal(r.msgs[0].images[0].mime, "image/webp");
    assert_int_equal(r.msgs[0].images[0].at, 0);
    api_request_free(&r);
    static const char resp[] = "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"t\"},"
                               "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,QQ==\"}]}]}";
    assert_int_equal(api_request_parse(API_RESPONSES, resp, sizeof resp - 1, 256, &r, &e), 0);
    assert_int_equal(r.msgs[0].n_images, 1);
    assert_string_equal(r.msgs[0].images[0].param, "input[0].content[1]");
    assert_int_equal(r.msgs[0].images[0].at, 1);
    api_request_free(&r);
#define IMG(url) "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"" url "\"}}]}]}"
    /* remote pictures: kept by URL for the server (which fetches them only with --allow-remote-images) */
    static const char url_req[] = IMG("https://example.com/a.png");
    assert_int_equal(api_request_parse(API_CHAT, url_req, sizeof url_req - 1, 256, &r, &e), 0);
    assert_int_equal(r.msgs[0].n_images, 1);
    assert_string_equal(r.msgs[0].images[0].url, "https://example.com/a.png");
    assert_null(r.msgs[0].images[0].data);
    api_request_free(&r);
    expect_message(API_CHAT, IMG("data:image/png,abc"), "messages[0].content[0]", "must be base64");
    expect_message(API_CHAT, IMG("data:image/png;base64"), "messages[0].content[0]", "no ','");
    expect_message(API_CHAT, IMG("data:image/png;base64,A"), "messages[0].content[0]", "not valid base64");
    expect_message(API_CHAT, IMG("file:///etc/passwd"), "messages[0].content[0]", "must be a data: URI");
    expect_message(API_CHAT,
                   "{\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
                   "{\"url\":\"data:image/png;base64,QQ==\"}}]}]}",
                   "messages[0].content[0].type", "text only");
    expect_message(API_CHAT,
                   "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
                   "{\"url\":\"data:image/png;base64,QQ==\"}}]}]}",
                   "messages[0].content[0].type", "text only");
#define AIMG(src) "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":" src "}]}]}"
    static const char aurl[] = AIMG("{\"type\":\"url\",\"url\":\"http://x/y.png\"}");
    assert_int_equal(api_request_parse(API_MESSAGES, aurl, sizeof aurl - 1, 256, &r, &e), 0);
    assert_string_equal(r.msgs[0].images[0].url, "http://x/y.png");
    api_request_free(&r);
    expect_message(API_MESSAGES, AIMG("{\"type\":\"url\",\"url\":\"ftp://x/y.png\"}"), "messages[0].content[0]",
                   "must be an http or https URL");
    expect_message(API_MESSAGES, AIMG("{\"type\":\"file\",\"file_id\":\"f\"}"), "messages[0].content[0]", "base64");
    expect_message(API_MESSAGES, AIMG("{\"type\":\"base64\",\"data\":\"QQ==\"}"), "messages[0].content[0]", "media_type");
    expect_message(API_MESSAGES, AIMG("{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"Q===\"}"),
                   "messages[0].content[0]", "not valid base64");
    expect_message(API_MESSAGES,
                   "{\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"image\"}]}]}",
                   "messages[0].content[0].type", "not supported in an assistant message");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_chat_ok),
        cmocka_unit_test(test_openai_refusals),
        cmocka_unit_test(test_openai_tools),
        cmocka_unit_test(test_completion_ok),
        cmocka_unit_test(test_anthropic),
        cmocka_unit_test(test_responses),
        cmocka_unit_test(test_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
