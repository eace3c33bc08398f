/* packindex_ext.c: @hparam, @file, @expert_layer, @expert and @vision lines
 * (packindex_ext.h, docs/pack-format.md). */
#include "pack/packindex_ext.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ggml_types.h"
#include "formats/hparam_keys.h"
#include "formats/pack_index.h"
#include "formats/pack_manifest.h"
#include "formats/planes.h"

static int hparams(FILE *fp, const json_t *h, char *err, size_t errlen)
{
    if (!h) return 0;
    const char *arch = json_string_value(json_object_get(h, "arch"));
    if (!json_is_object(h) || !arch || !pindex_token_ok(arch)) {
        snprintf(err, errlen, "hparams: `arch` must be a one-word string");
        return -1;
    }
    pindex_put_hparam_str(fp, NULL, "general.architecture", arch);
    for (size_t i = 0; i < HPK_COUNT; i++) {
        const hparam_key *k = &HPARAM_KEYS[i];
        const json_t *v = json_object_get(h, k->json);
        if (!v || json_is_null(v)) continue;
        if (k->kind == HPARAM_UINT4) { /* "a,b,c,d" */
            char list[96];
            int n = 0, ok = json_is_array(v) && json_array_size(v) == 4;
            for (size_t j = 0; ok && j < 4; j++) {
                const json_t *e = json_array_get(v, j);
                ok = json_is_integer(e) && json_integer_value(e) >= 0 && json_integer_value(e) < 1000000;
                if (ok) n += snprintf(list + n, sizeof list - (size_t)n, "%s%lld", j ? "," : "",
                                      (long long)json_integer_value(e));
            }
            if (!ok) { snprintf(err, errlen, "hparams: `%s` is not 4 counts", k->json); return -1; }
            pindex_put_hparam_str(fp, arch, k->key, list);
            continue;
        }
        int ok = k->kind == HPARAM_UINT ? json_is_integer(v) && json_integer_value(v) >= 0
               : k->kind == HPARAM_BOOL ? json_is_boolean(v) : json_is_number(v);
        if (!ok) {
            snprintf(err, errlen, "hparams: `%s` is not a valid %s", k->json,
                     k->kind == HPARAM_UINT ? "count" : k->kind == HPARAM_BOOL ? "true/false" : "number");
            return -1;
        }
        if (k->kind == HPARAM_UINT) pindex_put_hparam_int(fp, arch, k->key, (int64_t)json_integer_value(v));
        else if (k->kind == HPARAM_BOOL) pindex_put_hparam_int(fp, arch, k->key, json_is_true(v));
        else pindex_put_hparam_real(fp, arch, k->key, json_number_value(v));
    }
    /* A scaled RoPE changes every angle: the loader must see it and refuse
     * what it cannot do, rather than run the unscaled model. */
    const char *rs = json_string_value(json_object_get(h, HPARAM_ROPE_SCALING.json));
    if (rs) {
        if (!pindex_token_ok(rs)) { snprintf(err, errlen, "hparams: `rope_scaling` must be one word"); return -1; }
        pindex_put_hparam_str(fp, arch, HPARAM_ROPE_SCALING.key, rs);
    }
    return 0;
}

/* An S-form's activation, from the same table as the rows' act_kind column
 * (an unknown type reads as Q8_0 here: the rows refuse it first). */
static int act_kind(int ggml_type)
{
    char up[16];
    pk_type_upper(ggml_type, up);
    const int act = pindex_act_kind(up);
    return act < 0 ? PI_ACT_Q8_0 : act;
}

static void expert_line(FILE *fp, const pack_layout *L, const pk_layer *y, int k)
{
    const pk_tensor *t = &L->tensors[y->part_tensor[k]];
    const planes_desc *d = &t->d;
    const int sform = d->form == FORM_S2 || d->form == FORM_S4 || d->form == FORM_S8;
    pi_expert e = {
        .layer = t->layer, .part = t->part, .blob_off = (int64_t)y->part_off[k],
        .part_bytes = (int64_t)t->part_bytes, .ne0 = t->ne[0], .ne1 = t->ne[1],
        .code_bits = sform ? d->code_bits : 0, .code_bias = sform ? d->code_bias : 0,
        .group = sform ? d->group_elems : 0, .codebook = sform ? d->codebook : 0,
        .has_offset = sform ? d->has_offset : 0, .scales_fp16 = sform ? d->scales_fp16 : 0,
        .offsets_fp16 = sform ? d->offsets_fp16 : 0, .native_type = d->form == FORM_NATIVE ? d->native_type : -1,
        .act_kind = sform ? act_kind(t->src_type) : 0, .rotate = t->rotate,
    };
    snprintf(e.name, sizeof e.name, "%s", t->name);
    snprintf(e.form, sizeof e.form, "%s", pack_form_name(d->form));
    for (int p = 0; p < PLANE_COUNT; p++) e.plane[p] = (int64_t)t->plane_bytes[p];
    pindex_put_expert(fp, &e);
}

int packindex_ext_text(const char *manifest_path, const json_t *man, char **text, char *err, size_t errlen)
{
    size_t len = 0;
    *text = NULL;
    FILE *fp = open_memstream(text, &len);
    if (!fp) { snprintf(err, errlen, "%s: out of memory", manifest_path); return -1; }
    int rc = hparams(fp, json_object_get(man, "hparams"), err, errlen);
    pack_layout L;
    memset(&L, 0, sizeof L);
    if (rc == 0 && (json_object_get(man, "files") || json_object_get(man, "experts"))) {
        rc = pack_layout_from_json(&L, manifest_path, err, errlen);
        for (int f = 0; rc == 0 && f < PACK_NFILES; f++)
            pindex_put_file(fp, f, L.files[f].bytes, L.files[f].crc32);
        for (int i = 0; rc == 0 && i < L.n_layers; i++) {
            const pk_layer *y = &L.layers[i];
            const pi_layer l = { .layer = y->layer, .n_expert = y->n_expert, .n_parts = y->n_parts,
                                 .base = (int64_t)y->base, .stride = (int64_t)y->stride,
                                 .blob_bytes = (int64_t)y->blob_bytes };
            pindex_put_expert_layer(fp, &l);
            for (int k = 0; k < y->n_parts; k++) expert_line(fp, &L, y, k);
        }
        if (rc == 0 && L.vision.present) {
            const pk_vision *v = &L.vision;
            pindex_put_vision(fp, v->file.bytes, v->file.crc32, v->projector, v->n_tensors);
            for (int i = 0; i < v->n_tensors; i++) {
                pi_vtensor t = { .type = v->tensors[i].type, .off = (int64_t)v->tensors[i].off,
                                 .bytes = (int64_t)v->tensors[i].bytes };
                snprintf(t.name, sizeof t.name, "%s", v->tensors[i].name);
                for (int d = 0; d < 4; d++) t.ne[d] = v->tensors[i].ne[d];
                pindex_put_vision_tensor(fp, &t);
            }
        }
        if (rc == 0) pack_layout_free(&L);
    }
    if (fclose(fp) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: out of memory", manifest_path);
        rc = -1;
    }
    if (rc) { free(*text); *text = NULL; }
    return rc;
}
