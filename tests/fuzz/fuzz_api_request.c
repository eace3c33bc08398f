/* fuzz_api_request.c: libFuzzer target for the request-body parser of the
 * APIs (OpenAI chat, completions and Responses, Anthropic;
 * runtime/chat/api_request.c, which needs only jansson). The first byte picks
 * the endpoint; the rest is the body. Every refusal must be a 400
 * naming a field with a one-line message, and every accepted request must
 * hold only what the contract promises (known roles, bounded stops and
 * max_tokens), read back in full so ASan sees any dangling string; every
 * tool kept must read back as JSON (pyjson.h), and the conversation must
 * render through the server's path (chat_request.h) in each whole
 * template (Qwen3's, gpt-oss's, Qwen3-Coder's, GLM-4.5's, MiniMax-M2's,
 * Kimi K2 Thinking's, DeepSeek V3.1's, Llama 4's, 3.1's, 3.2's, Qwen3 2507's) or
 * be refused with a 400.
 * fuzz-link: runtime/chat/api_request.c runtime/chat/pyjson.c runtime/util/strbuf.c runtime/util/base64.c runtime/chat/chat_*.c runtime/chat/tool_calls.c -ljansson */
#include "runtime/chat/api_request.h"
#include "runtime/chat/chat_request.h"

#include <jansson.h>
#include <stdlib.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    api_kind kind = (api_kind)(data[0] % 5); /* chat, completion, messages, count_tokens, responses */
    api_request r;
    api_error e;
    if (api_request_parse(kind, (const char *)data + 1, size - 1, 4096, &r, &e) != 0) {
        if (e.status != 400 || !e.param[0] || !e.message[0] || strchr(e.message, '\n'))
            __builtin_trap();
        return 0;
    }
    volatile size_t sink = 0;
    for (size_t i = 0; i < r.n_msgs; i++) {
        const char *role = r.msgs[i].role;
        if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "tool"))
            __builtin_trap();
        sink += strlen(r.msgs[i].content);
        if (r.msgs[i].tool_call_id) sink += strlen(r.msgs[i].tool_call_id);
        for (size_t j = 0; j < r.msgs[i].n_calls; j++)
            sink += strlen(r.msgs[i].calls[j].id) + strlen(r.msgs[i].calls[j].name) + strlen(r.msgs[i].calls[j].arguments);
    }
    for (size_t i = 0; i < r.n_tools; i++) {
        json_t *t = json_loads(r.tools[i], 0, NULL);
        if (!json_is_object(t)) __builtin_trap();
        json_decref(t);
    }
    if (kind == API_CHAT || kind == API_MESSAGES || kind == API_RESPONSES) {
        /* both tool layouts: Qwen3's, and gpt-oss's (its schema walk) */
        static const chat_tools STYLES[] = { CHAT_TOOLS_QWEN3, CHAT_TOOLS_HARMONY, CHAT_TOOLS_QWEN3_CODER,
                                             CHAT_TOOLS_GLM45, CHAT_TOOLS_MINIMAX, CHAT_TOOLS_KIMI_K2,
                                             CHAT_TOOLS_DEEPSEEK_V31, CHAT_TOOLS_LLAMA4, CHAT_TOOLS_LLAMA31,
                                             CHAT_TOOLS_LLAMA32, CHAT_TOOLS_QWEN3_THINKING, CHAT_TOOLS_QWEN3_INSTRUCT,
                                             CHAT_TOOLS_MISTRAL_V3, CHAT_TOOLS_MISTRAL_V3_USER_SYSTEM };
        for (int style = 0; style < (int)(sizeof STYLES / sizeof STYLES[0]); style++) {
            const chat_setup cs = { .family = style == 1 ? CHAT_GPT_OSS : CHAT_CHATML, .tools = STYLES[style],
                                    .bos = "<s>", .eos = "</s>", .date = "2026-01-01" };
            char *text = chat_request_render(&cs, &r, &e);
            if (!text && e.status != 400) __builtin_trap();
            free(text);
        }
    }
    if (r.n_stops > API_MAX_STOPS || r.max_tokens < 0 || r.max_tokens > 4096) __builtin_trap();
    for (size_t i = 0; i < r.n_stops; i++)
        if (strlen(r.stops[i]) > API_MAX_STOP_LEN) __builtin_trap();
    if (kind == API_COMPLETION && !r.prompt) __builtin_trap();
    if (kind == API_MESSAGES && r.max_tokens == 0) __builtin_trap();
    (void)sink;
    api_request_free(&r);
    return 0;
}
