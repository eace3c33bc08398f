#!/bin/sh
# diag_vision_llamacpp.sh: llama.cpp's image embeddings for the vision
# towers a test writes itself (a diagnostic, not run by CI; needs network
# access to the Debian mirror of this machine's apt sources, see
# tests/diag/diag_llamacpp_env.sh). Runs build/cc/tests/test_qwen3vl_llamacpp
# --write, which writes the tower (mmproj.gguf), a text model for mtmd to
# load it beside, and each picture as raw RGB with a line "NAME W H"; runs
# Debian's libmtmd on each picture (tests/diag/diag_mtmd_embd.c: flash
# attention off) and puts the embeddings in OUTDIR as qwen3vl.NAME.embd.f32.
#
#   sh tests/diag/diag_vision_llamacpp.sh tests/fixtures/vision [CPU_VARIANT]
set -eu
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
variant=${2:-haswell}
bin=$root/build/cc/tests/test_qwen3vl_llamacpp
[ -x "$bin" ] || { echo "$bin: build the tests first (make tests)" >&2; exit 2; }
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
[ -f "$sys/libmtmd.so" ] || { echo "$sys/libmtmd.so: not in the unpacked packages" >&2; exit 1; }
if ! [ -x "$deb/mtmd_embd" ] || [ "$root/tests/diag/diag_mtmd_embd.c" -nt "$deb/mtmd_embd" ]; then
    cc -O1 -I"$deb/root/usr/include" "$root/tests/diag/diag_mtmd_embd.c" -o "$deb/mtmd_embd" -L"$sys" -lmtmd -lllama \
        -lggml -lggml-base -Wl,--allow-shlib-undefined
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$out"
(cd "$root" && "$bin" --write "$work") | while read -r name w h; do
    "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/mtmd_embd" "$sys/ggml/backends0/libggml-cpu-$variant.so" \
        "$work/text.gguf" "$work/mmproj.gguf" "$work/$name.rgb" "$w" "$h" "$out/qwen3vl.$name.embd.f32" \
        >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    echo "$name: $(grep '^n_tokens' "$work/$name.log")"
done
