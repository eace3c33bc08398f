/* fuzz_hparams.c: libFuzzer target for hparams_load and
 * hparams_rope_scaling (runtime/model/arch.c), which read whatever a pack's
 * index says. The input is text: the first line names the architecture,
 * the rest are "KEY VALUE" lines (values parsed with strtod, as the
 * loader does), a "rope.scaling.type" line giving the scaling string. A
 * refusal must say why in one line; an accepted set must be consistent
 * enough for the forward pass: every layer is MoE or dense with the
 * widths that needs, the rotary dims fit the head, chunks and steps are
 * sane, and the RoPE factors are finite.
 * fuzz-link: runtime/model/arch.c */
#include "runtime/model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct kvs { char *key[64]; double v[64]; int n; const char *arch, *scaling; } kvs;

static int get(void *ctx, const char *key, double *out)
{
    const kvs *k = ctx;
    const size_t al = strlen(k->arch);
    if (strncmp(key, k->arch, al) || key[al] != '.') return -1;
    for (int i = k->n - 1; i >= 0; i--)
        if (!strcmp(k->key[i], key + al + 1)) { *out = k->v[i]; return 0; }
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    kvs k = { .n = 0, .arch = "", .scaling = NULL };
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!*k.arch) { k.arch = line; continue; }
        char *sp = strchr(line, ' ');
        if (!sp || k.n == 64) continue;
        *sp = 0;
        if (!strcmp(line, "rope.scaling.type")) { k.scaling = sp + 1; continue; }
        char *end;
        const double v = strtod(sp + 1, &end);
        k.key[k.n] = line;
        k.v[k.n++] = *end ? NAN : v;
    }
    model_hparams hp;
    char err[512] = "";
    if (hparams_load(&hp, k.arch, get, &k, err, sizeof err) != 0 ||
        hparams_rope_scaling(&hp, k.scaling, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) __builtin_trap();
        free(text);
        return 0;
    }
    if (hp.n_layer < 1 || hp.n_rot > hp.head_dim || hp.n_rot % 2 || hp.n_head % hp.n_head_kv) __builtin_trap();
    if (!isfinite(hp.rope_freq_scale) || hp.attn_chunk < 0 || hp.no_rope_step < 0) __builtin_trap();
    for (int l = 0; l < hp.n_layer; l++) {
        (void)hparams_layer_rope(&hp, l);
        if (hparams_layer_moe(&hp, l) ? hp.n_ff_exp < 1 || hp.n_expert_used < 1 : hp.n_ff < 1) __builtin_trap();
    }
    free(text);
    return 0;
}
