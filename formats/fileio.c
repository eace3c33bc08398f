/* fileio.c: atomic, never-overwriting output files (see fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
