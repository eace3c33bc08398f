#!/bin/sh
# diag_llamacpp.sh: llama.cpp's own logits and intermediate tensors for a
# GGUF and a token file, from Debian's llama.cpp packages (a diagnostic for
# agreement questions, docs/runtime.md "Agreement with llama.cpp"; not run by
# CI, needs network access to the Debian mirror of this machine's apt
# sources; the packages: see tests/diag/diag_llamacpp_env.sh).
#
#   sh tests/diag/diag_llamacpp.sh MODEL.gguf TOKENS.i32 N_PROMPT OUT.f32 [CPU_VARIANT]
#   DUMP=0 DUMPDIR=/tmp/d sh tests/diag/diag_llamacpp.sh ...   (tensors of the prompt batch)
#
# CPU_VARIANT: haswell (AVX2, default), skylakex, icelake, zen4, x64, sse42...
set -eu
[ $# -ge 4 ] || { sed -n '2,11p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
llamacpp_build "$root/tests/diag/diag_llamacpp_dump.c" dump
variant=${5:-haswell}
exec "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/dump" \
    "$sys/ggml/backends0/libggml-cpu-$variant.so" "$1" "$2" "$3" "$4"
