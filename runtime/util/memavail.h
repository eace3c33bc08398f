/* memavail.h: how much more memory this process may use, for sizing a
 * buffer or a default budget: the smallest of /proc/meminfo's MemAvailable
 * and the room left under each cgroup memory limit over the process (its
 * own cgroup and every parent; v2 memory.max - memory.current under
 * /sys/fs/cgroup, v1 memory.limit_in_bytes - memory.usage_in_bytes under
 * /sys/fs/cgroup/memory), where the usage is taken less the inactive page
 * cache it counts (memory.stat's inactive_file, v1's total_inactive_file):
 * the kernel reclaims that before it would fail an allocation, and a file
 * just downloaded or read would otherwise leave a container "full".
 * MemAvailable alone would size a container's buffer by the host's memory,
 * and the OOM killer, not an error, answers that.
 *
 * Contract:
 *  - memavail_read(root, out) reads every file under root ("" for this
 *    machine; a test's folder of fixture files otherwise). 0 with out
 *    filled when at least one figure was read; -1 when none was (out->bytes
 *    is then 0: unknown, e.g. not Linux). Missing, unreadable or malformed
 *    files are skipped, silently.
 *  - The parsers take a file's text (NUL-terminated) and return 0, or -1
 *    when the text does not hold what is asked:
 *    memavail_parse_meminfo: MemAvailable, in bytes;
 *    memavail_parse_cgroup: from /proc/self/cgroup, the path of the v2 line
 *      ("0::PATH") when v2, else of the v1 line whose controllers include
 *      memory; a path that is not absolute or climbs with ".." (a cgroup
 *      outside the namespace) gives "/", the root of the mount;
 *    memavail_parse_limit: a cgroup file's one number; "max" is UINT64_MAX;
 *    memavail_parse_stat: the value of the line "KEY N" of a memory.stat.
 *  - No allocation, no global state; safe from any thread. */
#ifndef STRATA_MEMAVAIL_H
#define STRATA_MEMAVAIL_H

#include <stddef.h>
#include <stdint.h>

typedef struct memavail {
    uint64_t bytes;     /* the smallest figure below; 0 when memavail_read returns -1 */
    uint64_t meminfo;   /* MemAvailable; 0: not read */
    uint64_t cgroup;    /* the least room under a cgroup limit; UINT64_MAX: no limit found */
    const char *by;     /* what set bytes: "MemAvailable", "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes"; "" when unknown */
} memavail;

int memavail_read(const char *root, memavail *out);

int memavail_parse_meminfo(const char *text, uint64_t *bytes);
int memavail_parse_cgroup(const char *text, int v2, char *path, size_t n);
int memavail_parse_limit(const char *text, uint64_t *value);
int memavail_parse_stat(const char *text, const char *key, uint64_t *value);

#endif
