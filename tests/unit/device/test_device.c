/* test_device.c: device.h in the CPU-only build: option parsing (values,
 * refusals, defaults), the stub's answers to each --device kind, routing
 * recorded by the CPU forward pass on the shipped model's pack built by
 * iq3pack (counts = tokens x MoE layers x top_k, every MoE layer's row sums
 * to tokens x top_k and the dense first layer's to 0, the router's own
 * picks), saved and read back by the profile reader, and profiles added;
 * the routing trace recorded in the same passes (several ubatches, then a
 * decode step) holds one row per token whose counts are the profile's and
 * whose last row is the router's last picks. */
#include "tests/lib/test_util.h"

#include "runtime/device/device.h"
#include "runtime/model/loader.h"
#include "runtime/model/model_impl.h"

#include <unistd.h>

static void test_parse(void **state)
{
    (void)state;
    device_opts o;
    char err[256];
    device_opts_default(&o);
    assert_int_equal(o.kind, DEVICE_AUTO);
    assert_false(o.kind_given);
    assert_int_equal(o.vram_reserve, (uint64_t)512 << 20);
    assert_int_equal(o.miss, EC_MISS_PCIE);
    assert_int_equal(device_parse_arg(&o, "--device", "cuda", err, sizeof err), 1);
    assert_int_equal(o.kind, DEVICE_CUDA);
    assert_true(o.kind_given);
    assert_int_equal(device_parse_arg(&o, "--device", "cpu", err, sizeof err), 1);
    assert_int_equal(o.kind, DEVICE_CPU);
    assert_int_equal(device_parse_arg(&o, "--device", "GPU", err, sizeof err), -1);
    assert_non_null(strstr(err, "--device takes auto, cpu or cuda, not 'GPU'"));
    assert_int_equal(device_parse_arg(&o, "--device", NULL, err, sizeof err), -1);
    assert_int_equal(device_parse_arg(&o, "--vram-reserve", "2G", err, sizeof err), 1);
    assert_int_equal(o.vram_reserve, (uint64_t)2 << 30);
    assert_int_equal(device_parse_arg(&o, "--vram-reserve", "-1", err, sizeof err), -1);
    assert_int_equal(device_parse_arg(&o, "--miss", "cpu", err, sizeof err), 1);
    assert_int_equal(o.miss, EC_MISS_CPU);
    assert_int_equal(device_parse_arg(&o, "--miss", "auto", err, sizeof err), 1);
    assert_int_equal(o.miss, EC_MISS_AUTO);
    assert_int_equal(device_parse_arg(&o, "--miss", "gpu", err, sizeof err), -1);
    assert_int_equal(device_parse_arg(&o, "--profile", "p.txt", err, sizeof err), 1);
    assert_string_equal(o.profile, "p.txt");
    assert_int_equal(device_parse_arg(&o, "--record-routing", "r.txt", err, sizeof err), 1);
    assert_string_equal(o.record, "r.txt");
    assert_int_equal(device_parse_arg(&o, "--record-routing", "", err, sizeof err), -1);
    assert_int_equal(device_parse_arg(&o, "--temp", "0", err, sizeof err), 0);
    device_kind k;
    assert_int_equal(device_parse_kind("auto", &k), 0);
    assert_int_equal(k, DEVICE_AUTO);
    assert_int_equal(device_parse_kind("cuda ", &k), -1);
    assert_string_equal(device_kind_name(DEVICE_CUDA), "cuda");
}

static void test_stub(void **state)
{
    (void)state;
    if (device_cuda_built()) skip();
    device_opts o;
    char note[256], err[256];
    device_opts_default(&o);
    o.kind = DEVICE_CUDA;
    assert_int_equal(device_attach(NULL, &o, note, sizeof note, err, sizeof err), -1);
    assert_string_equal(err, "this strata was built without CUDA (make strata-cuda)");
    o.kind = DEVICE_CPU;
    assert_int_equal(device_attach(NULL, &o, note, sizeof note, err, sizeof err), 0);
    assert_string_equal(note, "");
    o.kind = DEVICE_AUTO; /* the default: silent */
    assert_int_equal(device_attach(NULL, &o, note, sizeof note, err, sizeof err), 0);
    assert_string_equal(note, "");
    o.kind_given = true; /* asked for explicitly: one line */
    assert_int_equal(device_attach(NULL, &o, note, sizeof note, err, sizeof err), 0);
    assert_non_null(strstr(note, "running on the CPU"));
    assert_null(strchr(note, '\n'));
}

static void test_record_routing(void **state)
{
    (void)state;
    char dir[] = "/tmp/strata-device-XXXXXX", cmd[8192], path[256], err[512];
    assert_non_null(mkdtemp(dir));
    const char *bin = getenv("STRATA_BIN");
    snprintf(cmd, sizeof cmd, "'%s/iq3pack' build '%s' -o '%s/p' >/dev/null 2>&1", bin && *bin ? bin : "bin", SHIPPED_MODEL, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/p", dir);
    loaded_pack *p = loader_open(path, err, sizeof err);
    assert_non_null(p);
    model_options mo = model_default_options();
    mo.n_threads = 2;
    mo.n_batch = 5; /* several ubatches */
    model *m = model_create(loader_hparams(p), loader_weights(p), &mo, err, sizeof err);
    assert_non_null(m);
    assert_null(model_routing(m));
    assert_null(model_trace(m));
    assert_int_equal(model_record_routing(m, err, sizeof err), 0);
    assert_int_equal(model_record_trace(m, err, sizeof err), 0);
    const model_hparams *hp = model_hp(m);
    const int T = 13, V = hp->n_vocab, L = hp->n_layer, E = hp->n_expert, K = hp->n_expert_used;
    int moe_layers = 0;
    for (int l = 0; l < L; l++) moe_layers += hparams_layer_moe(hp, l);
    assert_true(moe_layers > 0 && moe_layers < L); /* the first layer is dense */
    int32_t tok[13];
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 37 + 5) % V);
    float *logits = malloc((size_t)V * sizeof *logits);
    assert_int_equal(model_forward(m, tok, T - 1, logits, false, err, sizeof err), 0);
    /* the last decode step's picks, seen through the model's own buffers */
    uint64_t before[256 * 8];
    const ec_profile *r = model_routing(m);
    memcpy(before, r->count, (size_t)L * E * sizeof(uint64_t));
    assert_int_equal(model_forward(m, tok + T - 1, 1, logits, false, err, sizeof err), 0);
    for (int l = 0; l < L; l++) {
        uint64_t added = 0;
        for (int e = 0; e < E; e++) added += r->count[l * E + e] - before[l * E + e];
        assert_int_equal(added, hparams_layer_moe(hp, l) ? K : 0);
    }
    for (int j = 0; j < K; j++) /* the last layer's picks of the last token */
        assert_true(r->count[(L - 1) * E + m->sel[j]] > before[(L - 1) * E + m->sel[j]]);
    assert_int_equal(r->tokens, T);
    const routing_trace *tr = model_trace(m);
    assert_non_null(tr);
    assert_int_equal(tr->n_tokens, T);
    assert_memory_equal(routing_trace_at(tr, T - 1, L - 1), m->sel, (size_t)K * sizeof(int32_t));
    ec_profile tp;
    assert_int_equal(routing_trace_profile(tr, &tp, err, sizeof err), 0);
    assert_int_equal(tp.tokens, T);
    assert_memory_equal(tp.count, r->count, (size_t)L * E * sizeof(uint64_t));
    ec_profile_free(&tp);
    uint64_t total = 0;
    for (int i = 0; i < L * E; i++) total += r->count[i];
    assert_int_equal(total, (uint64_t)T * moe_layers * K);

    char prof[320];
    snprintf(prof, sizeof prof, "%s/prof.txt", dir);
    assert_int_equal(ec_profile_save(r, prof, err, sizeof err), 0);
    ec_profile back;
    assert_int_equal(ec_profile_load(&back, prof, err, sizeof err), 0);
    assert_int_equal(back.tokens, T);
    assert_memory_equal(back.count, r->count, (size_t)L * E * sizeof(uint64_t));
    assert_int_equal(ec_profile_check(&back, L, E, K, prof, err, sizeof err), 0);
    assert_int_equal(device_profile_add(&back, r, err, sizeof err), 0);
    assert_int_equal(back.tokens, 2 * T);
    for (int i = 0; i < L * E; i++) assert_int_equal(back.count[i], 2 * r->count[i]);
    ec_profile other;
    assert_int_equal(ec_profile_init(&other, L + 1, E, K, err, sizeof err), 0);
    assert_int_equal(device_profile_add(&back, &other, err, sizeof err), -1);
    ec_profile_free(&other);
    ec_profile_free(&back);

    device_stats ds;
    device_get_stats(m, &ds);
    assert_int_equal(ds.on_gpu, 0);
    assert_int_equal(ds.cache.accesses, 0);
    free(logits);
    model_free(m);
    loader_close(p);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_stub),
        cmocka_unit_test(test_record_routing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
