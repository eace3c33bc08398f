/* build_vision.c: a vision projector in a pack (`iq3pack build --mmproj`).
 * The projector's GGUF (llama.cpp's mmproj file) is carried byte for byte
 * as vision.gguf: its tensors keep their bits with nothing to convert, and
 * the runtime reads the projector's settings from the very keys llama.cpp
 * reads. The manifest and the index name each tensor with its place in the
 * file, so verify and the loader can check what they were told. */
#include "pack/build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "formats/gguf.h"
#include "formats/pack_index.h"
#include "formats/sha256.h"

int build_plan_vision(pack_layout *L, const char *path, char *err, size_t errlen)
{
    char e[256];
    gguf_file *g = gguf_open(path, e, sizeof e);
    if (!g) {
        snprintf(err, errlen, "--mmproj %s", e);
        return -1;
    }
    int rc = -1;
    pk_vision *v = &L->vision;
    const char *arch = gguf_get_str(g, "general.architecture");
    const char *proj = gguf_get_str(g, "clip.projector_type");
    bool has_vision = false;
    if (!arch || strcmp(arch, "clip") || gguf_get_bool(g, "clip.has_vision_encoder", &has_vision) || !has_vision) {
        snprintf(err, errlen, "--mmproj %s: not a vision projector (an mmproj GGUF has general.architecture clip "
                 "and clip.has_vision_encoder true; this one: %s)", path, arch ? arch : "no architecture");
        goto out;
    }
    if (!proj) proj = "mlp"; /* llama.cpp's default for files without the key (the first llava ones) */
    if (!pindex_token_ok(proj) || strlen(proj) >= sizeof v->projector) {
        snprintf(err, errlen, "--mmproj %s: clip.projector_type is not one word", path);
        goto out;
    }
    const int64_t n = gguf_n_tensors(g);
    if (n < 1) {
        snprintf(err, errlen, "--mmproj %s: holds no tensor", path);
        goto out;
    }
    if (!(v->tensors = calloc((size_t)n, sizeof *v->tensors))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        pk_vtensor *x = &v->tensors[v->n_tensors++];
        if (!pindex_name_ok(t->name) || strlen(t->name) >= sizeof x->name) {
            snprintf(err, errlen, "--mmproj %s: tensor name '%.64s' is too long or not one word", path, t->name);
            goto out;
        }
        snprintf(x->name, sizeof x->name, "%s", t->name);
        x->type = t->type;
        x->n_dims = (int)t->n_dims;
        for (int d = 0; d < 4; d++) x->ne[d] = d < (int)t->n_dims ? t->ne[d] : 1;
        x->off = gguf_data_offset(g) + t->offset;
        x->bytes = t->size;
    }
    snprintf(v->projector, sizeof v->projector, "%s", proj);
    v->source_bytes = gguf_file_size(g);
    v->file.bytes = v->source_bytes;
    if (!(v->source_path = strdup(path))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    v->present = 1;
    rc = 0;
out:
    gguf_close(g);
    return rc;
}

int build_write_vision(pack_layout *L, const char *dir, char *err, size_t errlen)
{
    pk_vision *v = &L->vision;
    char *dst = pack_path(dir, PACK_VISION);
    const int in = open(v->source_path, O_RDONLY);
    const int out = dst ? open(dst, O_WRONLY | O_CREAT | O_EXCL, 0644) : -1;
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    int rc = -1;
    uint64_t done = 0;
    uLong crc = crc32(0L, Z_NULL, 0);
    sha256_ctx sh;
    sha256_init(&sh);
    if (in < 0 || out < 0 || !buf) {
        snprintf(err, errlen, "%s: %s", in < 0 ? v->source_path : PACK_VISION, buf ? strerror(errno) : "out of memory");
        goto out;
    }
    for (;;) {
        if (build_interrupted()) {
            snprintf(err, errlen, "interrupted");
            goto out;
        }
        const ssize_t r = read(in, buf, CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: %s", v->source_path, strerror(errno));
            goto out;
        }
        if (r == 0) break;
        for (ssize_t w = 0; w < r;) {
            const ssize_t k = write(out, buf + w, (size_t)(r - w));
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) {
                snprintf(err, errlen, "%s: write failed: %s", PACK_VISION, strerror(errno));
                goto out;
            }
            w += k;
        }
        crc = crc32(crc, buf, (uInt)r);
        sha256_update(&sh, buf, (size_t)r);
        done += (uint64_t)r;
    }
    if (done != v->source_bytes) { /* the file changed under us since it was planned */
        snprintf(err, errlen, "%s: %llu bytes read, %llu when it was opened", v->source_path, (unsigned long long)done,
                 (unsigned long long)v->source_bytes);
        goto out;
    }
    if (fsync(out) != 0) {
        snprintf(err, errlen, "%s: %s", PACK_VISION, strerror(errno));
        goto out;
    }
    unsigned char dg[32];
    sha256_final(&sh, dg);
    sha256_hex(dg, v->source_sha256);
    v->file.crc32 = (uint32_t)crc;
    rc = 0;
out:
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", PACK_VISION, strerror(errno));
        rc = -1;
    }
    free(buf);
    free(dst);
    return rc;
}
