/* chat_template.c: see chat_template.h. One render function per family;
 * each reads like the Jinja template it replaces, in the same order. */
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_render.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat/pyjson.h"
#include "runtime/util/strbuf.h"

static const struct { const char *name; chat_family f; } NAMES[] = {
    { "chatml", CHAT_CHATML },   { "qwen", CHAT_CHATML },     { "llama2", CHAT_LLAMA2 },
    { "llama-2", CHAT_LLAMA2 },  { "llama3", CHAT_LLAMA3 },   { "llama-3", CHAT_LLAMA3 },
    { "mistral", CHAT_MISTRAL }, { "gemma", CHAT_GEMMA },     { "phi3", CHAT_PHI3 },
    { "phi-3", CHAT_PHI3 },      { "deepseek", CHAT_DEEPSEEK }, { "deepseek3", CHAT_DEEPSEEK },
    { "granite", CHAT_GRANITE }, { "deepseek2", CHAT_DEEPSEEK2 }, { "llama4", CHAT_LLAMA4 },
    { "chatglm4", CHAT_GLM4 },   { "glm4", CHAT_GLM4 },       { "hunyuan-moe", CHAT_HUNYUAN },
    { "kimi-k2", CHAT_KIMI_K2 },  { "gpt-oss", CHAT_GPT_OSS },  { "bailing", CHAT_BAILING },
    { "bailing2", CHAT_BAILING2 },  { "minimax-m2", CHAT_MINIMAX_M2 }, { "bailing-think", CHAT_BAILING_THINK },
    { "dots1", CHAT_DOTS1 },      { "qwen3", CHAT_CHATML },   { "qwen3-coder", CHAT_CHATML }, { "glm-4.5", CHAT_GLM4 },
    { "qwen3-thinking", CHAT_CHATML }, { "qwen3-instruct", CHAT_CHATML },
    { "kimi-k2-thinking", CHAT_KIMI_K2 }, { "deepseek-v3.1", CHAT_DEEPSEEK }, { "llama3.1", CHAT_LLAMA3 },
    { "llama3.2", CHAT_LLAMA3 }, { "llama3.3", CHAT_LLAMA3 }, { "mistral-v3", CHAT_MISTRAL },
    { "mistral-v3-user-system", CHAT_MISTRAL }, { "kimi-k2-0905", CHAT_KIMI_K2 }, { "kimi-k2-0711", CHAT_KIMI_K2 },
};

chat_family chat_family_from_name(const char *name)
{
    for (size_t i = 0; name && i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (!strcmp(name, NAMES[i].name)) return NAMES[i].f;
    return CHAT_UNKNOWN;
}

const char *chat_family_name(chat_family f)
{
    switch (f) {
    case CHAT_CHATML: return "chatml";
    case CHAT_LLAMA2: return "llama2";
    case CHAT_LLAMA3: return "llama3";
    case CHAT_MISTRAL: return "mistral";
    case CHAT_GEMMA: return "gemma";
    case CHAT_PHI3: return "phi3";
    case CHAT_DEEPSEEK: return "deepseek";
    case CHAT_GRANITE: return "granite";
    case CHAT_DEEPSEEK2: return "deepseek2";
    case CHAT_LLAMA4: return "llama4";
    case CHAT_GLM4: return "chatglm4";
    case CHAT_HUNYUAN: return "hunyuan-moe";
    case CHAT_KIMI_K2: return "kimi-k2";
    case CHAT_GPT_OSS: return "gpt-oss";
    case CHAT_BAILING: return "bailing";
    case CHAT_BAILING2: return "bailing2";
    case CHAT_MINIMAX_M2: return "minimax-m2";
    case CHAT_BAILING_THINK: return "bailing-think";
    case CHAT_DOTS1: return "dots1";
    default: return "unknown";
    }
}

/* Markers that only one family writes; the order settles the overlaps
 * ([INST] is shared by llama-2 and mistral, <<SYS>> tells them apart). */
chat_family chat_template_detect(const char *t)
{
    if (!t) return CHAT_UNKNOWN;
    if (strstr(t, "<|channel|>")) return CHAT_GPT_OSS; /* harmony: before phi3, whose <|end|> it shares */
    if (strstr(t, "]~b]ai")) return CHAT_MINIMAX_M2;
    /* Ling, by llama.cpp's markers: v1's role table quotes 'HUMAN', the thinking v1 "HUMAN" */
    if (strstr(t, "<role>ASSISTANT</role>")) {
        if (strstr(t, "'HUMAN'")) return CHAT_BAILING;
        if (strstr(t, "\"HUMAN\"") && strstr(t, "<think>")) return CHAT_BAILING_THINK;
        if (strstr(t, "<role>HUMAN</role>") && strstr(t, "<|role_end|>")) return CHAT_BAILING2;
    }
    if (strstr(t, "<|endofuserprompt|>")) return CHAT_DOTS1;
    if (strstr(t, "<|im_middle|>")) return CHAT_KIMI_K2; /* before chatml: <|im_end|> is both's */
    if (strstr(t, "<|im_start|>")) return CHAT_CHATML;
    if (strstr(t, "[gMASK]<sop>")) return CHAT_GLM4;
    if (strstr(t, "<|startoftext|>") && strstr(t, "<|extra_4|>")) return CHAT_HUNYUAN;
    if (strstr(t, "<|start_header_id|>")) return CHAT_LLAMA3;
    if (strstr(t, "<|header_start|>")) return CHAT_LLAMA4;
    if (strstr(t, "<start_of_turn>")) return CHAT_GEMMA;
    if (strstr(t, DS_USER)) return CHAT_DEEPSEEK;
    if (strstr(t, "<|user|>") && strstr(t, "<|end|>")) return CHAT_PHI3;
    if (strstr(t, "<|start_of_role|>")) return CHAT_GRANITE;
    if (strstr(t, "'User: '") && strstr(t, "'Assistant: '")) return CHAT_DEEPSEEK2;
    if (strstr(t, "[INST]")) return strstr(t, "<<SYS>>") ? CHAT_LLAMA2 : CHAT_MISTRAL;
    return CHAT_UNKNOWN;
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

/* Jinja's trim on a whole string */
static void add_trimmed(strbuf *b, const char *s) { chat_add_strip(b, s, strlen(s)); }


/* The alternation check of the llama-2, mistral and gemma templates. */
static bool alternates(const chat_msg *m, size_t n, const char *fam, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "system")) {
            snprintf(err, errlen, "the %s template allows a system message only first", fam);
            return false;
        }
        if (chat_is(&m[i], "user") != (i % 2 == 0)) {
            snprintf(err, errlen,
                     "the %s template needs roles to alternate user/assistant/user/...", fam);
            return false;
        }
    }
    return true;
}

static void chatml(strbuf *b, const chat_msg *m, size_t n, const char *def_sys, bool gen)
{
    if (def_sys && (n == 0 || !chat_is(&m[0], "system")))
        strbuf_printf(b, "<|im_start|>system\n%s<|im_end|>\n", def_sys);
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|im_start|>%s\n%s<|im_end|>\n", m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|im_start|>assistant\n");
}

static bool llama2(strbuf *b, const chat_msg *m, size_t n, const char *bos, const char *eos,
                   char *err, size_t errlen)
{
    const char *sys = n && chat_is(&m[0], "system") ? m[0].content : NULL;
    if (sys) { m++; n--; }
    if (!alternates(m, n, "llama-2", err, errlen)) return false;
    for (size_t i = 0; i < n; i++) {
        strbuf content = { 0 };
        if (i == 0 && sys) strbuf_printf(&content, "<<SYS>>\n%s\n<</SYS>>\n\n", sys);
        strbuf_puts(&content, m[i].content);
        if (chat_is(&m[i], "user")) strbuf_printf(b, "%s[INST] ", bos);
        else strbuf_puts(b, " ");
        add_trimmed(b, content.data ? content.data : "");
        if (chat_is(&m[i], "user")) strbuf_puts(b, " [/INST]");
        else strbuf_printf(b, " %s", eos);
        if (content.oom) b->oom = true;
        strbuf_free(&content);
    }
    return true;
}

static bool mistral(strbuf *b, const chat_msg *m, size_t n, const char *bos, const char *eos,
                    char *err, size_t errlen)
{
    const char *sys = n && chat_is(&m[0], "system") ? m[0].content : NULL;
    if (sys) { m++; n--; }
    if (!alternates(m, n, "mistral", err, errlen)) return false;
    strbuf_puts(b, bos);
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "user"))
            strbuf_printf(b, "[INST] %s%s%s [/INST]", i == 0 && sys ? sys : "",
                          i == 0 && sys ? "\n\n" : "", m[i].content);
        else strbuf_printf(b, "%s%s", m[i].content, eos);
    }
    return true;
}

static void llama3(strbuf *b, const chat_msg *m, size_t n, const char *bos, bool gen)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0) strbuf_puts(b, bos);
        strbuf_printf(b, "<|start_header_id|>%s<|end_header_id|>\n\n", m[i].role);
        add_trimmed(b, m[i].content);
        strbuf_puts(b, "<|eot_id|>");
    }
    if (gen) strbuf_puts(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Llama 4: only a leading system message is trimmed; every turn ends <|eot|>. */
static void llama4(strbuf *b, const chat_msg *m, size_t n, const char *bos, bool gen)
{
    strbuf_puts(b, bos);
    size_t i = 0;
    if (n && chat_is(&m[0], "system")) {
        strbuf_puts(b, "<|header_start|>system<|header_end|>\n\n");
        add_trimmed(b, m[0].content);
        strbuf_puts(b, "<|eot|>");
        i = 1;
    }
    for (; i < n; i++) strbuf_printf(b, "<|header_start|>%s<|header_end|>\n\n%s<|eot|>", m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|header_start|>assistant<|header_end|>\n\n");
}

static bool gemma(strbuf *b, const chat_msg *m, size_t n, const char *bos, bool gen,
                  char *err, size_t errlen)
{
    const char *sys = n && chat_is(&m[0], "system") ? m[0].content : NULL;
    if (sys) { m++; n--; }
    if (!alternates(m, n, "gemma", err, errlen)) return false;
    strbuf_puts(b, bos);
    for (size_t i = 0; i < n; i++) {
        strbuf_printf(b, "<start_of_turn>%s\n", chat_is(&m[i], "assistant") ? "model" : m[i].role);
        if (i == 0 && sys) strbuf_printf(b, "%s\n\n", sys);
        add_trimmed(b, m[i].content);
        strbuf_puts(b, "<end_of_turn>\n");
    }
    if (gen) strbuf_puts(b, "<start_of_turn>model\n");
    return true;
}

static void phi3(strbuf *b, const chat_msg *m, size_t n, const char *eos, bool gen)
{
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|%s|>\n%s<|end|>\n", m[i].role, m[i].content);
    strbuf_puts(b, gen ? "<|assistant|>\n" : eos);
}

/* IBM Granite 3.0: every turn is <|start_of_role|>ROLE<|end_of_role|>TEXT<|end_of_text|> and a
 * newline, in order; the generation prompt comes after the last message. */
static void granite(strbuf *b, const chat_msg *m, size_t n, bool gen)
{
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|start_of_role|>%s<|end_of_role|>%s<|end_of_text|>\n", m[i].role, m[i].content);
    if (gen && n) strbuf_puts(b, "<|start_of_role|>assistant<|end_of_role|>");
}

/* DeepSeek LLM, MoE and V2: every message in place, system ones as bare
 * paragraphs; an assistant turn ends with the EOS text. */
static void deepseek2(strbuf *b, const chat_msg *m, size_t n, const char *bos, const char *eos, bool gen)
{
    strbuf_puts(b, bos);
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "user")) strbuf_printf(b, "User: %s\n\n", m[i].content);
        else if (chat_is(&m[i], "assistant")) strbuf_printf(b, "Assistant: %s%s", m[i].content, eos);
        else strbuf_printf(b, "%s\n\n", m[i].content);
    }
    if (gen) strbuf_puts(b, "Assistant:");
}


/* DeepSeek-V3 gathers every system message first, joined by blank lines. */
static void deepseek(strbuf *b, const chat_msg *m, size_t n, const char *bos, bool gen)
{
    strbuf_puts(b, bos);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (!chat_is(&m[i], "system")) continue;
        if (!first) strbuf_puts(b, "\n\n");
        strbuf_puts(b, m[i].content);
        first = false;
    }
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "user")) strbuf_printf(b, DS_USER "%s", m[i].content);
        else if (chat_is(&m[i], "assistant")) strbuf_printf(b, DS_ASSISTANT "%s" DS_EOS, m[i].content);
    }
    if (gen) strbuf_puts(b, DS_ASSISTANT);
}

/* GLM-4 (llama.cpp's chatglm4, which it also uses for GLM-4.5 without
 * --jinja): every message in place after its role tag and a newline. */
static void glm4(strbuf *b, const chat_msg *m, size_t n, bool gen)
{
    strbuf_puts(b, "[gMASK]<sop>");
    for (size_t i = 0; i < n; i++) strbuf_printf(b, "<|%s|>\n%s", m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|assistant|>\n");
}

/* Hunyuan-A13B (llama.cpp's hunyuan-moe): a system or user turn opens with
 * <|startoftext|> and closes with its role's marker; an assistant turn is
 * its text and <|eos|>. The closing <|extra_0|> already asks for the
 * answer, so there is no generation prompt. */
static void hunyuan(strbuf *b, const chat_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "system")) strbuf_printf(b, "<|startoftext|>%s<|extra_4|>", m[i].content);
        else if (chat_is(&m[i], "assistant")) strbuf_printf(b, "%s<|eos|>", m[i].content);
        else strbuf_printf(b, "<|startoftext|>%s<|extra_0|>", m[i].content);
    }
}

/* Kimi K2 (llama.cpp's kimi-k2): <|im_ROLE|>ROLE<|im_middle|>TEXT<|im_end|>
 * per message. Moonshot's own template adds a default system prompt when a
 * request has none; llama.cpp's layout, which this is, does not. */
static void kimi_k2(strbuf *b, const chat_msg *m, size_t n, bool gen)
{
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|im_%s|>%s<|im_middle|>%s<|im_end|>", m[i].role, m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|im_assistant|>assistant<|im_middle|>");
}

/* gpt-oss (llama.cpp's gpt-oss layout, harmony without its preamble):
 * <|start|>ROLE<|message|>TEXT, closed by <|return|> after an assistant
 * turn and <|end|> after any other; the answer opens with
 * <|start|>assistant and the model names its channel itself. OpenAI's own
 * template also writes a system preamble (date, reasoning level, the valid
 * channels) and turns a system message into a developer one; llama.cpp's
 * layout, which this is, does not. */
static void gpt_oss(strbuf *b, const chat_msg *m, size_t n, bool gen)
{
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|start|>%s<|message|>%s%s", m[i].role, m[i].content,
                      strcmp(m[i].role, "assistant") ? "<|end|>" : "<|return|>");
    if (gen) strbuf_puts(b, "<|start|>assistant");
}

/* dots.llm1 (llama.cpp's dots1): <|system|>S<|endofsystem|>,
 * <|userprompt|>U<|endofuserprompt|>, <|response|>A<|endofresponse|>. */
static void dots1(strbuf *b, const chat_msg *m, size_t n, bool gen)
{
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "system")) strbuf_printf(b, "<|system|>%s<|endofsystem|>", m[i].content);
        else if (chat_is(&m[i], "user")) strbuf_printf(b, "<|userprompt|>%s<|endofuserprompt|>", m[i].content);
        else strbuf_printf(b, "<|response|>%s<|endofresponse|>", m[i].content);
    }
    if (gen) strbuf_puts(b, "<|response|>");
}

/* Ling (llama.cpp's bailing, bailing-think and bailing2): <role>ROLE</role>TEXT
 * with the roles SYSTEM, HUMAN and ASSISTANT; the thinking v1 opens the
 * answer with <think>; Ling 2.0 closes each message with <|role_end|> and,
 * as its template does, writes the system message "detailed thinking off"
 * when a conversation brings none. */
static void bailing(strbuf *b, const chat_msg *m, size_t n, bool gen, bool v2, bool think)
{
    const char *end = v2 ? "<|role_end|>" : "";
    if (v2 && (n == 0 || strcmp(m[0].role, "system")))
        strbuf_printf(b, "<role>SYSTEM</role>detailed thinking off%s", end);
    for (size_t i = 0; i < n; i++) {
        const char *r = m[i].role;
        const char *role = !strcmp(r, "system") ? "SYSTEM" : !strcmp(r, "user") ? "HUMAN" : "ASSISTANT";
        strbuf_printf(b, "<role>%s</role>%s%s", role, m[i].content, end);
    }
    if (gen) strbuf_puts(b, think ? "<role>ASSISTANT</role><think>" : "<role>ASSISTANT</role>");
}

char *chat_template_render(chat_family f, const chat_msg *m, size_t n, const char *bos,
                           const char *eos, const char *default_system,
                           bool gen, char *err, size_t errlen)
{
    bos = bos ? bos : "";
    eos = eos ? eos : "";
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
    strbuf b = { 0 };
    bool ok = true;
    switch (f) {
    case CHAT_LLAMA2: ok = llama2(&b, m, n, bos, eos, err, errlen); break;
    case CHAT_LLAMA3: llama3(&b, m, n, bos, gen); break;
    case CHAT_MISTRAL: ok = mistral(&b, m, n, bos, eos, err, errlen); break;
    case CHAT_GEMMA: ok = gemma(&b, m, n, bos, gen, err, errlen); break;
    case CHAT_PHI3: phi3(&b, m, n, eos, gen); break;
    case CHAT_DEEPSEEK: deepseek(&b, m, n, bos, gen); break;
    case CHAT_GRANITE: granite(&b, m, n, gen); break;
    case CHAT_DEEPSEEK2: deepseek2(&b, m, n, bos, eos, gen); break;
    case CHAT_LLAMA4: llama4(&b, m, n, bos, gen); break;
    case CHAT_GLM4: glm4(&b, m, n, gen); break;
    case CHAT_HUNYUAN: hunyuan(&b, m, n); break;
    case CHAT_KIMI_K2: kimi_k2(&b, m, n, gen); break;
    case CHAT_GPT_OSS: gpt_oss(&b, m, n, gen); break;
    case CHAT_BAILING: bailing(&b, m, n, gen, false, false); break;
    case CHAT_BAILING_THINK: bailing(&b, m, n, gen, false, true); break;
    case CHAT_BAILING2: bailing(&b, m, n, gen, true, false); break;
    case CHAT_DOTS1: dots1(&b, m, n, gen); break;
    case CHAT_MINIMAX_M2: { /* the whole template with no tools: one renderer for both */
        strbuf_free(&b);
        const chat_tools_opts o = { .identity = default_system };
        return chat_template_render_minimax_tools(m, n, NULL, 0, &o, gen, err, errlen);
    }
    case CHAT_CHATML:
    default: chatml(&b, m, n, default_system, gen); break;
    }
    if (!ok) { strbuf_free(&b); return NULL; }
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}

chat_tools chat_template_tools(const char *t)
{
    if (t && strstr(t, "<|im_start|>") && strstr(t, "'<tool_call>\\n{\"name\": \"'") &&
        strstr(t, "tool_call.arguments is string") && strstr(t, "<tool_response>")) {
        if (strstr(t, "ns.last_query_index"))
            return strstr(t, "enable_thinking") || !strstr(t, "'<|im_start|>assistant\\n<think>\\n'") ? CHAT_TOOLS_QWEN3
                                                                                                    : CHAT_TOOLS_QWEN3_THINKING;
        if (!strstr(t, "<think>") && !strstr(t, "reasoning_content")) return CHAT_TOOLS_QWEN3_INSTRUCT;
    }
    if (t && strstr(t, "<|channel|>") && strstr(t, "render_tool_namespace") && strstr(t, "to=assistant"))
        return CHAT_TOOLS_HARMONY;
    if (t && strstr(t, "<|im_start|>") && strstr(t, "<function=") && strstr(t, "<parameter=") &&
        strstr(t, "<tool_response>"))
        return CHAT_TOOLS_QWEN3_CODER;
    if (t && strstr(t, "[gMASK]<sop>") && strstr(t, "<arg_key>") && strstr(t, "<|observation|>") &&
        strstr(t, "last_user_index"))
        return CHAT_TOOLS_GLM45;
    if (t && strstr(t, "]~b]ai") && strstr(t, "<minimax:tool_call>") && strstr(t, "<response>"))
        return CHAT_TOOLS_MINIMAX;
    if (t && strstr(t, "<|im_middle|>") && strstr(t, "tool_declare") && strstr(t, "<|tool_calls_section_begin|>") &&
        strstr(t, "## Return of") && strstr(t, "<think></think>") && strstr(t, "reasoning_content"))
        return CHAT_TOOLS_KIMI_K2;
    if (t && strstr(t, "<|im_middle|>") && strstr(t, "tool_declare") && strstr(t, "# Tools") &&
        strstr(t, "## Return of") && strstr(t, "<|tool_calls_section_begin|>") && !strstr(t, "<think>")) {
        if (strstr(t, "{% if (loop.last and add_generation_prompt) or not loop.last %}<|im_end|>{% endif %}"))
            return CHAT_TOOLS_KIMI_K2_0905;
        if (strstr(t, "<|im_system|>{{role_name}}<|im_middle|>\n  {% endif %}")) return CHAT_TOOLS_KIMI_K2_0711;
    }
    if (t && strstr(t, "<" DS_BAR "tool" DS_SP "output" DS_SP "begin" DS_BAR ">") && strstr(t, "is_last_user") &&
        strstr(t, DS_ASSISTANT "</think>"))
        return CHAT_TOOLS_DEEPSEEK_V31;
    if (t && strstr(t, "<|header_start|>") && strstr(t, "tools_in_user_message") && strstr(t, "<|python_start|>"))
        return CHAT_TOOLS_LLAMA4;
    if (t && strstr(t, "<|start_header_id|>") && strstr(t, "tools_in_user_message") &&
        strstr(t, "Cutting Knowledge Date: December 2023"))
        return strstr(t, "strftime_now") ? CHAT_TOOLS_LLAMA32 : CHAT_TOOLS_LLAMA31;
    if (t && strstr(t, "[AVAILABLE_TOOLS] [") && strstr(t, "[TOOL_CALLS] [") && strstr(t, "[TOOL_RESULTS] {") &&
        strstr(t, "tool_call.id|length != 9") && strstr(t, "\"[INST] \" + message[\"content\"] + \"[/INST]\""))
        return strstr(t, "(message == user_messages[-1]) and system_message") ? CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM
                                                                               : CHAT_TOOLS_MISTRAL_V3;
    return CHAT_TOOLS_NONE;
}

chat_tools chat_tools_from_name(const char *name)
{
    if (name && !strcmp(name, "qwen3")) return CHAT_TOOLS_QWEN3;
    if (name && !strcmp(name, "qwen3-thinking")) return CHAT_TOOLS_QWEN3_THINKING;
    if (name && !strcmp(name, "qwen3-instruct")) return CHAT_TOOLS_QWEN3_INSTRUCT;
    if (name && !strcmp(name, "gpt-oss")) return CHAT_TOOLS_HARMONY;
    if (name && !strcmp(name, "qwen3-coder")) return CHAT_TOOLS_QWEN3_CODER;
    if (name && !strcmp(name, "glm-4.5")) return CHAT_TOOLS_GLM45;
    if (name && !strcmp(name, "minimax-m2")) return CHAT_TOOLS_MINIMAX;
    if (name && !strcmp(name, "kimi-k2-thinking")) return CHAT_TOOLS_KIMI_K2;
    if (name && !strcmp(name, "deepseek-v3.1")) return CHAT_TOOLS_DEEPSEEK_V31;
    if (name && !strcmp(name, "llama4")) return CHAT_TOOLS_LLAMA4;
    if (name && (!strcmp(name, "llama3.1") || !strcmp(name, "llama3.3"))) return CHAT_TOOLS_LLAMA31;
    if (name && !strcmp(name, "llama3.2")) return CHAT_TOOLS_LLAMA32;
    if (name && !strcmp(name, "mistral-v3")) return CHAT_TOOLS_MISTRAL_V3;
    if (name && !strcmp(name, "mistral-v3-user-system")) return CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM;
    if (name && !strcmp(name, "kimi-k2-0905")) return CHAT_TOOLS_KIMI_K2_0905;
    if (name && !strcmp(name, "kimi-k2-0711")) return CHAT_TOOLS_KIMI_K2_0711;
    return CHAT_TOOLS_NONE;
}

const char *chat_tools_name(chat_tools t)
{
    return t == CHAT_TOOLS_QWEN3 ? "qwen3" : t == CHAT_TOOLS_QWEN3_THINKING ? "qwen3-thinking"
         : t == CHAT_TOOLS_QWEN3_INSTRUCT ? "qwen3-instruct" : t == CHAT_TOOLS_HARMONY ? "gpt-oss"
         : t == CHAT_TOOLS_QWEN3_CODER ? "qwen3-coder" : t == CHAT_TOOLS_GLM45 ? "glm-4.5"
         : t == CHAT_TOOLS_MINIMAX ? "minimax-m2" : t == CHAT_TOOLS_KIMI_K2 ? "kimi-k2-thinking"
         : t == CHAT_TOOLS_DEEPSEEK_V31 ? "deepseek-v3.1" : t == CHAT_TOOLS_LLAMA4 ? "llama4"
         : t == CHAT_TOOLS_LLAMA31 ? "llama3.1" : t == CHAT_TOOLS_LLAMA32 ? "llama3.2"
         : t == CHAT_TOOLS_MISTRAL_V3 ? "mistral-v3" : t == CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM ? "mistral-v3-user-system"
         : t == CHAT_TOOLS_KIMI_K2_0905 ? "kimi-k2-0905" : t == CHAT_TOOLS_KIMI_K2_0711 ? "kimi-k2-0711"
                                                                                     : "none";
}

static bool starts_with(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static bool ends_with(const char *s, const char *p)
{
    size_t n = strlen(s), k = strlen(p);
    return n >= k && !memcmp(s + n - k, p, k);
}

/* Qwen3's template, statement by statement. */
/* An assistant's calls as Qwen3's <tool_call> blocks, a line break before each but a first one that
 * opens the message. */
static void qwen3_calls(strbuf *b, const chat_msg *x, bool after_text)
{
    for (size_t j = 0; j < x->n_calls; j++) {
        if (j > 0 || after_text) strbuf_puts(b, "\n");
        strbuf_printf(b, "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", x->calls[j].name,
                      x->calls[j].arguments);
    }
}

/* Qwen3's template, statement by statement, and its 2507 releases': the
 * Thinking ones always open the answer with <think> (enable_thinking is not
 * read), the Instruct ones render assistants' text as it is (no reasoning,
 * no last-query scan). */
typedef enum qwen3_kind { QWEN3_HYBRID, QWEN3_THINKING, QWEN3_INSTRUCT } qwen3_kind;

static void qwen3(strbuf *b, const chat_msg *m, size_t n, const char *const *tools, size_t n_tools, bool gen,
                  bool no_thinking, qwen3_kind kind)
{
    bool sys0 = n && chat_is(&m[0], "system");
    if (n_tools) {
        strbuf_puts(b, "<|im_start|>system\n");
        if (sys0) strbuf_printf(b, "%s\n\n", m[0].content);
        strbuf_puts(b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                       "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
        for (size_t i = 0; i < n_tools; i++) strbuf_printf(b, "\n%s", tools[i]);
        strbuf_puts(b, "\n</tools>\n\nFor each function call, return a json object with function name and "
                       "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
                       "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
    } else if (sys0) {
        strbuf_printf(b, "<|im_start|>system\n%s<|im_end|>\n", m[0].content);
    }
    /* the last user message that is not a tool response wrapped by hand */
    size_t last_query = n ? n - 1 : 0;
    for (size_t k = n; k-- > 0;) {
        if (chat_is(&m[k], "user") &&
            !(starts_with(m[k].content, "<tool_response>") && ends_with(m[k].content, "</tool_response>"))) {
            last_query = k;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const chat_msg *x = &m[i];
        if (chat_is(x, "user") || (chat_is(x, "system") && i > 0)) {
            strbuf_printf(b, "<|im_start|>%s\n%s<|im_end|>\n", x->role, x->content);
        } else if (chat_is(x, "assistant") && kind == QWEN3_INSTRUCT) {
            strbuf_printf(b, "<|im_start|>assistant\n%s", x->content);
            qwen3_calls(b, x, *x->content != 0);
            strbuf_puts(b, "<|im_end|>\n");
        } else if (chat_is(x, "assistant")) {
            const char *content = x->content;
            strbuf reasoning = { 0 };
            const char *close = x->reasoning ? NULL : strstr(content, "</think>");
            if (x->reasoning) strbuf_puts(&reasoning, x->reasoning); /* given apart: the content stays whole */
            if (close) {
                /* reasoning: before the first </think>, rstrip '\n', after the last <think>, lstrip '\n' */
                size_t rn = (size_t)(close - content);
                while (rn && content[rn - 1] == '\n') rn--;
                const char *r = content, *o;
                for (const char *p = content; (o = strstr(p, "<think>")) && o + 7 <= content + rn; p = o + 1) r = o + 7;
                while (r < content + rn && *r == '\n') r++;
                strbuf_add(&reasoning, r, (size_t)(content + rn - r));
                const char *last = close, *q;
                while ((q = strstr(last + 1, "</think>"))) last = q;
                content = last + 8;
                while (*content == '\n') content++;
            }
            if (i > last_query && (i == n - 1 || reasoning.len)) {
                strbuf_puts(b, "<|im_start|>assistant\n<think>\n");
                chat_add_strip_nl(b, reasoning.data ? reasoning.data : "", reasoning.len);
                strbuf_puts(b, "\n</think>\n\n");
                while (*content == '\n') content++;
                strbuf_puts(b, content);
            } else {
                strbuf_printf(b, "<|im_start|>assistant\n%s", content);
            }
            strbuf_free(&reasoning);
            qwen3_calls(b, x, *content != 0);
            strbuf_puts(b, "<|im_end|>\n");
        } else if (chat_is(x, "tool")) {
            if (i == 0 || !chat_is(&m[i - 1], "tool")) strbuf_puts(b, "<|im_start|>user");
            strbuf_printf(b, "\n<tool_response>\n%s\n</tool_response>", x->content);
            if (i == n - 1 || !chat_is(&m[i + 1], "tool")) strbuf_puts(b, "<|im_end|>\n");
        }
    }
    if (gen)
        strbuf_puts(b, kind == QWEN3_THINKING ? "<|im_start|>assistant\n<think>\n"
                       : kind == QWEN3_HYBRID && no_thinking ? "<|im_start|>assistant\n<think>\n\n</think>\n\n"
                                                             : "<|im_start|>assistant\n");
}

char *chat_template_render_tools(chat_tools style, const chat_msg *m, size_t n, const char *const *tools,
                                 size_t n_tools, const chat_tools_opts *o, bool gen, char *err, size_t errlen)
{
    if (style == CHAT_TOOLS_NONE) {
        snprintf(err, errlen, "this chat template has no tool format strata renders");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!chat_is(&m[i], "system") && !chat_is(&m[i], "user") && !chat_is(&m[i], "assistant") && !chat_is(&m[i], "tool")) {
            snprintf(err, errlen, "messages[%zu].role: '%s' is not system, user, assistant or tool", i, m[i].role);
            return NULL;
        }
    }
    if (style == CHAT_TOOLS_HARMONY) return chat_template_render_harmony_tools(m, n, tools, n_tools, o, gen, err, errlen);
    if (style == CHAT_TOOLS_QWEN3_CODER) return chat_template_render_qwen3_coder(m, n, tools, n_tools, gen, err, errlen);
    if (style == CHAT_TOOLS_GLM45) return chat_template_render_glm45(m, n, tools, n_tools, o, gen, err, errlen);
    if (style == CHAT_TOOLS_MINIMAX) return chat_template_render_minimax_tools(m, n, tools, n_tools, o, gen, err, errlen);
    if (style == CHAT_TOOLS_KIMI_K2) return chat_template_render_kimi_k2(m, n, tools, n_tools, gen, err, errlen);
    if (style == CHAT_TOOLS_KIMI_K2_0905 || style == CHAT_TOOLS_KIMI_K2_0711)
        return chat_template_render_kimi_k2_instruct(m, n, tools, n_tools, style == CHAT_TOOLS_KIMI_K2_0711, gen, err,
                                                     errlen);
    if (style == CHAT_TOOLS_DEEPSEEK_V31) return chat_template_render_deepseek_v31(m, n, tools, n_tools, o, gen, err, errlen);
    if (style == CHAT_TOOLS_LLAMA4) return chat_template_render_llama4(m, n, tools, n_tools, o, gen, err, errlen);
    if (style == CHAT_TOOLS_LLAMA31 || style == CHAT_TOOLS_LLAMA32)
        return chat_template_render_llama31(m, n, tools, n_tools, o, style == CHAT_TOOLS_LLAMA32, gen, err, errlen);
    if (style == CHAT_TOOLS_MISTRAL_V3 || style == CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM)
        return chat_template_render_mistral_v3(m, n, tools, n_tools, o, style == CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM,
                                               err, errlen);
    strbuf b = { 0 };
    qwen3(&b, m, n, tools, n_tools, gen, o && o->no_thinking,
          style == CHAT_TOOLS_QWEN3_THINKING ? QWEN3_THINKING : style == CHAT_TOOLS_QWEN3_INSTRUCT ? QWEN3_INSTRUCT
                                                                                                  : QWEN3_HYBRID);
    char *out = strbuf_take(&b);
    if (!out) snprintf(err, errlen, "out of memory rendering the chat template");
    return out;
}
