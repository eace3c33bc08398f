/* chat_template.h: conversations -> prompt text, for the chat template
 * families models actually ship, rendered in C.
 *
 * We do not run Jinja. A pack's tokenizer.chat_template is recognised by
 * markers only its family uses, and the family's fixed layout is rendered
 * byte for byte as the Jinja template renders the same conversation (the
 * tests hold hand-written expected strings, cross-checked once against
 * jinja2). A template we do not recognise falls back to chatml and the
 * server warns at start: a silent wrong layout would give a model that
 * "works" but answers badly. Every format is one row of the table in
 * chat_template.c (struct chat_format, at the end of this header); adding
 * one is its renderer's file (chat_template_NAME.c, or a layout in
 * chat_layouts.c) and its row.
 *
 * Contract:
 *  - Roles are "system", "user", "assistant" (the caller maps OpenAI's
 *    "developer" to system); "tool" and assistants' calls only in
 *    chat_template_render_tools().
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

#include "runtime/chat/tool_calls.h"
#include "runtime/util/strbuf.h"

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
    /* A layout row that names no value above (a new one needs none) is CHAT_FAMILY_ROW plus its
     * position in the formats' table. */
    CHAT_FAMILY_ROW = 0x100,
} chat_family;

/* A tool call an assistant made: its name and the JSON text of its arguments. */
typedef struct chat_call {
    const char *name;
    const char *arguments;
    const char *id; /* the client's id for the call, or NULL (Kimi K2's template shows it) */
} chat_call;

typedef struct chat_msg {
    const char      *role;
    const char      *content;
    const chat_call *calls; /* an assistant's tool calls; only tool formats render them */
    size_t           n_calls;
    const char      *reasoning; /* an assistant's reasoning given apart (reasoning_content), or NULL:
                                 * Qwen3's, GLM's and MiniMax's templates use it instead of splitting
                                 * the content at </think> */
    const char      *tool_call_id; /* a tool result's call id, or NULL (Kimi K2's template shows it) */
} chat_msg;

/* The tool-call formats rendered here (and parsed by tool_calls.h). */
typedef enum chat_tools {
    CHAT_TOOLS_NONE = 0,
    CHAT_TOOLS_QWEN3, /* Qwen3's template: Hermes-style <tools> / <tool_call> JSON / <tool_response> */
    CHAT_TOOLS_QWEN3_THINKING, /* Qwen3 Thinking-2507's: the same, the answer always opened with <think> */
    CHAT_TOOLS_QWEN3_INSTRUCT, /* Qwen3 Instruct-2507's: the same, no reasoning at all */
    CHAT_TOOLS_HARMONY, /* gpt-oss's own template: a TypeScript namespace, commentary messages to functions.NAME */
    CHAT_TOOLS_QWEN3_CODER, /* Qwen3-Coder's: <function=NAME><parameter=KEY>VALUE</parameter> in <tool_call> */
    CHAT_TOOLS_GLM45,       /* GLM-4.5's / 4.6's: <tool_call>NAME<arg_key>KEY</arg_key><arg_value>... */
    CHAT_TOOLS_MINIMAX,     /* MiniMax-M2's: <minimax:tool_call><invoke name=...><parameter name=...> */
    CHAT_TOOLS_KIMI_K2,     /* Kimi K2 Thinking's: tool_declare, <|tool_call_begin|>functions.NAME:IDX... */
    CHAT_TOOLS_DEEPSEEK_V31, /* DeepSeek V3.1's (V3.1-Terminus, V3.2-Exp): NAME<｜tool▁sep｜>ARGUMENTS calls */
    CHAT_TOOLS_LLAMA4,       /* Llama 4's: tools in the first user turn, {"name": ..., "parameters": ...} calls */
    CHAT_TOOLS_LLAMA31,      /* Llama 3.1's and 3.3's: the same, a dated system turn, one call a message */
    CHAT_TOOLS_LLAMA32,      /* Llama 3.2's: 3.1's dated today */
    CHAT_TOOLS_MISTRAL_V3,   /* Mistral v3's (7B Instruct v0.3): [AVAILABLE_TOOLS], [TOOL_CALLS] [...] */
    CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM, /* the same, the system message in the last user turn */
    CHAT_TOOLS_KIMI_K2_0905, /* Kimi K2 Instruct 0905's: Thinking's tool_declare turn and calls, no <think> */
    CHAT_TOOLS_KIMI_K2_0711, /* Kimi K2 Instruct's first release's (as llama.cpp's tests hold it) */
    /* A tool row that names no value above (a new one needs none) is CHAT_TOOLS_ROW plus its position
     * in the formats' table. */
    CHAT_TOOLS_ROW = 0x100,
} chat_tools;

/* The family a template's text belongs to (the first layout row of the
 * formats' table whose markers it holds), CHAT_UNKNOWN if none. */
chat_family chat_template_detect(const char *tmpl);
/* The family a --chat-template name brings (a row's name or alias: "chatml",
 * "qwen", "llama2", ..., and the tool formats' names, which bring their
 * layout: "qwen3" chatml, "glm-4.5" chatglm4); CHAT_UNKNOWN otherwise. */
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

/* The tool format of a template's text: the first tool row of the formats'
 * table (chat_template.c) whose markers it holds (each row says what
 * recognises its template and which releases that leaves out), NONE if none. */
chat_tools chat_template_tools(const char *tmpl);
/* The tool format a --chat-template name brings ("qwen3", "gpt-oss",
 * "llama3.3" = "llama3.1", ...: the table's names), NONE otherwise. */
chat_tools chat_tools_from_name(const char *name);
/* Its row's name, or "none". */
const char *chat_tools_name(chat_tools t);

/* What the whole templates take beyond the conversation (their kwargs). */
typedef struct chat_tools_opts {
    const char *date;             /* gpt-oss's "Current date", Llama 3.2's "Today Date" (YYYY-MM-DD); NULL: today */
    const char *reasoning_effort; /* gpt-oss: "low" | "medium" | "high"; NULL: "medium" */
    bool        no_thinking;      /* Qwen3, GLM-4.5: enable_thinking false (an empty <think></think> opens the answer) */
    const char *identity;         /* MiniMax-M2: the template's model_identity; NULL: "You are a helpful assistant. Your name is MiniMax-M2 and is built by MiniMax." */
    bool        thinking;         /* DeepSeek V3.1: the thinking kwarg (<think> opens the answer, not </think>) */
    const char *bos;              /* DeepSeek V3.1, Llama, Mistral: the BOS text the template writes first; NULL: none */
    const char *eos;              /* Mistral: the EOS text its template closes assistant turns with; NULL: none */
} chat_tools_opts;

/* A conversation (with tools, each one JSON text in tojson's form, or
 * without) in the style's whole template, byte for byte as Jinja renders
 * it; roles "tool" and assistants' calls included. o may be NULL.
 *  - Qwen3: the tools in the system turn, past reasoning split off
 *    assistant texts at </think> and re-rendered only after the last user
 *    query, consecutive tool results in one user turn.
 *  - gpt-oss (chat_template_harmony.c): OpenAI's system message (date,
 *    reasoning effort, channels), a leading system message as the
 *    developer's instructions, the tools as its TypeScript namespace, the
 *    first call of an assistant message as a commentary message to
 *    functions.NAME (its arguments as an object), its text before it as
 *    analysis unless a final answer follows later, tool results as JSON
 *    strings from the last call's function. A tool without a description
 *    gets an empty comment (Jinja would fail).
 *  - Qwen3-Coder (chat_template_qwen3_coder.c): a system turn with the
 *    tools as <function> blocks (or Qwen's agent line when only tools),
 *    each call as <function=NAME> with a <parameter=KEY> block per
 *    argument (strings as they are, other values as Python's str()), tool
 *    results as <tool_response> blocks in one user turn. Its arguments
 *    must be JSON objects (a 400 otherwise).
 *  - GLM-4.5 / 4.6 (chat_template_glm45.c): [gMASK]<sop>, the tools as
 *    JSON lines in a system turn, each assistant turn opened by its <think>
 *    block (the reasoning only after the last user message, else empty),
 *    calls as <tool_call>NAME with <arg_key>/<arg_value> pairs (strings as
 *    they are, other values as JSON), tool results after <|observation|>;
 *    enable_thinking false appends /nothink to user turns and an empty
 *    <think></think> to the prompt. Arguments must be JSON objects.
 *  - MiniMax-M2 (chat_template_minimax.c): its system turn (the first
 *    system message, else the identity) with the tools as <tool> JSON
 *    lines, reasoning re-rendered only after the last user message, calls
 *    as <minimax:tool_call> with <invoke name=...> and <parameter
 *    name=...> (strings as they are, other values as JSON), results as
 *    <response> blocks in one ]~b]tool turn; a result with no call before
 *    it is refused, as the template refuses it.
 *  - Kimi K2 Thinking (chat_template_kimi.c): the tools as one JSON list in
 *    a tool_declare turn, Kimi's default system turn when the first message
 *    is not a system one, <|im_ROLE|>ROLE<|im_middle|> turns; assistant
 *    turns up to the last one without calls get an empty <think></think>,
 *    later ones their reasoning in it; calls in a tool-calls section, each
 *    with its id and its arguments as the client gave them; results as
 *    "## Return of ID".
 *  - Kimi K2 Instruct, 0905 and first release (chat_template_kimi.c): the
 *    tools under "\n  # Tools\n  " in the tool_declare turn, the default
 *    system turn before a first message that is not a system one, no
 *    reasoning, calls after the assistant's text, results as "## Return of
 *    ID\n    TEXT"; the first release adds a line break after system and
 *    tool headers.
 *  - DeepSeek V3.1 (chat_template_deepseek.c): BOS, every system message
 *    joined by blank lines, then the model card's tool section (a "###
 *    NAME" block per tool with its description and json.dumps'd
 *    parameters, then the call format); <｜User｜> turns; an assistant
 *    turn after a user opens with <｜Assistant｜></think>; calls as
 *    NAME<｜tool▁sep｜>ARGUMENTS (as sent) in one calls block; results as
 *    <｜tool▁output▁begin｜> blocks with the answer after them written
 *    straight on; past reasoning (text up to </think>) dropped; the
 *    generation prompt only after a user turn, <think> when o->thinking.
 *  - Llama 4 (chat_template_llama4.c): BOS, a leading system message
 *    (trimmed; "Environment: ipython" first when tools are offered), the
 *    tools as tojson(indent=4) in the first message after it, made a user
 *    turn under the template's instructions (none: refused, as the
 *    template raises), <|header_start|>ROLE<|header_end|> turns, calls as
 *    <|python_start|>TEXT<|python_end|> and {"name": ..., "parameters":
 *    ARGUMENTS as an object} each, results in ipython turns as JSON
 *    strings (chat_template_llama.c).
 *  - Llama 3.1 / 3.3, 3.2 (chat_template_llama.c): BOS, a system turn
 *    always ("Environment: ipython" with tools, the knowledge cutoff, the
 *    date: 26 Jul 2024, 3.2's today, the trimmed system message), the tools
 *    as Llama 4's, every message trimmed, one call per assistant message
 *    (more are refused, as the template raises) and no text with it.
 *  - Mistral v3 (chat_template_mistral.c): BOS, [INST] turns (no space
 *    before [/INST]) with the system message and a blank line in front of
 *    the last message when that is a user one (in the other release: of the
 *    last user message), the tools as [AVAILABLE_TOOLS] [...] before each
 *    user message equal to the last one (string values unescaped, as the
 *    template writes them), calls as [TOOL_CALLS] [{"name", "arguments" as
 *    an object, "id"}] and EOS, answers as " " + trimmed text + EOS,
 *    results as [TOOL_RESULTS] {"content": TEXT, "call_id": ID}; no
 *    generation prompt. Call ids must be 9 characters (a 400 otherwise,
 *    as the template raises). */
char *chat_template_render_tools(chat_tools style, const chat_msg *msgs, size_t n,
                                 const char *const *tools, size_t n_tools, const chat_tools_opts *o,
                                 bool add_generation_prompt, char *err, size_t errlen);
/* ---- The chat formats: one row per --chat-template name (chat_template.c) ----
 *
 * A row carries what every other file asks of a format, so nothing else
 * switches on chat_family or chat_tools: its names, the markers detection
 * recognises its template text by, its renderers, its tool-call syntax and
 * its capabilities. A row may bring a layout (the conversation alone, as
 * llama.cpp lays it out: chat_family), a whole template with its tool
 * format (chat_tools), or both (gpt-oss, MiniMax-M2, Llama 4). */

/* A template text is recognised when it holds all of `all` and none of `none`. */
typedef struct chat_markers {
    const char *all[8];
    const char *none[3];
} chat_markers;

/* Where a format's tool calls are. */
typedef enum chat_calls {
    CHAT_CALLS_NONE = 0, /* no tool format */
    CHAT_CALLS_IN_TEXT,  /* written into the answer's text, in the row's syntax: the server parses them out */
    CHAT_CALLS_APART,    /* messages of their own (harmony's): the generation hands them over */
} chat_calls;

/* What a layout is given beyond the conversation. */
typedef struct chat_layout_args {
    const char *bos, *eos;      /* never NULL ("" for none) */
    const char *default_system; /* chatml's, MiniMax's identity, or NULL */
    int         variant;        /* the row's */
    bool        gen;            /* add the generation prompt */
} chat_layout_args;

/* A layout: the conversation appended to b; false with err when the template would raise. */
typedef bool chat_layout_fn(strbuf *b, const chat_msg *m, size_t n, const chat_layout_args *a, char *err,
                            size_t errlen);
/* A whole template (chat_template_render_tools()'s contract); variant: the row's. */
typedef char *chat_render_fn(const chat_msg *m, size_t n, const char *const *tools, size_t n_tools,
                             const chat_tools_opts *o, int variant, bool gen, char *err, size_t errlen);

typedef struct chat_format {
    const char *name;       /* its --chat-template name; chat_family_name() / chat_tools_name() */
    const char *aliases[2]; /* other names for it */
    /* the layout */
    chat_family     family;         /* the layout the name brings: the row's own when layout is set (unset
                                     * there: CHAT_FAMILY_ROW + the row's position) */
    chat_layout_fn *layout;         /* set: this row defines family's layout, recognised by layout_markers */
    chat_markers    layout_markers;
    char *(*default_system)(const char *tmpl); /* the system prompt the layout puts first, read from the
                                                * template's text, or NULL: none */
    bool            harmony;        /* answers in harmony's channels: chats answer the final one only */
    /* the whole template with its tool format */
    chat_tools      tools;          /* the row's tool format when render is set (unset: CHAT_TOOLS_ROW + the
                                     * row's position); without render, none */
    chat_render_fn *render;         /* set with tools, recognised by tools_markers */
    chat_markers    tools_markers;
    int             variant;        /* the release layout or render draws (chat_render.h's CHAT_VARIANT_*) */
    tool_format     syntax;         /* how its calls are written, parsed and forced (tool_calls.h) */
    chat_calls      calls;
    const char     *no_forcing;     /* why tool_choice cannot force a call with it, or NULL */
} chat_format;

/* The row that defines family f's layout, or a row named "unknown" with nothing set. */
const chat_format *chat_format_of_family(chat_family f);
/* The row of tool format t, or a row named "none" with nothing set (CHAT_TOOLS_NONE). */
const chat_format *chat_format_of_tools(chat_tools t);
/* The tool_calls.h syntax of a template's tool format (chat_format_of_tools(t)->syntax). */
tool_format chat_tools_format(chat_tools t);

#endif
