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
 *    once its reasoning has ended).
 *  - json_mode_set_leads() makes the answer open with one of n texts (a
 *    forced call's tool name and what follows it up to the arguments) and
 *    then hold to that lead's schema (a schema NULL, or one json_schema.h
 *    cannot hold: any object); it copies what it keeps. With leads_only set
 *    (the tagged tool formats, whose arguments are not JSON) the constraint
 *    ends with the lead instead. json_mode_free() releases what it kept. */
#ifndef STRATA_JSON_MODE_H
#define STRATA_JSON_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/serve/engine.h"
#include "runtime/chat/json_prefix.h"
#include "runtime/chat/json_schema.h"
#include "runtime/util/strbuf.h"

typedef struct json_vocab json_vocab;

json_vocab *json_vocab_new(const engine *e);
/* The same, with the given tokens' text taken as given (n of them): control tokens whose text a
 * tool format's answers keep (gen_kept), so that a forced call's constraint can write them. */
json_vocab *json_vocab_new_marked(const engine *e, const int32_t *ids, const char *const *texts, size_t n);
void json_vocab_free(json_vocab *v);

typedef struct json_mode {
    const json_vocab *v;
    const js_schema  *schema; /* NULL: any object (json_object); else the schema's (json_schema) */
    json_prefix       state;
    js_prefix         sstate;
    bool              active, broken;
    engine_mask       mask;
    char            **leads;       /* the texts the answer must open with (json_mode_set_leads), owned */
    js_schema       **lead_schema; /* each one's schema for what follows it, owned; NULL: any object */
    size_t           *lead_len;    /* each one's length (the mask reads them for every token) */
    size_t            n_leads;
    strbuf            lead_text;   /* the answer so far, while no lead is complete */
    bool              leading;
    bool              leads_only;  /* set by the caller: the constraint ends once a lead is complete */
    bool              released;    /* it has ended so */
} json_mode;

/* schema NULL: JSON mode; else the answer held to the schema too (it must outlive m). */
void json_mode_init(json_mode *m, const json_vocab *v, const js_schema *schema);
void json_mode_feed(json_mode *m, const char *s, size_t n);
/* 0, or -1 when out of memory. */
int json_mode_set_leads(json_mode *m, const char *const *leads, const char *const *schemas, size_t n);
void json_mode_free(json_mode *m);

#endif
