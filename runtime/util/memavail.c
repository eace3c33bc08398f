/* memavail.c: see memavail.h. */
#include "runtime/util/memavail.h"

#include <stdio.h>
#include <string.h>

/* /proc/self/cgroup with every v1 controller on its own line is well under
 * this; a cgroup path as long as PATH_MAX still fits PATH_LEN. */
enum { TEXT_MAX = 16384, PATH_LEN = 4352, MAX_DEPTH = 64 };

static const char *line_end(const char *l)
{
    const char *e = strchr(l, '\n');
    return e ? e : l + strlen(l);
}

static const char *next_line(const char *l)
{
    const char *e = line_end(l);
    return *e ? e + 1 : e;
}

/* Decimal digits at *s into *v, refusing a sign or an overflow; *s moves
 * past them. */
static int parse_u64(const char **s, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        const unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
    }
    *s = p;
    *v = x;
    return 0;
}

static int only_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    return *p == 0;
}

int memavail_parse_meminfo(const char *text, uint64_t *bytes)
{
    static const char key[] = "MemAvailable:";
    for (const char *l = text; *l; l = next_line(l)) {
        if (strncmp(l, key, sizeof key - 1)) continue;
        const char *p = l + sizeof key - 1;
        uint64_t kb;
        while (*p == ' ' || *p == '\t') p++;
        if (parse_u64(&p, &kb)) return -1;
        while (*p == ' ') p++;
        /* the kernel has always written kB; anything else is not this file */
        if (strncmp(p, "kB", 2) || (p[2] && p[2] != '\n') || kb > UINT64_MAX / 1024) return -1;
        *bytes = kb * 1024;
        return 0;
    }
    return -1;
}

/* Does the comma-separated list [s, e) hold the word w? */
static int list_has(const char *s, const char *e, const char *w)
{
    const size_t wn = strlen(w);
    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        const char *end = c ? c : e;
        if ((size_t)(end - s) == wn && !memcmp(s, w, wn)) return 1;
        s = end + 1;
    }
    return 0;
}

static int climbs(const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
        if (p[-1] == '/' && (p[2] == '/' || p[2] == 0)) return 1;
    return 0;
}

int memavail_parse_cgroup(const char *text, int v2, char *path, size_t n)
{
    for (const char *l = text; *l; l = next_line(l)) {
        const char *le = line_end(l);
        const char *c1 = memchr(l, ':', (size_t)(le - l));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
        if (!c2) continue;
        const int is_v2 = c1 == l + 1 && l[0] == '0' && c2 == c1 + 1;
        if (v2 ? !is_v2 : (is_v2 || !list_has(c1 + 1, c2, "memory"))) continue;
        const size_t len = (size_t)(le - c2 - 1);
        if (len + 2 > n) return -1;
        memcpy(path, c2 + 1, len);
        path[len] = 0;
        /* inside a cgroup namespace, a cgroup outside it shows as "/../.."; the
         * mount's root is then the nearest one we can read */
        if (path[0] != '/' || climbs(path)) strcpy(path, "/");
        return 0;
    }
    return -1;
}

int memavail_parse_limit(const char *text, uint64_t *value)
{
    const char *p = text;
    if (!strncmp(p, "max", 3)) {
        *value = UINT64_MAX;
        p += 3;
    } else if (parse_u64(&p, value)) {
        return -1;
    }
    return only_space(p) ? 0 : -1;
}

int memavail_parse_stat(const char *text, const char *key, uint64_t *value)
{
    const size_t kn = strlen(key);
    for (const char *l = text; *l; l = next_line(l)) {
        if (strncmp(l, key, kn) || l[kn] != ' ') continue;
        const char *p = l + kn + 1;
        if (parse_u64(&p, value)) return -1;
        return *p == '\n' || *p == 0 ? 0 : -1;
    }
    return -1;
}

/* The whole of a small file into buf, NUL-terminated (a /proc or cgroup
 * file reports a size of 0 or 4096, so it is read to its end); -1 when it
 * is missing, unreadable or larger than buf. */
static int read_small(const char *root, const char *path, char *buf, size_t n)
{
    char full[PATH_LEN + 256];
    if ((size_t)snprintf(full, sizeof full, "%s%s", root, path) >= sizeof full) return -1;
    FILE *f = fopen(full, "r");
    if (!f) return -1;
    const size_t got = fread(buf, 1, n - 1, f);
    const int bad = ferror(f) || (got == n - 1 && fgetc(f) != EOF);
    fclose(f);
    if (bad) return -1;
    buf[got] = 0;
    return 0;
}

static int read_number(const char *root, const char *dir, const char *file, uint64_t *v)
{
    char path[PATH_LEN + 64], text[64];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) return -1;
    return read_small(root, path, text, sizeof text) || memavail_parse_limit(text, v) ? -1 : 0;
}

typedef struct cgroup_files { const char *mount, *limit, *usage, *name, *inactive; } cgroup_files;

/* The page cache a cgroup's usage counts that the kernel reclaims first
 * (memory.stat's inactive file pages): room, not use. 0 when unknown. */
static uint64_t reclaimable(const char *root, const char *dir, const cgroup_files *cf)
{
    char path[PATH_LEN + 64], text[TEXT_MAX];
    uint64_t v = 0;
    if ((size_t)snprintf(path, sizeof path, "%s/memory.stat", dir) >= sizeof path ||
        read_small(root, path, text, sizeof text) || memavail_parse_stat(text, cf->inactive, &v))
        return 0;
    return v;
}

/* The least room under a limit from the cgroup at path up to the mount's
 * root: a parent's limit (a systemd slice, a container) binds as well. */
static void cgroup_room(const char *root, const cgroup_files *cf, char *path, uint64_t *room, const char **by)
{
    char dir[PATH_LEN + 64];
    for (int depth = 0; depth < MAX_DEPTH; depth++) {
        uint64_t limit, usage;
        const int top = !strcmp(path, "/");
        if ((size_t)snprintf(dir, sizeof dir, "%s%s", cf->mount, top ? "" : path) < sizeof dir &&
            !read_number(root, dir, cf->limit, &limit) && limit != UINT64_MAX &&
            !read_number(root, dir, cf->usage, &usage)) {
            const uint64_t cache = reclaimable(root, dir, cf), used = usage > cache ? usage - cache : 0;
            const uint64_t r = limit > used ? limit - used : 0;
            if (r < *room) { *room = r; *by = cf->name; }
        }
        if (top) return;
        char *slash = strrchr(path, '/');
        if (slash == path) slash[1] = 0;
        else *slash = 0;
    }
}

int memavail_read(const char *root, memavail *out)
{
    static const cgroup_files v2 = { "/sys/fs/cgroup", "memory.max", "memory.current", "cgroup v2 memory.max",
                                     "inactive_file" };
    /* v1's total_ figure counts the cgroup's children too, as its usage does */
    static const cgroup_files v1 = { "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
                                     "cgroup v1 memory.limit_in_bytes", "total_inactive_file" };
    char text[TEXT_MAX], path[PATH_LEN];
    const char *cg_by = NULL;
    *out = (memavail){ .cgroup = UINT64_MAX, .by = "" };
    const int have_mi = !read_small(root, "/proc/meminfo", text, sizeof text) &&
                        !memavail_parse_meminfo(text, &out->meminfo);
    if (!read_small(root, "/proc/self/cgroup", text, sizeof text)) {
        if (!memavail_parse_cgroup(text, 1, path, sizeof path)) cgroup_room(root, &v2, path, &out->cgroup, &cg_by);
        if (!memavail_parse_cgroup(text, 0, path, sizeof path)) cgroup_room(root, &v1, path, &out->cgroup, &cg_by);
    }
    if (cg_by && (!have_mi || out->cgroup < out->meminfo)) {
        out->bytes = out->cgroup;
        out->by = cg_by;
    } else if (have_mi) {
        out->bytes = out->meminfo;
        out->by = "MemAvailable";
    }
    return have_mi || cg_by ? 0 : -1;
}
