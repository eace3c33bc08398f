/* api_request.h: request bodies of the OpenAI and Anthropic APIs, parsed
 * and checked into one plain struct the handlers can trust.
 *
 * This file depends on jansson, libc, pyjson.c, strbuf.c and base64.c only, so the
 * fuzz target can build it alone; it knows nothing about HTTP, engines or
 * templates.
 *
 * Contract:
 *  - api_request_parse() returns 0 and fills *r, or -1 and fills *e with an
 *    HTTP status (400), the offending field as a path ("messages[2].role",
 *    "max_tokens"), and one line for the client. On -1 *r holds nothing to
 *    free; on 0 api_request_free() releases it.
 *  - Malformed JSON, invalid UTF-8, NUL in strings, duplicate keys, numbers
 *    that overflow, wrong types, values out of range and unknown roles are
 *    all refused. null counts as "absent" (clients send "stop": null).
 *  - Fields that would change the answer and that we do not implement
 *    (n != 1,
 *    echo, suffix...) are refused by name;
 *    harmless unknown fields are ignored, as the upstream APIs do.
 *  - Tools: OpenAI's tools ({"type": "function", "function": {name,
 *    description, parameters}}) are kept as Python's json.dumps writes them
 *    (pyjson.h), the text a chat template's tojson puts in the prompt;
 *    Anthropic's {name, description, input_schema} become that same OpenAI
 *    shape (input_schema as parameters), as llama.cpp's server does.
 *    tool_choice "auto" (Anthropic {"type": "auto"}) keeps them, "none"
 *    drops them; forcing a call ("required", Anthropic "any") sets
 *    force_tool, naming one (OpenAI's and the Responses API's named
 *    function, Anthropic's "tool") also force_name, which must be one of
 *    the tools.
 *  - Tool turns: an OpenAI assistant message's tool_calls (arguments a JSON
 *    text, or an object) and role "tool" messages; an Anthropic assistant's
 *    tool_use blocks and a user message's tool_result blocks (each one a
 *    "tool" message, in order, before the user's text if any). Arguments
 *    are kept as text: OpenAI's string as sent, an object as pyjson.
 *  - An assistant's reasoning sent back (OpenAI reasoning_content, the
 *    field this server answers with; Anthropic thinking blocks, their
 *    text) is kept for the templates that render it; redacted_thinking
 *    blocks are dropped.
 *  - Images in user messages: OpenAI chat's image_url parts and the
 *    Responses API's input_image parts (a data: URI with base64 data),
 *    Anthropic's image blocks (a base64 source with its media_type) become
 *    api_image entries of the message, each at the place among the text
 *    where it stood; an http(s) URL (OpenAI's url, Anthropic's url source)
 *    is kept as the entry's url, for the server to fetch or refuse. Invalid
 *    base64, a data: URI that is not base64, another URL scheme and images
 *    anywhere else are refused by path. Whether the bytes are a picture is
 *    not checked here.
 *  - Anthropic's system (string or text blocks) becomes a leading "system"
 *    message; OpenAI's "developer" role becomes "system". Text parts and
 *    text blocks of one message are joined with '\n'.
 *  - Anthropic's thinking is {"type": "disabled"}, {"type": "enabled"}
 *    (budget_tokens, when given, an integer >= 1; it does not cut the
 *    reasoning short) or {"type": "adaptive"} (as enabled: the model
 *    decides); an explicit "disabled" sets no_thinking, as enable_thinking
 *    false does. Anthropic's output_config.effort ("max" taken as "high")
 *    sets reasoning_effort as OpenAI's does.
 *  - OpenAI chat's reasoning_effort ("low", "medium", "high") and
 *    chat_template_kwargs.enable_thinking and .thinking (booleans; other
 *    kwargs are ignored) are kept for the whole templates that use them
 *    (gpt-oss's, Qwen3's, DeepSeek V3.1's); other models ignore them.
 *  - max_tokens is 0 when the request did not give one (Anthropic's
 *    /v1/messages requires it, so it is never 0 there). */
#ifndef STRATA_API_REQUEST_H
#define STRATA_API_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum api_kind {
    API_CHAT,         /* POST /v1/chat/completions */
    API_COMPLETION,   /* POST /v1/completions */
    API_MESSAGES,     /* POST /v1/messages */
    API_COUNT_TOKENS, /* POST /v1/messages/count_tokens */
    API_RESPONSES,    /* POST /v1/responses (OpenAI Responses: Codex) */
} api_kind;

#define API_MAX_STOPS 16
#define API_MAX_STOP_LEN 256
#define API_MAX_TOP_LOGPROBS 20
#define API_MAX_LOGIT_BIAS 1024

typedef struct api_tool_call {
    char *id;        /* the client's id ("" when it sent none) */
    char *name;
    char *arguments; /* JSON text of the arguments object */
} api_tool_call;

/* A picture a user message carries, as sent: its bytes (base64 decoded,
 * not yet checked as an image: runtime/vision/image.h does that) and the
 * MIME type the client gave with them. */
typedef struct api_image {
    uint8_t *data;      /* NULL for a remote picture (url) */
    size_t   n;
    char    *url;       /* an http(s) URL the server may fetch (strata serve --allow-remote-images), else NULL */
    char    *mime;      /* "image/png", ...: the data: URI's or Anthropic's media_type ("" for a URL) */
    size_t   at;        /* where the part stood: a byte offset into the message's content */
    char     param[64]; /* where it came from in the request ("messages[0].content[1]"), for errors */
} api_image;

typedef struct api_message {
    char          *role;    /* "system" | "user" | "assistant" | "tool" */
    char          *content; /* never NULL */
    api_tool_call *calls;   /* assistant: the tool calls it made */
    size_t         n_calls;
    char          *reasoning; /* assistant: its reasoning sent back (OpenAI reasoning_content, Anthropic
                               * thinking blocks joined by '\n'), or NULL */
    char          *tool_call_id; /* tool: the call it answers (NULL if not given) */
    api_image     *images;  /* user: the pictures among its parts, in order */
    size_t         n_images;
} api_message;

typedef struct api_request {
    api_kind     kind;
    api_message *msgs;
    size_t       n_msgs;
    char        *prompt;      /* API_COMPLETION */
    char       **tools;       /* each tool in OpenAI's shape, as pyjson text; none after tool_choice "none" */
    size_t       n_tools;
    int          max_tokens;  /* 0 = not given */
    double       temperature; /* default 1 */
    double       top_p;       /* default 1 */
    int          top_k;       /* default 0 = off */
    bool         has_seed;
    uint64_t     seed;
    char       **stops;
    size_t       n_stops;
    bool         stream;
    bool         thinking;     /* Anthropic's thinking {"type": "enabled"}: the reasoning as a thinking block */
    const char  *reasoning_effort; /* "low" | "medium" | "high" (a static string; OpenAI's reasoning_effort,
                                    * Anthropic's output_config.effort), or NULL */
    bool         no_thinking;  /* chat_template_kwargs {"enable_thinking": false} (vLLM's and llama.cpp's extension) */
    bool         thinking_on;  /* asked for in so many words: chat_template_kwargs enable_thinking or thinking
                                * true, Anthropic's thinking "enabled" (not "adaptive"); templates whose default is
                                * not to reason (DeepSeek V3.1's) reason only then */
    bool         json_mode;    /* response_format (Responses: text.format) json_object or json_schema */
    char        *json_schema;  /* json_schema's schema as JSON text (not yet compiled), or NULL */
    bool         force_tool;   /* tool_choice forces a call: "required" / {"type": "any"}, or a named one */
    char        *force_name;   /* the named one's name, or NULL */
    float        presence_penalty, frequency_penalty; /* OpenAI's, -2..2 (0: off) */
    float        min_p;          /* vLLM's and llama.cpp's extension, 0..1 (0: off) */
    float        repeat_penalty; /* repetition_penalty (vLLM) / repeat_penalty (llama.cpp); 1: off (0 read as 1) */
    int          draft_max;      /* strata's "draft": "ngram" / "mtp" / "none" and "draft_max" 1..16: speculative
                                  * decoding's guesses at most a step (0: none); -1 when the request says nothing
                                  * (the server's default then) */
    int          draft_mtp;      /* "draft": "mtp" 1, "ngram" 0, not said -1 (the server's default) */
    int32_t     *bias_id;      /* logit_bias: n_bias token ids (not yet checked against a vocabulary) */
    float       *bias;         /* and the bias for each, -100..100 */
    int          n_bias;
    bool         include_usage;
    bool         logprobs;
    int          top_logprobs;
} api_request;

typedef struct api_error {
    int  status;
    char param[96];
    char message[320];
} api_error;

int api_request_parse(api_kind kind, const char *body, size_t len, int max_tokens_limit,
                      api_request *r, api_error *e);
void api_request_free(api_request *r);

#endif
