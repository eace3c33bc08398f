/* chat_template.h: conversations -> prompt text, for the chat template
 * families models actually ship, rendered in C.
 *
 * We do not run Jinja. A pack's tokenizer.chat_template is recognised by
 * markers only its family uses, and the family's fixed layout is rendered
 * byte for byte as the Jinja template renders the same conversation (the
 * tests hold hand-written expected strings, cross-checked once against
 * jinja2). A template we do not recognise falls back to chatml and the
 * server warns at start: a silent wrong layout would give a model that
 * "works" but answers badly.
 *
 * Contract:
 *  - Roles are "system", "user", "assistant" (the caller maps OpenAI's
 *    "developer" to system).
 *  - Where the original template raises (roles not alternating, a system
 *    message it cannot place), chat_template_render() returns NULL and says
 *    why in err, so the server answers 400 instead of inventing a layout.
 *    Exception: mistral and gemma have no system slot; like their newer
 *    templates, a leading system message is put before the first user turn
 *    followed by a blank line.
 *  - chatml may carry a default system prompt (Qwen's templates do); it is
 *    read out of the template text by chat_template_default_system().
 *  - The result is malloc'd and NUL-terminated; it includes the BOS text
 *    where the family's template writes bos_token. */
#ifndef STRATA_CHAT_TEMPLATE_H
#define STRATA_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum chat_family {
    CHAT_UNKNOWN = 0,
    CHAT_CHATML,
    CHAT_LLAMA2,
    CHAT_LLAMA3,
    CHAT_MISTRAL,
    CHAT_GEMMA,
    CHAT_PHI3,
    CHAT_DEEPSEEK,
    CHAT_GRANITE,
    CHAT_DEEPSEEK2,
    CHAT_LLAMA4,
    CHAT_GLM4,
    CHAT_HUNYUAN,
    CHAT_KIMI_K2,
    CHAT_GPT_OSS,
    CHAT_BAILING,
    CHAT_BAILING2,
    CHAT_MINIMAX_M2,
    CHAT_BAILING_THINK,
    CHAT_DOTS1,
} chat_family;

typedef struct chat_msg {
    const char *role;
    const char *content;
} chat_msg;

/* The family a template's text belongs to, CHAT_UNKNOWN if none. */
chat_family chat_template_detect(const char *tmpl);
/* "chatml", "qwen" (= chatml), "llama2", "llama-2", "llama3", "llama-3",
 * "mistral", "gemma", "phi3", "phi-3", "deepseek", "deepseek3" (V3's layout), "deepseek2" (DeepSeek
 * LLM, MoE and V2's "User: ... Assistant:"), "granite", "llama4";
 * CHAT_UNKNOWN otherwise. */
chat_family chat_family_from_name(const char *name);
const char *chat_family_name(chat_family f);

/* The system prompt a chatml template inserts when the conversation has
 * none (malloc'd), or NULL. */
char *chat_template_default_system(const char *tmpl);
/* MiniMax-M2's default system message, its template's model_identity
 * string (the model's name differs by release), or NULL. malloc'd. */
char *chat_template_minimax_identity(const char *tmpl);
/* A default system prompt the template builds at render time (Granite 3.1
 * and later: today's date, IBM's wording), which we do not insert: the
 * server warns, and a conversation that brings its own system message is
 * rendered exactly. */
bool chat_template_has_dynamic_system(const char *tmpl);

char *chat_template_render(chat_family f, const chat_msg *msgs, size_t n, const char *bos,
                           const char *eos, const char *default_system,
                           bool add_generation_prompt, char *err, size_t errlen);

#endif
