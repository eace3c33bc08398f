/* tool_calls.h: tool calls taken out of a model's answer, as it streams.
 *
 * Qwen3's format (chat_template.h, CHAT_TOOLS_QWEN3): after any text the
 * model writes one or more
 *     <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>
 * and ends its turn. Qwen3-Coder's (CHAT_TOOLS_QWEN3_CODER) wraps
 *     <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>
 * in the same tags; GLM-4.5's (CHAT_TOOLS_GLM45)
 *     <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n</tool_call>;
 * MiniMax-M2's (CHAT_TOOLS_MINIMAX) one or more
 *     <invoke name="NAME">\n<parameter name="KEY">VALUE</parameter>\n</invoke>
 * inside <minimax:tool_call> ... </minimax:tool_call>, which then opens the calls;
 * Kimi K2's (CHAT_TOOLS_KIMI_K2) one or more
 *     <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>
 * inside <|tool_calls_section_begin|> ... <|tool_calls_section_end|>, the
 * call's id (functions.NAME:IDX, NAME taken from it) kept for the client;
 * DeepSeek V3.1's (CHAT_TOOLS_DEEPSEEK_V31) one or more
 *     <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
 * inside <｜tool▁calls▁begin｜> ... <｜tool▁calls▁end｜> (V3's and R1's
 * function<｜tool▁sep｜>NAME with a ```json fence accepted too); Llama 4's
 * (CHAT_TOOLS_LLAMA4) bare {"name": NAME, "parameters": {...}} objects, one
 * after another (blanks, ';' or ',' between), each naming an offered tool
 * and holding "parameters" (or "arguments"): no tag sets them apart from an
 * answer that is JSON. Mistral v3's (CHAT_TOOLS_MISTRAL_V3)
 *     [TOOL_CALLS] [{"name": NAME, "arguments": {...}}, ...]
 * a JSON list (or one object) after the tag, an "id" of 9 letters and
 * digits in a call kept as its id (the template shows ids back to it).
 *
 * Contract:
 *  - tool_scan_feed() takes released answer text and appends to out the
 *    part that is surely content: it holds back whatever could still be
 *    the start of "<tool_call>" and trailing whitespace (dropped before
 *    calls, released otherwise), and from "<tool_call>" on keeps it all.
 *  - tool_scan_finish() parses what was kept: each block a JSON object with
 *    a non-empty string "name" and an "arguments" object (or a string
 *    holding one, or absent: {}), blocks separated by whitespace only, the
 *    last one's </tool_call> optional (a turn may end there). It returns the
 *    calls (arguments as pyjson text, the form the template renders back),
 *    or, when any of that does not hold, none and appends the kept text to
 *    out as content: a malformed call reaches the client as text, never
 *    half-parsed.
 *  - A zeroed tool_scan is ready; tool_scan_free() releases it. */
#ifndef STRATA_TOOL_CALLS_H
#define STRATA_TOOL_CALLS_H

#include <stddef.h>

#include "runtime/util/strbuf.h"

typedef struct tool_call {
    char *name;
    char *arguments; /* JSON object text, pyjson */
    char *id;        /* the model's own id for the call (Kimi K2's functions.NAME:IDX), or NULL: the
                      * server makes one */
} tool_call;

typedef enum tool_format {
    TOOL_FORMAT_JSON = 0, /* Qwen3 */
    TOOL_FORMAT_CODER,    /* Qwen3-Coder */
    TOOL_FORMAT_GLM45,    /* GLM-4.5 / 4.6 */
    TOOL_FORMAT_MINIMAX,  /* MiniMax-M2 */
    TOOL_FORMAT_KIMI,     /* Kimi K2 (Thinking) */
    TOOL_FORMAT_DEEPSEEK, /* DeepSeek V3.1 */
    TOOL_FORMAT_LLAMA,    /* Llama 3.1-3.3, Llama 4 */
    TOOL_FORMAT_MISTRAL,  /* Mistral v3's template (7B Instruct v0.3) */
} tool_format;

typedef struct tool_scan {
    strbuf held;      /* held-back text; from "<tool_call>" on, the calls */
    bool   capturing; /* "<tool_call>" has been seen */
    /* Set before the first feed. In the tagged formats each value is typed
     * by the offered tools' schemas (tools: pyjson texts in OpenAI's
     * shape): a "string" parameter keeps its text, any other (or one the
     * schema does not name) is read as JSON when it is JSON (an object or
     * array one also as a Python literal, {'a': True}, the form Qwen3-Coder's
     * template shows past arguments in), else kept as text. */
    tool_format        format;
    const char *const *tools;
    size_t             n_tools;
    /* A forced call's opening (tool_call_prefix()) that the prompt ends with: the scan takes it as the
     * answer's first text, once, at the first feed (or the finish; prefix_taken then). NULL: none. */
    const char        *prefix;
    bool               prefix_taken;
    /* Text the answer stops short of, taken as its end at the finish (a forced call whose arguments were
     * held to their schema ends where the object closes: the format's closing tags). NULL: none. */
    const char        *suffix;
} tool_scan;

void tool_scan_feed(tool_scan *ts, const char *d, size_t n, strbuf *out);
/* The text a call in format f opens with, up to its name, and with name
 * (not NULL) through the name to where its arguments begin: written at the
 * end of the prompt, it makes the model's answer a call (tool_choice
 * "required", or naming a tool). malloc'd; NULL when out of memory. */
char *tool_call_prefix(tool_format f, const char *name);
/* What closes a call after its arguments object in the formats whose
 * arguments are one JSON object (Qwen3's "}\n</tool_call>", DeepSeek's,
 * Kimi's, Llama's "}"); NULL for the tagged ones. */
const char *tool_call_args_close(tool_format f);
/* The markers a format writes its answers with (*texts, their number
 * returned): its call tags and <think> </think>. A vocabulary may hold them
 * as control tokens (llama.cpp's converter types every <|...|> and <｜...｜>
 * token so, Kimi K2's and DeepSeek's, and any added token marked special),
 * and then the answer must keep their text for the scans to see them. */
size_t tool_format_markers(tool_format f, const char *const **texts);
/* The length a format's call ids must have (Mistral's template refuses ids
 * that are not 9 characters), 0 when any id does. */
size_t tool_call_id_len(tool_format f);
/* Returns the number of calls (*calls malloc'd, NULL when 0). */
size_t tool_scan_finish(tool_scan *ts, tool_call **calls, strbuf *out);
/* Calls already apart from the text (gpt-oss's harmony: generate.h's
 * gen_calls): each args a JSON object (or a string holding one); returns
 * them as tool_scan_finish() does, or 0 when any is not one. */
size_t tool_calls_from(const char *const *names, const char *const *args, size_t n, tool_call **calls);
void tool_calls_free(tool_call *c, size_t n);
void tool_scan_free(tool_scan *ts);

#endif
