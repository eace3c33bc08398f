/* cli_budget.c: `strata budget PACK [--vram SIZE] [--vram-reserve SIZE]
 * [--ram SIZE] [--ctx N] [--profile FILE]` (budget.h): the pack laid out on
 * a GPU and a host from its index alone, and the expert hit rate that the
 * slots left over would give. */
#include "runtime/cli/budget.h"

#include "formats/ggml_types.h"
#include "formats/pack_index.h"
#include "runtime/cli/cli.h"
#include "runtime/device/expert_cache.h"
#include "runtime/model/loader.h"
#include "runtime/model/model.h"
#include "runtime/util/strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEX_MAX ((size_t)64 << 20)

static char *read_index(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        err_printf(err, errlen, "%s: %s%s", path, strerror(errno), errno == ENOENT ? " (no index: not a finished pack)" : "");
        return NULL;
    }
    char *buf = malloc(INDEX_MAX + 1);
    size_t n = buf ? fread(buf, 1, INDEX_MAX + 1, fp) : 0;
    int bad = ferror(fp);
    fclose(fp);
    if (!buf || bad || n > INDEX_MAX) {
        err_printf(err, errlen, "%s: %s", path, !buf ? "out of memory" : bad ? "read error" : "larger than 64 MiB");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* One expert's bytes in engine form: pack planes, fp16 scales/offsets widened. */
static uint64_t expert_engine_bytes(const pack_index *x, int layer)
{
    uint64_t b = 0;
    for (int i = 0; i < x->n_e; i++) {
        const pi_expert *e = &x->e[i];
        if (e->layer != layer) continue;
        b += (uint64_t)e->plane[0] + (uint64_t)e->plane[3] + (uint64_t)e->plane[4];
        b += (uint64_t)e->plane[1] * (e->scales_fp16 ? 2 : 1) + (uint64_t)e->plane[2] * (e->offsets_fp16 ? 2 : 1);
    }
    return (b + 255) / 256 * 256;
}

int budget_compute(const char *dir, const budget_opts *o, budget_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, PACK_INDEX);
    size_t len;
    char *text = read_index(path, &len, err, errlen);
    if (!text) return -1;
    pack_index x;
    memset(&x, 0, sizeof x);
    int rc = pindex_parse(&x, text, len, path, err, errlen);
    free(text);
    if (rc) return -1;
    model_hparams hp;
    const char *arch = pindex_hparam(&x, "general.architecture");
    char e2[512];
    if (!arch) { err_printf(err, errlen, "%s: no @hparam general.architecture (an index from an older packindex)", path); goto bad; }
    if (hparams_load(&hp, arch, pindex_hparam_num, &x, e2, sizeof e2)) { err_printf(err, errlen, "%s: %s", path, e2); goto bad; }
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    r->n_layer = hp.n_layer;
    r->n_expert = hp.n_expert;
    r->n_expert_used = hp.n_expert_used;
    r->n_ctx = o->n_ctx > 0 ? o->n_ctx : (hp.n_ctx_train < 4096 ? hp.n_ctx_train : 4096);
    r->n_ctx_train = hp.n_ctx_train;
    r->dense = (uint64_t)x.pool;
    r->dense_half = loader_half_scales_bytes(&x);
    /* K and V rows, and DSA's indexer key a position, f16 */
    r->kv = (uint64_t)hp.n_layer * (uint64_t)r->n_ctx *
            ((uint64_t)hp.n_head_kv * (uint64_t)(hp.head_dim + hp.head_dim_v) + (hp.arch.dsa ? (uint64_t)hp.idx_head_dim : 0)) * 2;
    uint64_t ub = r->n_ctx < 512 ? (uint64_t)r->n_ctx : 512;
    uint64_t ff = (uint64_t)hp.n_ff;
    if ((uint64_t)hp.n_ff_exp * (uint64_t)hp.n_expert_used > ff) ff = (uint64_t)hp.n_ff_exp * (uint64_t)hp.n_expert_used;
    if ((uint64_t)hp.n_ff_shexp > ff) ff = (uint64_t)hp.n_ff_shexp;
    uint64_t wide = ff > (uint64_t)hp.n_embd ? ff : (uint64_t)hp.n_embd;
    r->work = 4 * (ub * (6 * (uint64_t)hp.n_embd + 3 * ff) + (uint64_t)hp.n_vocab + 256 * wide);
    r->expert_file = x.file_bytes[PACK_EXPERTS];
    for (int l = 0; l < x.n_l; l++) {
        if (x.l[l].layer >= hp.n_layer) continue; /* a next-token-prediction block's: read in place when drafting */
        uint64_t s = expert_engine_bytes(&x, x.l[l].layer);
        if (s > r->slot_bytes) r->slot_bytes = s;
        r->n_experts += x.l[l].n_expert;
        r->expert_layers++;
    }
    for (int i = 0; i < x.n_vt; i++) { /* on the host: F16 matrices as they are, everything else as f32 */
        const pi_vtensor *t = &x.vt[i];
        const int half = t->type == GGML_TYPE_F16 && t->ne[1] > 1;
        r->vision += (half ? 2 : 4) * (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    uint64_t fixed = r->dense + r->kv + r->work;
    r->dense_on_gpu = o->vram > 0 && fixed + o->vram_reserve <= o->vram;
    r->slots = r->dense_on_gpu ? ec_plan_slots(o->vram - fixed, o->vram_reserve, r->slot_bytes, r->n_experts) : 0;
    r->hit_rate = r->n_experts ? (double)r->slots / (double)r->n_experts : 1;
    if (o->profile && r->n_experts) {
        ec_profile p;
        if (ec_profile_load(&p, o->profile, err, errlen)) goto bad;
        if (ec_profile_check(&p, hp.n_layer, hp.n_expert, hp.n_expert_used, o->profile, err, errlen)) {
            ec_profile_free(&p);
            goto bad;
        }
        r->hit_rate = ec_profile_hit_rate(&p, r->slots);
        r->hit_from_profile = 1;
        ec_profile_free(&p);
    }
    r->host_need = r->expert_file + r->vision + (r->dense_on_gpu ? 0 : fixed + r->dense_half);
    pindex_free(&x);
    return 0;
bad:
    pindex_free(&x);
    return -1;
}

static void size_str(char *buf, size_t n, uint64_t b)
{
    if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, n, "%.2f MiB", (double)b / (1ull << 20));
    else snprintf(buf, n, "%.1f KiB", (double)b / 1024);
}

static const char USAGE[] =
    "usage: strata budget PACK [--vram SIZE] [--vram-reserve SIZE] [--ram SIZE] [--ctx N] [--profile FILE]\n"
    "  What the pack needs on each device, from its index alone: the dense pool, the KV cache (f16,\n"
    "  N positions), work buffers, one expert slot; how many experts fit in VRAM after the reserve\n"
    "  (default 512M) and the hit rate a routing profile (strata run --record-routing) predicts.\n"
    "  SIZE: bytes with an optional K, M, G or T suffix (binary), e.g. 24G, 1.5GiB.\n";

int cmd_budget(int argc, char **argv)
{
    budget_opts o = { .vram_reserve = 512ull << 20 };
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        long v;
        uint64_t *size = !strcmp(a, "--vram") ? &o.vram : !strcmp(a, "--vram-reserve") ? &o.vram_reserve
                       : !strcmp(a, "--ram")  ? &o.ram : NULL;
        if (size && has) {
            if (ec_parse_size(argv[++i], size)) {
                fprintf(stderr, "strata budget: %s takes a size like 512M or 24G, not '%s'\n", a, argv[i]);
                goto usage;
            }
        } else if ((!strcmp(a, "--ctx") || !strcmp(a, "-c")) && has) {
            if (cli_opt_int("budget", a, argv[++i], 1, 1 << 24, &v)) goto usage;
            o.n_ctx = (int)v;
        } else if (!strcmp(a, "--profile") && has) o.profile = argv[++i];
        else if (a[0] == '-' || dir) { cli_opt_bad("budget", a, NULL); goto usage; }
        else dir = a;
    }
    if (!dir) { fprintf(stderr, "strata budget: no PACK given\n"); goto usage; }
    budget_report r;
    char err[1024];
    if (cli_check_pack_path(dir, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
    if (budget_compute(dir, &o, &r, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return 1; }
    cli_warn_ctx(r.n_ctx, r.n_ctx_train);
    char a[32], b[32], c[32], d[32], e[32];
    size_str(a, sizeof a, r.dense);
    size_str(b, sizeof b, r.kv);
    size_str(c, sizeof c, r.work);
    char half[96] = "";
    if (r.dense_half) {
        size_str(d, sizeof d, r.dense_half);
        snprintf(half, sizeof half, " (on the CPU %s more: the fp16 scales of its Q8_0 rows)", d);
    }
    printf("%s: %s, %d layers\n  dense pool %s%s, KV cache %s (f16, %d positions), work buffers %s\n", dir, r.arch,
           r.n_layer, a, half, b, r.n_ctx, c);
    if (r.n_experts) {
        size_str(a, sizeof a, r.slot_bytes);
        size_str(b, sizeof b, r.expert_file);
        printf("  experts: %lld routed (%d layers x %d, %d used per token), slot %s, experts.bin %s\n",
               (long long)r.n_experts, r.expert_layers, r.n_expert, r.n_expert_used, a, b);
    } else {
        printf("  experts: none (a dense model)\n");
    }
    if (r.vision) {
        size_str(a, sizeof a, r.vision);
        printf("  vision tower %s (its weights on the CPU: F16 matrices as they are, the rest as f32)\n", a);
    }
    if (o.vram) {
        size_str(a, sizeof a, o.vram);
        size_str(b, sizeof b, o.vram_reserve);
        size_str(c, sizeof c, r.dense + r.kv + r.work);
        if (!r.dense_on_gpu)
            printf("GPU %s (reserve %s): dense + KV + work (%s) do not fit; everything runs on the CPU\n", a, b, c);
        else if (r.n_experts) {
            size_str(d, sizeof d, (uint64_t)r.slots * r.slot_bytes);
            printf("GPU %s (reserve %s): dense + KV + work %s, %lld expert slots (%s): %s\n", a, b, c, (long long)r.slots, d,
                   r.slots == r.n_experts ? "every expert fits" : "part of the experts fit");
        } else
            printf("GPU %s (reserve %s): dense + KV + work %s: fits\n", a, b, c);
    } else {
        printf("GPU: none given (--vram SIZE); everything runs on the CPU\n");
    }
    if (r.n_experts)
        printf("  predicted expert hit rate %.4f (%s)\n", r.hit_rate,
               r.hit_from_profile ? o.profile : "uniform routing; --profile FILE for a measured one");
    size_str(e, sizeof e, r.host_need);
    if (o.ram) {
        size_str(a, sizeof a, o.ram);
        printf("host %s: needs %s%s: %s\n", a, e, r.dense_on_gpu ? " (experts.bin, pinned)" : " (experts.bin + dense + KV + work)",
               r.host_need <= o.ram ? "fits" : "does NOT fit");
    } else {
        printf("host: needs %s%s\n", e, r.dense_on_gpu ? " (experts.bin, pinned)" : " (experts.bin + dense + KV + work)");
    }
    return 0;
usage:
    fputs(USAGE, stderr);
    return 2;
}
