/* pyjson.h: JSON text exactly as Python's json.dumps(x, ensure_ascii=False)
 * writes it, the form Hugging Face chat templates' `tojson` filter puts into
 * prompts (tool schemas, tool-call arguments). A model trained on those
 * prompts should see the same bytes from us.
 *
 * Contract: pyjson_dumps() returns a malloc'd NUL-terminated string, or
 * NULL when out of memory. Separators are ", " and ": "; object members in
 * their order (jansson keeps insertion order); strings escape only '"',
 * '\\' and the C0 controls (\n \r \t \b \f by name, others as \u00XX),
 * everything else raw UTF-8; integers in decimal; reals as Python's repr
 * (the shortest digits that read back, "1.0", "1e-05", "1e+16"). */
#ifndef STRATA_PYJSON_H
#define STRATA_PYJSON_H

#include <jansson.h>

#include "runtime/util/strbuf.h"

char *pyjson_dumps(const json_t *v);
/* The same text appended to b. */
void pyjson_add(strbuf *b, const json_t *v);
/* json.dumps(v, ensure_ascii=False, indent=indent), tojson(indent=N): each
 * member or item on its own line, indented by depth * indent spaces,
 * separators "," and ": ", empty containers as {} and []. */
void pyjson_add_indented(strbuf *b, const json_t *v, int indent);

/* Python's str() of the value json.loads would give (Jinja's `string`
 * filter): a string as it is, True/False/None, numbers as above, lists
 * and dicts as their repr ({'k': 'v', 'n': [1, True]}), strings inside
 * them quoted as repr quotes them (' unless the text holds ' and no ").
 * repr escapes what Python deems unprintable; here the C0 and C1
 * controls, DEL and the common Unicode blanks and format marks (U+00A0,
 * U+00AD, U+2000-U+200F, U+2028-U+202F, U+205F-U+206F, U+3000, U+FEFF),
 * not the unassigned code points Python also escapes. */
void pyjson_add_str(strbuf *b, const json_t *v);

/* The reverse for containers: a Python literal dict or list (as repr writes
 * it: quotes ' or ", True/False/None, numbers, nested, a trailing comma
 * allowed) as JSON, or NULL for anything else (trailing text, non-string
 * keys, NUL, bad UTF-8, nesting past 64). Whitespace around is allowed. */
json_t *pyjson_parse_literal(const char *s, size_t n);

#endif
