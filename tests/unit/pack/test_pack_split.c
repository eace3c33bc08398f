/* test_pack_split.c: a gguf-split checkpoint is one source. The shipped
 * model is cut into two parts by our writer (llama.cpp's naming and split.*
 * keys, metadata in part 1, tensors halved); the pack built from part 1
 * verifies against the parts and its files are byte-identical to the pack
 * built from the original single file; a missing part is refused with no
 * pack left. */
#include "tests/lib/test_util.h"

#include <unistd.h>

#include "formats/gguf.h"
#include "pack/pack_cli.h"

static void copy_kv(gguf_writer *w, const gguf_file *f, int64_t i)
{
    assert_int_equal(gguf_writer_copy_kv(w, f, i), 0);
}

static void write_part(const gguf_file *f, const char *path, int part, int n_parts, int64_t lo, int64_t hi)
{
    gguf_writer *w = gguf_writer_new();
    if (part == 0)
        for (int64_t i = 0; i < gguf_n_kv(f); i++) copy_kv(w, f, i);
    uint16_t no = (uint16_t)part, count = (uint16_t)n_parts;
    int32_t total = (int32_t)gguf_n_tensors(f);
    assert_int_equal(gguf_writer_add_kv(w, "split.no", GGUF_TYPE_UINT16, &no), 0);
    assert_int_equal(gguf_writer_add_kv(w, "split.count", GGUF_TYPE_UINT16, &count), 0);
    assert_int_equal(gguf_writer_add_kv(w, "split.tensors.count", GGUF_TYPE_INT32, &total), 0);
    for (int64_t i = lo; i < hi; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        assert_true(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->size) >= 0);
    }
    char err[512];
    assert_int_equal(gguf_writer_write(w, path, err, sizeof err), 0);
    gguf_writer_free(w);
}

static void test_split_source_is_one_source(void **state)
{
    (void)state;
    char *src = SHIPPED_MODEL, err[512];
    gguf_file *f = gguf_open(src, err, sizeof err);
    assert_non_null(f);
    char *dir = make_scratch_dir();
    char p1[4200], p2[4200], pack[4200], cmd[8600];
    snprintf(p1, sizeof p1, "%s/m-00001-of-00002.gguf", dir);
    snprintf(p2, sizeof p2, "%s/m-00002-of-00002.gguf", dir);
    snprintf(pack, sizeof pack, "%s/pack", dir);
    int64_t half = gguf_n_tensors(f) / 2;
    write_part(f, p1, 0, 2, 0, half);
    write_part(f, p2, 1, 2, half, gguf_n_tensors(f));
    gguf_close(f);

    char *build[] = {"build", p1, "-o", pack};
    assert_int_equal(run_quiet(iq3pack_cmd_build, 4, build), 0);
    snprintf(cmd, sizeof cmd, "%s/index.txt", pack);
    assert_int_equal(access(cmd, F_OK), 0);
    FILE *null = fopen("/dev/null", "w");
    assert_int_equal(pack_verify(pack, p1, null, stderr), 0); /* bit-exact against the parts */

    /* the same pack bytes as from the unsplit original */
    char orig[4200];
    snprintf(orig, sizeof orig, "%s/orig", dir);
    char *build0[] = {"build", src, "-o", orig};
    assert_int_equal(run_quiet(iq3pack_cmd_build, 4, build0), 0);
    const char *files[] = {"dense.bin", "embd.bin", "experts.bin", "tokenizer.gguf"};
    for (size_t i = 0; i < 4; i++) {
        char a[4300], b[4300];
        size_t na = 0, nb = 0;
        snprintf(a, sizeof a, "%s/%s", pack, files[i]);
        snprintf(b, sizeof b, "%s/%s", orig, files[i]);
        unsigned char *da = slurp(a, &na), *db = slurp(b, &nb);
        assert_non_null(da);
        assert_non_null(db);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
        free(da);
        free(db);
    }

    /* part 2 missing: refused, nothing published */
    char pack2[4200];
    snprintf(pack2, sizeof pack2, "%s/pack2", dir);
    assert_int_equal(unlink(p2), 0);
    char *build2[] = {"build", p1, "-o", pack2};
    assert_int_not_equal(run_quiet(iq3pack_cmd_build, 4, build2), 0);
    assert_int_not_equal(access(pack2, F_OK), 0);

    fclose(null);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_source_is_one_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
