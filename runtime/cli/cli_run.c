/* cli_run.c: `strata run PACK -p TEXT ...`: tokenize, prefill in one
 * batch, then sample and stream each piece to stdout as it is decoded.
 * Also the helpers cli.h promises but cli_args.c (pack path and options). */
#include "runtime/cli/cli.h"

#include "runtime/kernels/kernels.h"
#include "runtime/model/sampler.h"
#include "runtime/vision/picture_prompt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *cli_read_all(FILE *fp, size_t *n, const char **why)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, fp);
        if (len < cap) break;
        char *g = cap <= ((size_t)1 << 34) ? realloc(buf, cap *= 2) : NULL;
        if (!g) { free(buf); buf = NULL; }
        else buf = g;
    }
    if (!buf) { *why = "out of memory"; return NULL; }
    if (ferror(fp)) { *why = "read error"; free(buf); return NULL; }
    *n = len;
    return buf;
}

int cli_open(cli_model *cm, const char *dir, int threads, kv_type kv, int n_ctx)
{
    return cli_open_dev(cm, dir, threads, kv, n_ctx, NULL);
}

int cli_device_arg(const char *cmd, device_opts *o, const char *opt, const char *val)
{
    char err[256];
    int r = device_parse_arg(o, opt, val, err, sizeof err);
    if (r < 0) fprintf(stderr, "strata %s: %s\n", cmd, err);
    return r;
}

int cli_save_routing(cli_model *cm, const device_opts *dev)
{
    const ec_profile *p = cm->m ? model_routing(cm->m) : NULL;
    if (!dev || !dev->record || !p) return 0;
    char err[512];
    if (ec_profile_save(p, dev->record, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return -1; }
    return 0;
}

int cli_load(cli_model *cm, const char *dir, const device_opts *dev, int n_ctx)
{
    char err[1024];
    memset(cm, 0, sizeof *cm);
    if (cli_check_pack_path(dir, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return -1; }
    tier_plan plan;
    if (cli_mem_plan(dir, dev, n_ctx, 1, &plan, err, sizeof err)) { fprintf(stderr, "strata: %s\n", err); return -1; }
    const loader_opts lo = { NULL, NULL, plan.tier, !plan.tier, device_split_codes(dev) };
    cm->pack = loader_open_opts(dir, &lo, err, sizeof err);
    if (!cm->pack) { fprintf(stderr, "strata: %s\n", err); return -1; }
    if (tier_from_plan(dir, &plan, cm->pack, dev ? dev->profile : NULL, stderr, &cm->tier, err, sizeof err)) {
        fprintf(stderr, "strata: %s\n", err);
        cli_close(cm);
        return -1;
    }
    return 0;
}

int cli_build(cli_model *cm, const char *dir, int threads, kv_type kv, int n_ctx, const device_opts *dev)
{
    char err[1024];
    model_options o = model_default_options();
    o.n_threads = threads;
    o.kv = kv;
    o.n_ctx = n_ctx;
    o.tier = cm->tier;
    o.kernels = device_cpu_kernels(dev);
    cm->m = model_create(loader_hparams(cm->pack), loader_weights(cm->pack), &o, err, sizeof err);
    if (!cm->m) {
        fprintf(stderr, "strata: %s: %s\n", dir, err);
        cli_close(cm);
        return -1;
    }
    cli_warn_ctx(n_ctx, loader_hparams(cm->pack)->n_ctx_train);
    if (!dev) return 0;
    /* refused before any work: ec_profile_save never overwrites */
    if (dev->record && access(dev->record, F_OK) == 0) {
        fprintf(stderr, "strata: --record-routing %s: the file exists (it is never overwritten)\n", dev->record);
        cli_close(cm);
        return -1;
    }
    if (dev->record && model_record_routing(cm->m, err, sizeof err)) {
        fprintf(stderr, "strata: %s: %s\n", dir, err);
        cli_close(cm);
        return -1;
    }
    char note[512];
    int r = device_attach(cm->m, dev, note, sizeof note, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "strata: %s\n", err);
        cli_close(cm);
        return -1;
    }
    if (note[0]) fprintf(stderr, "strata: %s\n", note);
    return 0;
}

int cli_open_dev(cli_model *cm, const char *dir, int threads, kv_type kv, int n_ctx, const device_opts *dev)
{
    return cli_load(cm, dir, dev, n_ctx) ? -1 : cli_build(cm, dir, threads, kv, n_ctx, dev);
}

int cli_draft_model(const char *cmd, cli_model *cm, spec_params *p)
{
    if (p->kind != SPEC_MTP) return 0;
    char err[256];
    if (!cm->mtp && !(cm->mtp = model_create_mtp(cm->m, err, sizeof err))) {
        fprintf(stderr, "strata %s: --draft mtp: %s\n", cmd, err);
        return -1;
    }
    p->mtp = cm->mtp;
    return 0;
}

void cli_close(cli_model *cm)
{
    model_free(cm->mtp); /* it runs on the model's threads */
    model_free(cm->m);
    tier_free(cm->tier);
    loader_close(cm->pack);
    memset(cm, 0, sizeof *cm);
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: strata run PACK -p TEXT [-n N] [--temp T] [--top-p P] [--top-k K] [--min-p P]\n"
                "                  [--seed S] [-t|--threads N] [-c|--ctx N] [--kv-type f16|f32] [--logits-out FILE]\n"
                "                  [--device auto|cpu|cuda] [--vram-reserve SIZE] [--miss cpu|pcie|auto]\n"
                "                  [--profile FILE] [--record-routing FILE] [--draft none|ngram|mtp] [--draft-max N]\n"
                "                  [--image FILE ...]\n"
                "  Streams the continuation of TEXT to stdout (N tokens, default 64; stops at EOS or\n"
                "  at the end of the context, -c N, default the model's trained context), then one\n"
                "  line of timings on stderr.\n"
                "  --temp 0 is greedy. --logits-out writes the f32 logits of every evaluated\n"
                "  position (prompt rows, then one row per generated token) as raw little-endian f32.\n"
                "  --image FILE (PNG, JPEG or WebP; up to 8) puts a picture into the prompt, where TEXT\n"
                "  says " PICTURE_MARKER " (one per picture), else before TEXT, for a pack built with a\n"
                "  vision projector (iq3pack build --mmproj).\n"
                DRAFT_HELP DEVICE_HELP);
}

#define RUN_MAX_IMAGES 8

typedef struct run_opts {
    const char *pack, *prompt, *logits_out;
    const char *images[RUN_MAX_IMAGES];
    int n_images;
    long n, threads, seed, ctx;
    kv_type kv;
    sampler_params sp;
    spec_params draft;
    device_opts dev;
} run_opts;

static int parse(run_opts *o, int argc, char **argv)
{
    o->sp = sampler_default_params();
    o->n = 64;
    o->threads = 0;
    o->kv = KV_F16;
    device_opts_default(&o->dev);
    cli_draft_default(&o->draft);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        long l;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 1; }
        if (a[0] != '-') { if (o->pack) return cli_opt_bad("run", a, NULL); o->pack = a; continue; }
        if (!v) return cli_opt_bad("run", a, NULL);
        i++;
        int dr = cli_device_arg("run", &o->dev, a, v);
        if (dr == 0) dr = cli_draft_arg("run", &o->draft, a, v);
        if (dr < 0) return -1;
        if (dr > 0) continue;
        if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { if (cli_opt_int("run", a, v, 0, 1 << 24, &o->n)) return -1; }
        else if (cli_is_threads(a)) { if (cli_opt_int("run", a, v, 0, 1024, &o->threads)) return -1; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) { if (cli_opt_int("run", a, v, 1, 1 << 24, &o->ctx)) return -1; }
        else if (!strcmp(a, "--seed")) { if (cli_opt_int("run", a, v, 0, 0x7fffffffL, &o->seed)) return -1; o->sp.seed = (uint64_t)o->seed; }
        else if (!strcmp(a, "--temp")) { if (cli_opt_float("run", a, v, 0, 100, &d)) return -1; o->sp.temp = (float)d; }
        else if (!strcmp(a, "--top-p")) { if (cli_opt_float("run", a, v, 0, 1, &d)) return -1; o->sp.top_p = (float)d; }
        else if (!strcmp(a, "--min-p")) { if (cli_opt_float("run", a, v, 0, 1, &d)) return -1; o->sp.min_p = (float)d; }
        else if (!strcmp(a, "--top-k")) { if (cli_opt_int("run", a, v, 0, 1 << 24, &l)) return -1; o->sp.top_k = (int)l; }
        else if (!strcmp(a, "--logits-out")) o->logits_out = v;
        else if (!strcmp(a, "--image")) {
            if (o->n_images == RUN_MAX_IMAGES) {
                fprintf(stderr, "strata run: --image: at most %d pictures\n", RUN_MAX_IMAGES);
                return -1;
            }
            o->images[o->n_images++] = v;
        }
        else if (!strcmp(a, "--kv-type")) {
            if (!strcmp(v, "f16")) o->kv = KV_F16;
            else if (!strcmp(v, "f32")) o->kv = KV_F32;
            else return cli_opt_bad("run", a, v);
        } else return cli_opt_bad("run", a, NULL);
    }
    if (!o->pack) { fprintf(stderr, "strata run: no PACK given\n"); return -1; }
    if (!o->prompt) { fprintf(stderr, "strata run: no prompt given (-p TEXT)\n"); return -1; }
    if (o->n_images && (o->logits_out || o->draft.kind != SPEC_NONE)) {
        fprintf(stderr, "strata run: --image takes neither --logits-out nor --draft yet\n");
        return -1;
    }
    return 0;
}

/* The pictures of --image, decoded, and the pack's vision tower: the
 * prompt as text and pictures (picture_prompt.h). -1 with the reason on
 * stderr. */
static int picture_prompt_from(const run_opts *o, cli_model *cm, int threads, picture_prompt *pp)
{
    char err[512];
    char *vpath = loader_vision_path(cm->pack);
    if (!vpath) {
        fprintf(stderr, "strata run: --image: %s holds no vision projector (iq3pack build --mmproj MMPROJ.gguf "
                "makes a pack with one)\n", o->pack);
        return -1;
    }
    image_rgb img[RUN_MAX_IMAGES];
    memset(img, 0, sizeof img);
    const image_limits lim = { IMAGE_DEFAULT_MAX_BYTES, IMAGE_DEFAULT_MAX_PIXELS };
    int rc = 0, n = 0;
    for (; rc == 0 && n < o->n_images; n++) {
        FILE *f = fopen(o->images[n], "rb");
        const char *why = NULL;
        size_t len = 0;
        uint8_t *data = f ? (uint8_t *)cli_read_all(f, &len, &why) : NULL;
        if (f) fclose(f);
        if (!data) {
            fprintf(stderr, "strata run: %s: %s\n", o->images[n], f ? why : strerror(errno));
            rc = -1;
        } else if (image_decode(data, len, &lim, &img[n], err, sizeof err)) {
            fprintf(stderr, "strata run: %s: %s\n", o->images[n], err);
            rc = -1;
        }
        free(data);
    }
    vision_model *v = rc == 0 ? vision_open(vpath, threads, err, sizeof err) : NULL;
    if (rc == 0 && !v) { fprintf(stderr, "strata run: %s\n", err); rc = -1; }
    if (rc == 0 && picture_prompt_make(pp, v, loader_tokenizer(cm->pack), o->prompt, true, img, o->n_images, err,
                                       sizeof err)) {
        fprintf(stderr, "strata run: %s\n", err);
        rc = -1;
    }
    vision_close(v);
    for (int i = 0; i < n; i++) image_free(&img[i]);
    free(vpath);
    return rc;
}

static int write_rows(FILE *fp, const float *rows, size_t n)
{
    return fp && fwrite(rows, sizeof(float), n, fp) != n ? -1 : 0;
}

int cmd_run(int argc, char **argv)
{
    run_opts o;
    memset(&o, 0, sizeof o);
    int pr = parse(&o, argc, argv);
    if (pr > 0) return 0;
    if (pr < 0) { usage(stderr); return 2; }
    cli_model cm;
    if (cli_open_dev(&cm, o.pack, (int)o.threads, o.kv, (int)o.ctx, &o.dev)) return 1;
    const tokenizer *tk = loader_tokenizer(cm.pack);
    const int nv = loader_hparams(cm.pack)->n_vocab;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    float *logits = NULL;
    sampler *s = NULL;
    spec_ctx *sc = NULL;
    FILE *lf = NULL;
    char err[512] = "write failed", piece[256];
    int rc = 1;
    picture_prompt pp = { 0 };
    if (o.n_images) {
        if (picture_prompt_from(&o, &cm, model_n_threads(cm.m), &pp)) goto out;
        for (int i = 0; i < pp.n; i++) n_ids += pp.c[i].n_ids;
        if (!(ids = malloc(n_ids * sizeof *ids))) { fprintf(stderr, "strata: out of memory\n"); goto out; }
        for (int i = 0, k = 0; i < pp.n; k += (int)pp.c[i].n_ids, i++)
            if (pp.c[i].n_ids) memcpy(ids + k, pp.c[i].ids, pp.c[i].n_ids * sizeof *ids);
    } else if (tokenizer_encode(tk, o.prompt, strlen(o.prompt), true, false, &ids, &n_ids) || n_ids == 0) {
        fprintf(stderr, "strata: the prompt gives no tokens\n");
        goto out;
    }
    logits = malloc(n_ids * (size_t)nv * sizeof(float));
    s = sampler_create(&o.sp, nv);
    if (!logits || !s) { fprintf(stderr, "strata: out of memory or bad sampling parameters\n"); goto out; }
    if (o.logits_out && !(lf = fopen(o.logits_out, "wbx"))) {
        fprintf(stderr, "strata: %s: %s\n", o.logits_out, strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < n_ids; i++) sampler_accept(s, ids[i]);
    const int n_ctx = model_n_ctx(cm.m);
    const size_t n_slots = o.n_images ? pp.n_slots : n_ids;
    if (n_slots > (size_t)n_ctx) {
        fprintf(stderr, "strata run: the prompt is %zu tokens%s, longer than the context of %d (-c N sets it)\n",
                n_slots, o.n_images ? " and picture rows" : "", n_ctx);
        goto out;
    }
    /* before the prompt's forward: an mtp draft reads the prompt's rows */
    if (o.draft.kind != SPEC_NONE) {
        if (cli_draft_model("run", &cm, &o.draft)) goto out;
        if (!(sc = spec_create(cm.m, s, &o.draft, ids, (int)n_ids, err, sizeof err))) {
            fprintf(stderr, "strata: %s\n", err);
            goto out;
        }
    }
    const double t0 = cli_now();
    double t_prompt = 0;
    long n_gen = 0;
    if (o.n_images ? picture_prompt_eval(&pp, 0, cm.m, logits, err, sizeof err)
                   : model_forward(cm.m, ids, (int)n_ids, logits, lf != NULL, err, sizeof err) ||
                         write_rows(lf, logits, (lf ? n_ids : 0) * (size_t)nv)) {
        fprintf(stderr, "strata: %s\n", err);
        goto out;
    }
    t_prompt = cli_now() - t0;
    const float *last = lf ? logits + (n_ids - 1) * (size_t)nv : logits;
    int full = 0;
    /* plain decoding: one forward per token, its row written before the
     * next token is drawn from it. With a draft, spec_next hands out each
     * token with the row that produced it: the same rows in the same order. */
    for (long i = 0; i < o.n; i++) {
        int32_t t;
        if (i == 0 || !sc) {
            t = sampler_sample(s, last);
            sampler_accept(s, t);
            if (sc && spec_push(sc, t)) { fprintf(stderr, "strata: out of memory\n"); goto out; }
        } else {
            const float *row;
            const int r = spec_next(sc, &t, &row, err, sizeof err);
            if (r == 1) { full = 1; break; } /* a step was due with the context full */
            if (r < 0) { fprintf(stderr, "\nstrata: %s\n", err); goto out; }
            if (write_rows(lf, row, (size_t)nv)) { fprintf(stderr, "\nstrata: %s: write failed\n", o.logits_out); goto out; }
        }
        if (t == tokenizer_eos(tk)) break;
        int len = tokenizer_piece(tk, t, false, piece, sizeof piece);
        if (len > 0) fwrite(piece, 1, (size_t)len < sizeof piece ? (size_t)len : sizeof piece, stdout);
        fflush(stdout);
        n_gen++;
        if (i + 1 == o.n || sc) continue; /* a draft's steps check the context themselves */
        /* a full context is where generation ends, as at EOS: the text so
         * far is the answer, not a failure */
        if (model_n_past(cm.m) >= n_ctx) { full = 1; break; }
        if (model_forward(cm.m, &t, 1, logits, false, err, sizeof err) || write_rows(lf, logits, (size_t)nv)) {
            fprintf(stderr, "\nstrata: %s\n", err);
            goto out;
        }
        last = logits;
    }
    fputc('\n', stdout);
    fflush(stdout);
    if (full) fprintf(stderr, "strata run: stopped at the end of the context (%d tokens; -c N for a longer one)\n", n_ctx);
    {
        /* the first token comes from the prompt's logits; the rest took one
         * decode step each */
        const double t_gen = cli_now() - t0 - t_prompt;
        fprintf(stderr, "strata run: prompt %zu tokens, %.1f tokens/s; generation %ld tokens, %.1f tokens/s\n", n_slots,
                t_prompt > 0 ? (double)n_slots / t_prompt : 0.0, n_gen,
                n_gen > 1 && t_gen > 0 ? (double)(n_gen - 1) / t_gen : 0.0);
        if (sc) {
            const spec_stats ss = spec_get_stats(sc);
            fprintf(stderr,
                    "strata run: draft %s: %ld of %ld guessed tokens kept (%.1f %%), %.2f tokens a forward pass "
                    "over %ld passes\n",
                    spec_kind_name(o.draft.kind), ss.accepted, ss.drafted, ss.drafted ? 100.0 * (double)ss.accepted / (double)ss.drafted : 0.0,
                    ss.steps ? (double)(ss.steps + ss.accepted) / (double)ss.steps : 0.0, ss.steps);
        }
        if (cm.tier) {
            tier_stats ts;
            tier_get_stats(cm.tier, &ts);
            fprintf(stderr,
                    "strata run: experts: hit rate %.3f (%llu of %llu in memory), %.1f MiB read from experts.bin at "
                    "%.2f GB/s a reading thread, %.2f s waited for reads\n",
                    ts.accesses ? (double)ts.hits / (double)ts.accesses : 0.0, (unsigned long long)ts.hits,
                    (unsigned long long)ts.accesses, (double)ts.bytes_read / 1048576.0,
                    ts.read_seconds > 0 ? (double)ts.bytes_read / ts.read_seconds / 1e9 : 0.0, ts.stall_seconds);
        }
    }
    rc = cli_save_routing(&cm, &o.dev) ? 1 : 0;
out:
    picture_prompt_free(&pp);
    if (lf && fclose(lf) != 0 && rc == 0) { fprintf(stderr, "strata: %s: write failed\n", o.logits_out); rc = 1; }
    spec_free(sc);
    sampler_free(s);
    free(logits);
    free(ids);
    cli_close(&cm);
    return rc;
}
