/* gguf_inspect.h: `iq3pack info FILE.gguf` and `iq3pack dump FILE.gguf TENSOR
 * -o OUT.f32`, the read-only views of a GGUF source checkpoint.
 *
 * Contract: each command takes argv after the subcommand name (argv[0] is the
 * subcommand), prints its report to out and errors as one line to err, and
 * returns the process exit status (0 ok, 1 bad input, 2 usage). dump writes
 * the tensor dequantized to little-endian f32, bit-exact with ggml, through
 * an atomic never-overwriting output. */
#ifndef STRATA_GGUF_INSPECT_H
#define STRATA_GGUF_INSPECT_H

#include <stdio.h>

int gguf_inspect_info(int argc, char **argv, FILE *out, FILE *err);
int gguf_inspect_dump(int argc, char **argv, FILE *out, FILE *err);

#endif
