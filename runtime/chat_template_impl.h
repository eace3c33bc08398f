/* chat_template_impl.h: what the whole-template renderers
 * (chat_template_*.c) share. Not for use outside them.
 *
 * Contract:
 *  - chat_call_args() returns a call's arguments as the JSON object the
 *    templates iterate (a new reference), or NULL with err saying which
 *    message and which template needs an object.
 *  - chat_add_arg() writes one argument value as GLM's and MiniMax's
 *    templates do: a string as it is, anything else as JSON (Qwen3-Coder's
 *    str() of it is pyjson_add_str()).
 *  - chat_add_strip() is Python's str.strip() on ASCII blanks (Jinja's
 *    trim), chat_add_strip_nl() str.strip('\n'). */
#ifndef STRATA_CHAT_TEMPLATE_IMPL_H
#define STRATA_CHAT_TEMPLATE_IMPL_H

#include <jansson.h>
#include <stddef.h>
#include <string.h>

#include "runtime/chat_template.h"

#include <stdbool.h>

#include "runtime/strbuf.h"

json_t *chat_call_args(const chat_call *c, size_t msg, const char *tmpl, char *err, size_t errlen);
void chat_add_arg(strbuf *b, const json_t *v);
void chat_add_strip(strbuf *b, const char *s, size_t n);
void chat_add_strip_nl(strbuf *b, const char *s, size_t n);

static inline bool chat_is(const chat_msg *m, const char *role) { return !strcmp(m->role, role); }

#endif
