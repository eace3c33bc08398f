/* version.c: the version string and the build description (version.h),
 * assembled at compile time from the compiler's predefined macros. */
#include "formats/version.h"

#ifndef STRATA_VERSION_STRING
#define STRATA_VERSION_STRING "0.1.0"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

#if defined(__clang__)
#define BUILD_CC "clang " STR(__clang_major__) "." STR(__clang_minor__) "." STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define BUILD_CC "gcc " STR(__GNUC__) "." STR(__GNUC_MINOR__) "." STR(__GNUC_PATCHLEVEL__)
#else
#define BUILD_CC "an unknown C compiler"
#endif

/* The x86 kernels are compiled for their ISA with target attributes and
 * chosen by the CPU's cpuid when a tool starts, whatever -march said. */
#if defined(__x86_64__)
#define BUILD_ISA "x86-64, AVX2/AVX-512 kernels at run time"
#elif defined(__aarch64__)
#define BUILD_ISA "aarch64, portable C kernels"
#else
#define BUILD_ISA "portable C kernels"
#endif

const char *strata_version(void) { return STRATA_VERSION_STRING; }

const char *strata_build_info(void) { return BUILD_CC ", " BUILD_ISA; }
