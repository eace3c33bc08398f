/* chat_template_impl.h: what the whole-template renderers
 * (chat_template_*.c) share. Not for use outside them.
 *
 * Contract: chat_call_args() returns a call's arguments as the JSON object
 * the templates iterate (a new reference), or NULL with err saying which
 * message and which template needs an object. */
#ifndef STRATA_CHAT_TEMPLATE_IMPL_H
#define STRATA_CHAT_TEMPLATE_IMPL_H

#include <jansson.h>
#include <stddef.h>

#include "runtime/chat_template.h"

json_t *chat_call_args(const chat_call *c, size_t msg, const char *tmpl, char *err, size_t errlen);

#endif
