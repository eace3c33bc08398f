/* test_budget.c: `strata budget` (budget.h) on packs built by iq3pack in a
 * temporary directory, from the shipped model (an MoE whose first layer is
 * dense) and, with ../shared, stories260K (dense): sizes recomputed here
 * from the hyperparameters, slots against VRAM, the hit rate from a
 * profile, and the refusals (no pack, a profile of another model, bad
 * sizes); a DSA model's cache counts its indexer keys. */
#include "tests/lib/test_util.h"
#include "tests/lib/dsa_model.h"

#include "formats/iq3.h"
#include "runtime/cli/budget.h"
#include "runtime/device/expert_cache.h"

#include <math.h>
#include <unistd.h>

typedef struct fixture { char dir[64]; char moe[128], dense[128]; } fixture;

static int build_pack(const char *src, const char *out)
{
    const char *bin = getenv("STRATA_BIN");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/iq3pack' build '%s' -o '%s' >/dev/null 2>&1", bin && *bin ? bin : "bin", src, out);
    return system(cmd);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/strata-budget-XXXXXX");
    if (!f || !mkdtemp(f->dir)) return -1;
    snprintf(f->moe, sizeof f->moe, "%s/moe", f->dir);
    snprintf(f->dense, sizeof f->dense, "%s/dense", f->dir);
    char src[4096];
    if (build_pack(SHIPPED_MODEL, f->moe)) return -1;
    if (have_shared("models/stories260K/stories260K.gguf") &&
        build_pack(shared_path(src, sizeof src, "models/stories260K/stories260K.gguf"), f->dense))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc;
}

static void test_moe_layout(void **state)
{
    fixture *f = *state;
    char err[1024];
    budget_opts o = { .vram_reserve = 1 << 20, .n_ctx = 100 };
    budget_report r;
    assert_int_equal(budget_compute(f->moe, &o, &r, err, sizeof err), 0);
    assert_string_equal(r.arch, "glm4moe");
    assert_true(r.n_expert > 1 && r.n_expert_used >= 1);
    assert_int_equal(r.expert_layers, r.n_layer - 1); /* the first layer is dense */
    assert_int_equal(r.n_experts, (int64_t)r.expert_layers * r.n_expert);
    assert_int_equal(r.n_ctx, 100);
    /* gate and up: n_ff_exp rows of n_embd; down: n_embd rows of n_ff_exp; IQ3, no widening.
     * the shipped model: n_embd 256, n_ff_exp 256 (index hparams); recomputed from the container size */
    uint64_t part = 256 * iq3_row_bytes(256);
    assert_int_equal(r.slot_bytes, (3 * part + 255) / 256 * 256);
    assert_true(r.dense > 0);
    assert_true(r.expert_file >= (uint64_t)r.n_experts * 3 * part);
    assert_false(r.dense_on_gpu);                       /* no --vram */
    assert_int_equal(r.slots, 0);
    assert_true(r.host_need == r.expert_file + r.dense + r.dense_half + r.kv + r.work);

    /* room for 3.5 slots after the fixed part and the reserve: 3 slots */
    uint64_t fixed = r.dense + r.kv + r.work;
    o.vram = fixed + o.vram_reserve + 3 * r.slot_bytes + r.slot_bytes / 2;
    budget_report g;
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), 0);
    assert_true(g.dense_on_gpu);
    assert_int_equal(g.slots, 3);
    assert_true(g.hit_rate == 3.0 / (double)g.n_experts);
    assert_false(g.hit_from_profile);
    assert_true(g.host_need == g.expert_file);
    assert_true(g.kv == r.kv && g.dense == r.dense);

    /* one byte short of the fixed part: nothing on the GPU */
    o.vram = fixed + o.vram_reserve - 1;
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), 0);
    assert_false(g.dense_on_gpu);
    assert_int_equal(g.slots, 0);
    /* plenty: every expert fits */
    o.vram = 64ull << 30;
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), 0);
    assert_int_equal(g.slots, g.n_experts);
    assert_true(g.hit_rate == 1.0);
    /* KV: layers x ctx x kv heads x head_dim x K,V x f16 scales with --ctx */
    o.n_ctx = 200;
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), 0);
    assert_true(g.kv == 2 * r.kv);
}

/* deepseek32 (dsa_model.h): one KV head of K and V rows (kv_lora_rank + rope dims, kv_lora_rank) and
 * the indexer's key, each position, every layer, f16 */
static void test_dsa_cache(void **state)
{
    fixture *f = *state;
    char err[1024], gguf[256], pack[256];
    snprintf(gguf, sizeof gguf, "%s/deepseek32.gguf", f->dir);
    snprintf(pack, sizeof pack, "%s/deepseek32", f->dir);
    assert_int_equal(dsa_write_model(&DSA_SPECS[0], gguf, 0, err, sizeof err), 0);
    assert_int_equal(build_pack(gguf, pack), 0);
    budget_opts o = { .vram_reserve = 1 << 20, .n_ctx = 100 };
    budget_report r;
    assert_int_equal(budget_compute(pack, &o, &r, err, sizeof err), 0);
    assert_string_equal(r.arch, "deepseek32");
    assert_int_equal(r.kv, (uint64_t)DSA_LAYERS * 100 * ((DSA_R + DSA_ROT) + DSA_R + DSA_IDX_DIM) * 2);
}

static void test_moe_profile(void **state)
{
    fixture *f = *state;
    char err[1024], path[256];
    budget_opts o = { .vram_reserve = 1 << 20, .n_ctx = 64 };
    budget_report r;
    assert_int_equal(budget_compute(f->moe, &o, &r, err, sizeof err), 0);
    /* a profile where the first MoE layer always routes experts 0..used-1 and the rest is uniform;
     * the dense layers before it route nothing */
    const int lead = r.n_layer - r.expert_layers;
    ec_profile p;
    assert_int_equal(ec_profile_init(&p, r.n_layer, r.n_expert, r.n_expert_used, err, sizeof err), 0);
    p.token_layer = lead;
    int32_t ex[64];
    for (int t = 0; t < r.n_expert * 4; t++)
        for (int l = lead; l < r.n_layer; l++) {
            for (int k = 0; k < r.n_expert_used; k++) ex[k] = l == lead ? k : (t + k) % r.n_expert;
            assert_int_equal(ec_profile_observe(&p, l, ex, r.n_expert_used, err, sizeof err), 0);
        }
    snprintf(path, sizeof path, "%s/route.prof", f->dir);
    unlink(path);
    assert_int_equal(ec_profile_save(&p, path, err, sizeof err), 0);
    o.profile = path;
    o.vram = r.dense + r.kv + r.work + o.vram_reserve + (uint64_t)r.n_expert_used * r.slot_bytes;
    budget_report g;
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), 0);
    assert_int_equal(g.slots, r.n_expert_used);
    assert_true(g.hit_from_profile);
    /* the used slots hold the first MoE layer's fixed experts: exactly one MoE layer's share of the uses */
    assert_true(fabs(g.hit_rate - 1.0 / r.expert_layers) < 1e-12);
    assert_true(g.hit_rate == ec_profile_hit_rate(&p, g.slots));
    ec_profile_free(&p);

    /* a profile of another model is refused, naming the file */
    char other[256];
    snprintf(other, sizeof other, "%s/other.prof", f->dir);
    unlink(other);
    assert_int_equal(ec_profile_init(&p, r.n_layer + 1, r.n_expert, r.n_expert_used, err, sizeof err), 0);
    assert_int_equal(ec_profile_save(&p, other, err, sizeof err), 0);
    ec_profile_free(&p);
    o.profile = other;
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, other));
    assert_non_null(strstr(err, "the profile is for"));
    /* and a damaged one */
    FILE *fp = fopen(other, "w");
    assert_non_null(fp);
    fputs("strata-routing-profile 1\nshape 1 2 1\n", fp);
    fclose(fp);
    assert_int_equal(budget_compute(f->moe, &o, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated"));
}

static void test_dense_and_refusals(void **state)
{
    fixture *f = *state;
    char err[1024];
    budget_opts o = { .vram = 1ull << 30, .vram_reserve = 1 << 20 };
    budget_report r;
    char missing[256];
    snprintf(missing, sizeof missing, "%s/nothing", f->dir);
    assert_int_equal(budget_compute(missing, &o, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "no index: not a finished pack"));
    char *argv_missing[] = { "budget", missing, NULL };
    assert_int_equal(cmd_budget(2, argv_missing), 1);
    char *argv_bad[] = { "budget", missing, "--vram", "lots", NULL };
    assert_int_equal(cmd_budget(4, argv_bad), 2);
    char *argv_none[] = { "budget", NULL };
    assert_int_equal(cmd_budget(1, argv_none), 2);
    char *argv_help[] = { "budget", "--help", NULL };
    assert_int_equal(cmd_budget(2, argv_help), 0);
    char *argv_moe[] = { "budget", f->moe, "--vram", "4M", "--vram-reserve", "1M", "--ctx", "64", NULL };
    assert_int_equal(cmd_budget(8, argv_moe), 0);
    SKIP_UNLESS_SHARED("models/stories260K/stories260K.gguf");
    assert_int_equal(budget_compute(f->dense, &o, &r, err, sizeof err), 0);
    assert_int_equal(r.n_experts, 0);
    assert_int_equal(r.slots, 0);
    assert_true(r.dense_on_gpu);
    assert_true(r.hit_rate == 1.0);
    char *argv_ok[] = { "budget", f->dense, "--vram", "1G", "--ram", "8G", "--ctx", "128", NULL };
    assert_int_equal(cmd_budget(8, argv_ok), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_layout),
        cmocka_unit_test(test_moe_profile),
        cmocka_unit_test(test_dsa_cache),
        cmocka_unit_test(test_dense_and_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
