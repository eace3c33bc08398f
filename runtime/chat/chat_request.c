/* chat_request.c: see chat_request.h. */
#include "runtime/chat/chat_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat/tool_calls.h"

static char *fail(api_error *e, const char *param, const char *msg)
{
    e->status = 400;
    snprintf(e->param, sizeof e->param, "%s", param);
    snprintf(e->message, sizeof e->message, "%s", msg);
    return NULL;
}

/* tool_choice forcing a call: the call's opening (through the name, when one is named) after the
 * rendered prompt, and before it the close of a reasoning block the prompt opened. */
static char *force_call(const chat_setup *cs, const api_request *r, char *text, api_error *e)
{
    const char *no_forcing = chat_format_of_tools(cs->tools)->no_forcing; /* gpt-oss's harmony */
    const char *why = no_forcing                                   ? no_forcing
                    : r->json_mode                                 ? "JSON mode and a forced tool call do not go together"
                    : r->force_name && strlen(r->force_name) > 200 ? "a tool name of more than 200 bytes"
                                                                   : NULL;
    char *pre = why ? NULL : tool_call_prefix(chat_tools_format(cs->tools), r->force_name);
    size_t tl = strlen(text);
    while (tl && (text[tl - 1] == '\n' || text[tl - 1] == ' ')) tl--;
    const char *close = tl >= 7 && !memcmp(text + tl - 7, "<think>", 7) ? "</think>\n\n" : "";
    char *t = pre ? malloc(strlen(text) + strlen(close) + strlen(pre) + 1) : NULL;
    if (t) sprintf(t, "%s%s%s", text, close, pre);
    free(pre);
    free(text);
    if (!t) {
        fail(e, "tool_choice", why ? why : "out of memory");
        if (!why) e->status = 500;
    }
    return t;
}

void chat_setup_detect(chat_setup *cs, const char *tmpl, const char *name, char **owned, bool *fell_back)
{
    *cs = (chat_setup){ 0 };
    *owned = NULL;
    *fell_back = false;
    if (name) {
        cs->family = chat_family_from_name(name);
        cs->tools = chat_tools_from_name(name);
        cs->default_system = NULL;
        return;
    }
    cs->family = chat_template_detect(tmpl);
    cs->tools = chat_template_tools(tmpl);
    if (cs->family == CHAT_UNKNOWN) {
        *fell_back = true;
        cs->family = CHAT_CHATML;
    }
    char *(*default_system)(const char *) = chat_format_of_family(cs->family)->default_system;
    if (default_system) *owned = default_system(tmpl);
    cs->default_system = *owned;
}

bool chat_request_has_tools(const api_request *r)
{
    if (r->n_tools) return true;
    for (size_t i = 0; i < r->n_msgs; i++)
        if (r->msgs[i].n_calls || !strcmp(r->msgs[i].role, "tool")) return true;
    return false;
}

char *chat_request_render(const chat_setup *cs, const api_request *r, api_error *e)
{
    memset(e, 0, sizeof *e);
    bool tools = chat_request_has_tools(r);
    if (tools && cs->tools == CHAT_TOOLS_NONE) {
        char msg[320];
        snprintf(msg, sizeof msg,
                 "this model's chat template (%s) has no tool format strata renders; tool calls work with "
                 "the templates of Qwen3, Qwen3-Coder, GLM-4.5/4.6, MiniMax-M2, Kimi K2, DeepSeek V3.1, Llama 3.1-3.3 and 4, Mistral 7B v0.3 and gpt-oss", chat_family_name(cs->family));
        return fail(e, r->n_tools ? "tools" : "messages", msg);
    }
    size_t n_calls = 0;
    for (size_t i = 0; i < r->n_msgs; i++) n_calls += r->msgs[i].n_calls;
    chat_msg *m = calloc(r->n_msgs + 1, sizeof *m);
    chat_call *calls = calloc(n_calls + 1, sizeof *calls);
    if (!m || !calls) {
        free(m);
        free(calls);
        fail(e, "messages", "out of memory");
        e->status = 500;
        return NULL;
    }
    chat_call *c = calls;
    for (size_t i = 0; i < r->n_msgs; i++) {
        const api_message *a = &r->msgs[i];
        m[i] = (chat_msg){ .role = a->role, .content = a->content, .calls = c, .n_calls = a->n_calls,
                           .reasoning = a->reasoning, .tool_call_id = a->tool_call_id };
        for (size_t j = 0; j < a->n_calls; j++)
            *c++ = (chat_call){ .name = a->calls[j].name, .arguments = a->calls[j].arguments,
                                .id = *a->calls[j].id ? a->calls[j].id : NULL };
    }
    char err[256] = "";
    const chat_tools_opts o = { .date = cs->date, .reasoning_effort = r->reasoning_effort, .no_thinking = r->no_thinking,
                                .identity = cs->default_system, /* MiniMax's (its identity); no other reads it */
                                .thinking = r->thinking_on, .bos = cs->bos, .eos = cs->eos };
    char *text = tools || cs->tools != CHAT_TOOLS_NONE
                     ? chat_template_render_tools(cs->tools, m, r->n_msgs, (const char *const *)r->tools, r->n_tools,
                                                  &o, true, err, sizeof err)
                       : chat_template_render(cs->family, m, r->n_msgs, cs->bos, cs->eos, cs->default_system,
                                              true, err, sizeof err);
    free(m);
    free(calls);
    if (text && r->force_tool) return force_call(cs, r, text, e);
    return text ? text : fail(e, "messages", err);
}
