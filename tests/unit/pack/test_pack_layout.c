/* test_pack_layout.c: the manifest reader takes the shapes real models have.
 * A real manifest (the shipped model's pack) with one of its dense.bin
 * matrices (TENSOR) grown to 2048 x 4096 (8M elements) must parse: an earlier
 * overflow guard bounded the running product instead of the next
 * multiplication and refused every matrix of 4M elements or more. A shape
 * whose product overflows 64 bits is still refused, naming the tensor. */
#include "tests/lib/test_util.h"

#include <jansson.h>
#include <unistd.h>

#include "pack/pack_cli.h"
#include "formats/pack_manifest.h"

#define TENSOR "blk.0.attn_output.weight"

/* Rewrites TENSOR's shape in PACK/manifest.json into DIR/manifest.json. */
static void reshape(const char *pack, const char *dir, json_int_t ne0, json_int_t ne1, json_int_t elems)
{
    char in[4300], out[4300];
    snprintf(in, sizeof in, "%s/manifest.json", pack);
    snprintf(out, sizeof out, "%s/manifest.json", dir);
    json_error_t je;
    json_t *m = json_load_file(in, 0, &je);
    assert_non_null(m);
    json_t *t = json_object_get(json_object_get(m, "tensors"), TENSOR);
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "file")), "dense.bin");
    json_t *vals = json_object_get(t, "values");
    const json_int_t bytes = json_integer_value(json_object_get(vals, "bytes")),
                     was = json_integer_value(json_object_get(t, "elements"));
    assert_true(was > 0 && bytes % was == 0);
    const json_int_t width = bytes / was; /* P16 or P32: 2 or 4 bytes an element */
    json_object_set_new(t, "shape", json_pack("[I, I]", ne0, ne1));
    json_object_set_new(t, "elements", json_integer(elems));
    json_int_t grow = elems * width - bytes;
    json_object_set_new(vals, "bytes", json_integer(elems * width));
    /* later planes in dense.bin move by the growth; the file grows with them */
    json_int_t at = json_integer_value(json_object_get(vals, "offset"));
    const char *name;
    json_t *o;
    json_object_foreach(json_object_get(m, "tensors"), name, o) {
        json_t *v = json_object_get(o, "values");
        if (o == t || !v || strcmp(json_string_value(json_object_get(o, "file")), "dense.bin")) continue;
        json_int_t off = json_integer_value(json_object_get(v, "offset"));
        if (off > at) json_object_set_new(v, "offset", json_integer(off + grow));
    }
    json_t *f = json_object_get(json_object_get(m, "files"), "dense.bin");
    json_object_set_new(f, "bytes", json_integer(json_integer_value(json_object_get(f, "bytes")) + grow));
    assert_int_equal(json_dump_file(m, out, 0), 0);
    json_decref(m);
}

static void test_large_shapes_parse(void **state)
{
    (void)state;
    char pack[4200], err[512] = "";
    char *dir = make_scratch_dir();
    snprintf(pack, sizeof pack, "%s/pack", dir);
    char *argv[] = {"build", SHIPPED_MODEL, "-o", pack};
    assert_int_equal(run_quiet(iq3pack_cmd_build, 4, argv), 0);

    pack_layout L;
    memset(&L, 0, sizeof L);
    char path[4300];
    snprintf(path, sizeof path, "%s/manifest.json", dir);

    reshape(pack, dir, 2048, 4096, 2048LL * 4096);
    int rc = pack_layout_from_json(&L, path, err, sizeof err);
    if (rc != 0) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    int found = 0;
    for (int i = 0; i < L.n_tensors; i++)
        if (L.tensors[i].ne[0] == 2048 && L.tensors[i].ne[1] == 4096) found = 1;
    assert_true(found);
    pack_layout_free(&L);
    unlink(path);

    /* 2^40 x 2^40 overflows int64: refused, naming the tensor */
    reshape(pack, dir, 1LL << 40, 1LL << 40, 1);
    memset(&L, 0, sizeof L);
    assert_int_not_equal(pack_layout_from_json(&L, path, err, sizeof err), 0);
    assert_non_null(strstr(err, TENSOR));
    pack_layout_free(&L);

    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_shapes_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
