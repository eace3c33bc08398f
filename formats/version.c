/* version.c: formats/version.h. The build string is fixed at compile time
 * from the compiler's own macros, so it says what built this binary. */
#include "formats/version.h"

#if defined(__clang__)
#define STRATA_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define STRATA_COMPILER "gcc " __VERSION__
#else
#define STRATA_COMPILER "an unknown compiler"
#endif

#if defined(__x86_64__)
#define STRATA_TARGET "x86-64"
#elif defined(__aarch64__)
#define STRATA_TARGET "aarch64"
#else
#define STRATA_TARGET "an unknown target"
#endif

#ifdef STRATA_CUDA
#define STRATA_CUDA_NOTE ", CUDA"
#else
#define STRATA_CUDA_NOTE ""
#endif

const char *strata_version(void) { return "0.1.0"; }

const char *strata_build_info(void) { return STRATA_COMPILER ", " STRATA_TARGET STRATA_CUDA_NOTE; }
