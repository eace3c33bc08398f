/* diag_iq3_diverge.c: a diagnostic (not a cmocka suite, not built by make):
 * why the tinymoe-iq3_xxs pack parts from llama.cpp's logits on v0/v2/v3.
 * Runs a pack through the loader on the reference tokens (prompt as one
 * batch, then one token at a time, as llama.cpp did), finds each prompt's
 * first row off by more than 1e-5 of max|logit|, and for every row prints per
 * layer the router's sorted probabilities (2nd-3rd margin) and the Q8
 * activations that sit within 1 ulp of a rounding boundary, plus the rows
 * where ggml's AVX2 quantize_row_q8_0 (id = 127/max, round half to even)
 * would give other codes than the reference quantizer we follow. Also runs
 * the same sequence token by token (n_batch 1) and compares.
 * Build (mm_mul is wrapped to see the router logits and the activations):
 *   make tests && cc -std=c11 -D_DEFAULT_SOURCE -O2 -I. tests/diag_iq3_diverge.c \
 *     build/cc/lib{runtime,pack,convert,formats}.a -Wl,--wrap=mm_mul -lcmocka -lopenblas \
 *     $(pkg-config --libs zlib libcurl libmicrohttpd jansson libpcre2-8) -lm -pthread -o /tmp/diag
 * Run: STRATA_SHARED=../shared /tmp/diag PACK */
#include "tests/ref_seq.h"

#include "runtime/loader.h"
#include "runtime/model_impl.h"

#include <math.h>

void __real_mm_mul(mm_ctx *c, const weight *w, const float *X, int B, float *Y);

#define MAXROW 64
#define NL 3 /* layers 0, 1, then the output matrix */
static model *g_m;
static float g_rlog[MAXROW][NL][8];
static int g_qnear[MAXROW][NL];  /* Q8 activations within 1 ulp of a .5 boundary */
static int g_q0diff[MAXROW][NL]; /* codes where ggml-AVX2 Q8_0 differs from the _ref quantizer */
static double g_qmin[MAXROW][NL];

static int layer_of(const weight *w)
{
    for (int l = 0; l < g_m->hp.n_layer; l++) {
        const layer_weights *L = &g_m->w.layers[l];
        if (w >= &L->exp_gate[0] && w < &L->exp_gate[8]) return l;
        if (w >= &L->exp_up[0] && w < &L->exp_up[8]) return l;
        if (w >= &L->exp_down[0] && w < &L->exp_down[8]) return l;
        if (w == &L->wq || w == &L->wk || w == &L->wv || w == &L->wo || w == &L->router) return l;
    }
    return w == &g_m->w.output ? NL - 1 : -1;
}

static void scan_row(const float *x, int64_t n, int act, int pos, int l)
{
    if (pos >= MAXROW || l < 0) return;
    int blk = act == WA_Q8_0 ? 32 : 256;
    for (int64_t b = 0; b < n / blk; b++) {
        const float *xb = x + b * blk;
        float amax = 0, max = 0;
        for (int j = 0; j < blk; j++) if (fabsf(xb[j]) > amax) { amax = fabsf(xb[j]); max = xb[j]; }
        if (amax == 0) continue;
        float s = act == WA_Q8_0 ? 1.0f / (amax / 127.0f) : -127.0f / max;
        float s2 = 127.0f / amax; /* ggml AVX2 q8_0 */
        for (int j = 0; j < blk; j++) {
            float v = s * xb[j];
            float fr = fabsf(v - floorf(v) - 0.5f);
            float ulp = nextafterf(fabsf(v), INFINITY) - fabsf(v);
            if (fr < g_qmin[pos][l] || g_qmin[pos][l] == 0) g_qmin[pos][l] = fr;
            if (fr <= ulp) g_qnear[pos][l]++;
            if (act == WA_Q8_0) {
                float a = roundf(v), c = nearbyintf(s2 * xb[j]); /* default FE_TONEAREST: half even */
                if (a != c) g_q0diff[pos][l]++;
            }
        }
    }
}

void __wrap_mm_mul(mm_ctx *c, const weight *w, const float *X, int B, float *Y)
{
    __real_mm_mul(c, w, X, B, Y);
    if (!g_m) return;
    int l = layer_of(w);
    for (int b = 0; b < B; b++) {
        int pos = g_m->n_past + b;
        if (pos >= MAXROW || l < 0) continue;
        if (w == &g_m->w.layers[l].router) memcpy(g_rlog[pos][l], Y + (size_t)b * 8, 8 * sizeof(float));
        if (w->act == WA_Q8_0 || w->act == WA_Q8_K) scan_row(X + (size_t)b * w->cols, w->cols, w->act, pos, l);
    }
}

static double row_rel(const float *a, const float *b, int n)
{
    double mx = 0, d = 0;
    for (int i = 0; i < n; i++) { if (fabs(b[i]) > mx) mx = fabs(b[i]); if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]); }
    return d / mx;
}

static float *run_batch(model *m, const seq *s, int n_batch)
{
    char err[256];
    m->opt.n_batch = n_batch;
    float *out = malloc((size_t)s->n_rows * s->n_vocab * sizeof(float));
    model_rewind(m, 0);
    if (n_batch >= s->n_prompt) {
        if (model_forward(m, s->tok, s->n_prompt, out, true, err, sizeof err)) { puts(err); exit(1); }
    } else
        for (int r = 0; r < s->n_prompt; r++)
            if (model_forward(m, s->tok + r, 1, out + (size_t)r * s->n_vocab, true, err, sizeof err)) { puts(err); exit(1); }
    for (int r = s->n_prompt; r < s->n_rows; r++)
        if (model_forward(m, s->tok + r, 1, out + (size_t)r * s->n_vocab, false, err, sizeof err)) { puts(err); exit(1); }
    return out;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    char err[512];
    loaded_pack *lp = loader_open(argv[1], err, sizeof err);
    if (!lp) { puts(err); return 1; }
    model_options o = model_default_options();
    o.kv = KV_F32;
    o.n_threads = 2;
    if (getenv("DIAG_SCALAR")) o.simd = 0;
    model *m = model_create(loader_hparams(lp), loader_weights(lp), &o, err, sizeof err);
    if (!m) { puts(err); return 1; }
    for (int v = 0; v < 4; v++) {
        char id[8];
        snprintf(id, sizeof id, "v%d", v);
        seq s;
        if (seq_load(&s, "models/tinymoe", "models/tinymoe/logits/iq3_xxs", id)) { puts("no seq"); return 1; }
        memset(g_rlog, 0, sizeof g_rlog); memset(g_qnear, 0, sizeof g_qnear);
        memset(g_q0diff, 0, sizeof g_q0diff); memset(g_qmin, 0, sizeof g_qmin);
        g_m = m;
        float *ob = run_batch(m, &s, 64);
        g_m = NULL;
        float *ot = run_batch(m, &s, 1);
        int first = -1;
        double bt = 0;
        for (int r = 0; r < s.n_rows; r++) {
            double e = row_rel(ob + (size_t)r * s.n_vocab, s.ref + (size_t)r * s.n_vocab, s.n_vocab);
            double d = row_rel(ot + (size_t)r * s.n_vocab, ob + (size_t)r * s.n_vocab, s.n_vocab);
            if (d > bt) bt = d;
            if (first < 0 && e > 1e-5) first = r;
            printf("%s row %2d%s rel %.2e  tokbytok-vs-batch %.1e |", id, r, r < s.n_prompt ? "p" : " ", e, d);
            for (int l = 0; l < NL; l++) {
                if (l == NL - 1) { printf(" out q8near %d minfr %.1e", g_qnear[r][l], g_qmin[r][l]); break; }
                float p[8], mx = -INFINITY; double sum = 0;
                for (int e2 = 0; e2 < 8; e2++) mx = fmaxf(mx, g_rlog[r][l][e2]);
                for (int e2 = 0; e2 < 8; e2++) { p[e2] = expf(g_rlog[r][l][e2] - mx); sum += p[e2]; }
                int ix[8];
                for (int e2 = 0; e2 < 8; e2++) { p[e2] = (float)(p[e2] / sum); ix[e2] = e2; }
                for (int a = 0; a < 8; a++) for (int b = a + 1; b < 8; b++) if (p[ix[b]] > p[ix[a]]) { int t = ix[a]; ix[a] = ix[b]; ix[b] = t; }
                printf(" L%d top %d %d|%d p2-p3 %.2e (%.4f %.4f %.4f) q8near %d q0diff %d minfr %.1e |", l, ix[0], ix[1], ix[2],
                       p[ix[1]] - p[ix[2]], p[ix[0]], p[ix[1]], p[ix[2]], g_qnear[r][l], g_q0diff[r][l], g_qmin[r][l]);
            }
            printf("\n");
        }
        printf("%s: first row off by >1e-5: %d; ours token-by-token vs batch max rel %.2e\n", id, first, bt);
        free(ob); free(ot); seq_free(&s);
    }
    model_free(m);
    loader_close(lp);
    return 0;
}
