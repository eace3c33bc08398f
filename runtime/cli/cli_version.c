/* cli_version.c: `strata --version` / `strata version`: the release, the
 * build (compiler, target), the CPU kernels this binary holds and the one
 * this CPU runs, and whether the CUDA backend is in this binary (told at
 * run time by the device layer: bin/strata-cuda links the CUDA one, so no
 * compile-time macro of this file could tell). */
#include "runtime/cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "formats/version.h"
#include "runtime/kernels/kernels.h"

int cmd_version(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: strata --version\n  Prints the version, the compiler and target of this build, its CPU\n"
                   "  kernels and whether the CUDA backend is built in.\n");
            return 0;
        }
        cli_opt_bad("version", argv[i], NULL);
        return 2;
    }
    printf("strata %s\n", strata_version());
    printf("build: %s\n", strata_build_info());
    char names[256];
    kernels_names(names, sizeof names);
    printf("CPU kernels: %s (this CPU runs these; the last by default, --cpu-kernels NAME picks one)\n", names);
    printf("CUDA backend: %s\n", device_cuda_built() ? "built in" : "not built (make strata-cuda builds bin/strata-cuda)");
    return 0;
}
