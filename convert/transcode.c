/* transcode.c: ggml blocks -> S-form planes, one function per source type.
 * Each walks the block in ggml's output order, so element j of the tensor is
 * code j and group j / group_elems, and forms scales in ggml's float order. */
#include "convert/transcode.h"

#include <string.h>

#include "formats/fp16.h"
#include "formats/ggml_dequant.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_types.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

typedef struct sink {
    uint8_t *codes, *scales, *offsets;
    int bits;
    size_t n_code, n_group;
} sink;

static void put_code(sink *s, unsigned code)
{
    const int per = 8 / s->bits;
    s->codes[s->n_code / per] |= (uint8_t)(code << (s->bits * (s->n_code % per)));
    s->n_code++;
}

static void put_scale_half(sink *s, uint16_t h) { memcpy(s->scales + 2 * s->n_group++, &h, 2); }

static void put_scale_f32(sink *s, float f, int has_offset, float off)
{
    memcpy(s->scales + 4 * s->n_group, &f, 4);
    if (has_offset) memcpy(s->offsets + 4 * s->n_group, &off, 4);
    s->n_group++;
}

static void tc_q4_0(sink *s, const block_q4_0 *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        put_scale_half(s, x[i].d);
        for (int j = 0; j < 16; j++) put_code(s, x[i].qs[j] & 0xF);
        for (int j = 0; j < 16; j++) put_code(s, x[i].qs[j] >> 4);
    }
}

static void tc_iq4_nl(sink *s, const block_iq4_nl *x, int64_t nb)
{
    tc_q4_0(s, (const block_q4_0 *)(const void *)x, nb); /* same layout: d, 16 nibble bytes */
}

static uint32_t u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void tc_q5_0(sink *s, const block_q5_0 *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const uint32_t qh = u32le(x[i].qh);
        put_scale_half(s, x[i].d);
        for (int j = 0; j < 16; j++) put_code(s, (x[i].qs[j] & 0xF) | ((qh >> j) & 1) << 4);
        for (int j = 0; j < 16; j++) put_code(s, (x[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
    }
}

static void tc_q8_0(sink *s, const block_q8_0 *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        put_scale_half(s, x[i].d);
        for (int j = 0; j < 32; j++) put_code(s, (unsigned)(x[i].qs[j] + 128));
    }
}

static void tc_q2_0(sink *s, const block_q2_0 *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        put_scale_half(s, x[i].d);
        for (int j = 0; j < QK2_0; j++) put_code(s, (x[i].qs[j / 4] >> (2 * (j % 4))) & 3);
    }
}

static void tc_iq4_xs(sink *s, const block_iq4_xs *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 16) {
            const int ls = ((x[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((x[i].scales_h >> 2 * ib) & 3) << 4);
            put_scale_f32(s, d * (ls - 32), 0, 0.0f);
            for (int j = 0; j < 16; j++) put_code(s, qs[j] & 0xF);
            for (int j = 0; j < 16; j++) put_code(s, qs[j] >> 4);
        }
    }
}

/* code = v + 4, where ggml's v = low2 - (hmask bit ? 0 : 4). */
static void tc_q3_K(sink *s, const block_q3_K *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *q = x[i].qs;
        int8_t sc[16];
        ggml_q3_K_scales(x[i].scales, sc);
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int part = 0; part < 2; part++) {
                    put_scale_f32(s, d * sc[is++], 0, 0.0f);
                    for (int l = 0; l < 16; l++) {
                        const int k = 16 * part + l;
                        put_code(s, ((q[k] >> shift) & 3) + ((x[i].hmask[k] & m) ? 4 : 0));
                    }
                }
    }
}

static void k4_scale_min(int j, const uint8_t q[12], int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* ggml forms d1 = d*sc and m1 = dmin*m as floats, then d1*q - m1; storing
 * -m1 makes the pack's q*scale + offset the same two roundings. */
static void tc_q45_K(sink *s, const uint8_t *blocks, size_t bsize, int five, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = blocks + (size_t)i * bsize;
        uint16_t dh, mh;
        memcpy(&dh, b, 2);
        memcpy(&mh, b + 2, 2);
        const float d = fp16_to_f32(dh), dmin = fp16_to_f32(mh);
        const uint8_t *scales = b + 4;
        const uint8_t *qh = five ? b + 16 : NULL;
        const uint8_t *ql = five ? b + 48 : b + 16;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            for (int h = 0; h < 2; h++) {
                int sc, m;
                k4_scale_min(is + h, scales, &sc, &m);
                const float d1 = d * sc, m1 = dmin * m;
                put_scale_f32(s, d1, 1, -m1);
                for (int l = 0; l < 32; l++) {
                    unsigned c = h ? (ql[l] >> 4) : (ql[l] & 0xF);
                    if (five && (qh[l] & (h ? u2 : u1))) c += 16;
                    put_code(s, c);
                }
            }
        }
    }
}

/* Group g of each 128-weight half uses sc[g]: weight l + 32k sits in group
 * 2k + l/16 and ggml scales it by sc[l/16 + 2k]. */
static void tc_q6_K(sink *s, const block_q6_K *x, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8) {
            for (int g = 0; g < 8; g++) put_scale_f32(s, d * sc[g], 0, 0.0f);
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 32; l++) {
                    const int lo = (k & 1) ? ql[l + 32] : ql[l];
                    const int nib = (k < 2) ? (lo & 0xF) : (lo >> 4);
                    put_code(s, (unsigned)(nib | ((qh[l] >> (2 * k)) & 3) << 4));
                }
        }
    }
}

typedef struct form_row {
    int type;
    pack_form form;
    int bits, bias, group, codebook, has_offset, scales_fp16;
} form_row;

/* DESIGN.md's table, row for row. */
static const form_row FORMS[] = {
    { GGML_TYPE_Q2_0, FORM_S2, 2, -1, 64, CODEBOOK_NONE, 0, 1 },
    { GGML_TYPE_Q4_0, FORM_S4, 4, -8, 32, CODEBOOK_NONE, 0, 1 },
    { GGML_TYPE_Q5_0, FORM_S8, 8, -16, 32, CODEBOOK_NONE, 0, 1 },
    { GGML_TYPE_Q8_0, FORM_S8, 8, -128, 32, CODEBOOK_NONE, 0, 1 },
    { GGML_TYPE_IQ4_NL, FORM_S4, 4, 0, 32, CODEBOOK_IQ4NL, 0, 1 },
    { GGML_TYPE_IQ4_XS, FORM_S4, 4, 0, 32, CODEBOOK_IQ4NL, 0, 0 },
    { GGML_TYPE_Q3_K, FORM_S4, 4, -4, 16, CODEBOOK_NONE, 0, 0 },
    { GGML_TYPE_Q4_K, FORM_S4, 4, 0, 32, CODEBOOK_NONE, 1, 0 },
    { GGML_TYPE_Q5_K, FORM_S8, 8, 0, 32, CODEBOOK_NONE, 1, 0 },
    { GGML_TYPE_Q6_K, FORM_S8, 8, -32, 16, CODEBOOK_NONE, 0, 0 },
};

int transcode_form_for(int ggml_type, planes_desc *d)
{
    memset(d, 0, sizeof *d);
    d->native_type = ggml_type;
    for (size_t i = 0; i < sizeof FORMS / sizeof FORMS[0]; i++) {
        if (FORMS[i].type != ggml_type) continue;
        d->form = FORMS[i].form;
        d->code_bits = FORMS[i].bits;
        d->code_bias = FORMS[i].bias;
        d->group_elems = FORMS[i].group;
        d->codebook = FORMS[i].codebook;
        d->has_offset = FORMS[i].has_offset;
        d->scales_fp16 = FORMS[i].scales_fp16;
        return 0;
    }
    switch (ggml_type) {
    case GGML_TYPE_F32: case GGML_TYPE_BF16: d->form = FORM_P32; return 0;
    case GGML_TYPE_F16: d->form = FORM_P16; d->values_fp16 = 1; return 0;
    default: break;
    }
    const ggml_type_row *t = ggml_type_info(ggml_type);
    if (!t || !t->to_f32) return -1;
    d->form = FORM_NATIVE;
    return 0;
}

int transcode(const planes_desc *d, int ggml_type, const void *src, int64_t ne0, int64_t rows,
              uint8_t *const plane[PLANE_COUNT])
{
    planes_desc want;
    size_t bytes[PLANE_COUNT];
    if (transcode_form_for(ggml_type, &want) != 0 || memcmp(&want, d, sizeof want) != 0 ||
        planes_sizes(d, ne0, rows, bytes) != 0 || !ggml_row_bytes(ggml_type, ne0))
        return -1;
    const int64_t n = ne0 * rows;
    switch (d->form) {
    case FORM_P32:
        if (ggml_type == GGML_TYPE_BF16) bf16_row_to_f32(src, (float *)(void *)plane[PLANE_VALUES], n);
        else memcpy(plane[PLANE_VALUES], src, bytes[PLANE_VALUES]);
        return 0;
    case FORM_P16: memcpy(plane[PLANE_VALUES], src, bytes[PLANE_VALUES]); return 0;
    case FORM_NATIVE: memcpy(plane[PLANE_BLOCKS], src, bytes[PLANE_BLOCKS]); return 0;
    default: break;
    }
    sink s = { plane[PLANE_CODES], plane[PLANE_SCALES], plane[PLANE_OFFSETS], d->code_bits, 0, 0 };
    memset(s.codes, 0, bytes[PLANE_CODES]);
    const int64_t nb = n / ggml_type_info(ggml_type)->blck;
    switch (ggml_type) {
    case GGML_TYPE_Q4_0: tc_q4_0(&s, src, nb); break;
    case GGML_TYPE_IQ4_NL: tc_iq4_nl(&s, src, nb); break;
    case GGML_TYPE_Q5_0: tc_q5_0(&s, src, nb); break;
    case GGML_TYPE_Q8_0: tc_q8_0(&s, src, nb); break;
    case GGML_TYPE_Q2_0: tc_q2_0(&s, src, nb); break;
    case GGML_TYPE_IQ4_XS: tc_iq4_xs(&s, src, nb); break;
    case GGML_TYPE_Q3_K: tc_q3_K(&s, src, nb); break;
    case GGML_TYPE_Q4_K: tc_q45_K(&s, src, sizeof(block_q4_K), 0, nb); break;
    case GGML_TYPE_Q5_K: tc_q45_K(&s, src, sizeof(block_q5_K), 1, nb); break;
    case GGML_TYPE_Q6_K: tc_q6_K(&s, src, nb); break;
    default: return -1;
    }
    return (s.n_code == (size_t)n && s.n_group * (size_t)d->group_elems == (size_t)n) ? 0 : -1;
}
