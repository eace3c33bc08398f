/* prefetch.h: ask for a range of memory ahead of its use.
 *
 * Contract: prefetch_bytes(p, n) hints that the n bytes at p will be read
 * soon (into every cache level, one request per 64-byte line from p on);
 * it reads nothing, changes no result and may do nothing at all (compilers
 * without the builtin). No state. */
#ifndef STRATA_PREFETCH_H
#define STRATA_PREFETCH_H

#include <stddef.h>

static inline void prefetch_bytes(const void *p, size_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    for (size_t o = 0; o < n; o += 64) __builtin_prefetch((const char *)p + o, 0, 3);
#else
    (void)p; (void)n;
#endif
}

#endif
