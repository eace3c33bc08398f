/* json_schema.c: see json_schema.h. A schema becomes a graph of nodes, one
 * per schema object ($ref's targets shared, so recursion is a cycle); the
 * recogniser rides json_prefix, byte by byte, and checks each of its events
 * against the node of the value being written. */
#include "runtime/chat/json_schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_NULL = 1, T_BOOL = 2, T_INT = 4, T_NUM = 8, T_STR = 16, T_ARR = 32, T_OBJ = 64, T_ANY = 127 };
#define MAX_PROPS 64
#define MAX_ENUM 64
#define MAX_NODES 512

struct js_node {
    uint8_t        types;
    int            n_props;
    char          *names[MAX_PROPS];
    const js_node *props[MAX_PROPS];
    uint64_t       required;
    bool           additional;           /* other keys allowed, any value */
    const js_node *items;                /* NULL: any */
    int            n_enum;               /* strings only: as JSON writes their content */
    char          *enum_text[MAX_ENUM];
    int            n_alt;                /* anyOf / oneOf: alternatives of disjoint types */
    const js_node *alt[8];
};

struct js_schema {
    json_t        *doc;
    js_node       *nodes;
    int            n_nodes;
    json_t        *refs;  /* "#/$defs/X" -> node index (as an integer) */
    js_node        any;
    const js_node *root;
};

void js_free(js_schema *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_nodes; i++) {
        for (int k = 0; k < s->nodes[i].n_props; k++) free(s->nodes[i].names[k]);
        for (int k = 0; k < s->nodes[i].n_enum; k++) free(s->nodes[i].enum_text[k]);
    }
    free(s->nodes);
    json_decref(s->doc);
    json_decref(s->refs);
    free(s);
}

static int type_bits(const char *t)
{
    return !strcmp(t, "null") ? T_NULL : !strcmp(t, "boolean") ? T_BOOL : !strcmp(t, "integer") ? T_INT
         : !strcmp(t, "number") ? T_NUM | T_INT : !strcmp(t, "string") ? T_STR : !strcmp(t, "array") ? T_ARR
         : !strcmp(t, "object") ? T_OBJ : 0;
}

static int fail(char *err, size_t errlen, const char *msg, const char *what)
{
    snprintf(err, errlen, "%s%s%.80s", msg, what ? ": " : "", what ? what : "");
    return -1;
}

static int compile(js_schema *s, json_t *v, int depth, char *err, size_t errlen);

/* The node of a "$ref": compiled once, so a recursive schema is a cycle.
 * The reserved node is an alias (one alternative) of the compiled one. */
static int ref_node(js_schema *s, const char *ref, int depth, char *err, size_t errlen)
{
    json_t *known = json_object_get(s->refs, ref);
    if (known) return (int)json_integer_value(known);
    const char *name = !strncmp(ref, "#/$defs/", 8) ? ref + 8 : !strncmp(ref, "#/definitions/", 14) ? ref + 14 : NULL;
    json_t *defs = json_object_get(s->doc, ref[2] == '$' ? "$defs" : "definitions");
    json_t *target = name ? json_object_get(defs, name) : NULL;
    if (!target) return fail(err, errlen, "a $ref to nothing this schema defines", ref);
    if (s->n_nodes >= MAX_NODES) return fail(err, errlen, "more than 512 schema nodes", NULL);
    int at = s->n_nodes++; /* taken before compiling, so a reference back to it finds it */
    json_object_set_new(s->refs, ref, json_integer(at));
    int got = compile(s, target, depth + 1, err, errlen);
    if (got == -1) return -1;
    js_node *n = &s->nodes[at];
    n->types = got == -2 ? T_ANY : s->nodes[got].types;
    n->n_alt = 1;
    n->alt[0] = got == -2 ? &s->any : &s->nodes[got];
    return at;
}

/* A node's alternative for a value of type t (its first byte's), or the node itself. */
static const js_node *pick(const js_node *n, uint8_t t)
{
    for (int k = 0; n && k < n->n_alt; k++)
        if (n->alt[k]->types & t) return pick(n->alt[k], t);
    return n;
}

static int compile(js_schema *s, json_t *v, int depth, char *err, size_t errlen)
{
    if (depth > 64) return fail(err, errlen, "a schema nested more than 64 deep", NULL);
    if (json_is_true(v) || (json_is_object(v) && !json_object_size(v))) return -2; /* anything */
    if (!json_is_object(v)) return fail(err, errlen, "a schema that is not an object", NULL);
    json_t *ref = json_object_get(v, "$ref");
    if (json_is_string(ref)) return ref_node(s, json_string_value(ref), depth, err, errlen);
    if (s->n_nodes >= MAX_NODES) return fail(err, errlen, "more than 512 schema nodes", NULL);
    const int at = s->n_nodes++;
    js_node *n = &s->nodes[at];
    memset(n, 0, sizeof *n);
    json_t *alts = json_object_get(v, "anyOf");
    if (!alts) alts = json_object_get(v, "oneOf");
    if (json_is_array(alts)) {
        size_t i;
        json_t *a;
        json_array_foreach(alts, i, a) {
            int k = compile(s, a, depth + 1, err, errlen);
            if (k == -1) return -1;
            n = &s->nodes[at];
            const js_node *x = k == -2 ? &s->any : &s->nodes[k];
            if ((n->types & x->types) || n->n_alt == 8)
                return fail(err, errlen, "anyOf/oneOf alternatives of the same JSON type (not told apart by a first byte)",
                            NULL);
            n->types |= x->types;
            n->alt[n->n_alt++] = x;
        }
        return at;
    }
    json_t *type = json_object_get(v, "type");
    if (json_is_string(type)) n->types = (uint8_t)type_bits(json_string_value(type));
    else if (json_is_array(type)) {
        size_t i;
        json_t *t;
        json_array_foreach(type, i, t) n->types |= (uint8_t)(json_is_string(t) ? type_bits(json_string_value(t)) : 0);
    }
    json_t *en = json_object_get(v, "enum"), *cn = json_object_get(v, "const");
    json_t *one = cn ? json_array() : NULL;
    if (cn) { json_array_append(one, cn); en = one; }
    if (json_is_array(en)) {
        uint8_t et = 0;
        size_t i;
        json_t *x;
        json_array_foreach(en, i, x) {
            et |= json_is_string(x) ? T_STR : json_is_integer(x) ? T_INT | T_NUM : json_is_real(x) ? T_NUM
                : json_is_boolean(x) ? T_BOOL : json_is_null(x) ? T_NULL : json_is_array(x) ? T_ARR : T_OBJ;
            if (json_is_string(x)) {
                if (n->n_enum >= MAX_ENUM) { json_decref(one); return fail(err, errlen, "an enum of more than 64 strings", NULL); }
                char *t = json_dumps(x, JSON_ENCODE_ANY);
                size_t tl = t ? strlen(t) : 0;
                if (!t || tl < 2) { free(t); json_decref(one); return fail(err, errlen, "out of memory", NULL); }
                t[tl - 1] = 0;
                n->enum_text[n->n_enum] = strdup(t + 1); /* the content between the quotes, as JSON writes it */
                free(t);
                if (!n->enum_text[n->n_enum++]) { json_decref(one); return fail(err, errlen, "out of memory", NULL); }
            }
        }
        n->types = n->types ? n->types & et : et;
    }
    json_decref(one);
    if (!n->types) n->types = T_ANY;
    json_t *props = json_object_get(v, "properties"), *req = json_object_get(v, "required");
    json_t *add = json_object_get(v, "additionalProperties");
    n->additional = !json_is_false(add);
    const char *key;
    json_t *pv;
    json_object_foreach(props, key, pv) {
        if (n->n_props >= MAX_PROPS) return fail(err, errlen, "an object of more than 64 properties", NULL);
        int k = compile(s, pv, depth + 1, err, errlen);
        if (k < 0 && k != -2) return -1;
        n = &s->nodes[at];
        n->names[n->n_props] = strdup(key);
        n->props[n->n_props] = k == -2 ? &s->any : &s->nodes[k];
        if (!n->names[n->n_props++]) return fail(err, errlen, "out of memory", NULL);
    }
    size_t i;
    json_t *r;
    json_array_foreach(req, i, r) {
        int k = 0;
        while (k < n->n_props && (!json_is_string(r) || strcmp(n->names[k], json_string_value(r)))) k++;
        if (k == n->n_props) return fail(err, errlen, "a required property the schema does not describe",
                                         json_is_string(r) ? json_string_value(r) : "?");
        n->required |= (uint64_t)1 << k;
    }
    json_t *items = json_object_get(v, "items");
    if (items) {
        int k = compile(s, items, depth + 1, err, errlen);
        if (k < 0 && k != -2) return -1;
        s->nodes[at].items = k == -2 ? NULL : &s->nodes[k];
    }
    return at;
}

js_schema *js_compile(const char *text, char *err, size_t errlen)
{
    js_schema *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->doc = json_loads(text, 0, NULL);
    s->nodes = calloc(MAX_NODES, sizeof *s->nodes);
    s->refs = json_object();
    s->any.types = T_ANY;
    s->any.additional = true;
    if (!s->doc || !s->nodes || !s->refs) { snprintf(err, errlen, "the schema is not a JSON object"); js_free(s); return NULL; }
    int root = compile(s, s->doc, 0, err, errlen);
    if (root == -1) { js_free(s); return NULL; }
    s->root = root == -2 ? &s->any : &s->nodes[root];
    if (!(s->root->types & T_OBJ)) {
        snprintf(err, errlen, "the top level must allow an object");
        js_free(s);
        return NULL;
    }
    return s;
}

void js_prefix_init(js_prefix *p, const js_schema *s)
{
    memset(p, 0, sizeof *p);
    json_prefix_init(&p->j);
    p->root = p->next = s->root;
    p->any = &s->any;
}

bool js_prefix_complete(const js_prefix *p) { return json_prefix_complete(&p->j); }

static uint8_t type_of(unsigned char c)
{
    return c == '{' ? T_OBJ : c == '[' ? T_ARR : c == '"' ? T_STR : c == 't' || c == 'f' ? T_BOOL : c == 'n' ? T_NULL
         : T_NUM | T_INT;
}

static bool feed_byte(js_prefix *p, unsigned char c)
{
    if (!json_prefix_feed(&p->j, (const char *)&c, 1)) return false;
    js_frame *top = p->depth ? &p->f[p->depth - 1] : NULL;
    switch (p->j.ev) {
    case JP_VALUE: {
        /* the root, an array's item, or the value after a key */
        const uint8_t t = type_of(c);
        const js_node *n = pick(top && top->array ? top->node->items : p->next, t);
        p->next = NULL;
        if (n && !(n->types & t)) return false;
        if (c == '{' || c == '[') {
            if (p->depth >= JS_MAX_DEPTH) return false;
            p->f[p->depth++] = (js_frame){ .node = n ? n : p->any, .seen = 0, .array = c == '[' };
        } else if (c == '"') {
            p->in_enum = n && n->n_enum > 0;
            p->str_node = n;
            p->cand = p->in_enum ? (n->n_enum >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n->n_enum) - 1) : 0;
            p->pos = 0;
        } else if (t & T_INT) {
            p->int_only = n && !(n->types & T_NUM) && (n->types & T_INT);
        }
        return true;
    }
    case JP_NUM_CHAR:
        return !(p->int_only && (c == '.' || c == 'e' || c == 'E'));
    case JP_KEY_OPEN: {
        /* the properties not yet written are the candidates (so every prefix still leads somewhere); with
         * other keys allowed, the written ones are followed too, to refuse one written twice */
        const js_node *o = top->node;
        const uint64_t all = o->n_props >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << o->n_props) - 1;
        p->key_free = o->additional;
        p->cand = all & ~top->seen;
        p->seen_cand = o->additional ? all & top->seen : 0;
        p->pos = 0;
        return p->cand || p->key_free;
    }
    case JP_KEY_CHAR:
    case JP_STR_CHAR: {
        const bool key = p->j.ev == JP_KEY_CHAR;
        if (!key && !p->in_enum) return true;
        const js_node *o = key ? top->node : p->str_node;
        for (int k = 0; k < (key ? o->n_props : o->n_enum); k++) {
            const char *w = key ? o->names[k] : o->enum_text[k];
            if (strlen(w) <= p->pos || (unsigned char)w[p->pos] != c) {
                p->cand &= ~((uint64_t)1 << k);
                p->seen_cand &= ~((uint64_t)1 << k);
            }
        }
        p->pos++;
        return p->cand || (key && p->key_free);
    }
    case JP_KEY_CLOSE: {
        const js_node *o = top->node;
        for (int k = 0; k < o->n_props; k++) {
            if ((p->seen_cand >> k & 1) && strlen(o->names[k]) == p->pos) return false; /* a key twice */
            if ((p->cand >> k & 1) && strlen(o->names[k]) == p->pos) {
                top->seen |= (uint64_t)1 << k;
                p->next = o->props[k];
                return true;
            }
        }
        p->next = p->any;
        return p->key_free;
    }
    case JP_STR_CLOSE: {
        if (!p->in_enum) return true;
        p->in_enum = false;
        const js_node *o = p->str_node;
        for (int k = 0; k < o->n_enum; k++)
            if ((p->cand >> k & 1) && strlen(o->enum_text[k]) == p->pos) return true;
        return false;
    }
    case JP_CLOSE_OBJECT:
        if ((top->node->required & ~top->seen) != 0) return false;
        p->depth--;
        return true;
    case JP_CLOSE_ARRAY:
        p->depth--;
        return true;
    default: /* a ',' in an object must have a key that may still come after it */
        if (c == ',' && top && !top->array) {
            const js_node *o = top->node;
            const uint64_t all = o->n_props >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << o->n_props) - 1;
            return o->additional || (all & ~top->seen) != 0;
        }
        return true;
    }
}

bool js_prefix_feed(js_prefix *p, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!feed_byte(p, (unsigned char)s[i])) return false;
    return true;
}
