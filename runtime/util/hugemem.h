/* hugemem.h: memory for what decode streams through once per token (the
 * weights, and the bench's sweep that stands for them).
 *
 * Contract: hugemem_alloc(bytes) returns memory for `bytes` (at least 1)
 * to be released with free(), or NULL. From HUGEMEM_PAGE bytes on it
 * starts on a HUGEMEM_PAGE boundary, its size rounded up to whole pages,
 * and transparent huge pages are asked for before the first touch (with 4
 * KiB pages every 4 KiB of a streamed matrix is a TLB miss and a restart
 * of the hardware prefetcher); smaller, it is 64-byte aligned. No state. */
#ifndef STRATA_HUGEMEM_H
#define STRATA_HUGEMEM_H

#include <stdlib.h>
#include <sys/mman.h>

#define HUGEMEM_PAGE ((size_t)2 << 20)

static inline void *hugemem_alloc(size_t bytes)
{
    const size_t align = bytes >= HUGEMEM_PAGE ? HUGEMEM_PAGE : 64;
    const size_t cap = bytes ? (bytes + align - 1) / align * align : align;
    void *m = aligned_alloc(align, cap);
#ifdef MADV_HUGEPAGE
    if (m && align == HUGEMEM_PAGE) (void)madvise(m, cap, MADV_HUGEPAGE);
#endif
    return m;
}

#endif
