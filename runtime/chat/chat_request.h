/* chat_request.h: an API request's conversation rendered into the prompt
 * text the model reads: the one path `strata serve` and `strata template`
 * share, so what the command shows is what the server sends.
 *
 * Contract: chat_request_render() returns the malloc'd prompt, or NULL with
 * e filled (400 and the field: tools for a template without a tool format,
 * the message whose role or calls the template cannot place). A request
 * with tools, a "tool" message or an assistant's tool calls is rendered by
 * the template's tool format (chat_template_render_tools); so is every
 * request when the pack's template is one of those whole templates
 * (Qwen3's, gpt-oss's), so that a conversation reads the same with tools
 * or without; any other by its family's layout. The request's
 * reasoning_effort (gpt-oss) and enable_thinking (Qwen3) go to them.
 * A request that forces a tool call (force_tool) gets the call's opening
 * at the prompt's end (tool_call_prefix(), through the name when one is
 * named), after "</think>\n\n" when the prompt opened a reasoning block;
 * refused (400, tool_choice) with gpt-oss's harmony and with JSON mode. */
#ifndef STRATA_CHAT_REQUEST_H
#define STRATA_CHAT_REQUEST_H

#include "runtime/chat/api_request.h"
#include "runtime/chat/chat_template.h"
#include "runtime/chat/tool_calls.h"

typedef struct chat_setup {
    chat_family family;
    chat_tools  tools;
    const char *bos, *eos;      /* the tokenizer's BOS and EOS text */
    const char *default_system; /* chat_template_default_system() or MiniMax's identity, or NULL */
    const char *date;           /* gpt-oss's tool layout: "Current date" (YYYY-MM-DD); NULL: today */
} chat_setup;

/* From a --chat-template name (wins when given) or the template's text: the
 * family (chatml when unknown or absent: *fell_back set), the tool format
 * and the default system prompt (malloc'd into *owned, or NULL). bos and
 * eos (and date) are left to the caller. */
void chat_setup_detect(chat_setup *cs, const char *tmpl, const char *name, char **owned, bool *fell_back);

/* Whether the request needs the template's tool format. */
bool chat_request_has_tools(const api_request *r);
char *chat_request_render(const chat_setup *cs, const api_request *r, api_error *e);

#endif
