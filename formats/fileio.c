/* fileio.c: atomic, never-overwriting output files (see fileio.h). */
#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

int path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int atomic_out_open(atomic_out *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    if (path_exists(path)) {
        snprintf(err, errlen, "%s: already exists; refusing to overwrite it", path);
        return -1;
    }
    size_t n = strlen(path) + 32;
    o->path = strdup(path);
    o->tmp = malloc(n);
    if (!o->path || !o->tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        atomic_out_abort(o);
        return -1;
    }
    snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create temporary file: %s", o->tmp, strerror(errno));
        free(o->tmp);
        o->tmp = NULL; /* not ours: never unlink it */
        atomic_out_abort(o);
        return -1;
    }
    o->fp = fdopen(fd, "wb");
    if (!o->fp) {
        snprintf(err, errlen, "%s: %s", o->tmp, strerror(errno));
        close(fd);
        atomic_out_abort(o);
        return -1;
    }
    return 0;
}

int atomic_out_commit(atomic_out *o, char *err, size_t errlen)
{
    int rc = 0;
    if (fflush(o->fp) != 0 || ferror(o->fp)) {
        snprintf(err, errlen, "%s: write failed: %s", o->path, strerror(errno));
        rc = -1;
    } else if (fsync(fileno(o->fp)) != 0) {
        snprintf(err, errlen, "%s: fsync failed: %s", o->path, strerror(errno));
        rc = -1;
    }
    if (fclose(o->fp) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: close failed: %s", o->path, strerror(errno));
        rc = -1;
    }
    o->fp = NULL;
    if (rc == 0 && link(o->tmp, o->path) != 0) {
        if (errno == EEXIST)
            snprintf(err, errlen, "%s: already exists; refusing to overwrite it", o->path);
        else
            snprintf(err, errlen, "%s: cannot publish: %s", o->path, strerror(errno));
        rc = -1;
    }
    atomic_out_abort(o); /* removes the temporary name, frees */
    return rc;
}

void atomic_out_abort(atomic_out *o)
{
    if (o->fp) fclose(o->fp);
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int read_file(const char *path, unsigned char **data, size_t *size, char *err, size_t errlen)
{
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (len < cap) break;
        unsigned char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    if (!buf || ferror(fp)) {
        snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    buf[len] = 0;
    *data = buf;
    *size = len;
    return 0;
}

/* ------------------------------------------------ output directories */

static char *join_path(const char *dir, const char *leaf)
{
    const size_t n = strlen(dir) + strlen(leaf) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, leaf);
    return p;
}

static char *parent_of(const char *path)
{
    char *p = strdup(path);
    if (!p) return NULL;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = 0;
    char *slash = strrchr(p, '/');
    if (!slash) { free(p); return strdup("."); }
    if (slash == p) slash[1] = 0; else *slash = 0;
    return p;
}

char *outdir_begin(const char *target, uint64_t need, char *err, size_t errlen)
{
    if (path_exists(target)) {
        snprintf(err, errlen, "%s: already exists; it is never overwritten", target);
        return NULL;
    }
    char *parent = parent_of(target);
    struct statvfs vs;
    if (!parent || statvfs(parent, &vs) != 0) {
        snprintf(err, errlen, "%s: cannot stat the parent directory: %s", target, strerror(errno));
        free(parent);
        return NULL;
    }
    free(parent);
    const uint64_t avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
    if (avail < need) {
        snprintf(err, errlen, "%s: needs %llu bytes but only %llu are free", target, (unsigned long long)need,
                 (unsigned long long)avail);
        return NULL;
    }
    const size_t n = strlen(target) + 32;
    char *tmp = malloc(n);
    if (!tmp) return NULL;
    snprintf(tmp, n, "%s.partial.XXXXXX", target);
    if (!mkdtemp(tmp)) {
        snprintf(err, errlen, "%s: cannot create a partial directory: %s", target, strerror(errno));
        free(tmp);
        return NULL;
    }
    return tmp;
}

int outdir_find_stale(const char *target, char *path, size_t n)
{
    char *parent = parent_of(target);
    const char *slash = strrchr(target, '/');
    const char *leaf = slash ? slash + 1 : target;
    DIR *d = parent && *leaf ? opendir(parent) : NULL;
    int found = 0;
    if (d) {
        const size_t ln = strlen(leaf);
        struct dirent *e;
        while (!found && (e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, leaf, ln) || strncmp(e->d_name + ln, ".partial.", 9)) continue;
            char *p = slash ? join_path(parent, e->d_name) : strdup(e->d_name);
            struct stat st;
            if (p && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
                snprintf(path, n, "%s", p);
                found = 1;
            }
            free(p);
        }
        closedir(d);
    }
    free(parent);
    return found;
}

int outdir_publish(const char *tmp, const char *target, char *err, size_t errlen)
{
    int fd = open(tmp, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }
    /* mkdtemp made it 0700; what is published is read by other users and servers */
    mode_t um = umask(0);
    umask(um);
    chmod(tmp, 0777 & ~um);
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, target, 1 /* RENAME_NOREPLACE */) == 0) return 0;
    if (errno != ENOSYS && errno != EINVAL) {
        snprintf(err, errlen, "%s: cannot publish it: %s", target, strerror(errno));
        return -1;
    }
#endif
    /* Filesystems without RENAME_NOREPLACE: check, then rename (a race window
     * remains only where the kernel offers no better). */
    if (path_exists(target) || rename(tmp, target) != 0) {
        snprintf(err, errlen, "%s: cannot publish it: %s", target,
                 path_exists(target) ? "it appeared while building" : strerror(errno));
        return -1;
    }
    return 0;
}

void outdir_discard(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *p = join_path(tmp, e->d_name);
            if (p) unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(tmp);
}
