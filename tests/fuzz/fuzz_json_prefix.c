/* fuzz_json_prefix.c: libFuzzer target for the JSON-object prefix
 * recogniser (runtime/json_prefix.c), against jansson: whatever the bytes,
 * fed whole or a byte at a time the verdicts agree, a complete text is an
 * object jansson reads (numbers past its range aside), and every prefix of
 * an accepted text is accepted.
 * fuzz-link: runtime/json_prefix.c -ljansson */
#include "runtime/json_prefix.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    json_prefix whole, step;
    json_prefix_init(&whole);
    json_prefix_init(&step);
    const bool ok = json_prefix_feed(&whole, s, size);
    size_t accepted = 0;
    while (accepted < size && json_prefix_feed(&step, s + accepted, 1)) accepted++;
    if (ok != (accepted == size)) __builtin_trap();
    if (ok && json_prefix_complete(&whole) != json_prefix_complete(&step)) __builtin_trap();
    if (ok && json_prefix_complete(&whole)) {
        json_error_t e;
        json_t *v = json_loadb(s, size, JSON_ALLOW_NUL, &e);
        if (!json_is_object(v) && !strstr(e.text, "overflow") && !strstr(e.text, "too big")) __builtin_trap();
        json_decref(v);
    }
    return 0;
}
