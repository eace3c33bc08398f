/* grams2imatrix: calibration Grams -> importance-matrix GGUF (placeholder
 * until the converter lands; prints its usage and refuses to run). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: grams2imatrix <calib-dir> -o <out.gguf> [--datasets A,B] [--chunk-size N]\n"
               "                     [--min-rows N] [-v]\n"
               "Folds RADGRAM2 calibration Grams into a llama.cpp-compatible imatrix (GGUF v3).\n"
               "Not implemented in this build yet.\n");
        return 0;
    }
    fprintf(stderr, "grams2imatrix: not implemented in this build yet (see --help)\n");
    return 2;
}
