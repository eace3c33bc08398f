/* packinfo.c: `iq3pack info PACKDIR` — what a pack holds, sizes by kind,
 * and the bytes one decoded token reads (dense weights once, plus the
 * routed experts actually used: experts_used of n_expert per layer). */
#include "pack/pack_cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "formats/pack_manifest.h"

static int have_file(const char *dir, const char *leaf)
{
    char *p = pack_path(dir, leaf);
    struct stat st;
    const int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

int pack_missing_files(const char *dir, char *list, size_t n)
{
    const char *want[PACK_NFILES + 2];
    int k = 0, missing = 0;
    want[k++] = PACK_MANIFEST;
    for (int f = 0; f < PACK_NFILES; f++) want[k++] = PACK_FILE_NAMES[f];
    want[k++] = PACK_INDEX;
    size_t used = 0;
    if (n) list[0] = 0;
    for (int i = 0; i < k; i++) {
        if (have_file(dir, want[i])) continue;
        const int w = snprintf(list + used, n > used ? n - used : 0, "%s%s", missing ? ", " : "", want[i]);
        if (w > 0 && used + (size_t)w < n) used += (size_t)w;
        missing++;
    }
    return missing;
}

int pack_info(const char *dir, FILE *out, FILE *err)
{
    char e[512];
    pack_layout L;
    if (pack_layout_from_dir(&L, dir, e, sizeof e)) {
        fprintf(err, "%s\n", e);
        return 1;
    }
    const json_t *h = L.hparams;
    const char *arch = json_string_value(json_object_get(h, "arch"));
    fprintf(out, "pack %s: arch %s, source %s (%llu bytes, %d file%s, sha256 %.16s...)\n", dir, arch ? arch : "?",
            L.source_path, (unsigned long long)L.source_bytes, L.source_splits, L.source_splits == 1 ? "" : "s",
            L.source_sha256);
    uint64_t by_form[FORM_COUNT] = { 0 }, dense = 0, embd_row = 0, expert_blob = 0;
    int n_form[FORM_COUNT] = { 0 };
    for (int i = 0; i < L.n_tensors; i++) {
        const pk_tensor *t = &L.tensors[i];
        uint64_t b = 0;
        for (int k = 0; k < PLANE_COUNT; k++) b += t->plane_bytes[k];
        if (t->file == PACK_EXPERTS) b *= (uint64_t)t->n_expert;
        by_form[t->d.form] += b;
        n_form[t->d.form]++;
        if (t->file == PACK_DENSE) dense += b;
        if (t->file == PACK_EMBD) embd_row = b / (uint64_t)(t->elements / t->ne[0]);
    }
    fprintf(out, "  by form:\n");
    for (int f = 0; f < FORM_COUNT; f++)
        if (n_form[f]) fprintf(out, "    %-7s %4d tensors %14llu bytes\n", pack_form_name(f), n_form[f], (unsigned long long)by_form[f]);
    fprintf(out, "  files:\n");
    for (int f = 0; f < PACK_NFILES; f++)
        fprintf(out, "    %-15s %14llu bytes  crc32 %08x%s\n", PACK_FILE_NAMES[f], (unsigned long long)L.files[f].bytes,
                L.files[f].crc32, have_file(dir, PACK_FILE_NAMES[f]) ? "" : "  MISSING");
    if (L.vision.present)
        fprintf(out, "    %-15s %14llu bytes  crc32 %08x%s (vision projector %s, %d tensors, from %s)\n", PACK_VISION,
                (unsigned long long)L.vision.file.bytes, L.vision.file.crc32,
                have_file(dir, PACK_VISION) ? "" : "  MISSING", L.vision.projector, L.vision.n_tensors,
                L.vision.source_path);
    fprintf(out, "    %-15s %s\n", PACK_INDEX, have_file(dir, PACK_INDEX) ? "present" : "MISSING");
    const json_int_t used = json_integer_value(json_object_get(h, "experts_used"));
    for (int l = 0; l < L.n_layers; l++) expert_blob += L.layers[l].blob_bytes * (uint64_t)(used > 0 ? used : 0);
    fprintf(out, "  experts: %d layers, %lld of %d used per token\n", L.n_layers, (long long)used,
            L.n_layers ? L.layers[0].n_expert : 0);
    int64_t rot_lo, rot_hi;
    const int n_rot = pack_layout_rotated(&L, &rot_lo, &rot_hi);
    if (n_rot && rot_lo == rot_hi)
        fprintf(out, "  rotated: %d expert tensors, Hadamard blocks of %lld\n", n_rot, (long long)rot_lo);
    else if (n_rot)
        fprintf(out, "  rotated: %d expert tensors, Hadamard blocks of %lld to %lld\n", n_rot, (long long)rot_lo,
                (long long)rot_hi);
    fprintf(out, "  decode reads per token: %llu bytes (dense %llu + one embedding row %llu + experts %llu)\n",
            (unsigned long long)(dense + embd_row + expert_blob), (unsigned long long)dense,
            (unsigned long long)embd_row, (unsigned long long)expert_blob);
    pack_layout_free(&L);
    char missing[256];
    if (pack_missing_files(dir, missing, sizeof missing)) {
        fprintf(err, "%s: incomplete pack, missing %s (`iq3pack verify %s` checks it)\n", dir, missing, dir);
        return 1;
    }
    return 0;
}
