/* json_prefix.h: whether bytes are a prefix of a JSON object (RFC 8259),
 * fed a piece at a time, for constraining generation to JSON (the APIs'
 * response_format json_object).
 *
 * Contract:
 *  - A zeroed json_prefix (or json_prefix_init()) expects a JSON text whose
 *    value is an object, optionally after blanks. json_prefix_feed() takes
 *    bytes and returns false as soon as they cannot be continued into one
 *    (the state is then unusable); true otherwise. Feeding a copy tests a
 *    piece without committing it: the state is a plain value.
 *  - json_prefix_complete() is true once the object has closed; after it
 *    nothing more is accepted (not even blanks: the answer should end).
 *  - Strings must be valid UTF-8 (no overlongs, no surrogates, nothing past
 *    U+10FFFF) with JSON's escapes; control characters below 0x20 are
 *    refused in them, as JSON refuses them. Numbers follow JSON's grammar.
 *  - Nesting deeper than JSON_PREFIX_MAX_DEPTH is refused, and so is a run
 *    of more than JSON_PREFIX_MAX_BLANKS blanks between tokens: a text
 *    being generated must move on (llama.cpp's JSON grammar bounds them so
 *    too), and nothing a model should write needs more. */
#ifndef STRATA_JSON_PREFIX_H
#define STRATA_JSON_PREFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_PREFIX_MAX_DEPTH 64
#define JSON_PREFIX_MAX_BLANKS 24

typedef struct json_prefix { /* private: json_prefix.c */
    uint8_t  state, depth;
    uint8_t  str_key;      /* the string being read is an object's key */
    uint8_t  lit, lit_pos; /* a literal (true, false, null) and how much of it was read */
    uint8_t  num;          /* a number's phase */
    uint8_t  owed, lo, hi; /* UTF-8 continuation bytes still owed, the next one's range */
    uint8_t  esc;          /* 0; 1 after a backslash; 2..5 inside \uXXXX (hex digits read + 2) */
    uint8_t  low;          /* after a high surrogate's escape: 1 a backslash must follow, 2 a 'u' */
    uint16_t u;            /* the \u escape's value so far */
    uint8_t  blanks;       /* blanks in a row between tokens */
    uint8_t  ev;           /* what the last byte was (json_prefix_event) */
    uint64_t arrays;       /* bit d: the container at depth d + 1 is an array */
} json_prefix;

/* What the last byte fed was, for a layer that checks more than the
 * grammar (json_schema.h): a value's first byte, a key's or a string
 * value's opening quote, content byte or closing quote, a number's later
 * byte, an object's or array's close; JP_OTHER for the rest (blanks, ':',
 * ',', a literal's later bytes). A byte that ends a number reports what it
 * is itself. */
enum {
    JP_OTHER, JP_VALUE, JP_KEY_OPEN, JP_KEY_CHAR, JP_KEY_CLOSE, JP_STR_CHAR, JP_STR_CLOSE, JP_NUM_CHAR,
    JP_CLOSE_OBJECT, JP_CLOSE_ARRAY
};

void json_prefix_init(json_prefix *j);
bool json_prefix_feed(json_prefix *j, const char *s, size_t n);
bool json_prefix_complete(const json_prefix *j);

#endif
