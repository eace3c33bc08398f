/* packindex_ext.c: @hparam, @file, @expert_layer and @expert lines
 * (packindex_ext.h, docs/pack-format.md). */
#include "pack/packindex_ext.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ggml_types.h"
#include "formats/planes.h"
#include "pack/pack_layout.h"

/* A value is one whitespace-free token: anything else would shift the
 * columns the loader reads after it. */
static int token_ok(const char *s)
{
    if (!*s) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p == 0x7f) return 0;
    return 1;
}

static int hparams(FILE *fp, const json_t *h, char *err, size_t errlen)
{
    if (!h) return 0;
    const char *arch = json_string_value(json_object_get(h, "arch"));
    if (!json_is_object(h) || !arch || !token_ok(arch)) {
        snprintf(err, errlen, "hparams: `arch` must be a one-word string");
        return -1;
    }
    fprintf(fp, "@hparam general.architecture %s\n", arch);
    for (size_t i = 0; i < PK_N_HPARAM_KEYS; i++) {
        const pk_hparam_key *k = &PK_HPARAM_KEYS[i];
        const json_t *v = json_object_get(h, k->json);
        if (!v || json_is_null(v)) continue;
        int ok = k->kind == PKH_UINT ? json_is_integer(v) && json_integer_value(v) >= 0
               : k->kind == PKH_BOOL ? json_is_boolean(v) : json_is_number(v);
        if (!ok) {
            snprintf(err, errlen, "hparams: `%s` is not a valid %s", k->json,
                     k->kind == PKH_UINT ? "count" : k->kind == PKH_BOOL ? "true/false" : "number");
            return -1;
        }
        fprintf(fp, "@hparam %s.%s ", arch, k->key);
        if (k->kind == PKH_UINT) fprintf(fp, "%" PRId64 "\n", (int64_t)json_integer_value(v));
        else if (k->kind == PKH_BOOL) fprintf(fp, "%d\n", json_is_true(v));
        else fprintf(fp, "%.17g\n", json_number_value(v)); /* round-trips the double exactly */
    }
    /* A scaled RoPE changes every angle: the loader must see it and refuse
     * what it cannot do, rather than run the unscaled model. */
    const char *rs = json_string_value(json_object_get(h, "rope_scaling"));
    if (rs) {
        if (!token_ok(rs)) { snprintf(err, errlen, "hparams: `rope_scaling` must be one word"); return -1; }
        fprintf(fp, "@hparam %s.rope.scaling.type %s\n", arch, rs);
    }
    return 0;
}

static void expert_line(FILE *fp, const pack_layout *L, const pk_layer *y, int k)
{
    const pk_tensor *t = &L->tensors[y->part_tensor[k]];
    const planes_desc *d = &t->d;
    const int sform = d->form == FORM_S2 || d->form == FORM_S4 || d->form == FORM_S8;
    fprintf(fp, "@expert %s %d %d %" PRIu64 " %" PRIu64 " %s %" PRId64 " %" PRId64, t->name, t->layer, t->part,
            y->part_off[k], t->part_bytes, pack_form_name(d->form), t->ne[0], t->ne[1]);
    fprintf(fp, " %d %d %d %d %d %d %d %d %d", sform ? d->code_bits : 0, sform ? d->code_bias : 0,
            sform ? d->group_elems : 0, sform ? d->codebook : 0, sform ? d->has_offset : 0,
            sform ? d->scales_fp16 : 0, sform ? d->offsets_fp16 : 0,
            d->form == FORM_NATIVE ? d->native_type : -1, sform ? packindex_act_kind(t->src_type) : 0);
    /* Per-expert plane sizes in pack widths, in PLANE_* order: the loader
     * checks them against the part instead of re-deriving the layout. */
    for (int p = 0; p < PLANE_COUNT; p++) fprintf(fp, " %" PRIu64, t->plane_bytes[p]);
    fputc('\n', fp);
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
            fprintf(fp, "@file %s %" PRIu64 " %" PRIu32 "\n", PACK_FILE_NAMES[f], L.files[f].bytes, L.files[f].crc32);
        for (int i = 0; rc == 0 && i < L.n_layers; i++) {
            const pk_layer *y = &L.layers[i];
            fprintf(fp, "@expert_layer %d %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %d\n", y->layer, y->n_expert,
                    y->base, y->stride, y->blob_bytes, y->n_parts);
            for (int k = 0; k < y->n_parts; k++) expert_line(fp, &L, y, k);
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
