/* chat_template.c: the chat formats' table and the dispatch through it
 * (see chat_template.h). The renderers sit beneath, one file per template
 * (chat_template_NAME.c) and the layouts in chat_layouts.c; this is the only
 * file that names them. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/util/strbuf.h"

/* Qwen3's <tool_call> JSON, its string-or-tojson arguments test and its tool results */
#define QWEN3_TOOLS "<|im_start|>", "'<tool_call>\\n{\"name\": \"'", "tool_call.arguments is string", "<tool_response>"
/* Kimi K2's tool_declare turn, calls section and results */
#define KIMI_TOOLS "<|im_middle|>", "tool_declare", "<|tool_calls_section_begin|>", "## Return of"
/* Llama 3.1's: its header, tools_in_user_message and its knowledge cutoff line (3.0's has no tools) */
#define LLAMA3_TOOLS "<|start_header_id|>", "tools_in_user_message", "Cutting Knowledge Date: December 2023"
/* Mistral v3's tool tags, its 9-character ids and its [INST] without a space before [/INST] */
#define MISTRAL_TOOLS                                                                                                  \
    "[AVAILABLE_TOOLS] [", "[TOOL_CALLS] [", "[TOOL_RESULTS] {", "tool_call.id|length != 9",                         \
        "\"[INST] \" + message[\"content\"] + \"[/INST]\""

/* The functions the rows name, each defined in its own file (chat_template_NAME.c, the layouts in
 * chat_layouts.c) and declared there too, so the compiler checks it against its row's type. A new
 * row declares its function here, beside it. */
chat_layout_fn chat_layout_chatml, chat_layout_llama2, chat_layout_mistral, chat_layout_llama3, chat_layout_llama4,
    chat_layout_gemma, chat_layout_phi3, chat_layout_granite, chat_layout_deepseek2, chat_layout_deepseek,
    chat_layout_glm4, chat_layout_hunyuan, chat_layout_kimi_k2, chat_layout_gpt_oss, chat_layout_dots1,
    chat_layout_bailing, chat_layout_minimax;
chat_render_fn chat_template_render_qwen3, chat_template_render_qwen3_coder, chat_template_render_harmony_tools,
    chat_template_render_glm45, chat_template_render_kimi_k2, chat_template_render_kimi_k2_instruct,
    chat_template_render_deepseek_v31, chat_template_render_llama31, chat_template_render_llama4,
    chat_template_render_mistral_v3;

/* Detection tries the rows in this order, the layouts among themselves and
 * the tool formats among themselves; the first whose markers match wins, so
 * a row whose markers another's contain comes first ([INST] is shared by
 * llama-2 and mistral, <<SYS>> tells them apart; <|im_end|> by Kimi and
 * chatml; harmony's <|end|> by phi3). */
static const chat_format FORMATS[] = {
    /* Qwen3 Thinking-2507: a generation prompt of <think> without enable_thinking */
    { .name = "qwen3-thinking", .family = CHAT_CHATML, .tools = CHAT_TOOLS_QWEN3_THINKING,
      .render = chat_template_render_qwen3, .variant = CHAT_VARIANT_QWEN3_THINKING,
      .tools_markers = { .all = { QWEN3_TOOLS, "ns.last_query_index", "'<|im_start|>assistant\\n<think>\\n'" },
                         .none = { "enable_thinking" } },
      .syntax = TOOL_FORMAT_JSON, .calls = CHAT_CALLS_IN_TEXT },
    /* Qwen3 (hybrid): its last_query_index (Qwen2.5's and Qwen3-Coder's templates have none) */
    { .name = "qwen3", .family = CHAT_CHATML, .tools = CHAT_TOOLS_QWEN3, .render = chat_template_render_qwen3,
      .tools_markers = { .all = { QWEN3_TOOLS, "ns.last_query_index" } }, .syntax = TOOL_FORMAT_JSON,
      .calls = CHAT_CALLS_IN_TEXT },
    /* Qwen3 Instruct-2507: no last_query_index, <think> or reasoning_content */
    { .name = "qwen3-instruct", .family = CHAT_CHATML, .tools = CHAT_TOOLS_QWEN3_INSTRUCT,
      .render = chat_template_render_qwen3, .variant = CHAT_VARIANT_QWEN3_INSTRUCT,
      .tools_markers = { .all = { QWEN3_TOOLS }, .none = { "ns.last_query_index", "<think>", "reasoning_content" } },
      .syntax = TOOL_FORMAT_JSON, .calls = CHAT_CALLS_IN_TEXT },
    /* gpt-oss: harmony's <|channel|>; its own template by its render_tool_namespace macro */
    { .name = "gpt-oss", .family = CHAT_GPT_OSS, .layout = chat_layout_gpt_oss,
      .layout_markers = { .all = { "<|channel|>" } }, .harmony = true, .tools = CHAT_TOOLS_HARMONY,
      .render = chat_template_render_harmony_tools,
      .tools_markers = { .all = { "<|channel|>", "render_tool_namespace", "to=assistant" } }, .calls = CHAT_CALLS_APART,
      .no_forcing = "forcing a call is not available with gpt-oss's harmony template" },
    /* Qwen3-Coder: its <function= and <parameter= calls */
    { .name = "qwen3-coder", .family = CHAT_CHATML, .tools = CHAT_TOOLS_QWEN3_CODER,
      .render = chat_template_render_qwen3_coder,
      .tools_markers = { .all = { "<|im_start|>", "<function=", "<parameter=", "<tool_response>" } },
      .syntax = TOOL_FORMAT_CODER, .calls = CHAT_CALLS_IN_TEXT },
    /* GLM-4.5 / 4.6: [gMASK]<sop> with <arg_key> and <|observation|> */
    { .name = "glm-4.5", .family = CHAT_GLM4, .tools = CHAT_TOOLS_GLM45, .render = chat_template_render_glm45,
      .tools_markers = { .all = { "[gMASK]<sop>", "<arg_key>", "<|observation|>", "last_user_index" } },
      .syntax = TOOL_FORMAT_GLM45, .calls = CHAT_CALLS_IN_TEXT },
    /* MiniMax-M2: ]~b]ai, with <minimax:tool_call>; its default system message is its model_identity */
    { .name = "minimax-m2", .family = CHAT_MINIMAX_M2, .layout = chat_layout_minimax,
      .layout_markers = { .all = { "]~b]ai" } }, .default_system = chat_template_minimax_identity,
      .tools = CHAT_TOOLS_MINIMAX, .render = chat_template_render_minimax_tools,
      .tools_markers = { .all = { "]~b]ai", "<minimax:tool_call>", "<response>" } }, .syntax = TOOL_FORMAT_MINIMAX,
      .calls = CHAT_CALLS_IN_TEXT },
    /* Kimi K2 Thinking: its tool_declare turn, "## Return of" and <think></think> */
    { .name = "kimi-k2-thinking", .family = CHAT_KIMI_K2, .tools = CHAT_TOOLS_KIMI_K2,
      .render = chat_template_render_kimi_k2,
      .tools_markers = { .all = { KIMI_TOOLS, "<think></think>", "reasoning_content" } }, .syntax = TOOL_FORMAT_KIMI,
      .calls = CHAT_CALLS_IN_TEXT },
    /* Kimi K2 Instruct 0905: tools under "# Tools", no <think>, its last turn left open without a
     * generation prompt */
    { .name = "kimi-k2-0905", .family = CHAT_KIMI_K2, .tools = CHAT_TOOLS_KIMI_K2_0905,
      .render = chat_template_render_kimi_k2_instruct, .variant = CHAT_VARIANT_KIMI_0905,
      .tools_markers = { .all = { KIMI_TOOLS, "# Tools",
                           "{% if (loop.last and add_generation_prompt) or not loop.last %}<|im_end|>{% endif %}" },
                         .none = { "<think>" } },
      .syntax = TOOL_FORMAT_KIMI, .calls = CHAT_CALLS_IN_TEXT },
    /* Kimi K2 Instruct's first release: the line break its header block leaves */
    { .name = "kimi-k2-0711", .family = CHAT_KIMI_K2, .tools = CHAT_TOOLS_KIMI_K2_0711,
      .render = chat_template_render_kimi_k2_instruct, .variant = CHAT_VARIANT_KIMI_0711,
      .tools_markers = { .all = { KIMI_TOOLS, "# Tools", "<|im_system|>{{role_name}}<|im_middle|>\n  {% endif %}" },
                         .none = { "<think>" } },
      .syntax = TOOL_FORMAT_KIMI, .calls = CHAT_CALLS_IN_TEXT },
    /* DeepSeek V3.1 (V3.1-Terminus, V3.2-Exp): <｜tool▁output▁begin｜>, is_last_user and the </think> it opens
     * answers with (V3's, R1's and V3.2's templates differ and are not) */
    { .name = "deepseek-v3.1", .family = CHAT_DEEPSEEK, .tools = CHAT_TOOLS_DEEPSEEK_V31,
      .render = chat_template_render_deepseek_v31,
      .tools_markers = { .all = { "<" DS_BAR "tool" DS_SP "output" DS_SP "begin" DS_BAR ">", "is_last_user",
                           DS_ASSISTANT "</think>" } },
      .syntax = TOOL_FORMAT_DEEPSEEK, .calls = CHAT_CALLS_IN_TEXT },
    /* Ling (llama.cpp's markers): v1's role table quotes 'HUMAN', the thinking v1 "HUMAN" */
    { .name = "bailing", .family = CHAT_BAILING, .layout = chat_layout_bailing,
      .layout_markers = { .all = { "<role>ASSISTANT</role>", "'HUMAN'" } } },
    { .name = "bailing-think", .family = CHAT_BAILING_THINK, .layout = chat_layout_bailing,
      .variant = CHAT_VARIANT_BAILING_THINKING,
      .layout_markers = { .all = { "<role>ASSISTANT</role>", "\"HUMAN\"", "<think>" } } },
    { .name = "bailing2", .family = CHAT_BAILING2, .layout = chat_layout_bailing, .variant = CHAT_VARIANT_BAILING_V2,
      .layout_markers = { .all = { "<role>ASSISTANT</role>", "<role>HUMAN</role>", "<|role_end|>" } } },
    { .name = "dots1", .family = CHAT_DOTS1, .layout = chat_layout_dots1,
      .layout_markers = { .all = { "<|endofuserprompt|>" } } },
    { .name = "kimi-k2", .family = CHAT_KIMI_K2, .layout = chat_layout_kimi_k2,
      .layout_markers = { .all = { "<|im_middle|>" } } },
    /* chatml may carry a default system prompt (Qwen's templates do) */
    { .name = "chatml", .aliases = { "qwen" }, .family = CHAT_CHATML, .layout = chat_layout_chatml,
      .layout_markers = { .all = { "<|im_start|>" } }, .default_system = chat_template_default_system },
    { .name = "chatglm4", .aliases = { "glm4" }, .family = CHAT_GLM4, .layout = chat_layout_glm4,
      .layout_markers = { .all = { "[gMASK]<sop>" } } },
    { .name = "hunyuan-moe", .family = CHAT_HUNYUAN, .layout = chat_layout_hunyuan,
      .layout_markers = { .all = { "<|startoftext|>", "<|extra_4|>" } } },
    { .name = "llama3", .aliases = { "llama-3" }, .family = CHAT_LLAMA3, .layout = chat_layout_llama3,
      .layout_markers = { .all = { "<|start_header_id|>" } } },
    /* Llama 4: <|header_start|>; its tool template by tools_in_user_message and <|python_start|> */
    { .name = "llama4", .family = CHAT_LLAMA4, .layout = chat_layout_llama4,
      .layout_markers = { .all = { "<|header_start|>" } }, .tools = CHAT_TOOLS_LLAMA4, .render = chat_template_render_llama4,
      .tools_markers = { .all = { "<|header_start|>", "tools_in_user_message", "<|python_start|>" } },
      .syntax = TOOL_FORMAT_LLAMA, .calls = CHAT_CALLS_IN_TEXT },
    /* Llama 3.2: 3.1's, dated today (its strftime_now) */
    { .name = "llama3.2", .family = CHAT_LLAMA3, .tools = CHAT_TOOLS_LLAMA32, .render = chat_template_render_llama31,
      .variant = CHAT_VARIANT_LLAMA32, .tools_markers = { .all = { LLAMA3_TOOLS, "strftime_now" } },
      .syntax = TOOL_FORMAT_LLAMA, .calls = CHAT_CALLS_IN_TEXT },
    { .name = "llama3.1", .aliases = { "llama3.3" }, .family = CHAT_LLAMA3, .tools = CHAT_TOOLS_LLAMA31,
      .render = chat_template_render_llama31, .tools_markers = { .all = { LLAMA3_TOOLS } }, .syntax = TOOL_FORMAT_LLAMA,
      .calls = CHAT_CALLS_IN_TEXT },
    /* Mistral v3, the release that puts the system message into the last user turn by that test
     * (Mistral Nemo's and later ones, without the space after [INST], are neither) */
    { .name = "mistral-v3-user-system", .family = CHAT_MISTRAL, .tools = CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM,
      .render = chat_template_render_mistral_v3, .variant = CHAT_VARIANT_MISTRAL_V3_USER_SYSTEM,
      .tools_markers = { .all = { MISTRAL_TOOLS, "(message == user_messages[-1]) and system_message" } },
      .syntax = TOOL_FORMAT_MISTRAL, .calls = CHAT_CALLS_IN_TEXT },
    { .name = "mistral-v3", .family = CHAT_MISTRAL, .tools = CHAT_TOOLS_MISTRAL_V3,
      .render = chat_template_render_mistral_v3, .tools_markers = { .all = { MISTRAL_TOOLS } },
      .syntax = TOOL_FORMAT_MISTRAL, .calls = CHAT_CALLS_IN_TEXT },
    { .name = "gemma", .family = CHAT_GEMMA, .layout = chat_layout_gemma,
      .layout_markers = { .all = { "<start_of_turn>" } } },
    { .name = "deepseek", .aliases = { "deepseek3" }, .family = CHAT_DEEPSEEK, .layout = chat_layout_deepseek,
      .layout_markers = { .all = { DS_USER } } },
    { .name = "phi3", .aliases = { "phi-3" }, .family = CHAT_PHI3, .layout = chat_layout_phi3,
      .layout_markers = { .all = { "<|user|>", "<|end|>" } } },
    { .name = "granite", .family = CHAT_GRANITE, .layout = chat_layout_granite,
      .layout_markers = { .all = { "<|start_of_role|>" } } },
    { .name = "deepseek2", .family = CHAT_DEEPSEEK2, .layout = chat_layout_deepseek2,
      .layout_markers = { .all = { "'User: '", "'Assistant: '" } } },
    { .name = "llama2", .aliases = { "llama-2" }, .family = CHAT_LLAMA2, .layout = chat_layout_llama2,
      .layout_markers = { .all = { "[INST]", "<<SYS>>" } } },
    { .name = "mistral", .family = CHAT_MISTRAL, .layout = chat_layout_mistral,
      .layout_markers = { .all = { "[INST]" } } },
};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

static const chat_format UNKNOWN_LAYOUT = { .name = "unknown" }, NO_TOOLS = { .name = "none" };

static bool matches(const chat_markers *k, const char *t)
{
    for (size_t i = 0; i < sizeof k->all / sizeof *k->all && k->all[i]; i++)
        if (!strstr(t, k->all[i])) return false;
    for (size_t i = 0; i < sizeof k->none / sizeof *k->none && k->none[i]; i++)
        if (strstr(t, k->none[i])) return false;
    return true;
}

/* The row a --chat-template name picks, or NULL. */
static const chat_format *by_name(const char *name)
{
    for (size_t i = 0; name && i < N_FORMATS; i++) {
        const chat_format *r = &FORMATS[i];
        if (!strcmp(name, r->name) || (r->aliases[0] && !strcmp(name, r->aliases[0])) ||
            (r->aliases[1] && !strcmp(name, r->aliases[1])))
            return r;
    }
    return NULL;
}

/* A row's layout and tool format: the enum values the tests name, or for a row that names none its
 * position, so that a new row needs no enum value. */
static chat_family family_of(const chat_format *r)
{
    return r->family || !r->layout ? r->family : (chat_family)(CHAT_FAMILY_ROW + (r - FORMATS));
}

static chat_tools tools_of(const chat_format *r)
{
    return !r->render ? CHAT_TOOLS_NONE : r->tools ? r->tools : (chat_tools)(CHAT_TOOLS_ROW + (r - FORMATS));
}

const chat_format *chat_format_of_family(chat_family f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].layout && family_of(&FORMATS[i]) == f) return &FORMATS[i];
    return &UNKNOWN_LAYOUT;
}

const chat_format *chat_format_of_tools(chat_tools t)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].render && tools_of(&FORMATS[i]) == t) return &FORMATS[i];
    return &NO_TOOLS;
}

tool_format chat_tools_format(chat_tools t) { return chat_format_of_tools(t)->syntax; }

chat_family chat_family_from_name(const char *name)
{
    const chat_format *r = by_name(name);
    return r ? family_of(r) : CHAT_UNKNOWN;
}

chat_tools chat_tools_from_name(const char *name)
{
    const chat_format *r = by_name(name);
    return r ? tools_of(r) : CHAT_TOOLS_NONE;
}

const char *chat_family_name(chat_family f) { return chat_format_of_family(f)->name; }

const char *chat_tools_name(chat_tools t) { return chat_format_of_tools(t)->name; }

chat_family chat_template_detect(const char *t)
{
    for (size_t i = 0; t && i < N_FORMATS; i++)
        if (FORMATS[i].layout && matches(&FORMATS[i].layout_markers, t)) return family_of(&FORMATS[i]);
    return CHAT_UNKNOWN;
}

chat_tools chat_template_tools(const char *t)
{
    for (size_t i = 0; t && i < N_FORMATS; i++)
        if (FORMATS[i].render && matches(&FORMATS[i].tools_markers, t)) return tools_of(&FORMATS[i]);
    return CHAT_TOOLS_NONE;
}

bool chat_template_has_dynamic_system(const char *t)
{
    return t && strstr(t, "<|start_of_role|>") && strstr(t, "system_message");
}

/* Qwen writes its default as a literal in the else branch:
 * '<|im_start|>system\nYou are ...<|im_end|>\n'. A literal is recognised
 * by containing no quote, brace or '+' (the other branch concatenates). */
char *chat_template_default_system(const char *t)
{
    static const char open[] = "<|im_start|>system\\n";
    for (const char *p = t ? strstr(t, open) : NULL; p; p = strstr(p + 1, open)) {
        const char *s = p + sizeof open - 1, *e = strstr(s, "<|im_end|>");
        if (!e || e == s || strcspn(s, "'\"{}+") < (size_t)(e - s)) continue;
        strbuf b = { 0 };
        for (const char *q = s; q < e; q++) {
            if (q[0] == '\\' && q + 1 < e && q[1] == 'n') { strbuf_add(&b, "\n", 1); q++; }
            else strbuf_add(&b, q, 1);
        }
        return strbuf_take(&b);
    }
    return NULL;
}

char *chat_template_minimax_identity(const char *t)
{
    static const char key[] = "model_identity = \"";
    const char *p = t ? strstr(t, key) : NULL;
    if (!p) return NULL;
    p += sizeof key - 1;
    const char *e = strchr(p, '"');
    if (!e || memchr(p, '\\', (size_t)(e - p))) return NULL; /* a plain string literal only */
    strbuf b = { 0 };
    strbuf_add(&b, p, (size_t)(e - p));
    return strbuf_take(&b);
}

char *chat_template_render(chat_family f, const chat_msg *m, size_t n, const char *bos, const char *eos,
                           const char *default_system, bool gen, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (!chat_is(&m[i], "system") && !chat_is(&m[i], "user") && !chat_is(&m[i], "assistant")) {
            snprintf(err, errlen, "messages[%zu].role: '%s' is not system, user or assistant",
                     i, m[i].role);
            return NULL;
        }
        if (m[i].n_calls) {
            snprintf(err, errlen, "messages[%zu]: tool calls need a template with a tool format", i);
            return NULL;
        }
    }
    const chat_format *r = chat_format_of_family(f);
    if (!r->layout) r = chat_format_of_family(CHAT_CHATML); /* an unknown family: chatml */
    const chat_layout_args a = { .bos = bos ? bos : "", .eos = eos ? eos : "", .default_system = default_system,
                                 .variant = r->variant, .gen = gen };
    strbuf b = { 0 };
    if (!r->layout(&b, m, n, &a, err, errlen)) { strbuf_free(&b); return NULL; }
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}

char *chat_template_render_tools(chat_tools style, const chat_msg *m, size_t n, const char *const *tools,
                                 size_t n_tools, const chat_tools_opts *o, bool gen, char *err, size_t errlen)
{
    const chat_format *r = chat_format_of_tools(style);
    if (!r->render) {
        snprintf(err, errlen, "this chat template has no tool format strata renders");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!chat_is(&m[i], "system") && !chat_is(&m[i], "user") && !chat_is(&m[i], "assistant") && !chat_is(&m[i], "tool")) {
            snprintf(err, errlen, "messages[%zu].role: '%s' is not system, user, assistant or tool", i, m[i].role);
            return NULL;
        }
    }
    return r->render(m, n, tools, n_tools, o, r->variant, gen, err, errlen);
}
