/* logits_cmp.c: compares two --logits-out files (raw f32 rows of n_vocab)
 * for tests/cuda/device_check.sh: every row's largest |a - b| must be within
 * tol x the row's largest |a|. Prints "rows R, worst E (row r)" and exits 0,
 * or 1 on a mismatch, a size difference or an unreadable file.
 *   logits_cmp A.f32 B.f32 N_VOCAB TOL */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *load(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *v = bytes > 0 ? malloc((size_t)bytes) : NULL;
    if (!v || fread(v, 1, (size_t)bytes, f) != (size_t)bytes) { free(v); fclose(f); return NULL; }
    fclose(f);
    *n = bytes / (long)sizeof(float);
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: logits_cmp A.f32 B.f32 N_VOCAB TOL\n"); return 2; }
    long na = 0, nb = 0, nv = atol(argv[3]);
    double tol = atof(argv[4]);
    float *a = load(argv[1], &na), *b = load(argv[2], &nb);
    if (!a || !b || nv <= 0) { printf("cannot read %s or %s\n", argv[1], argv[2]); return 1; }
    if (na != nb || na % nv) { printf("sizes differ: %ld and %ld floats (vocab %ld)\n", na, nb, nv); return 1; }
    double worst = 0;
    long worst_row = 0, bad = 0;
    for (long r = 0; r < na / nv; r++) {
        double mx = 0, d = 0;
        for (long i = 0; i < nv; i++) {
            if (!isfinite(a[r * nv + i]) || !isfinite(b[r * nv + i])) d = INFINITY;
            if (fabs(a[r * nv + i]) > mx) mx = fabs(a[r * nv + i]);
            if (fabs((double)a[r * nv + i] - b[r * nv + i]) > d) d = fabs((double)a[r * nv + i] - b[r * nv + i]);
        }
        double rel = mx > 0 ? d / mx : d;
        if (!(rel <= tol)) bad++;
        if (!(rel <= worst)) { worst = rel; worst_row = r; }
    }
    printf("rows %ld, worst %.3g (row %ld)%s\n", na / nv, worst, worst_row, bad ? ", OVER TOLERANCE" : "");
    free(a);
    free(b);
    return bad ? 1 : 0;
}
