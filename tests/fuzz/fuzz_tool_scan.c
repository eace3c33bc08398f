/* fuzz_tool_scan.c: libFuzzer target for the tool-call scanner
 * (runtime/chat/tool_calls.c). The first byte sets the feed's piece size (low
 * 4 bits) and the format (the rest, mod 8: Qwen3's, Qwen3-Coder's,
 * GLM-4.5's, MiniMax-M2's, Kimi K2's, DeepSeek V3.1's, Llama 4's, Mistral v3's); the rest is a model's answer. Whatever the bytes: with no call parsed, the
 * content released is the answer exactly; with calls, it is a prefix of
 * the answer, and every call has a non-empty name and arguments that read
 * back as a JSON object.
 * fuzz-link: runtime/chat/tool_calls.c runtime/chat/pyjson.c runtime/util/strbuf.c -ljansson */
#include "runtime/chat/tool_calls.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t step = 1 + data[0] % 16;
    static const char *const tools[] = {
        "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"properties\": "
        "{\"s\": {\"type\": \"string\"}, \"n\": {\"type\": \"integer\"}}}}}",
    };
    const char *a = (const char *)data + 1;
    size_t n = size - 1;
    tool_scan ts = { .format = (tool_format)((data[0] >> 4) % 8), .tools = tools, .n_tools = 1 };
    strbuf out = { 0 };
    for (size_t i = 0; i < n; i += step) tool_scan_feed(&ts, a + i, i + step <= n ? step : n - i, &out);
    tool_call *calls;
    size_t k = tool_scan_finish(&ts, &calls, &out);
    if (out.oom) __builtin_trap();
    if (k == 0 && (out.len != n || (n && memcmp(out.data, a, n)))) __builtin_trap();
    if (k > 0 && (out.len > n || (out.len && memcmp(out.data, a, out.len)))) __builtin_trap();
    for (size_t i = 0; i < k; i++) {
        json_t *j = json_loads(calls[i].arguments, 0, NULL);
        if (!calls[i].name[0] || !json_is_object(j)) __builtin_trap();
        json_decref(j);
    }
    tool_calls_free(calls, k);
    tool_scan_free(&ts);
    strbuf_free(&out);
    return 0;
}
