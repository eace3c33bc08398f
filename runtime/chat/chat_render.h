/* chat_render.h: what the template renderers (chat_layouts.c,
 * chat_template_*.c) share, defined in chat_render.c beneath them so that
 * the dispatcher (chat_template.c) is the only file above the renderers.
 * Not for use outside runtime/chat/.
 *
 * Contract:
 *  - chat_add_call_args() writes a call's arguments one by one, each as
 *    key_open KEY key_close VALUE value_close, the value as GLM's and
 *    MiniMax's templates write it (a string as it is, anything else as
 *    JSON) or, python_str, as Qwen3-Coder's str() (pyjson_add_str()); -1
 *    with err saying which message and which template when the arguments
 *    are not a JSON object (the templates iterate their items).
 *  - chat_add_strip() is Python's str.strip() on ASCII blanks (Jinja's
 *    trim), chat_add_strip_nl() str.strip('\n').
 *  - chat_add_tojson_text() writes a JSON text as tojson writes the value it
 *    holds (a call's arguments given as text, rendered as an object), text
 *    that is not JSON as a JSON string. */
#ifndef STRATA_CHAT_RENDER_H
#define STRATA_CHAT_RENDER_H

#include <jansson.h>
#include <stddef.h>
#include <string.h>

#include "runtime/chat/chat_template.h"

#include <stdbool.h>

#include "runtime/util/strbuf.h"

typedef struct chat_arg_tags {
    const char *tmpl; /* the template's name, for the error */
    const char *key_open, *key_close, *value_close;
    bool        python_str;
} chat_arg_tags;

int chat_add_call_args(strbuf *b, const chat_call *c, size_t msg, const chat_arg_tags *t, char *err, size_t errlen);
void chat_add_strip(strbuf *b, const char *s, size_t n);
void chat_add_strip_nl(strbuf *b, const char *s, size_t n);
void chat_add_tojson_text(strbuf *b, const char *text);

/* The releases a renderer draws (chat_format.variant); 0 is each one's first. */
enum {
    CHAT_VARIANT_QWEN3_HYBRID = 0, CHAT_VARIANT_QWEN3_THINKING, CHAT_VARIANT_QWEN3_INSTRUCT, /* qwen3 */
};
enum { CHAT_VARIANT_BAILING = 0, CHAT_VARIANT_BAILING_V2, CHAT_VARIANT_BAILING_THINKING };      /* bailing */
enum { CHAT_VARIANT_KIMI_0905 = 0, CHAT_VARIANT_KIMI_0711 };                                    /* kimi_k2_instruct */
enum { CHAT_VARIANT_LLAMA31 = 0, CHAT_VARIANT_LLAMA32 };                                        /* llama31 */
enum { CHAT_VARIANT_MISTRAL_V3 = 0, CHAT_VARIANT_MISTRAL_V3_USER_SYSTEM };                      /* mistral_v3 */

/* The renderers are declared beside their rows in chat_template.c (and each
 * in its own file, so that the compiler checks it against its row's type):
 * adding one touches no header. This one is also a layout's (MiniMax-M2's,
 * chat_layouts.c renders the conversation alone through it). */
chat_render_fn chat_template_render_minimax_tools;

/* DeepSeek's markers: U+FF5C bars, U+2581 for spaces (kept as separate
 * literals: a hex escape would swallow the letters that follow). */
#define DS_BAR "\xef\xbd\x9c"
#define DS_SP "\xe2\x96\x81"
#define DS_USER "<" DS_BAR "User" DS_BAR ">"
#define DS_ASSISTANT "<" DS_BAR "Assistant" DS_BAR ">"
#define DS_EOS "<" DS_BAR "end" DS_SP "of" DS_SP "sentence" DS_BAR ">"

static inline bool chat_is(const chat_msg *m, const char *role) { return !strcmp(m->role, role); }

#endif
