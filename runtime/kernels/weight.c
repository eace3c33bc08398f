/* weight.c: shape checks and sizes for weight.h. The checks run once when a
 * model is created, so kernels can trust rows, cols and strides blindly. */
#include "runtime/kernels/weight.h"

#include "formats/ggml_types.h"
#include "formats/iq3.h"

#include <stdio.h>

const char *wform_name(wform f)
{
    static const char *names[WF_COUNT] = { "P32", "P16", "SCODE", "GGML", "IQ3" };
    return (f >= 0 && f < WF_COUNT) ? names[f] : "?";
}

int weight_check(weight *w, const char *name, char *err, size_t errlen)
{
    if (!w->data) { snprintf(err, errlen, "%s: missing", name); return -1; }
    if (w->rows < 1 || w->cols < 1) {
        snprintf(err, errlen, "%s: empty shape %lld x %lld", name, (long long)w->rows, (long long)w->cols);
        return -1;
    }
    switch (w->form) {
    case WF_P32: w->row_bytes = (size_t)w->cols * 4; return 0;
    case WF_P16: w->row_bytes = (size_t)w->cols * 2; return 0;
    case WF_GGML: {
        const ggml_type_row *t = ggml_type_info(w->ggml_type);
        size_t rb = ggml_row_bytes(w->ggml_type, w->cols);
        if (!t || !t->to_f32 || rb == 0) {
            snprintf(err, errlen, "%s: ggml type %d cannot decode rows of %lld", name, w->ggml_type,
                     (long long)w->cols);
            return -1;
        }
        w->row_bytes = rb;
        return 0;
    }
    case WF_IQ3:
        w->row_bytes = iq3_row_bytes(w->cols);
        if (w->row_bytes == 0) {
            snprintf(err, errlen, "%s: IQ3 needs cols %% 256 == 0, got %lld", name, (long long)w->cols);
            return -1;
        }
        return 0;
    case WF_SCODE:
        if (w->code_bits != 2 && w->code_bits != 4 && w->code_bits != 8) {
            snprintf(err, errlen, "%s: code_bits %d (2, 4 or 8)", name, w->code_bits);
            return -1;
        }
        if (w->group < 1 || w->cols % w->group || (w->cols * w->code_bits) % 8 || !w->scales) {
            snprintf(err, errlen, "%s: group %d / cols %lld / scales do not fit a row", name, w->group,
                     (long long)w->cols);
            return -1;
        }
        w->row_bytes = w->code_split ? kq_split_row_bytes(w->cols, w->code_split)
                                     : (size_t)w->cols * (size_t)w->code_bits / 8;
        return 0;
    default:
        snprintf(err, errlen, "%s: unknown form %d", name, (int)w->form);
        return -1;
    }
}

size_t weight_bytes(const weight *w)
{
    size_t b = w->row_bytes * (size_t)w->rows;
    if (w->form == WF_SCODE) {
        size_t groups = (size_t)(w->rows * w->cols / w->group);
        b += groups * 4 * (w->offsets ? 2 : 1);
    }
    return b;
}

size_t weight_read_bytes(const weight *w)
{
    if (w->form == WF_SCODE && !w->kf && w->scales_h)
        return weight_bytes(w) - (size_t)(w->rows * w->cols / w->group) * 2;
    if (w->form != WF_SCODE || !w->kf) return weight_bytes(w);
    const size_t sbs = (size_t)w->rows * (size_t)w->cols / 256;
    return w->row_bytes * (size_t)w->rows + sbs * (size_t)kf_rec_bytes(w->kf->style);
}

void weight_rows_view(const weight *w, int64_t r0, int64_t n, weight *out, kfactor *kf_out)
{
    *out = *w;
    out->rows = n;
    out->data = (const char *)w->data + (size_t)r0 * w->row_bytes;
    if (w->form != WF_SCODE) return;
    const size_t g0 = (size_t)(r0 * w->cols / w->group);
    out->scales = w->scales + g0;
    if (w->scales_h) out->scales_h = w->scales_h + g0;
    if (w->offsets) out->offsets = w->offsets + g0;
    if (!w->kf) return;
    const size_t s0 = (size_t)(r0 * w->cols / 256);
    *kf_out = *w->kf;
    if (w->kf->rec) {
        kf_out->rec = kf_rec_at(w->kf, (int64_t)s0);
    } else {
        kf_out->d = w->kf->d + s0;
        if (w->kf->dmin) kf_out->dmin = w->kf->dmin + s0;
        kf_out->sc = w->kf->sc + g0;
        if (w->kf->m) kf_out->m = w->kf->m + g0;
    }
    out->kf = kf_out;
}

int kq8_codebook_i8(const weight *w, int8_t out[16])
{
    for (int i = 0; i < 16; i++) {
        float c = w->codebook[i];
        if (!(c >= -128.0f && c <= 127.0f) || c != (float)(int)c) return 0;
        out[i] = (int8_t)c;
    }
    return 1;
}
