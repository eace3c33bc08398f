/* test_tensor_names.c: the GGUF tensor-name table (formats/tensor_names.h):
 * names as llama.cpp writes them, every name parsed back to its role, the
 * split per-expert names of old GGUFs, and the names no role holds. */
#include "tests/lib/test_util.h"
#include "formats/tensor_names.h"

static void test_names_as_llamacpp_writes_them(void **state)
{
    (void)state;
    char b[96];
    assert_string_equal(tensor_name(b, sizeof b, TN_TOKEN_EMBD, 7), "token_embd.weight");
    assert_string_equal(tensor_name(b, sizeof b, TN_ATTN_Q, 3), "blk.3.attn_q.weight");
    assert_string_equal(tensor_name(b, sizeof b, TN_ATTN_Q_BIAS, 3), "blk.3.attn_q.bias");
    assert_string_equal(tensor_name(b, sizeof b, TN_FFN_EXP_PROBS_B, 0), "blk.0.exp_probs_b.bias");
    assert_string_equal(tensor_name(b, sizeof b, TN_FFN_DOWN_EXPS, 12), "blk.12.ffn_down_exps.weight");
    assert_string_equal(tensor_name(b, sizeof b, TN_NEXTN_EH_PROJ, 46), "blk.46.nextn.eh_proj.weight");
    /* labels name a weight without ".weight", keep ".bias" */
    assert_string_equal(tensor_label(b, sizeof b, TN_OUTPUT, 0), "output");
    assert_string_equal(tensor_label(b, sizeof b, TN_ATTN_SINKS, 2), "blk.2.attn_sinks");
    assert_string_equal(tensor_label(b, sizeof b, TN_FFN_UP_EXPS_BIAS, 2), "blk.2.ffn_up_exps.bias");
    assert_string_equal(tensor_layer_label(b, sizeof b, 5), "blk.5");
    assert_string_equal(tensor_split_name(b, sizeof b, TN_FFN_GATE_EXPS, 1, 7), "blk.1.ffn_gate.7.weight");
    assert_string_equal(tensor_split_name(b, sizeof b, TN_FFN_GATE_UP_EXPS, 1, 7), "");
    assert_string_equal(tensor_split_name(b, sizeof b, TN_ATTN_Q, 1, 7), "");
    /* a short buffer truncates as snprintf does */
    assert_string_equal(tensor_name(b, 8, TN_ATTN_Q, 3), "blk.3.a");
}

static void test_every_name_parses_back(void **state)
{
    (void)state;
    char b[96];
    for (int r = 0; r < TN_COUNT; r++)
        for (int l = 0; l < 3; l++) {
            int layer, expert;
            assert_int_equal(tensor_role_of(tensor_name(b, sizeof b, (tensor_role)r, l), &layer, &expert), r);
            assert_int_equal(expert, -1);
            assert_int_equal(layer, tensor_name_layer(b));
            if (tensor_split_name(b, sizeof b, (tensor_role)r, l, 5)[0]) {
                assert_int_equal(tensor_role_of(b, &layer, &expert), r);
                assert_int_equal(layer, l);
                assert_int_equal(expert, 5);
            }
        }
}

static void test_names_no_role_holds(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "blk.3.attn_q.weightx", "blk.3.attn_q", "blk.-1.attn_q.weight", "blk.3.ffn_gate_up.0.weight",
        "blk.3.ffn_gate.-1.weight", "blk.3.ffn_gate.1.bias", "blk.3.ffn_gate.1.weight.x", "blk.3.token_embd.weight",
        "attn_q.weight", "token_embd.bias", "blk.x.attn_q.weight", "", "blk.", "blk.3.",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int layer, expert;
        assert_int_equal(tensor_role_of(bad[i], &layer, &expert), TN_NONE);
    }
    assert_int_equal(tensor_name_layer("output.weight"), -1);
    assert_int_equal(tensor_name_layer("blk.17.anything"), 17);
}

static void test_arch_roles(void **state)
{
    (void)state;
    assert_int_equal(tensor_arch_role("glm4moe", TN_FFN_NORM), TN_ATTN_POST_NORM);
    assert_int_equal(tensor_arch_role("gpt-oss", TN_FFN_NORM), TN_ATTN_POST_NORM);
    assert_int_equal(tensor_arch_role("llama", TN_FFN_NORM), TN_FFN_NORM);
    assert_int_equal(tensor_arch_role(NULL, TN_FFN_NORM), TN_FFN_NORM);
    assert_int_equal(tensor_arch_role("glm4moe", TN_ATTN_Q), TN_ATTN_Q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_as_llamacpp_writes_them),
        cmocka_unit_test(test_every_name_parses_back),
        cmocka_unit_test(test_names_no_role_holds),
        cmocka_unit_test(test_arch_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
