/* json_schema.h: a JSON Schema subset held during generation (the APIs'
 * response_format json_schema, OpenAI's structured outputs), on top of
 * json_prefix.h's object grammar.
 *
 * Contract:
 *  - js_compile() reads a schema's JSON text into a js_schema, or returns
 *    NULL with one line in err naming what it cannot hold. Enforced:
 *    "type" (a name or a list), "properties" with "required" and
 *    "additionalProperties" (false: no other keys; absent or true: other
 *    keys with any value), "items", "enum" and "const" of strings (spelled
 *    as JSON writes them, non-ASCII characters as they are, not escaped;
 *    other enums and consts restrict the type only), "anyOf" / "oneOf" whose
 *    alternatives are of different JSON types (two objects, say, are
 *    refused: which one applies could not be told from the first byte),
 *    and "$ref" to "#/$defs/NAME" or "#/definitions/NAME" (recursion
 *    allowed). Ignored, not enforced: formats, patterns, lengths, bounds
 *    and the rest. The top level must allow an object. At most 64
 *    properties per object, 64 enum strings per value, 512 schema nodes.
 *  - js_prefix_feed() is json_prefix_feed() that also refuses what the
 *    schema does not allow: a value of a type its schema excludes, a key
 *    not among the properties (unless others are allowed), a key twice, an
 *    object closed before its required keys, a string outside its enum, a
 *    fraction or exponent where only integers are allowed. The state is a
 *    plain value (copy it to test a piece), nesting up to
 *    JS_MAX_DEPTH. js_prefix_complete() as json_prefix_complete(). */
#ifndef STRATA_JSON_SCHEMA_H
#define STRATA_JSON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/chat/json_prefix.h"

#define JS_MAX_DEPTH 16

typedef struct js_schema js_schema;
typedef struct js_node js_node;

js_schema *js_compile(const char *text, char *err, size_t errlen);
void js_free(js_schema *s);

typedef struct js_frame {
    const js_node *node;  /* the object's or array's schema */
    uint64_t       seen;  /* an object's properties written so far */
    bool           array;
} js_frame;

typedef struct js_prefix {
    json_prefix    j;
    const js_node *root, *next; /* the schema of the value that comes next (after a key, or the root's) */
    const js_node *any;         /* the schema that allows anything */
    uint8_t        depth;
    bool           key_free;    /* the key being read may be any (additional properties) */
    bool           int_only;    /* the number being read must be an integer */
    uint64_t       cand;        /* the key's (or an enum string's) candidates still matching */
    uint64_t       seen_cand;   /* other keys allowed: the written properties the key still matches */
    uint16_t       pos;         /* bytes of the key or string read */
    bool           in_enum;     /* the string being read must be one of next's enum */
    const js_node *str_node;    /* the string's schema (its enum) */
    js_frame       f[JS_MAX_DEPTH];
} js_prefix;

void js_prefix_init(js_prefix *p, const js_schema *s);
bool js_prefix_feed(js_prefix *p, const char *s, size_t n);
bool js_prefix_complete(const js_prefix *p);

#endif
