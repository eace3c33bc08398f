/* pull_names.c: the pure pieces of strata pull (see pull.h): split-GGUF
 * names, path safety, sha256 in ETags, the backoff schedule. */
#include "runtime/pull/pull.h"

#include <ctype.h>
#include <string.h>

/* llama.cpp's gguf-split writes "%s-%05d-of-%05d.gguf". */
int pull_split_parse(const char *file, char *prefix, int *count)
{
    static const char tail[] = "-00000-of-00000.gguf";
    size_t n = strlen(file), t = sizeof tail - 1;
    if (n <= t) return 0;
    const char *s = file + n - t;
    for (size_t i = 0; i < t; i++) {
        if (tail[i] == '0' ? !isdigit((unsigned char)s[i]) : s[i] != tail[i]) return 0;
    }
    int idx = 0, cnt = 0;
    for (int i = 1; i <= 5; i++) idx = idx * 10 + (s[i] - '0');
    for (int i = 10; i <= 14; i++) cnt = cnt * 10 + (s[i] - '0');
    if (idx < 1 || cnt < 1 || idx > cnt) return 0;
    memcpy(prefix, file, n - t);
    prefix[n - t] = 0;
    *count = cnt;
    return 1;
}

void pull_split_name(char *out, size_t n, const char *prefix, int i, int count)
{
    snprintf(out, n, "%s-%05d-of-%05d.gguf", prefix, i, count);
}

int pull_safe_relpath(const char *file)
{
    if (!*file || file[0] == '/') return 0;
    for (const char *p = file; *p; p++)
        if (*p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f) return 0;
    const char *c = file;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.')) return 0;
        if (!e) return 1;
        c = e + 1;
    }
}

int pull_etag_sha256(const char *value, char out[65])
{
    const char *p = value;
    while (*p == ' ' || *p == '\t') p++;
    if (p[0] == 'W' && p[1] == '/') p += 2;
    if (*p == '"') p++;
    for (int i = 0; i < 64; i++) {
        if (!isxdigit((unsigned char)p[i])) return 0;
        out[i] = (char)tolower((unsigned char)p[i]);
    }
    p += 64;
    if (*p == '"') p++;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p) return 0;
    out[64] = 0;
    return 1;
}

long pull_backoff_ms(long base_ms, int n)
{
    const long cap = 60000;
    long d = base_ms < 0 ? 0 : base_ms;
    for (int i = 1; i < n && d < cap; i++) d *= 2;
    return d < cap ? d : cap;
}

void pull_human_bytes(char *out, size_t n, double bytes)
{
    static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (bytes >= 1024 && u < 4) { bytes /= 1024; u++; }
    if (u == 0) snprintf(out, n, "%.0f B", bytes);
    else snprintf(out, n, "%.1f %s", bytes, unit[u]);
}
