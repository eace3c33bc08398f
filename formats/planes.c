/* planes.c: sizes and the reference decoder of the pack's tensor forms. */
#include "formats/planes.h"

#include <stdio.h>
#include <string.h>

#include "formats/fp16.h"
#include "formats/ggml_tables.h"
#include "formats/ggml_types.h"
#include "formats/iq3.h"

/* The decode expressions below must round once per operation, as ggml's do. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static const char *const FORM_NAMES[FORM_COUNT] = { "P32", "P16", "S2", "S4", "S8", "native", "IQ3" };

const char *pack_form_name(pack_form f)
{
    return (f >= 0 && f < FORM_COUNT) ? FORM_NAMES[f] : "?";
}

int pack_form_parse(const char *name)
{
    for (int f = 0; f < FORM_COUNT; f++)
        if (name && !strcmp(name, FORM_NAMES[f])) return f;
    return -1;
}

const char *codebook_name(int codebook)
{
    return codebook == CODEBOOK_IQ4NL ? "IQ4NL" : NULL;
}

const int8_t *codebook_values(int codebook, int *n)
{
    if (codebook != CODEBOOK_IQ4NL) return NULL;
    if (n) *n = 16;
    return ggml_kvalues_iq4nl;
}

static int is_sform(pack_form f) { return f == FORM_S2 || f == FORM_S4 || f == FORM_S8; }

int planes_sizes(const planes_desc *d, int64_t ne0, int64_t rows, size_t bytes[PLANE_COUNT])
{
    memset(bytes, 0, PLANE_COUNT * sizeof bytes[0]);
    if (ne0 <= 0 || rows <= 0) return -1;
    const size_t elems = (size_t)ne0 * (size_t)rows;
    switch (d->form) {
    case FORM_P32: bytes[PLANE_VALUES] = elems * 4; return 0;
    case FORM_P16: bytes[PLANE_VALUES] = elems * 2; return 0;
    case FORM_NATIVE: {
        const size_t rb = ggml_row_bytes(d->native_type, ne0);
        if (!rb) return -1;
        bytes[PLANE_BLOCKS] = rb * (size_t)rows;
        return 0;
    }
    case FORM_IQ3: {
        const size_t rb = iq3_row_bytes(ne0);
        if (!rb) return -1;
        bytes[PLANE_BLOCKS] = rb * (size_t)rows;
        return 0;
    }
    default: break;
    }
    if (!is_sform(d->form) || d->code_bits != 2 * (1 << (d->form - FORM_S2)) || d->group_elems <= 0 ||
        ne0 % d->group_elems || (elems * (size_t)d->code_bits) % 8)
        return -1;
    const size_t groups = elems / (size_t)d->group_elems;
    bytes[PLANE_CODES] = elems * (size_t)d->code_bits / 8;
    bytes[PLANE_SCALES] = groups * (d->scales_fp16 ? 2 : 4);
    if (d->has_offset) bytes[PLANE_OFFSETS] = groups * (d->offsets_fp16 ? 2 : 4);
    return 0;
}

static float load_f32(const uint8_t *p, size_t i)
{
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}

static float load_half(const uint8_t *p, size_t i)
{
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return fp16_to_f32(h);
}

static void decode_sform(const planes_desc *d, const uint8_t *const plane[PLANE_COUNT], size_t elems,
                         float *out)
{
    const int bits = d->code_bits, per_byte = 8 / bits;
    const unsigned mask = (1u << bits) - 1;
    const int8_t *cb = codebook_values(d->codebook, NULL);
    for (size_t g = 0; g < elems / (size_t)d->group_elems; g++) {
        const float scale = d->scales_fp16 ? load_half(plane[PLANE_SCALES], g) : load_f32(plane[PLANE_SCALES], g);
        float off = 0.0f;
        if (d->has_offset)
            off = d->offsets_fp16 ? load_half(plane[PLANE_OFFSETS], g) : load_f32(plane[PLANE_OFFSETS], g);
        for (size_t j = g * (size_t)d->group_elems; j < (g + 1) * (size_t)d->group_elems; j++) {
            const unsigned code = (plane[PLANE_CODES][j / per_byte] >> (bits * (j % per_byte))) & mask;
            const float q = cb ? (float)cb[code] : (float)((int)code + d->code_bias);
            float v = q * scale;
            if (d->has_offset) v = v + off;
            out[j] = v;
        }
    }
}

int planes_decode(const planes_desc *d, const uint8_t *const plane[PLANE_COUNT], int64_t ne0,
                  int64_t rows, float *out, char *err, size_t errlen)
{
    size_t bytes[PLANE_COUNT];
    if (planes_sizes(d, ne0, rows, bytes) != 0) {
        snprintf(err, errlen, "form %s does not fit a %lld x %lld tensor", pack_form_name(d->form),
                 (long long)ne0, (long long)rows);
        return -1;
    }
    for (int k = 0; k < PLANE_COUNT; k++)
        if (bytes[k] && !plane[k]) {
            snprintf(err, errlen, "form %s: plane %d missing", pack_form_name(d->form), k);
            return -1;
        }
    const size_t elems = (size_t)ne0 * (size_t)rows;
    switch (d->form) {
    case FORM_P32: memcpy(out, plane[PLANE_VALUES], elems * 4); return 0;
    case FORM_P16:
        for (size_t i = 0; i < elems; i++) out[i] = load_half(plane[PLANE_VALUES], i);
        return 0;
    case FORM_NATIVE:
        if (ggml_dequantize(d->native_type, plane[PLANE_BLOCKS], out, (int64_t)elems) != 0) {
            snprintf(err, errlen, "native type %d has no decoder", d->native_type);
            return -1;
        }
        return 0;
    case FORM_IQ3: return iq3_decode(plane[PLANE_BLOCKS], rows, ne0, out, err, errlen);
    default: decode_sform(d, plane, elems, out); return 0;
    }
}
