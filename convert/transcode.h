/* transcode.h: a dense ggml tensor -> its canonical pack form (DESIGN.md).
 *
 * Contract. transcode_form_for() names the form a ggml type goes to: the
 * S-forms for Q2_0 Q4_0 Q5_0 Q8_0 IQ4_NL IQ4_XS Q3_K Q4_K Q5_K Q6_K, P32 for
 * F32 and BF16 (promoted, exact), P16 for F16, NATIVE (verbatim blocks) for
 * every other type ggml_dequantize can decode; -1 for a type it cannot, which
 * the caller refuses rather than approximates. transcode() fills the planes
 * so that planes_decode() of them equals ggml_dequantize() of the source bit
 * for bit: every scale and offset is the float ggml itself forms (Q4_K:
 * scale = d*sc, offset = -(dmin*m)), so value = code*scale + offset rounds as
 * ggml's d1*q - m1 does. plane[] buffers must have planes_sizes() bytes; the
 * codes plane is cleared here. Pure, no global state. */
#ifndef STRATA_TRANSCODE_H
#define STRATA_TRANSCODE_H

#include <stdint.h>

#include "formats/planes.h"

int transcode_form_for(int ggml_type, planes_desc *d);

/* src: rows x ne0 elements of ggml_type (block-aligned rows). Returns 0, or
 * -1 when the form or shape does not match the type. */
int transcode(const planes_desc *d, int ggml_type, const void *src, int64_t ne0, int64_t rows,
              uint8_t *const plane[PLANE_COUNT]);

#endif
