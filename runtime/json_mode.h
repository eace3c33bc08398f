/* json_mode.h: JSON mode (the APIs' response_format json_object): a
 * generation's answer held to one JSON object, token by token.
 *
 * Contract:
 *  - json_vocab_new() reads every token's text once (e->piece) and which
 *    tokens end a turn (e->is_eog): the table a server keeps for its model;
 *    NULL when out of memory.
 *  - A json_mode, once json_mode_init() has set it up over a table, is the
 *    engine_mask of one generation (its mask field). While active, a token
 *    may come next when its text continues the answer so far into a JSON
 *    object's prefix (json_prefix.h; tokens with no text never), and a
 *    turn-ending token only once the object has closed, when nothing else
 *    may.
 *  - json_mode_feed() takes the answer's text as it is generated. Text that
 *    breaks the object (it came before the constraint applied, as after a
 *    reasoning block) turns the constraint off for the rest of the answer:
 *    a constraint with no way forward would stall it.
 *  - active is the caller's to set (generate.c: from the answer's start, or
 *    once its reasoning has ended). */
#ifndef STRATA_JSON_MODE_H
#define STRATA_JSON_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/engine.h"
#include "runtime/json_prefix.h"
#include "runtime/json_schema.h"

typedef struct json_vocab json_vocab;

json_vocab *json_vocab_new(const engine *e);
void json_vocab_free(json_vocab *v);

typedef struct json_mode {
    const json_vocab *v;
    const js_schema  *schema; /* NULL: any object (json_object); else the schema's (json_schema) */
    json_prefix       state;
    js_prefix         sstate;
    bool              active, broken;
    engine_mask       mask;
} json_mode;

/* schema NULL: JSON mode; else the answer held to the schema too (it must outlive m). */
void json_mode_init(json_mode *m, const json_vocab *v, const js_schema *schema);
void json_mode_feed(json_mode *m, const char *s, size_t n);

#endif
