#!/bin/sh
# diag_llamacpp.sh: llama.cpp's own logits and intermediate tensors for a
# GGUF and a token file, from Debian's llama.cpp packages (a diagnostic for
# agreement questions, docs/runtime.md "Agreement with llama.cpp"; not run by
# CI, needs network access to deb.debian.org). The packages are unpacked under
# $STRATA_LLAMACPP_DIR (default ~/.cache/strata/llamacpp-deb; no system
# change, and not under build/, whose *.d files the Makefile includes); they
# need a newer libc than the host's, so sid's libc is unpacked too and the
# program runs through its ld.so.
#
#   sh tests/diag_llamacpp.sh MODEL.gguf TOKENS.i32 N_PROMPT OUT.f32 [CPU_VARIANT]
#   DUMP=0 DUMPDIR=/tmp/d sh tests/diag_llamacpp.sh ...   (tensors of the prompt batch)
#
# CPU_VARIANT: haswell (AVX2, default), skylakex, icelake, zen4, x64, sse42...
set -eu
[ $# -ge 4 ] || { sed -n '2,13p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
deb=${STRATA_LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/llamacpp-deb}
sys=$deb/root/usr/lib/x86_64-linux-gnu
if [ ! -x "$deb/dump" ]; then
    mkdir -p "$deb/lists/partial" "$deb/cache/archives/partial" "$deb/debs"
    echo 'deb http://deb.debian.org/debian sid main' > "$deb/sources.list"
    opts="-o Dir::Etc::sourcelist=$deb/sources.list -o Dir::Etc::sourceparts=/dev/null -o Dir::State::Lists=$deb/lists -o Dir::Cache=$deb/cache"
    # shellcheck disable=SC2086
    apt-get $opts update >/dev/null
    # shellcheck disable=SC2086
    (cd "$deb/debs" && apt-get $opts download libllama0 libllama-dev libggml0 libggml-dev libc6 libstdc++6 \
        libgcc-s1 libgomp1 libssl3t64 >/dev/null 2>&1)
    for f in "$deb"/debs/*.deb; do dpkg -x "$f" "$deb/root"; done
    cc -O1 -I"$deb/root/usr/include" "$root/tests/diag_llamacpp_dump.c" -o "$deb/dump" -L"$sys" \
        -lllama -lggml -lggml-base -Wl,--allow-shlib-undefined
fi
variant=${5:-haswell}
exec "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/dump" \
    "$sys/ggml/backends0/libggml-cpu-$variant.so" "$1" "$2" "$3" "$4"
