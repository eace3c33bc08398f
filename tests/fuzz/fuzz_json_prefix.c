/* fuzz_json_prefix.c: libFuzzer target for the JSON-object prefix
 * recogniser (runtime/chat/json_prefix.c), against jansson: whatever the bytes,
 * fed whole or a byte at a time the verdicts agree, a complete text is an
 * object jansson reads (numbers past its range aside), and every prefix of
 * an accepted text is accepted. The same for json_schema.h's layer over
 * it, with a schema of every kind it holds (recursion, anyOf, enums): a
 * text it completes is one json_prefix completes too.
 * fuzz-link: runtime/chat/json_prefix.c runtime/chat/json_schema.c -ljansson */
#include "runtime/chat/json_prefix.h"
#include "runtime/chat/json_schema.h"

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
    static js_schema *schema;
    if (!schema) {
        char err[200];
        schema = js_compile("{\"$defs\": {\"n\": {\"type\": \"object\", \"required\": [\"v\"], \"additionalProperties\": false,"
                            " \"properties\": {\"v\": {\"type\": \"integer\"}, \"k\": {\"type\": \"array\", \"items\":"
                            " {\"$ref\": \"#/$defs/n\"}}, \"e\": {\"enum\": [\"a\", \"ab\", \"b\"]}, \"o\": {\"anyOf\":"
                            " [{\"type\": \"string\"}, {\"type\": \"null\"}, {\"$ref\": \"#/$defs/n\"}]}, \"x\": {}}}},"
                            " \"$ref\": \"#/$defs/n\"}", err, sizeof err);
        if (!schema) __builtin_trap();
    }
    js_prefix sw, sb;
    js_prefix_init(&sw, schema);
    js_prefix_init(&sb, schema);
    const bool sok = js_prefix_feed(&sw, s, size);
    size_t sacc = 0;
    while (sacc < size && js_prefix_feed(&sb, s + sacc, 1)) sacc++;
    if (sok != (sacc == size)) __builtin_trap();
    if (sok && !ok) __builtin_trap(); /* the schema only narrows the grammar */
    if (sok && js_prefix_complete(&sw) && !json_prefix_complete(&whole)) __builtin_trap();
    return 0;
}
