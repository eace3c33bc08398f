/* version.h: the one place the tools' version and build description live,
 * for every tool's --version (iq3pack, packindex, grams2imatrix, strata).
 *
 * Contract: strata_version() is the release string ("0.1.0"; a build may
 * set it with -DSTRATA_VERSION_STRING="..."). strata_build_info() describes
 * this build from the compiler's own macros: compiler and version, the
 * instruction set, and which kernels the CPU code picks at run time, e.g.
 * "gcc 12.2.0, x86-64, AVX2/AVX-512 kernels at run time". It says nothing
 * about CUDA: this library is the same in bin/strata and bin/strata-cuda,
 * so a tool that has (or lacks) a GPU backend says so itself. Both return
 * string constants (no state, safe from any thread). */
#ifndef STRATA_VERSION_H
#define STRATA_VERSION_H

const char *strata_version(void);
const char *strata_build_info(void);

#endif
