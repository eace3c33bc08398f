/* web_files.h: the web pages `strata serve` answers with (its chat page at
 * /, its dashboard at /dashboard, their scripts and style under /static/),
 * compiled into the binary from runtime/serve/web/ by tools/embed_web.sh:
 * one entry per file, by name, its bytes NUL-terminated (len excludes it). */
#ifndef STRATA_WEB_FILES_H
#define STRATA_WEB_FILES_H

#include <stddef.h>

typedef struct web_file {
    const char          *name;
    const unsigned char *data;
    size_t               len;
} web_file;

extern const web_file WEB_FILES[];
extern const int N_WEB_FILES;

#endif
