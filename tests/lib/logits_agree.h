/* logits_agree.h: how closely one run's logits follow another's (an IQ3
 * pack's against its F32-expert pack's, in the architecture tests): over
 * rows of vocab logits, the mean KL divergence of the second's softmax from
 * the first's, how many rows pick the same first token, how many of the
 * first's rows have their top two logits more than margin apart, and how
 * many of those pick the same. iq3_against_keep() builds the keep pack
 * (sc->pack) and the IQ3 pack (sc->dir/iq3) of sc->gguf and holds the IQ3
 * pack's logits over s against the keep pack's; iq3_agreement_holds()
 * prints what it found and asserts the bounds (KL below kl_max, at least
 * same_min rows alike, at least an eighth of the rows past the margin, all
 * of those alike). */
#ifndef STRATA_TEST_LOGITS_AGREE_H
#define STRATA_TEST_LOGITS_AGREE_H

#include <math.h>
#include <stddef.h>

#include "tests/lib/llamacpp_fixture.h"

typedef struct logits_agreement {
    double kl;
    int same, sure, sure_same;
} logits_agreement;

static inline logits_agreement logits_agree(const float *ref, const float *out, int rows, int vocab, float margin)
{
    logits_agreement a = { 0, 0, 0, 0 };
    for (int r = 0; r < rows; r++) {
        const float *p = ref + (size_t)r * vocab, *o = out + (size_t)r * vocab;
        double mp = -INFINITY, mo = -INFINITY, zp = 0, zo = 0, second = -INFINITY;
        int ap = 0, ao = 0;
        for (int i = 0; i < vocab; i++) {
            if (p[i] > mp) { mp = p[i]; ap = i; }
            if (o[i] > mo) { mo = o[i]; ao = i; }
        }
        for (int i = 0; i < vocab; i++) if (i != ap && p[i] > second) second = p[i];
        for (int i = 0; i < vocab; i++) { zp += exp(p[i] - mp); zo += exp(o[i] - mo); }
        for (int i = 0; i < vocab; i++) {
            const double lp = p[i] - mp - log(zp), lo = o[i] - mo - log(zo);
            a.kl += exp(lp) * (lp - lo);
        }
        a.same += ap == ao;
        if (mp - second > margin) { a.sure++; a.sure_same += ap == ao; }
    }
    a.kl /= rows;
    return a;
}

static inline logits_agreement iq3_against_keep(const scratch *sc, const seq *s, float margin)
{
    char iq3[700];
    build_pack(sc->gguf, sc->pack);
    snprintf(iq3, sizeof iq3, "%s/iq3", sc->dir);
    char *argv[] = { "build", (char *)sc->gguf, "-o", iq3, "--threads", "2", NULL };
    assert_int_equal(run_quiet(iq3pack_cmd_build, 6, argv), 0);
    float *keep = run_pack(sc->pack, s), *q = run_pack(iq3, s);
    const logits_agreement g = logits_agree(keep, q, s->n_rows, s->n_vocab, margin);
    free(keep);
    free(q);
    return g;
}

static inline void iq3_agreement_holds(const char *name, logits_agreement g, int rows, float margin, double kl_max,
                                       int same_min)
{
    printf("%s, wide, IQ3 experts against F32 ones: mean KL %.5f, top-1 %d of %d; %d of %d positions with a "
           "margin over %.2f agree\n", name, g.kl, g.same, rows, g.sure_same, g.sure, (double)margin);
    assert_true(g.kl < kl_max);
    assert_true(g.same >= same_min);
    assert_true(g.sure >= rows / 8); /* the check is not empty */
    assert_int_equal(g.sure_same, g.sure);
}

#endif
