/* fuzz_pack_index.c: libFuzzer target for the runtime's index.txt parser
 * (formats/pack_index.c, linked with the rest of formats/). Any input either parses or is
 * refused with a one-line message naming the file; a parsed index is walked
 * in full so ASan sees every field it claims to hold. */
#include "formats/pack_index.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the parser takes a length, not a C string: hand it an exact-size copy */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    memcpy(text, data, size);
    pack_index x;
    memset(&x, 0, sizeof x);
    char err[256];
    err[0] = 0;
    if (pindex_parse(&x, text, size, "fuzz/index.txt", err, sizeof err) == 0) {
        volatile int64_t sink = 0;
        for (int i = 0; i < x.n_t; i++) sink += x.t[i].src_bytes + (int64_t)strlen(x.t[i].name);
        for (int i = 0; i < x.n_e; i++) sink += x.e[i].part_bytes + (int64_t)strlen(x.e[i].name);
        for (int i = 0; i < x.n_l; i++) sink += x.l[i].stride;
        for (int i = 0; i < x.n_h; i++) sink += (int64_t)strlen(x.h[i].key) + (int64_t)strlen(x.h[i].value);
        (void)pindex_hparam(&x, "general.architecture");
        (void)sink;
    } else {
        if (!strstr(err, "fuzz/index.txt") || strchr(err, '\n')) abort();
    }
    pindex_free(&x);
    free(text);
    return 0;
}
