/* chat_layouts.c: the conversation alone in each family's fixed layout, as
 * llama.cpp lays it out (its built-in templates, used without --jinja): one
 * chat_layout_fn per family, named by its row in chat_template.c. See
 * chat_template.h for the contract. */
#include "runtime/chat/chat_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/util/strbuf.h"

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

chat_layout_fn chat_layout_chatml;
bool chat_layout_chatml(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *def_sys = a->default_system;
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    if (def_sys && (n == 0 || !chat_is(&m[0], "system")))
        strbuf_printf(b, "<|im_start|>system\n%s<|im_end|>\n", def_sys);
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|im_start|>%s\n%s<|im_end|>\n", m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|im_start|>assistant\n");
    return true;
}

chat_layout_fn chat_layout_llama2;
bool chat_layout_llama2(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos, *eos = a->eos;
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

chat_layout_fn chat_layout_mistral;
bool chat_layout_mistral(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos, *eos = a->eos;
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

chat_layout_fn chat_layout_llama3;
bool chat_layout_llama3(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos;
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++) {
        if (i == 0) strbuf_puts(b, bos);
        strbuf_printf(b, "<|start_header_id|>%s<|end_header_id|>\n\n", m[i].role);
        add_trimmed(b, m[i].content);
        strbuf_puts(b, "<|eot_id|>");
    }
    if (gen) strbuf_puts(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return true;
}

/* Llama 4: only a leading system message is trimmed; every turn ends <|eot|>. */
chat_layout_fn chat_layout_llama4;
bool chat_layout_llama4(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos;
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
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
    return true;
}

chat_layout_fn chat_layout_gemma;
bool chat_layout_gemma(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos;
    const bool gen = a->gen;
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

chat_layout_fn chat_layout_phi3;
bool chat_layout_phi3(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *eos = a->eos;
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|%s|>\n%s<|end|>\n", m[i].role, m[i].content);
    strbuf_puts(b, gen ? "<|assistant|>\n" : eos);
    return true;
}

/* IBM Granite 3.0: every turn is <|start_of_role|>ROLE<|end_of_role|>TEXT<|end_of_text|> and a
 * newline, in order; the generation prompt comes after the last message. */
chat_layout_fn chat_layout_granite;
bool chat_layout_granite(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|start_of_role|>%s<|end_of_role|>%s<|end_of_text|>\n", m[i].role, m[i].content);
    if (gen && n) strbuf_puts(b, "<|start_of_role|>assistant<|end_of_role|>");
    return true;
}

/* DeepSeek LLM, MoE and V2: every message in place, system ones as bare
 * paragraphs; an assistant turn ends with the EOS text. */
chat_layout_fn chat_layout_deepseek2;
bool chat_layout_deepseek2(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos, *eos = a->eos;
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    strbuf_puts(b, bos);
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "user")) strbuf_printf(b, "User: %s\n\n", m[i].content);
        else if (chat_is(&m[i], "assistant")) strbuf_printf(b, "Assistant: %s%s", m[i].content, eos);
        else strbuf_printf(b, "%s\n\n", m[i].content);
    }
    if (gen) strbuf_puts(b, "Assistant:");
    return true;
}


/* DeepSeek-V3 gathers every system message first, joined by blank lines. */
chat_layout_fn chat_layout_deepseek;
bool chat_layout_deepseek(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const char *bos = a->bos;
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
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
    return true;
}

/* GLM-4 (llama.cpp's chatglm4, which it also uses for GLM-4.5 without
 * --jinja): every message in place after its role tag and a newline. */
chat_layout_fn chat_layout_glm4;
bool chat_layout_glm4(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    strbuf_puts(b, "[gMASK]<sop>");
    for (size_t i = 0; i < n; i++) strbuf_printf(b, "<|%s|>\n%s", m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|assistant|>\n");
    return true;
}

/* Hunyuan-A13B (llama.cpp's hunyuan-moe): a system or user turn opens with
 * <|startoftext|> and closes with its role's marker; an assistant turn is
 * its text and <|eos|>. The closing <|extra_0|> already asks for the
 * answer, so there is no generation prompt. */
chat_layout_fn chat_layout_hunyuan;
bool chat_layout_hunyuan(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    (void)a;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "system")) strbuf_printf(b, "<|startoftext|>%s<|extra_4|>", m[i].content);
        else if (chat_is(&m[i], "assistant")) strbuf_printf(b, "%s<|eos|>", m[i].content);
        else strbuf_printf(b, "<|startoftext|>%s<|extra_0|>", m[i].content);
    }
    return true;
}

/* Kimi K2 (llama.cpp's kimi-k2): <|im_ROLE|>ROLE<|im_middle|>TEXT<|im_end|>
 * per message. Moonshot's own template adds a default system prompt when a
 * request has none; llama.cpp's layout, which this is, does not. */
chat_layout_fn chat_layout_kimi_k2;
bool chat_layout_kimi_k2(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|im_%s|>%s<|im_middle|>%s<|im_end|>", m[i].role, m[i].role, m[i].content);
    if (gen) strbuf_puts(b, "<|im_assistant|>assistant<|im_middle|>");
    return true;
}

/* gpt-oss (llama.cpp's gpt-oss layout, harmony without its preamble):
 * <|start|>ROLE<|message|>TEXT, closed by <|return|> after an assistant
 * turn and <|end|> after any other; the answer opens with
 * <|start|>assistant and the model names its channel itself. OpenAI's own
 * template also writes a system preamble (date, reasoning level, the valid
 * channels) and turns a system message into a developer one; llama.cpp's
 * layout, which this is, does not. */
chat_layout_fn chat_layout_gpt_oss;
bool chat_layout_gpt_oss(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++)
        strbuf_printf(b, "<|start|>%s<|message|>%s%s", m[i].role, m[i].content,
                      strcmp(m[i].role, "assistant") ? "<|end|>" : "<|return|>");
    if (gen) strbuf_puts(b, "<|start|>assistant");
    return true;
}

/* dots.llm1 (llama.cpp's dots1): <|system|>S<|endofsystem|>,
 * <|userprompt|>U<|endofuserprompt|>, <|response|>A<|endofresponse|>. */
chat_layout_fn chat_layout_dots1;
bool chat_layout_dots1(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const bool gen = a->gen;
    (void)err;
    (void)errlen;
    for (size_t i = 0; i < n; i++) {
        if (chat_is(&m[i], "system")) strbuf_printf(b, "<|system|>%s<|endofsystem|>", m[i].content);
        else if (chat_is(&m[i], "user")) strbuf_printf(b, "<|userprompt|>%s<|endofuserprompt|>", m[i].content);
        else strbuf_printf(b, "<|response|>%s<|endofresponse|>", m[i].content);
    }
    if (gen) strbuf_puts(b, "<|response|>");
    return true;
}

/* Ling (llama.cpp's bailing, bailing-think and bailing2): <role>ROLE</role>TEXT
 * with the roles SYSTEM, HUMAN and ASSISTANT; the thinking v1 opens the
 * answer with <think>; Ling 2.0 closes each message with <|role_end|> and,
 * as its template does, writes the system message "detailed thinking off"
 * when a conversation brings none. */
chat_layout_fn chat_layout_bailing;
bool chat_layout_bailing(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const bool gen = a->gen, v2 = a->variant == CHAT_VARIANT_BAILING_V2, think = a->variant == CHAT_VARIANT_BAILING_THINKING;
    (void)err;
    (void)errlen;
    const char *end = v2 ? "<|role_end|>" : "";
    if (v2 && (n == 0 || strcmp(m[0].role, "system")))
        strbuf_printf(b, "<role>SYSTEM</role>detailed thinking off%s", end);
    for (size_t i = 0; i < n; i++) {
        const char *r = m[i].role;
        const char *role = !strcmp(r, "system") ? "SYSTEM" : !strcmp(r, "user") ? "HUMAN" : "ASSISTANT";
        strbuf_printf(b, "<role>%s</role>%s%s", role, m[i].content, end);
    }
    if (gen) strbuf_puts(b, think ? "<role>ASSISTANT</role><think>" : "<role>ASSISTANT</role>");
    return true;
}

/* MiniMax-M2: its whole template with no tools (one renderer for both). */
chat_layout_fn chat_layout_minimax;
bool chat_layout_minimax(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err, size_t errlen)
{
    const chat_tools_opts o = { .identity = a->default_system };
    char *text = chat_template_render_minimax_tools(m, n, NULL, 0, &o, 0, a->gen, err, errlen);
    if (!text) return false;
    strbuf_puts(b, text);
    free(text);
    return true;
}
