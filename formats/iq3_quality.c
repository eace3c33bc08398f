/* iq3_quality.c: placeholder, filled next. */
#include "iq3_impl.h"
void iq3_encode_block_quality(const iq3_tables *t, const float *x, const float *imp,
                              uint8_t *out, int simd)
{
    (void)imp;
    iq3_encode_block_ref(t, x, out, simd);
}
