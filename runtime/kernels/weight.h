/* weight.h: one weight matrix in engine form, as the pack's loader hands it
 * to the model.
 *
 * Contract: a weight is y[rows] = W x[cols] (rows = ggml ne1, cols = ne0).
 * `form` says how the bytes at `data` decode; nothing but the kernel table
 * (kernels.h) interprets them:
 *  - WF_P32  f32 values, row r at data + r*row_bytes.
 *  - WF_P16  IEEE fp16 values, same layout.
 *  - WF_SCODE unsigned codes of code_bits (2, 4 or 8), the whole matrix
 *            flattened row-major and packed LSB-first (8/code_bits codes per
 *            byte); one f32 scale (and optionally one f32 offset) per group of
 *            `group` consecutive elements of a row; value =
 *            (code + code_bias) * scale (+ offset), or codebook[code] * scale
 *            when codebook (16 f32) is set. cols % group == 0 and
 *            cols * code_bits % 8 == 0, so groups and bytes never straddle rows.
 *  - WF_GGML native ggml blocks of ggml_type, row r at data + r*row_bytes.
 *  - WF_IQ3  the IQ3 expert container (formats/iq3.h), cols % 256 == 0.
 * A weight with data == NULL is absent. The weight never owns its memory:
 * planes belong to whoever mapped or allocated them (the loader, a test). */
#ifndef STRATA_WEIGHT_H
#define STRATA_WEIGHT_H

#include <stddef.h>
#include <stdint.h>

typedef enum wform { WF_P32, WF_P16, WF_SCODE, WF_GGML, WF_IQ3, WF_COUNT } wform;

/* The activation a weight's products see: f32 as given, or each row of X
 * rounded to ggml's Q8_0 (blocks of 32, fp16 scale) or Q8_K (blocks of 256,
 * f32 scale) first, as llama.cpp does for quantized weights (the index's
 * act_kind; ggml's vec_dot_type for native blocks; Q8_K for IQ3). Q8_1
 * (native Q4_1 and Q5_1) is Q8_0 plus each block's fp16 sum ggml adds. */
typedef enum wact { WA_F32 = 0, WA_Q8_0 = 1, WA_Q8_K = 2, WA_Q8_1 = 3 } wact;

/* K-quant super-block factors of an S-form weight (runtime/kernels/kfactor.h):
 * per 256 elements of a row d (and dmin), fp16 values kept as fp16 (as in
 * ggml's blocks: decode reads 4 bytes less per 256 weights than as f32),
 * per group the integers sc (and m), so scale = d * sc and offset =
 * -dmin * m. They lie in planes (d, dmin, sc, m, each over all
 * super-blocks), or, for a weight whose codes are split (code_split;
 * kfactor_build with records), as one record a super-block of kf_rec_bytes(style):
 * d at 0, dmin at KF_REC_DMIN_AT, the scales at kf_rec_sc_at(style), the
 * mins at KF_REC_M_AT, so a kernel reading four rows at once reads four
 * streams of factors instead of sixteen. Read them through kf_d() and the
 * others below, which take either. */
typedef struct kfactor {
    int style;              /* 4: Q4_K (mins summed in 4 lanes), 5: Q5_K (in one int), 6: Q6_K (no mins), 3: Q3_K (no mins),
                             * 2: IQ4_XS (no mins, codes through a 16-value codebook) */
    const uint16_t *d, *dmin; /* fp16, rows * cols / 256 (dmin NULL for styles 6, 3 and 2); NULL with rec */
    const int8_t *sc, *m;   /* one per group: rows * cols / group (m NULL for styles 6, 3 and 2); NULL with rec */
    int8_t cb[16];          /* style 2: the codebook's values */
    const uint8_t *rec;     /* NULL, or the records: super-block s at rec + s * kf_rec_bytes(style) */
} kfactor;

/* Whether a style has mins (dmin and m): Q4_K's and Q5_K's. */
static inline int kf_has_mins(int style) { return style == 4 || style == 5; }
/* Scales a super-block: 16 for Q6_K and Q3_K (groups of 16), else 8. */
static inline int kf_per_sb(int style) { return style == 6 || style == 3 ? 16 : 8; }
/* A record's layout (above): 20 bytes for Q4_K and Q5_K, 18 for Q6_K and
 * Q3_K (d, 16 scales), 10 for IQ4_XS (d, 8 scales). */
#define KF_REC_DMIN_AT 2
#define KF_REC_M_AT 12
static inline int kf_rec_sc_at(int style) { return kf_has_mins(style) ? 4 : 2; }
static inline int kf_rec_bytes(int style) { return kf_rec_sc_at(style) + kf_per_sb(style) + (kf_has_mins(style) ? 8 : 0); }
/* Super-block sb's d, dmin (fp16 bits), scales and mins, in either layout. */
static inline const uint8_t *kf_rec_at(const kfactor *kf, int64_t sb) { return kf->rec + sb * kf_rec_bytes(kf->style); }
static inline uint16_t kf_d(const kfactor *kf, int64_t sb)
{
    if (!kf->rec) return kf->d[sb];
    const uint8_t *r = kf_rec_at(kf, sb);
    return (uint16_t)(r[0] | r[1] << 8);
}
static inline uint16_t kf_dmin(const kfactor *kf, int64_t sb)
{
    if (!kf->rec) return kf->dmin[sb];
    const uint8_t *r = kf_rec_at(kf, sb) + KF_REC_DMIN_AT;
    return (uint16_t)(r[0] | r[1] << 8);
}
static inline const int8_t *kf_sc(const kfactor *kf, int64_t sb)
{
    if (!kf->rec) return kf->sc + sb * kf_per_sb(kf->style);
    return (const int8_t *)(kf_rec_at(kf, sb) + kf_rec_sc_at(kf->style));
}
static inline const int8_t *kf_m(const kfactor *kf, int64_t sb)
{
    if (!kf->rec) return kf->m + sb * 8;
    return (const int8_t *)(kf_rec_at(kf, sb) + KF_REC_M_AT);
}

typedef struct weight {
    wform form;
    int64_t rows, cols;
    const void *data;
    size_t row_bytes;        /* P32, P16, GGML, IQ3: bytes per row */
    int ggml_type;           /* GGML */
    int act;                 /* wact; 0 (f32) unless the loader says otherwise */
    int code_bits, code_bias, group;                 /* SCODE */
    const float *scales, *offsets, *codebook;        /* SCODE */
    /* SCODE: the same scales as fp16 when the pack stores them so (scales
     * holds their exact widening), else NULL: the decode kernel of
     * Q8_0-shaped rows reads these, half the bytes (kernels_q8_avx512.c) */
    const uint16_t *scales_h;
    const kfactor *kf;       /* SCODE K-quants: factored scales, or NULL */
    /* SCODE K-quants with factors: 0, or the bits their codes use (4, 5 or
     * 6) when the codes are held split (kfactor.h: kq_split_rows; their
     * factors are then records: kfactor_build). 8-bit
     * codes (Q5_K and Q6_K shapes) then read 160 or 192 bytes per 256 codes
     * instead of 256; 4-bit ones (Q4_K, Q3_K, IQ4_XS shapes) keep their 128
     * bytes in an order that unpacks in fewer steps; row_bytes is the split
     * row's */
    int code_split;
    /* 0, or a rotated expert's Hadamard block (formats/hadamard.h): its rows
     * are stored rotated, so W x needs x rotated by the same blocks first.
     * The kernels never look at it: the MoE op rotates its inputs. */
    int64_t rotate;
} weight;

static inline int weight_present(const weight *w) { return w->data != NULL; }

/* An S-form's 16-entry codebook as int8 (out), when every entry is an
 * integer in [-128, 127]: the integer kernels take only such codebooks. */
int kq8_codebook_i8(const weight *w, int8_t out[16]);

/* Bytes of one super-block of 256 split codes (weight.code_split = split, 4,
 * 5 or 6): 128 of low nibbles, two halves of 64 bytes in which byte j of
 * half h holds code 128h + j in its low nibble and code 128h + 64 + j in
 * its high (one 64-byte load and a mask, or a shift and a mask, is 64 codes
 * in order), then split - 4 planes of 32 (plane j: bit 4 + j of code e at
 * bit e % 8 of byte e / 8). */
static inline size_t kq_split_sb_bytes(int split) { return 128 + 32 * (size_t)(split - 4); }
/* and of a row of cols (a multiple of 256) split codes */
static inline size_t kq_split_row_bytes(int64_t cols, int split) { return (size_t)(cols / 256) * kq_split_sb_bytes(split); }

/* An S-form laid out as ggml's Q8_0 (8-bit codes, bias -128, groups of
 * 32, no offsets, no codebook): the rows whose decode kernel reads fp16
 * scales (scales_h) where it has them, and so the rows whose fp16 scales
 * the loader keeps (loader.h). The fields, not a weight, so that a pack's
 * index can be asked before any weight exists. */
static inline int sform_q8_0_shaped(int code_bits, int code_bias, int group, int has_offsets, int has_codebook)
{
    return code_bits == 8 && code_bias == -128 && group == 32 && !has_offsets && !has_codebook;
}

/* Fills row_bytes for P32/P16/GGML/IQ3 and checks the shape rules above;
 * returns 0, or -1 with "<name>: <problem>" in err. */
int weight_check(weight *w, const char *name, char *err, size_t errlen);

/* Rows [r0, r0 + n) of a checked weight as a weight of their own (MLA's
 * per-head blocks of a 3-D tensor). K-quant factors are offset into
 * *kf_out, which must live as long as *out. r0 * cols must be a multiple of
 * the group (and of 256 with K-quant factors). */
void weight_rows_view(const weight *w, int64_t r0, int64_t n, weight *out, kfactor *kf_out);

/* Bytes of weight data W holds (codes, scales, offsets). */
size_t weight_bytes(const weight *w);
/* Bytes one decode pass over W reads at least: weight_bytes, but for a
 * K-quant with its factors (kf) the codes and the factors (int8 sc and m,
 * fp16 d and dmin): its f32 scale and offset planes are not read then;
 * with fp16 scales (scales_h) those instead of the f32 ones. */
size_t weight_read_bytes(const weight *w);

const char *wform_name(wform f);

#endif
