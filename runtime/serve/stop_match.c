/* stop_match.c: see stop_match.h. The texts are short (what one request
 * generates after the last release), so plain search is enough. */
#include "runtime/serve/stop_match.h"

#include <string.h>

#include "runtime/util/utf8.h"

static size_t find(const char *h, size_t hl, const char *n, size_t nl)
{
    if (nl == 0 || nl > hl) return (size_t)-1;
    for (size_t i = 0; i + nl <= hl; i++)
        if (h[i] == n[0] && memcmp(h + i, n, nl) == 0) return i;
    return (size_t)-1;
}

size_t stop_match(const char *text, size_t len, const char *const *stops, size_t n_stops,
                  bool final, int *matched)
{
    *matched = -1;
    size_t best = (size_t)-1;
    for (size_t k = 0; k < n_stops; k++) {
        size_t p = find(text, len, stops[k], strlen(stops[k]));
        if (p < best) { best = p; *matched = (int)k; }
    }
    if (*matched >= 0) return best;
    if (final) return len;
    size_t hold = 0;
    for (size_t k = 0; k < n_stops; k++) {
        size_t sl = strlen(stops[k]);
        if (sl == 0) continue;
        for (size_t m = sl - 1 < len ? sl - 1 : len; m > hold; m--)
            if (memcmp(text + len - m, stops[k], m) == 0) { hold = m; break; }
    }
    size_t tail = utf8_incomplete_tail(text, len - hold);
    return len - hold - tail;
}
