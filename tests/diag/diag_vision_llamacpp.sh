#!/bin/sh
# diag_vision_llamacpp.sh: llama.cpp's answers for the vision towers a test
# writes itself (a diagnostic, not run by CI; needs network access to the
# Debian mirror of this machine's apt sources, see
# tests/diag/diag_llamacpp_env.sh). Runs build/cc/tests/test_qwen3vl_llamacpp
# --write, which writes the tower (mmproj.gguf), the text models beside it
# and each picture as raw RGB and PNG with a line "NAME W H", then the
# prompt of the greedy run. For each picture, into OUTDIR:
#   qwen3vl.NAME.embd.f32     the image embeddings of Debian's libmtmd
#                             (tests/diag/diag_mtmd_embd.c: flash attention off)
#   qwen3vl.NAME.greedy.txt   the greedy tokens of the qwen3vlmoe text model for
#                             the prompt with the picture, through libmtmd's
#                             tokenize and eval as llama-mtmd-cli runs them
#                             (tests/diag/diag_mtmd_greedy.c)
#   qwen3vl.NAME.logits.f32   the logits the first of them was drawn from
#
#   sh tests/diag/diag_vision_llamacpp.sh tests/fixtures/vision [CPU_VARIANT]
set -eu
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
variant=${2:-haswell}
bin=$root/build/cc/tests/test_qwen3vl_llamacpp
[ -x "$bin" ] || { echo "$bin: build the tests first (make tests)" >&2; exit 2; }
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
[ -f "$sys/libmtmd.so" ] || { echo "$sys/libmtmd.so: not in the unpacked packages" >&2; exit 1; }
for prog in mtmd_embd mtmd_greedy; do
    if ! [ -x "$deb/$prog" ] || [ "$root/tests/diag/diag_$prog.c" -nt "$deb/$prog" ]; then
        cc -O1 -I"$deb/root/usr/include" "$root/tests/diag/diag_$prog.c" -o "$deb/$prog" -L"$sys" -lmtmd -lllama \
            -lggml -lggml-base -Wl,--allow-shlib-undefined
    fi
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$out"
backend=$sys/ggml/backends0/libggml-cpu-$variant.so
(cd "$root" && "$bin" --write "$work") >"$work/list"
prompt=$(sed -n 's/^prompt //p' "$work/list")
n=$(sed -n 's/^n //p' "$work/list")
grep -v -e '^prompt ' -e '^n ' "$work/list" | while read -r name w h; do
    "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/mtmd_embd" "$backend" \
        "$work/text.gguf" "$work/mmproj.gguf" "$work/$name.rgb" "$w" "$h" "$out/qwen3vl.$name.embd.f32" \
        >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    echo "$name: $(grep '^n_tokens' "$work/$name.log")"
    DIAG_LOGITS=$out/qwen3vl.$name.logits.f32 "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/mtmd_greedy" \
        "$backend" "$work/text_vl.gguf" "$work/mmproj.gguf" "$work/$name.png" "$prompt" "$n" \
        >"$out/qwen3vl.$name.greedy.txt" 2>"$work/$name.greedy.log" || { cat "$work/$name.greedy.log" >&2; exit 1; }
    grep -e '^text chunk' -e '^picture chunk' "$work/$name.greedy.log"
    echo "$name greedy: $(tr '\n' ' ' <"$out/qwen3vl.$name.greedy.txt")"
done
