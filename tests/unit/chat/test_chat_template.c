/* test_chat_template.c: each family renders two fixed conversations exactly
 * as its Jinja template does. The expected strings are written out by hand
 * from each family's published layout (and were checked once against
 * jinja2 rendering the real templates); detection is tested on excerpts of
 * the real templates. */
#include "tests/lib/test_util.h"
#include "runtime/chat/chat_template.h"

/* A: system + three turns, trailing whitespace on the last user turn.
 * B: no system, padded first turn. */
static const chat_msg A[] = {
    { .role = "system", .content = "You are terse." },
    { .role = "user", .content = "Hello" },
    { .role = "assistant", .content = "Hi there." },
    { .role = "user", .content = " How are you?\n" },
};
static const chat_msg B[] = {
    { .role = "user", .content = " Hello " },
    { .role = "assistant", .content = "Hi." },
    { .role = "user", .content = "Bye" },
};

static void expect(chat_family f, const chat_msg *m, size_t n, const char *bos, const char *eos,
                   const char *def_sys, const char *want)
{
    char err[256] = "";
    char *got = chat_template_render(f, m, n, bos, eos, def_sys, true, err, sizeof err);
    if (!got) fail_msg("%s: %s", chat_family_name(f), err);
    if (strcmp(got, want)) {
        print_error("family %s\n got: [%s]\nwant: [%s]\n", chat_family_name(f), got, want);
        free(got);
        fail();
    }
    free(got);
}

static void test_chatml(void **st)
{
    (void)st;
    expect(CHAT_CHATML, A, 4, "", "<|im_end|>", NULL,
           "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
           "<|im_start|>assistant\nHi there.<|im_end|>\n<|im_start|>user\n How are you?\n<|im_end|>\n"
           "<|im_start|>assistant\n");
    expect(CHAT_CHATML, B, 3, "", "<|im_end|>", NULL,
           "<|im_start|>user\n Hello <|im_end|>\n<|im_start|>assistant\nHi.<|im_end|>\n"
           "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

static const char QWEN25[] =
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
    "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. "
    "You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}...";

static void test_qwen_default_system(void **st)
{
    (void)st;
    assert_int_equal(chat_template_detect(QWEN25), CHAT_CHATML);
    char *sys = chat_template_default_system(QWEN25);
    assert_non_null(sys);
    assert_string_equal(sys, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    expect(CHAT_CHATML, B, 3, "", "", sys,
           "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
           "<|im_end|>\n<|im_start|>user\n Hello <|im_end|>\n<|im_start|>assistant\nHi.<|im_end|>\n"
           "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
    /* a conversation with its own system message does not get the default */
    expect(CHAT_CHATML, A, 1, "", "", sys, "<|im_start|>system\nYou are terse.<|im_end|>\n"
                                           "<|im_start|>assistant\n");
    free(sys);
    /* plain chatml has no literal default */
    assert_null(chat_template_default_system(
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"));
}

static void test_llama2(void **st)
{
    (void)st;
    expect(CHAT_LLAMA2, A, 4, "<s>", "</s>", NULL,
           "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHello [/INST] Hi there. </s>"
           "<s>[INST] How are you? [/INST]");
    expect(CHAT_LLAMA2, B, 3, "<s>", "</s>", NULL, "<s>[INST] Hello [/INST] Hi. </s><s>[INST] Bye [/INST]");
}

static void test_llama3(void **st)
{
    (void)st;
    expect(CHAT_LLAMA3, A, 4, "<|begin_of_text|>", "<|eot_id|>", NULL,
           "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect(CHAT_LLAMA3, B, 3, "<|begin_of_text|>", "<|eot_id|>", NULL,
           "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHi.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void test_mistral(void **st)
{
    (void)st;
    /* v0.1 layout: no trim, no space before the answer */
    expect(CHAT_MISTRAL, B, 3, "<s>", "</s>", NULL, "<s>[INST]  Hello  [/INST]Hi.</s>[INST] Bye [/INST]");
    /* the template raises on a system message; we prefix the first turn */
    expect(CHAT_MISTRAL, A, 4, "<s>", "</s>", NULL,
           "<s>[INST] You are terse.\n\nHello [/INST]Hi there.</s>[INST]  How are you?\n [/INST]");
}

static void test_gemma(void **st)
{
    (void)st;
    expect(CHAT_GEMMA, A, 4, "<bos>", "<eos>", NULL,
           "<bos><start_of_turn>user\nYou are terse.\n\nHello<end_of_turn>\n"
           "<start_of_turn>model\nHi there.<end_of_turn>\n<start_of_turn>user\nHow are you?<end_of_turn>\n"
           "<start_of_turn>model\n");
    expect(CHAT_GEMMA, B, 3, "<bos>", "<eos>", NULL,
           "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi.<end_of_turn>\n"
           "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
}

static void test_phi3(void **st)
{
    (void)st;
    expect(CHAT_PHI3, A, 4, "<s>", "<|endoftext|>", NULL,
           "<|system|>\nYou are terse.<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there.<|end|>\n"
           "<|user|>\n How are you?\n<|end|>\n<|assistant|>\n");
    expect(CHAT_PHI3, B, 3, "<s>", "<|endoftext|>", NULL,
           "<|user|>\n Hello <|end|>\n<|assistant|>\nHi.<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n");
}

#define FW(s) "<\xef\xbd\x9c" s "\xef\xbd\x9c>" /* DeepSeek's fullwidth bars */
#define SP "\xe2\x96\x81"                       /* U+2581 */

static void test_deepseek(void **st)
{
    (void)st;
    const char *bos = FW("begin" SP "of" SP "sentence");
    expect(CHAT_DEEPSEEK, A, 4, bos, "", NULL,
           FW("begin" SP "of" SP "sentence") "You are terse." FW("User") "Hello" FW("Assistant")
           "Hi there." FW("end" SP "of" SP "sentence") FW("User") " How are you?\n" FW("Assistant"));
    expect(CHAT_DEEPSEEK, B, 3, bos, "", NULL,
           FW("begin" SP "of" SP "sentence") FW("User") " Hello " FW("Assistant") "Hi."
           FW("end" SP "of" SP "sentence") FW("User") "Bye" FW("Assistant"));
}

/* Granite 3.0's template, rendered by jinja2 (trim_blocks, lstrip_blocks). */
static void test_granite(void **st)
{
    (void)st;
    expect(CHAT_GRANITE, A, 4, "", "<|end_of_text|>", NULL,
           "<|start_of_role|>system<|end_of_role|>You are terse.<|end_of_text|>\n"
           "<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n"
           "<|start_of_role|>assistant<|end_of_role|>Hi there.<|end_of_text|>\n"
           "<|start_of_role|>user<|end_of_role|> How are you?\n<|end_of_text|>\n"
           "<|start_of_role|>assistant<|end_of_role|>");
    expect(CHAT_GRANITE, B, 3, "", "<|end_of_text|>", NULL,
           "<|start_of_role|>user<|end_of_role|> Hello <|end_of_text|>\n"
           "<|start_of_role|>assistant<|end_of_role|>Hi.<|end_of_text|>\n"
           "<|start_of_role|>user<|end_of_role|>Bye<|end_of_text|>\n"
           "<|start_of_role|>assistant<|end_of_role|>");
    /* 3.0 writes no default system prompt; 3.1 and later build one with today's date */
    const char *v30 = "{%- for message in messages %}{{- '<|start_of_role|>user<|end_of_role|>' + message['content'] }}";
    const char *v31 = "{%- else %}{%- set system_message = \"Knowledge Cutoff Date: April 2024.\\nToday's Date: \" + "
                      "strftime_now('%B %d, %Y') %}{{- '<|start_of_role|>system<|end_of_role|>' + system_message }}";
    assert_int_equal(chat_template_detect(v30), CHAT_GRANITE);
    assert_int_equal(chat_template_detect(v31), CHAT_GRANITE);
    assert_false(chat_template_has_dynamic_system(v30));
    assert_true(chat_template_has_dynamic_system(v31));
    assert_int_equal(chat_family_from_name("granite"), CHAT_GRANITE);
}

/* DeepSeek LLM / MoE / V2's template, rendered by jinja2. */
static void test_deepseek2(void **st)
{
    (void)st;
    expect(CHAT_DEEPSEEK2, A, 4, "<BOS>", "<EOS>", NULL,
           "<BOS>You are terse.\n\nUser: Hello\n\nAssistant: Hi there.<EOS>User:  How are you?\n\n\nAssistant:");
    expect(CHAT_DEEPSEEK2, B, 3, "<BOS>", "<EOS>", NULL,
           "<BOS>User:  Hello \n\nAssistant: Hi.<EOS>User: Bye\n\nAssistant:");
    assert_int_equal(chat_template_detect("{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + "
                                          "'\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + "
                                          "message['content'] + eos_token }}"),
                     CHAT_DEEPSEEK2);
    assert_int_equal(chat_family_from_name("deepseek2"), CHAT_DEEPSEEK2);
}

/* Llama 4's template (text only), rendered by jinja2: the leading system
 * message trimmed, the others as they are. */
static void test_llama4(void **st)
{
    (void)st;
    const char *bos = "<|begin_of_text|>";
    expect(CHAT_LLAMA4, A, 4, bos, "<|eot|>", NULL,
           "<|begin_of_text|><|header_start|>system<|header_end|>\n\nYou are terse.<|eot|>"
           "<|header_start|>user<|header_end|>\n\nHello<|eot|><|header_start|>assistant<|header_end|>\n\nHi there.<|eot|>"
           "<|header_start|>user<|header_end|>\n\n How are you?\n<|eot|><|header_start|>assistant<|header_end|>\n\n");
    expect(CHAT_LLAMA4, B, 3, bos, "<|eot|>", NULL,
           "<|begin_of_text|><|header_start|>user<|header_end|>\n\n Hello <|eot|>"
           "<|header_start|>assistant<|header_end|>\n\nHi.<|eot|><|header_start|>user<|header_end|>\n\nBye<|eot|>"
           "<|header_start|>assistant<|header_end|>\n\n");
    assert_int_equal(chat_template_detect("{{- '<|header_start|>' + message['role'] + '<|header_end|>\\n\\n' }}"),
                     CHAT_LLAMA4);
    assert_int_equal(chat_family_from_name("llama4"), CHAT_LLAMA4);
}

/* GLM-4 and Hunyuan-A13B as llama.cpp renders them (its built-in chatglm4
 * and hunyuan-moe templates; these strings are llama_chat_apply_template's
 * output in llama.cpp 0.7.0). */
static void test_glm4(void **st)
{
    (void)st;
    expect(CHAT_GLM4, A, 4, "", "", NULL,
           "[gMASK]<sop><|system|>\nYou are terse.<|user|>\nHello<|assistant|>\nHi there.<|user|>\n How are you?\n"
           "<|assistant|>\n");
    expect(CHAT_GLM4, B, 3, "", "", NULL, "[gMASK]<sop><|user|>\n Hello <|assistant|>\nHi.<|user|>\nBye<|assistant|>\n");
    assert_int_equal(chat_template_detect("[gMASK]<sop>{%- for m in messages %}{%- if m.role == 'user' -%}<|user|>"),
                     CHAT_GLM4);
    assert_int_equal(chat_family_from_name("chatglm4"), CHAT_GLM4);
    assert_string_equal(chat_family_name(CHAT_GLM4), "chatglm4");
}

static void test_hunyuan(void **st)
{
    (void)st;
    expect(CHAT_HUNYUAN, A, 4, "", "", NULL,
           "<|startoftext|>You are terse.<|extra_4|><|startoftext|>Hello<|extra_0|>Hi there.<|eos|>"
           "<|startoftext|> How are you?\n<|extra_0|>");
    expect(CHAT_HUNYUAN, B, 3, "", "", NULL, "<|startoftext|> Hello <|extra_0|>Hi.<|eos|><|startoftext|>Bye<|extra_0|>");
    assert_int_equal(chat_template_detect("{{ '<|startoftext|>' + content + '<|extra_4|>' }}"), CHAT_HUNYUAN);
    assert_int_equal(chat_template_detect("{{ '<|startoftext|>' + content }}"), CHAT_UNKNOWN);
    assert_int_equal(chat_family_from_name("hunyuan-moe"), CHAT_HUNYUAN);
}

/* Kimi K2 as llama.cpp renders it (its built-in kimi-k2; llama_chat_apply_template's output in 0.7.0). */
static void test_kimi_k2(void **st)
{
    (void)st;
    expect(CHAT_KIMI_K2, A, 4, "", "", NULL,
           "<|im_system|>system<|im_middle|>You are terse.<|im_end|><|im_user|>user<|im_middle|>Hello<|im_end|>"
           "<|im_assistant|>assistant<|im_middle|>Hi there.<|im_end|><|im_user|>user<|im_middle|> How are you?\n"
           "<|im_end|><|im_assistant|>assistant<|im_middle|>");
    expect(CHAT_KIMI_K2, B, 3, "", "", NULL,
           "<|im_user|>user<|im_middle|> Hello <|im_end|><|im_assistant|>assistant<|im_middle|>Hi.<|im_end|>"
           "<|im_user|>user<|im_middle|>Bye<|im_end|><|im_assistant|>assistant<|im_middle|>");
    assert_int_equal(chat_template_detect("{{'<|im_' + role + '|>' + role + '<|im_middle|>'}}{{'<|im_end|>'}}"),
                     CHAT_KIMI_K2);
    assert_int_equal(chat_family_from_name("kimi-k2"), CHAT_KIMI_K2);
}

/* gpt-oss as llama.cpp renders it (its built-in gpt-oss; llama_chat_apply_template's output in 0.7.0). */
static void test_gpt_oss(void **st)
{
    (void)st;
    expect(CHAT_GPT_OSS, A, 4, "", "", NULL,
           "<|start|>system<|message|>You are terse.<|end|><|start|>user<|message|>Hello<|end|><|start|>assistant"
           "<|message|>Hi there.<|return|><|start|>user<|message|> How are you?\n<|end|><|start|>assistant");
    expect(CHAT_GPT_OSS, B, 3, "", "", NULL,
           "<|start|>user<|message|> Hello <|end|><|start|>assistant<|message|>Hi.<|return|><|start|>user<|message|>Bye"
           "<|end|><|start|>assistant");
    /* harmony's markers win over phi3's <|user|> ... <|end|> */
    assert_int_equal(chat_template_detect("{{'<|start|>' + role + '<|channel|>'}}{{'<|user|>'}}{{'<|end|>'}}"),
                     CHAT_GPT_OSS);
    assert_int_equal(chat_family_from_name("gpt-oss"), CHAT_GPT_OSS);
}

/* Ling v1 and 2.0 as llama.cpp renders them (its built-in bailing and bailing2; 0.7.0's output). */
static void test_bailing(void **st)
{
    (void)st;
    expect(CHAT_BAILING, A, 4, "", "", NULL,
           "<role>SYSTEM</role>You are terse.<role>HUMAN</role>Hello<role>ASSISTANT</role>Hi there.<role>HUMAN</role>"
           " How are you?\n<role>ASSISTANT</role>");
    expect(CHAT_BAILING, B, 3, "", "", NULL,
           "<role>HUMAN</role> Hello <role>ASSISTANT</role>Hi.<role>HUMAN</role>Bye<role>ASSISTANT</role>");
    expect(CHAT_BAILING2, A, 4, "", "", NULL,
           "<role>SYSTEM</role>You are terse.<|role_end|><role>HUMAN</role>Hello<|role_end|><role>ASSISTANT</role>"
           "Hi there.<|role_end|><role>HUMAN</role> How are you?\n<|role_end|><role>ASSISTANT</role>");
    expect(CHAT_BAILING2, B, 3, "", "", NULL,
           "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role> Hello <|role_end|>"
           "<role>ASSISTANT</role>Hi.<|role_end|><role>HUMAN</role>Bye<|role_end|><role>ASSISTANT</role>");
    expect(CHAT_BAILING_THINK, B, 3, "", "", NULL,
           "<role>HUMAN</role> Hello <role>ASSISTANT</role>Hi.<role>HUMAN</role>Bye<role>ASSISTANT</role><think>");
    /* llama.cpp's markers */
    assert_int_equal(chat_template_detect("{{'<role>ASSISTANT</role>'}}{% set r = {'user': 'HUMAN'} %}"), CHAT_BAILING);
    assert_int_equal(chat_template_detect("<role>ASSISTANT</role> {\"user\": \"HUMAN\"} <think>"), CHAT_BAILING_THINK);
    assert_int_equal(chat_template_detect("<role>ASSISTANT</role><role>HUMAN</role><|role_end|>"), CHAT_BAILING2);
    assert_int_equal(chat_family_from_name("bailing2"), CHAT_BAILING2);
}

/* dots.llm1 as llama.cpp renders it (its built-in dots1; 0.7.0's output). */
static void test_dots1(void **st)
{
    (void)st;
    expect(CHAT_DOTS1, A, 4, "", "", NULL,
           "<|system|>You are terse.<|endofsystem|><|userprompt|>Hello<|endofuserprompt|><|response|>Hi there."
           "<|endofresponse|><|userprompt|> How are you?\n<|endofuserprompt|><|response|>");
    expect(CHAT_DOTS1, B, 3, "", "", NULL,
           "<|userprompt|> Hello <|endofuserprompt|><|response|>Hi.<|endofresponse|><|userprompt|>Bye<|endofuserprompt|>"
           "<|response|>");
    assert_int_equal(chat_template_detect("{{'<|userprompt|>' + m + '<|endofuserprompt|>'}}"), CHAT_DOTS1);
}

/* MiniMax-M2: expected strings are jinja2's (trim_blocks, lstrip_blocks, as
 * transformers renders) on MiniMax's template without its tool parts. */
static void test_minimax_m2(void **st)
{
    (void)st;
    expect(CHAT_MINIMAX_M2, A, 4, "", "", NULL,
           "]~!b[]~b]system\nYou are terse.[e~[\n]~b]user\nHello[e~[\n]~b]ai\nHi there.[e~[\n]~b]user\n How are you?\n"
           "[e~[\n]~b]ai\n<think>\n");
    expect(CHAT_MINIMAX_M2, B, 3, "", "", NULL,
           "]~!b[]~b]system\nYou are a helpful assistant. Your name is MiniMax-M2 and is built by MiniMax.[e~[\n]~b]user\n"
           " Hello [e~[\n]~b]ai\nHi.[e~[\n]~b]user\nBye[e~[\n]~b]ai\n<think>\n");
    /* reasoning in the history: dropped before the last user turn, kept after it */
    static const chat_msg C[] = { { .role = "user", .content = "Q1" }, { .role = "assistant", .content = "<think>\nplan\n</think>\n\nA1" }, { .role = "user", .content = "Q2" },
                                  { .role = "assistant", .content = "<think>\nmore\n</think>\n\nA2" } };
    expect(CHAT_MINIMAX_M2, C, 4, "", "", "You are MiniMax-M2.7.",
           "]~!b[]~b]system\nYou are MiniMax-M2.7.[e~[\n]~b]user\nQ1[e~[\n]~b]ai\nA1[e~[\n]~b]user\nQ2[e~[\n]~b]ai\n"
           "<think>\nmore\n</think>\n\nA2[e~[\n]~b]ai\n<think>\n");
    assert_int_equal(chat_template_detect("{{- ']~b]ai' ~ '\\n' }}"), CHAT_MINIMAX_M2);
    char *id = chat_template_minimax_identity("{%- set model_identity = \"You are X.\" -%}");
    assert_non_null(id);
    assert_string_equal(id, "You are X.");
    free(id);
    assert_null(chat_template_minimax_identity("{{ messages }}"));
}

static void test_refusals(void **st)
{
    (void)st;
    char err[256] = "";
    const chat_msg twice_user[] = { { .role = "user", .content = "a" }, { .role = "user", .content = "b" } };
    assert_null(chat_template_render(CHAT_LLAMA2, twice_user, 2, "<s>", "</s>", NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "alternate"));
    const chat_msg late_sys[] = { { .role = "user", .content = "a" }, { .role = "system", .content = "b" } };
    assert_null(chat_template_render(CHAT_GEMMA, late_sys, 2, "", "", NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "system"));
    const chat_msg tool[] = { { .role = "tool", .content = "a" } };
    assert_null(chat_template_render(CHAT_CHATML, tool, 1, "", "", NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "messages[0].role"));
}

static void test_detect(void **st)
{
    (void)st;
    assert_int_equal(chat_template_detect("{{'<|im_start|>' + message['role']}}"), CHAT_CHATML);
    assert_int_equal(chat_template_detect(
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' %}"),
        CHAT_LLAMA3);
    assert_int_equal(chat_template_detect(
        "{% set content = '<<SYS>>\\n' + system_message %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"),
        CHAT_LLAMA2);
    assert_int_equal(chat_template_detect("{{ '[INST] ' + message['content'] + ' [/INST]' }}"), CHAT_MISTRAL);
    assert_int_equal(chat_template_detect("{{ '<start_of_turn>' + role + '\\n' }}"), CHAT_GEMMA);
    assert_int_equal(chat_template_detect("{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"), CHAT_PHI3);
    assert_int_equal(chat_template_detect("{{'" FW("User") "' + message['content']}}"), CHAT_DEEPSEEK);
    assert_int_equal(chat_template_detect("{{ messages }}"), CHAT_UNKNOWN);
    assert_int_equal(chat_template_detect(NULL), CHAT_UNKNOWN);
    assert_int_equal(chat_family_from_name("qwen"), CHAT_CHATML);
    assert_int_equal(chat_family_from_name("llama-3"), CHAT_LLAMA3);
    assert_int_equal(chat_family_from_name("nonesuch"), CHAT_UNKNOWN);
    assert_string_equal(chat_family_name(CHAT_PHI3), "phi3");
}

/* The formats' table (chat_template.c): every family and tool format has a row whose name picks it
 * back, the tool formats say where their calls are, and only harmony's cannot be forced. */
static void test_format_table(void **st)
{
    (void)st;
    for (int f = CHAT_CHATML; f <= CHAT_DOTS1; f++) {
        assert_non_null(chat_format_of_family((chat_family)f)->layout);
        assert_int_equal(chat_family_from_name(chat_family_name((chat_family)f)), f);
    }
    for (int t = CHAT_TOOLS_QWEN3; t <= CHAT_TOOLS_KIMI_K2_0711; t++) {
        const chat_format *r = chat_format_of_tools((chat_tools)t);
        assert_non_null(r->render);
        assert_int_equal(chat_tools_from_name(r->name), t);
        assert_int_not_equal(chat_family_from_name(r->name), CHAT_UNKNOWN); /* a tool name brings a layout too */
        assert_int_equal(r->calls, t == CHAT_TOOLS_HARMONY ? CHAT_CALLS_APART : CHAT_CALLS_IN_TEXT);
        assert_true((r->no_forcing != NULL) == (t == CHAT_TOOLS_HARMONY));
    }
    assert_string_equal(chat_family_name(CHAT_UNKNOWN), "unknown");
    assert_string_equal(chat_tools_name(CHAT_TOOLS_NONE), "none");
    assert_int_equal(chat_format_of_tools(CHAT_TOOLS_NONE)->calls, CHAT_CALLS_NONE);
    assert_int_equal(chat_tools_format(CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM), TOOL_FORMAT_MISTRAL);
    assert_int_equal(chat_tools_format(CHAT_TOOLS_LLAMA32), TOOL_FORMAT_LLAMA);
    assert_true(chat_format_of_family(CHAT_GPT_OSS)->harmony);
    assert_false(chat_format_of_family(CHAT_CHATML)->harmony);
}

/* Qwen3's tool layout: jinja2's rendering of Qwen3's template (the same
 * conversation as an OpenAI body; tests/e2e/e2e_tool_template.sh runs many more
 * against the real template). The reasoning of an assistant turn after the
 * last user query is re-rendered; consecutive tool results share a turn. */
static void test_qwen3_tools(void **st)
{
    (void)st;
    static const chat_call calls[] = { { .name = "f", .arguments = "{\"a\": 1}" } };
    const chat_msg m[] = {
        { .role = "user", .content = "Hi" },
        { .role = "assistant", .content = "<think>\nr1\n</think>\n\nOk.", .calls = calls, .n_calls = 1 },
        { .role = "tool", .content = "one" },
        { .role = "tool", .content = "two" },
    };
    const char *tools[] = { "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}" };
    char err[256] = "";
    char *got = chat_template_render_tools(CHAT_TOOLS_QWEN3, m, 4, tools, 1, NULL, true, err, sizeof err);
    assert_non_null(got);
    assert_string_equal(got,
        "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", "
        "\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}\n</tools>\n\nFor each function call, "
        "return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nHi"
        "<|im_end|>\n<|im_start|>assistant\n<think>\nr1\n</think>\n\nOk.\n<tool_call>\n{\"name\": \"f\", \"arguments\": "
        "{\"a\": 1}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\n"
        "two\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
    free(got);
    /* the families' own layouts refuse tool turns instead of dropping them */
    assert_null(chat_template_render(CHAT_CHATML, m, 2, "", "", NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "tool calls need a template with a tool format"));
    assert_null(chat_template_render(CHAT_CHATML, m + 2, 1, "", "", NULL, true, err, sizeof err));
    assert_null(chat_template_render_tools(CHAT_TOOLS_NONE, m, 1, NULL, 0, NULL, true, err, sizeof err));
    /* detection: Qwen3's markers, not chatml alone nor Qwen2.5's tojson-only calls */
    assert_int_equal(chat_template_tools("<|im_start|>{{- '<tool_call>\\n{\"name\": \"' }}{%- if tool_call.arguments is string %}"
                                         "{{ ns.last_query_index }}<tool_response>"), CHAT_TOOLS_QWEN3);
    assert_int_equal(chat_template_tools("<|im_start|>{{- '\\n<tool_call>\\n{\"name\": \"' }}{{- tool_call.arguments | tojson }}"
                                         "<tool_response>"), CHAT_TOOLS_NONE);
    assert_int_equal(chat_template_tools(NULL), CHAT_TOOLS_NONE);
    assert_int_equal(chat_tools_from_name("qwen3"), CHAT_TOOLS_QWEN3);
    /* Qwen3's 2507 releases: Thinking always opens <think>, Instruct has no reasoning parts */
    assert_int_equal(chat_template_tools("<|im_start|>{{- '<tool_call>\\n{\"name\": \"' }}{%- if tool_call.arguments is string %}"
                                         "{{ ns.last_query_index }}<tool_response>{{- '<|im_start|>assistant\\n<think>\\n' }}"),
                     CHAT_TOOLS_QWEN3_THINKING);
    assert_int_equal(chat_template_tools("<|im_start|>{{- '<tool_call>\\n{\"name\": \"' }}{%- if tool_call.arguments is string %}"
                                         "{{ ns.last_query_index }}<tool_response>{{- '<|im_start|>assistant\\n<think>\\n' }}"
                                         "{%- if enable_thinking is defined and enable_thinking is false %}"),
                     CHAT_TOOLS_QWEN3);
    assert_int_equal(chat_template_tools("<|im_start|>{{- '<tool_call>\\n{\"name\": \"' }}{%- if tool_call.arguments is string %}"
                                         "<tool_response>{{- '<|im_start|>assistant\\n' }}"),
                     CHAT_TOOLS_QWEN3_INSTRUCT);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_QWEN3_THINKING), "qwen3-thinking");
    assert_int_equal(chat_tools_from_name("qwen3-instruct"), CHAT_TOOLS_QWEN3_INSTRUCT);
    assert_int_equal(chat_family_from_name("qwen3"), CHAT_CHATML);
    /* Kimi K2 Thinking's whole template, not the older K2 layout without tool parts */
    static const char kimi_thinking[] = "<|im_middle|> tool_declare <|tool_calls_section_begin|> ## Return of "
                                        "<think></think> reasoning_content";
    assert_int_equal(chat_template_tools(kimi_thinking), CHAT_TOOLS_KIMI_K2);
    assert_int_equal(chat_template_detect(kimi_thinking), CHAT_KIMI_K2);
    assert_int_equal(chat_template_tools("<|im_user|>user<|im_middle|>{{ content }}<|im_end|>"), CHAT_TOOLS_NONE);
    assert_int_equal(chat_tools_from_name("kimi-k2-thinking"), CHAT_TOOLS_KIMI_K2);
    assert_int_equal(chat_family_from_name("kimi-k2-thinking"), CHAT_KIMI_K2);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_KIMI_K2), "kimi-k2-thinking");
    /* DeepSeek V3.1's template (V3.1-Terminus, V3.2-Exp), not V3's or R1's (tool outputs in a
     * <｜tool▁outputs▁begin｜> batch, no is_last_user) nor V3.2's DSML one */
    static const char ds31[] = "{{'<\xef\xbd\x9cUser\xef\xbd\x9c>' + message['content']}} ns.is_last_user "
                               "{{'<\xef\xbd\x9c" "Assistant\xef\xbd\x9c></think>'}} {{'<\xef\xbd\x9ctool\xe2\x96\x81"
                               "output\xe2\x96\x81" "begin\xef\xbd\x9c>' + message['content']}}";
    assert_int_equal(chat_template_tools(ds31), CHAT_TOOLS_DEEPSEEK_V31);
    assert_int_equal(chat_template_detect(ds31), CHAT_DEEPSEEK);
    static const char ds3[] = "{{'<\xef\xbd\x9cUser\xef\xbd\x9c>' + message['content']}} {{'<\xef\xbd\x9ctool"
                              "\xe2\x96\x81outputs\xe2\x96\x81" "begin\xef\xbd\x9c><\xef\xbd\x9ctool\xe2\x96\x81"
                              "output\xe2\x96\x81" "begin\xef\xbd\x9c>'}} {{'<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>'}}";
    assert_int_equal(chat_template_tools(ds3), CHAT_TOOLS_NONE);
    static const char ds32[] = "<\xef\xbd\x9cUser\xef\xbd\x9c>{{ message.content }}<\xef\xbd\x9c" "Assistant\xef\xbd"
                               "\x9c>{{ thinking_end_token }} {%- set dsml_token = \"\xef\xbd\x9c" "DSML\xef\xbd\x9c\" -%}";
    assert_int_equal(chat_template_tools(ds32), CHAT_TOOLS_NONE);
    assert_int_equal(chat_tools_from_name("deepseek-v3.1"), CHAT_TOOLS_DEEPSEEK_V31);
    assert_int_equal(chat_family_from_name("deepseek-v3.1"), CHAT_DEEPSEEK);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_DEEPSEEK_V31), "deepseek-v3.1");
    /* Llama 4's whole template, not a bare header layout */
    static const char l4[] = "{{- '<|header_start|>' + message['role'] + '<|header_end|>' }} tools_in_user_message "
                             "{{- '<|python_start|>' }}";
    assert_int_equal(chat_template_tools(l4), CHAT_TOOLS_LLAMA4);
    assert_int_equal(chat_template_detect(l4), CHAT_LLAMA4);
    assert_int_equal(chat_template_tools("{{- '<|header_start|>' + message['role'] + '<|header_end|>' }}"), CHAT_TOOLS_NONE);
    assert_int_equal(chat_tools_from_name("llama4"), CHAT_TOOLS_LLAMA4);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_LLAMA4), "llama4");
    /* Llama 3.1's / 3.3's and 3.2's (dated today), not 3.0's, which has no tools */
    static const char l31[] = "{{- '<|start_header_id|>' + message['role'] }} tools_in_user_message "
                              "{{- \"Cutting Knowledge Date: December 2023\\n\" }}";
    static const char l32[] = "{{- '<|start_header_id|>' + message['role'] }} tools_in_user_message "
                              "strftime_now(\"%d %b %Y\") {{- \"Cutting Knowledge Date: December 2023\\n\" }}";
    assert_int_equal(chat_template_tools(l31), CHAT_TOOLS_LLAMA31);
    assert_int_equal(chat_template_tools(l32), CHAT_TOOLS_LLAMA32);
    assert_int_equal(chat_template_detect(l31), CHAT_LLAMA3);
    assert_int_equal(chat_template_tools("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}"), CHAT_TOOLS_NONE);
    assert_int_equal(chat_tools_from_name("llama3.3"), CHAT_TOOLS_LLAMA31);
    assert_int_equal(chat_tools_from_name("llama3.2"), CHAT_TOOLS_LLAMA32);
    assert_int_equal(chat_family_from_name("llama3.1"), CHAT_LLAMA3);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_LLAMA31), "llama3.1");
    /* Mistral v3's, in its two releases; Mistral Nemo's ([INST] without the space) is not */
    static const char m3[] = "{{- \"[AVAILABLE_TOOLS] [\" }} {{- \"[TOOL_CALLS] [\" }} {{- '[TOOL_RESULTS] {\"content\": ' }}"
                             "{%- if not tool_call.id is defined or tool_call.id|length != 9 %} "
                             "{%- if loop.last and system_message is defined %} "
                             "{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}";
    static const char m3u[] = "{{- \"[AVAILABLE_TOOLS] [\" }} {{- \"[TOOL_CALLS] [\" }} {{- '[TOOL_RESULTS] {\"content\": ' }}"
                              "{%- if not tool_call.id is defined or tool_call.id|length != 9 %} "
                              "{%- if (message == user_messages[-1]) and system_message is defined %} "
                              "{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}";
    static const char nemo[] = "{{- \"[AVAILABLE_TOOLS][\" }} {{- \"[TOOL_CALLS][\" }} {{- '[TOOL_RESULTS]{\"content\": ' }}"
                               "{%- if not tool_call.id is defined or tool_call.id|length != 9 %} "
                               "{{- \"[INST]\" + message[\"content\"] + \"[/INST]\" }}";
    assert_int_equal(chat_template_tools(m3), CHAT_TOOLS_MISTRAL_V3);
    assert_int_equal(chat_template_tools(m3u), CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM);
    assert_int_equal(chat_template_tools(nemo), CHAT_TOOLS_NONE);
    assert_int_equal(chat_template_detect(m3), CHAT_MISTRAL);
    assert_int_equal(chat_tools_from_name("mistral-v3"), CHAT_TOOLS_MISTRAL_V3);
    assert_int_equal(chat_tools_from_name("mistral-v3-user-system"), CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM);
    assert_int_equal(chat_family_from_name("mistral-v3"), CHAT_MISTRAL);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM), "mistral-v3-user-system");
    /* Kimi K2 Instruct's two releases, told apart from each other and from Thinking's */
    static const char k0905[] = "<|im_system|>tool_declare<|im_middle|>\n  # Tools\n  {{ tools | tojson }}<|im_end|> "
                                "<|tool_calls_section_begin|> ## Return of {{ message.tool_call_id }} "
                                "{% if (loop.last and add_generation_prompt) or not loop.last %}<|im_end|>{% endif %}";
    static const char k0711[] = "<|im_system|>tool_declare<|im_middle|>\n  # Tools\n  {{ tools | tojson }}<|im_end|> "
                                "<|tool_calls_section_begin|> ## Return of {{ message.tool_call_id }} "
                                "<|im_system|>{{role_name}}<|im_middle|>\n  {% endif %}";
    assert_int_equal(chat_template_tools(k0905), CHAT_TOOLS_KIMI_K2_0905);
    assert_int_equal(chat_template_tools(k0711), CHAT_TOOLS_KIMI_K2_0711);
    assert_int_equal(chat_template_detect(k0905), CHAT_KIMI_K2);
    assert_int_equal(chat_tools_from_name("kimi-k2-0711"), CHAT_TOOLS_KIMI_K2_0711);
    assert_string_equal(chat_tools_name(CHAT_TOOLS_KIMI_K2_0905), "kimi-k2-0905");
    /* llama.cpp's own short Kimi K2 template has no calls in it: not rendered whole */
    assert_int_equal(chat_template_tools("{% if tools -%} {{ '<|im_system|>tool_declare<|im_middle|>' -}} {{ '<|im_middle|>' }}"),
                     CHAT_TOOLS_NONE);
    /* a tool result's id is held to the template's 9 characters too; a system message later is refused */
    const chat_msg res[] = { { .role = "user", .content = "x" }, { .role = "tool", .content = "r", .tool_call_id = "abc" } };
    assert_null(chat_template_render_tools(CHAT_TOOLS_MISTRAL_V3, res, 2, NULL, 0, NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "messages[1]: Mistral's template needs tool call ids of 9 characters"));
    const chat_msg late[] = { { .role = "user", .content = "x" }, { .role = "assistant", .content = "y" },
                              { .role = "user", .content = "z" }, { .role = "system", .content = "s" } };
    assert_null(chat_template_render_tools(CHAT_TOOLS_MISTRAL_V3, late, 4, NULL, 0, NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "messages[3]: Mistral's template takes user and assistant roles only"));
    /* its tools go into the first message after the system one: none is refused, as the template raises */
    const chat_msg sys_only[] = { { .role = "system", .content = "s" } };
    const char *tool[] = { "{\"type\": \"function\", \"function\": {\"name\": \"f\"}}" };
    assert_null(chat_template_render_tools(CHAT_TOOLS_LLAMA4, sys_only, 1, tool, 1, NULL, true, err, sizeof err));
    assert_non_null(strstr(err, "first user message"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chatml),   cmocka_unit_test(test_qwen_default_system),
        cmocka_unit_test(test_llama2),   cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_mistral),  cmocka_unit_test(test_gemma),
        cmocka_unit_test(test_phi3),     cmocka_unit_test(test_deepseek),
        cmocka_unit_test(test_granite),  cmocka_unit_test(test_deepseek2), cmocka_unit_test(test_llama4), cmocka_unit_test(test_glm4), cmocka_unit_test(test_hunyuan), cmocka_unit_test(test_kimi_k2), cmocka_unit_test(test_gpt_oss), cmocka_unit_test(test_bailing), cmocka_unit_test(test_minimax_m2), cmocka_unit_test(test_dots1),
        cmocka_unit_test(test_refusals), cmocka_unit_test(test_detect), cmocka_unit_test(test_format_table),
        cmocka_unit_test(test_qwen3_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
