/* fuzz_radgram.c: libFuzzer target for the RADGRAM2 header and diagonal
 * parser on a memory buffer. Any input must be accepted or refused with a
 * message; never a crash, an overrun or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/radgram.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    radgram_header h;
    float *diag = NULL;
    char err[256];
    radgram_error e = radgram_parse_memory(data, size, "fuzz", &h, &diag, err, sizeof err);
    if (e == RADGRAM_OK) {
        if (!diag || h.k == 0) abort();
        free(diag);
    } else if (diag || !memchr(err, 0, sizeof err)) {
        abort();
    }
    return 0;
}
