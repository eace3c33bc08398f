/* test_pack_files.c: the pack's own formats in formats/: every index line
 * written by a pindex_put_*() reads back through pindex_parse() field for
 * field (one spelling per line kind, so writer and reader cannot drift);
 * the name and token rules and act_kind's table; the hyperparameter key
 * table and the architecture rows filled and unambiguous; the crc32 walk
 * against the CRC-32 check value, and its one-line refusal. */
#include "tests/lib/test_util.h"

#include <unistd.h>

#include "formats/arch_table.h"
#include "formats/hparam_keys.h"
#include "formats/pack_files.h"
#include "formats/pack_index.h"

static void test_index_round_trip(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    assert_non_null(fp);
    pindex_put_header(fp, 64, 4096, 2);
    int64_t col[PI_NCOLS] = { 0 };
    col[PI_C_FILE] = PACK_DENSE;
    col[PI_C_KIND] = PI_F32;
    col[PI_C_SRC_BYTES] = col[PI_C_DST_BYTES] = 4 * 8 * 3 * 4; /* F32: 4 bytes an element */
    col[PI_C_NE0] = 4;
    col[PI_C_NE1] = 8;
    pindex_put_row(fp, "blk.0.w", col);
    const int64_t dims[3] = { 4, 8, 3 };
    pindex_put_shape(fp, "blk.0.w", 3, dims);
    int64_t q[PI_NCOLS] = { 0 };
    q[PI_C_FILE] = PACK_EMBD;
    q[PI_C_KIND] = PI_VERBATIM;
    q[PI_C_DST_OFF] = 128;
    q[PI_C_NE0] = 64;
    q[PI_C_NE1] = 2;
    q[PI_C_CODE_BITS] = 4;
    q[PI_C_CODE_BIAS] = -8;
    q[PI_C_GROUP] = 32;
    q[PI_C_HAS_OFFSET] = 1;
    q[PI_C_CODES_BYTES] = 64;
    q[PI_C_SCALES_BYTES] = q[PI_C_OFFSET_BYTES] = 16;
    q[PI_C_SRC_BYTES] = 64 + 16 + 8;
    q[PI_C_DST_BYTES] = 64 + 16 + 16;
    q[PI_C_ACT_KIND] = PI_ACT_Q8_K;
    pindex_put_row(fp, "token_embd.weight", q);
    pindex_put_offsets_fp16(fp, "token_embd.weight");
    pindex_put_hparam_str(fp, NULL, "general.architecture", "llama");
    pindex_put_hparam_int(fp, "llama", HPARAM_KEYS[HPK_LAYERS].key, 2);
    pindex_put_hparam_real(fp, "llama", HPARAM_KEYS[HPK_ROPE_BASE].key, 0.1);
    for (int f = 0; f < PACK_NFILES; f++) pindex_put_file(fp, f, 1000u + (uint64_t)f, 0xdeadbeefu - (uint32_t)f);
    const pi_layer l = { .layer = 1, .n_expert = 2, .n_parts = 1, .base = 8192, .stride = 4096, .blob_bytes = 100 };
    pindex_put_expert_layer(fp, &l);
    pi_expert e = { .name = "blk.1.ffn_up_exps.weight", .layer = 1, .part = 0, .blob_off = 0, .part_bytes = 100,
                    .form = "S4", .ne0 = 32, .ne1 = 2, .code_bits = 4, .code_bias = -8, .group = 32,
                    .codebook = 1, .native_type = -1, .act_kind = PI_ACT_Q8_0,
                    .plane = { 32, 8, 0, 0, 60 } };
    pindex_put_expert(fp, &e);
    assert_int_equal(fclose(fp), 0);

    pack_index x;
    char err[256] = "";
    assert_int_equal(pindex_parse(&x, text, len, "t/index.txt", err, sizeof err), 0);
    assert_int_equal(x.align, 64);
    assert_int_equal(x.pool, 4096);
    assert_int_equal(x.n_t, 2);
    assert_string_equal(x.t[0].name, "blk.0.w");
    assert_int_equal(x.t[0].kind, PI_F32);
    assert_int_equal(x.t[0].n_dims, 3);
    assert_int_equal(x.t[0].rows, 24);
    assert_int_equal(x.t[1].file, PACK_EMBD);
    assert_int_equal(x.t[1].code_bias, -8);
    assert_int_equal(x.t[1].offsets_fp16, 1);
    assert_int_equal(x.t[1].act_kind, PI_ACT_Q8_K);
    assert_string_equal(pindex_hparam(&x, "general.architecture"), "llama");
    assert_string_equal(pindex_hparam(&x, "llama.block_count"), "2");
    assert_true(strtod(pindex_hparam(&x, "llama.rope.freq_base"), NULL) == 0.1);
    for (int f = 0; f < PACK_NFILES; f++) {
        assert_true(x.have_file[f]);
        assert_int_equal(x.file_bytes[f], 1000 + f);
        assert_int_equal(x.file_crc[f], 0xdeadbeefu - (uint32_t)f);
    }
    assert_int_equal(x.n_l, 1);
    assert_int_equal(x.l[0].base, 8192);
    assert_int_equal(x.n_e, 1);
    assert_string_equal(x.e[0].form, "S4");
    assert_int_equal(x.e[0].codebook, 1);
    assert_int_equal(x.e[0].native_type, -1);
    assert_int_equal(x.e[0].plane[4], 60);
    pindex_free(&x);
    free(text);
}

static void test_names_and_kinds(void **state)
{
    (void)state;
    assert_true(pindex_token_ok("llama"));
    assert_false(pindex_token_ok(""));
    assert_false(pindex_token_ok("two words"));
    assert_false(pindex_token_ok("tab\there"));
    assert_true(pindex_name_ok("blk.0.attn_q.weight"));
    assert_false(pindex_name_ok("#comment"));
    assert_false(pindex_name_ok("@shape"));
    assert_false(pindex_name_ok(""));
    assert_int_equal(pindex_act_kind("Q4_0"), PI_ACT_Q8_0);
    assert_int_equal(pindex_act_kind("IQ4_NL"), PI_ACT_Q8_0);
    assert_int_equal(pindex_act_kind("Q6_K"), PI_ACT_Q8_K);
    assert_int_equal(pindex_act_kind("IQ4_XS"), PI_ACT_Q8_K);
    assert_int_equal(pindex_act_kind("Q9_Z"), -1);
    assert_int_equal(pindex_act_kind(NULL), -1);
}

static void test_tables_filled(void **state)
{
    (void)state;
    for (int i = 0; i < HPK_COUNT; i++) {
        assert_non_null(HPARAM_KEYS[i].json);
        assert_non_null(HPARAM_KEYS[i].key);
        for (int j = 0; j < i; j++) {
            assert_true(strcmp(HPARAM_KEYS[i].json, HPARAM_KEYS[j].json) != 0);
            assert_true(strcmp(HPARAM_KEYS[i].key, HPARAM_KEYS[j].key) != 0);
        }
    }
    for (size_t i = 0; arch_table_row(i); i++) {
        assert_non_null(arch_table_row(i)->name);
        assert_ptr_equal(arch_table_find(arch_table_row(i)->name), arch_table_row(i));
    }
    assert_null(arch_table_find("no-such-arch"));
    assert_null(arch_table_find(NULL));
    assert_string_equal(rope_kind_name(arch_table_find("qwen3moe")->rope), "neox");
    assert_string_equal(rope_kind_name(arch_table_find("deepseek2")->rope), "norm");
    assert_string_equal(rope_kind_name(arch_table_find("phi3")->rope), "neox"); /* recorded, not run */
    assert_true(arch_table_find("phi3")->pack_only && !arch_table_find("olmoe")->pack_only);
}

static void test_crc_walk(void **state)
{
    (void)state;
    char *dir = make_scratch_dir();
    assert_non_null(dir);
    char *path = pack_path(dir, PACK_FILE_NAMES[PACK_DENSE]);
    assert_non_null(path);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs("123456789", fp);
    fclose(fp);
    uint64_t bytes = 0;
    uint32_t crc = 0;
    char err[512] = "";
    assert_int_equal(pack_file_crc32(path, &bytes, &crc, err, sizeof err), 0);
    assert_int_equal(bytes, 9);
    assert_int_equal(crc, 0xcbf43926u); /* CRC-32's check value */
    unlink(path);
    assert_int_equal(pack_file_crc32(path, &bytes, &crc, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    free(path);
    rmdir(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_round_trip),
        cmocka_unit_test(test_names_and_kinds),
        cmocka_unit_test(test_tables_filled),
        cmocka_unit_test(test_crc_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
