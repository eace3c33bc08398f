/* generate.h: one request's generation, from prompt ids to released text.
 *
 * Both APIs, streamed or not, go through this so that stop strings,
 * max_tokens, end-of-generation tokens and UTF-8 are handled once.
 *
 * Contract:
 *  - gen_next() pulls tokens from the engine until some text can be
 *    released or generation ends, and returns the finish state (GEN_RUNNING
 *    while more may come). The released delta is valid UTF-8 (ill-formed
 *    bytes become U+FFFD) and never contains a stop string or any text after
 *    one; text that might still become a stop string is held back (see
 *    stop_match.h). The delta stays valid until the next call.
 *  - Tokens are counted when sampled (the end-of-generation token is not
 *    counted); max_tokens bounds that count.
 *  - gen_take_tokens() hands out the per-token records (id, logprob,
 *    alternatives, byte offset in the generated text) of tokens whose text
 *    has been released, each once.
 *  - With harmony (gpt-oss's framing: <|start|>ROLE<|channel|>NAME
 *    <|message|>TEXT<|end|>...), only the text of messages on the final
 *    channel (or on none) is released; headers, the analysis and commentary
 *    channels and the markers themselves are not, but count as tokens.
 *    Generation starts in a header (the prompt ends <|start|>assistant).
 *    The analysis channel's text is the reasoning: gen_take_reasoning()
 *    hands out what has come since the last call (valid UTF-8, a
 *    possibly incomplete character held back while generation runs), and
 *    gen_next() also returns (with an empty delta) when some is waiting,
 *    so a stream can carry it as it comes. A message whose header is
 *    addressed to=functions.NAME is a function call: gen_calls() has its
 *    name and body.
 *  - With think (models that reason inside <think>...</think>: DeepSeek-R1,
 *    Qwen3, MiniMax-M2), the text up to </think> is the reasoning instead
 *    of content: from the start (GEN_THINK_OPEN, the prompt ended with
 *    <think>), or when the answer opens with <think> after any whitespace
 *    (GEN_THINK_MAYBE: a few bytes are held back at the start until that
 *    is decided). Whitespace around </think> is dropped: the reasoning
 *    ends at its last non-blank (blanks that may precede </think> are
 *    held back), the content starts at its first.
 *  - A non-NULL cancel flag that becomes true ends generation at the next
 *    token with GEN_CANCELLED (server shutdown).
 *  - gen_end() ends the engine session and frees everything. */
#ifndef STRATA_GENERATE_H
#define STRATA_GENERATE_H

#include <stdatomic.h>
#include <stddef.h>

#include "runtime/serve/engine.h"
#include "runtime/util/strbuf.h"

typedef enum gen_finish {
    GEN_RUNNING = 0,
    GEN_EOS,       /* the model ended its turn */
    GEN_STOP,      /* a stop string matched */
    GEN_LENGTH,    /* max_tokens reached */
    GEN_ERROR,     /* the engine failed */
    GEN_CANCELLED, /* the server is stopping */
} gen_finish;

/* Harmony's marker ids (start, channel, message, end required; constrain -1 if absent). */
typedef struct gen_harmony {
    int32_t start, channel, message, end, constrain;
} gen_harmony;

typedef enum gen_think { GEN_THINK_OFF, GEN_THINK_MAYBE, GEN_THINK_OPEN } gen_think;

/* A control token whose text belongs in the answer: a tool format's
 * markers (Kimi K2's <|tool_call_begin|>, DeepSeek's <｜tool▁sep｜>) are
 * control tokens in llama.cpp's GGUFs, whose pieces are otherwise empty,
 * so the calls could not be found in the text (llama.cpp's server keeps
 * them as its "preserved tokens"). */
typedef struct gen_kept {
    int32_t     id;
    const char *text;
} gen_kept;

typedef struct gen_params {
    int                max_tokens;
    engine_sampling    sampling;
    const char *const *stops;
    size_t             n_stops;
    const atomic_bool *cancel;
    const gen_harmony *harmony; /* NULL: every token's text is released */
    gen_think          think;   /* <think> reasoning (not with harmony) */
    const gen_kept    *kept;    /* control tokens written as their text (n_kept of them) */
    size_t             n_kept;
    /* JSON mode (json_mode.h, not with harmony): the answer is held to one JSON object, from its start
     * or, when the prompt opened a reasoning block, from its end; NULL: free text */
    const struct json_vocab *json_vocab;
    const char *json_schema; /* with json_vocab: the schema's JSON text (json_schema.h) the answer must follow too */
    /* with json_vocab: the answer opens with one of these texts (a forced call's tool name up to its
     * arguments), then follows that one's schema (JSON text; NULL: any object). Copied. */
    const char *const *json_leads;
    const char *const *json_lead_schemas;
    size_t             n_json_leads;
    bool               json_leads_only; /* the constraint ends with the lead (json_mode.leads_only) */
    /* Called after each sampled token with the seconds since the previous
     * one (since gen_begin for the first). */
    void (*on_token)(void *ud, double seconds, int first);
    void *ud;
} gen_params;

typedef struct gen_token {
    engine_token t;
    size_t       offset; /* where its text starts in the generated text */
} gen_token;

typedef struct gen gen;

/* A harmony function call: a message addressed to=functions.NAME; args is
 * its body as written (the arguments' JSON text, unchecked). */
typedef struct gen_call {
    char  *name;
    strbuf args;
} gen_call;

gen *gen_begin(const engine *e, const int32_t *prompt, size_t n_prompt, const gen_params *p,
               char *err, size_t errlen);
gen_finish gen_next(gen *g, const char **delta, size_t *n);
/* Reasoning text since the last call ("" when none; harmony only); valid
 * until the next call. */
const char *gen_take_reasoning(gen *g, size_t *n);
const gen_token *gen_take_tokens(gen *g, size_t *n);
size_t gen_n_tokens(const gen *g);
/* Whether generation reached its end (a stop, the length, an error), as
 * opposed to being let go while running (a client that closed its stream). */
bool gen_finished(const gen *g);
/* Prompt tokens the engine took from its KV cache (engine.h's cached). */
size_t gen_n_cached(const gen *g);
/* Harmony: the function calls made so far, in order (commentary messages
 * whose header names a recipient " to=functions.NAME", before or after its
 * <|channel|>); valid until gen_end. */
const gen_call *gen_calls(const gen *g, size_t *n);
/* The index of the stop string that matched, -1 if none. */
int gen_stop_index(const gen *g);
void gen_end(gen *g);

#endif
