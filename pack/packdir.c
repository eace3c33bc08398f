/* packdir.c: partial directory, free-space check, no-replace publish. */
#include "pack/packdir.h"

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

#include "formats/fileio.h"
#include "formats/pack_files.h"
#include "formats/pack_manifest.h"

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

char *packdir_begin(const char *target, uint64_t need, char *err, size_t errlen)
{
    if (path_exists(target)) {
        snprintf(err, errlen, "%s: already exists; a pack is never overwritten", target);
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

int packdir_find_stale(const char *target, char *path, size_t n)
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
            char *p = slash ? pack_path(parent, e->d_name) : strdup(e->d_name);
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

int packdir_publish(const char *tmp, const char *target, char *err, size_t errlen)
{
    int fd = open(tmp, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }
    /* mkdtemp made it 0700; a published pack is read by other users and servers */
    mode_t um = umask(0);
    umask(um);
    chmod(tmp, 0777 & ~um);
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, target, 1 /* RENAME_NOREPLACE */) == 0) return 0;
    if (errno != ENOSYS && errno != EINVAL) {
        snprintf(err, errlen, "%s: cannot publish the pack: %s", target, strerror(errno));
        return -1;
    }
#endif
    /* Filesystems without RENAME_NOREPLACE: check, then rename (a race window
     * remains only where the kernel offers no better). */
    if (path_exists(target) || rename(tmp, target) != 0) {
        snprintf(err, errlen, "%s: cannot publish the pack: %s", target,
                 path_exists(target) ? "it appeared while building" : strerror(errno));
        return -1;
    }
    return 0;
}

void packdir_discard(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *p = pack_path(tmp, e->d_name);
            if (p) unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(tmp);
}

int packdir_checksums(pack_layout *L, const char *dir, int check, char *err, size_t errlen)
{
    for (int f = 0; f < PACK_NFILES; f++) {
        char *p = pack_path(dir, PACK_FILE_NAMES[f]);
        uint64_t bytes = 0;
        const int crc_rc = p ? pack_file_crc32(p, &bytes, &L->files[f].crc32, err, errlen) : -1;
        free(p);
        if (crc_rc) return -1;
        if (check && f != PACK_TOKENIZER && bytes != L->files[f].bytes) {
            snprintf(err, errlen, "%s: %llu bytes written, %llu planned", PACK_FILE_NAMES[f],
                     (unsigned long long)bytes, (unsigned long long)L->files[f].bytes);
            return -1;
        }
        L->files[f].bytes = bytes;
    }
    return 0;
}

int packdir_write_manifest(const pack_layout *L, const char *dir, char *err, size_t errlen)
{
    char *js = pack_layout_to_json(L);
    char *mp = pack_path(dir, PACK_MANIFEST);
    atomic_out ao;
    int mrc = (js && mp) ? atomic_out_open(&ao, mp, err, errlen) : -1;
    if (!js || !mp) snprintf(err, errlen, "out of memory");
    if (mrc == 0) {
        if (fputs(js, ao.fp) < 0 || fputc('\n', ao.fp) < 0) {
            atomic_out_abort(&ao);
            snprintf(err, errlen, "%s: write failed", PACK_MANIFEST);
            mrc = -1;
        } else {
            mrc = atomic_out_commit(&ao, err, errlen);
        }
    }
    free(js);
    free(mp);
    return mrc;
}
