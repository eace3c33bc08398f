/* json_prefix.c: see json_prefix.h. A pushdown recogniser, one byte at a
 * time; containers on a bit stack (object or array per depth). */
#include "runtime/chat/json_prefix.h"

#include <string.h>

enum {
    S_START,     /* before the top-level object */
    S_VALUE,     /* a value must come (after ':' or an array's ',') */
    S_ARR_FIRST, /* after '[': a value or ']' */
    S_OBJ_FIRST, /* after '{': a key or '}' */
    S_OBJ_KEY,   /* after an object's ',': a key */
    S_COLON,     /* after a key */
    S_AFTER,     /* after a value inside a container: ',' or its close */
    S_STRING,
    S_LITERAL,
    S_NUMBER,
    S_DONE,
};

/* A number's phases; the terminal ones may end it. */
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

static const char *const LITERALS[3] = { "true", "false", "null" };

static bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int hex_value(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void json_prefix_init(json_prefix *j) { memset(j, 0, sizeof *j); }

bool json_prefix_complete(const json_prefix *j) { return j->state == S_DONE; }

/* A value has ended: the container it sits in decides what follows. */
static void value_done(json_prefix *j) { j->state = j->depth ? S_AFTER : S_DONE; }

static bool open_container(json_prefix *j, bool array)
{
    if (j->depth >= JSON_PREFIX_MAX_DEPTH) return false;
    if (array) j->arrays |= (uint64_t)1 << j->depth;
    else j->arrays &= ~((uint64_t)1 << j->depth);
    j->depth++;
    j->state = array ? S_ARR_FIRST : S_OBJ_FIRST;
    return true;
}

static bool top_is_array(const json_prefix *j) { return j->depth && (j->arrays >> (j->depth - 1) & 1); }

static void close_container(json_prefix *j)
{
    j->ev = top_is_array(j) ? JP_CLOSE_ARRAY : JP_CLOSE_OBJECT;
    j->depth--;
    value_done(j);
}

/* The first byte of a value. */
static bool value_start(json_prefix *j, unsigned char c)
{
    j->ev = JP_VALUE;
    if (c == '{') return open_container(j, false);
    if (c == '[') return open_container(j, true);
    if (c == '"') { j->state = S_STRING; j->str_key = 0; return true; }
    if (c == '-' || is_digit(c)) {
        j->state = S_NUMBER;
        j->num = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
        return true;
    }
    for (uint8_t k = 0; k < 3; k++)
        if (c == (unsigned char)LITERALS[k][0]) { j->state = S_LITERAL; j->lit = k; j->lit_pos = 1; return true; }
    return false;
}

/* One byte inside a string. */
static bool string_byte(json_prefix *j, unsigned char c)
{
    if (j->owed) { /* a UTF-8 continuation */
        if (c < j->lo || c > j->hi) return false;
        j->owed--;
        j->lo = 0x80;
        j->hi = 0xBF;
        return true;
    }
    if (j->esc == 1) {
        if (c == 'u') { j->esc = 2; j->u = 0; return true; }
        if (j->low || !strchr("\"\\/bfnrt", c) || !c) return false;
        j->esc = 0;
        return true;
    }
    if (j->esc >= 2) {
        int h = hex_value(c);
        if (h < 0) return false;
        j->u = (uint16_t)(j->u << 4 | (unsigned)h);
        if (++j->esc < 6) return true;
        j->esc = 0;
        const bool high = j->u >= 0xD800 && j->u <= 0xDBFF, low = j->u >= 0xDC00 && j->u <= 0xDFFF;
        if (j->low) { /* the escape after a high surrogate's must be its low one */
            j->low = 0;
            return low;
        }
        if (low) return false;
        if (high) j->low = 1;
        return true;
    }
    if (j->low == 1) { if (c != '\\') return false; j->low = 2; j->esc = 1; return true; }
    if (j->low == 2) return false; /* handled above: esc 1 then 'u' */
    if (c < 0x20) return false;
    if (c == '"' && !j->esc && !j->low) {
        j->ev = j->str_key ? JP_KEY_CLOSE : JP_STR_CLOSE;
        if (j->str_key) j->state = S_COLON;
        else value_done(j);
        return true;
    }
    if (c == '\\') { j->esc = 1; return true; }
    if (c < 0x80) return true;
    j->lo = 0x80;
    j->hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) j->owed = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        j->owed = 2;
        if (c == 0xE0) j->lo = 0xA0;
        if (c == 0xED) j->hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        j->owed = 3;
        if (c == 0xF0) j->lo = 0x90;
        if (c == 0xF4) j->hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        return false;
    }
    return true;
}

/* One byte inside a number; a byte that ends it is handled after it. */
static bool number_byte(json_prefix *j, unsigned char c, bool *ended)
{
    *ended = false;
    switch (j->num) {
    case N_MINUS:
        if (c == '0') { j->num = N_ZERO; return true; }
        if (is_digit(c)) { j->num = N_INT; return true; }
        return false;
    case N_ZERO:
    case N_INT:
        if (j->num == N_INT && is_digit(c)) return true;
        if (c == '.') { j->num = N_DOT; return true; }
        if (c == 'e' || c == 'E') { j->num = N_E; return true; }
        break;
    case N_DOT:
        if (is_digit(c)) { j->num = N_FRAC; return true; }
        return false;
    case N_FRAC:
        if (is_digit(c)) return true;
        if (c == 'e' || c == 'E') { j->num = N_E; return true; }
        break;
    case N_E:
        if (c == '+' || c == '-') { j->num = N_ESIGN; return true; }
        if (is_digit(c)) { j->num = N_EXP; return true; }
        return false;
    case N_ESIGN:
        if (is_digit(c)) { j->num = N_EXP; return true; }
        return false;
    case N_EXP:
        if (is_digit(c)) return true;
        break;
    }
    *ended = true; /* a terminal phase and a byte that is not the number's */
    value_done(j);
    return true;
}

static bool feed_byte(json_prefix *j, unsigned char c)
{
    j->ev = JP_OTHER;
    /* blanks in a row between tokens are bounded (a number's or literal's blank ends it, and counts after) */
    if (j->state != S_STRING && is_ws(c) && j->state != S_NUMBER) {
        if (++j->blanks > JSON_PREFIX_MAX_BLANKS) return false;
    } else {
        j->blanks = 0;
    }
    switch (j->state) {
    case S_START:
        if (is_ws(c)) return true;
        j->ev = JP_VALUE;
        return c == '{' && open_container(j, false);
    case S_VALUE:
    case S_ARR_FIRST:
        if (is_ws(c)) return true;
        if (c == ']' && j->state == S_ARR_FIRST) { close_container(j); return true; }
        return value_start(j, c);
    case S_OBJ_FIRST:
    case S_OBJ_KEY:
        if (is_ws(c)) return true;
        if (c == '}' && j->state == S_OBJ_FIRST) { close_container(j); return true; }
        if (c != '"') return false;
        j->state = S_STRING;
        j->str_key = 1;
        j->ev = JP_KEY_OPEN;
        return true;
    case S_COLON:
        if (is_ws(c)) return true;
        if (c != ':') return false;
        j->state = S_VALUE;
        return true;
    case S_AFTER:
        if (is_ws(c)) return true;
        if (c == ',') { j->state = top_is_array(j) ? S_VALUE : S_OBJ_KEY; return true; }
        if (c == (top_is_array(j) ? ']' : '}')) { close_container(j); return true; }
        return false;
    case S_STRING:
        j->ev = j->str_key ? JP_KEY_CHAR : JP_STR_CHAR; /* the closing quote says otherwise */
        return string_byte(j, c);
    case S_LITERAL: {
        const char *w = LITERALS[j->lit];
        if ((unsigned char)w[j->lit_pos] != c) return false;
        if (!w[++j->lit_pos]) value_done(j);
        return true;
    }
    case S_NUMBER: {
        bool ended;
        j->ev = JP_NUM_CHAR;
        if (!number_byte(j, c, &ended)) return false;
        return ended ? feed_byte(j, c) : true;
    }
    default: /* S_DONE: the object has closed */
        return false;
    }
}

bool json_prefix_feed(json_prefix *j, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!feed_byte(j, (unsigned char)s[i])) return false;
    return true;
}
