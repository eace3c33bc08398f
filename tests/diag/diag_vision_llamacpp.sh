#!/bin/sh
# diag_vision_llamacpp.sh: llama.cpp's answers for the vision towers a test
# writes itself (a diagnostic, not run by CI; needs network access to the
# Debian mirror of this machine's apt sources, see
# tests/diag/diag_llamacpp_env.sh). Runs build/cc/tests/test_qwen3vl_llamacpp
# and build/cc/tests/test_llama4_llamacpp with --write, which write the tower
# (mmproj.gguf), the text models beside it and each picture as raw RGB and
# PNG with a line "NAME W H", then the prompt of the greedy run.
# For each picture, into OUTDIR:
#   TOWER.NAME.embd.f32       the image embeddings of Debian's libmtmd, every
#                             slice's in order
#                             (tests/diag/diag_mtmd_embd.c: flash attention off)
#   TOWER.NAME.greedy.txt     the greedy tokens of the text model (qwen3vlmoe,
#                             llama4) for the prompt with the picture, through
#                             libmtmd's tokenize and eval as llama-mtmd-cli runs
#                             them (tests/diag/diag_mtmd_greedy.c)
#   TOWER.NAME.logits.f32     the logits the first of them was drawn from
#   TOWER.NAME.chat.txt       llama-mtmd-cli's greedy answer (8 tokens) to a user
#                             message "What is this?<__media__>" in chatml (the
#                             template strata serve uses for a pack without one)
#
#   sh tests/diag/diag_vision_llamacpp.sh tests/fixtures/vision [CPU_VARIANT]
set -eu
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
variant=${2:-haswell}
for t in qwen3vl llama4; do
    [ -x "$root/build/cc/tests/test_${t}_llamacpp" ] || { echo "test_${t}_llamacpp: build the tests first (make tests)" >&2; exit 2; }
done
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
llamacpp_fetch_tools
[ -f "$sys/libmtmd.so" ] || { echo "$sys/libmtmd.so: not in the unpacked packages" >&2; exit 1; }
for prog in mtmd_embd mtmd_greedy; do
    if ! [ -x "$deb/$prog" ] || [ "$root/tests/diag/diag_$prog.c" -nt "$deb/$prog" ]; then
        cc -O1 -I"$deb/root/usr/include" "$root/tests/diag/diag_$prog.c" -o "$deb/$prog" -L"$sys" -lmtmd -lllama \
            -lggml -lggml-base -Wl,--allow-shlib-undefined
    fi
done
top=$(mktemp -d); trap 'rm -rf "$top"' EXIT INT TERM
mkdir -p "$out"
backend=$sys/ggml/backends0/libggml-cpu-$variant.so
for tower in qwen3vl llama4; do
work=$top/$tower
mkdir -p "$work"
(cd "$root" && "build/cc/tests/test_${tower}_llamacpp" --write "$work") >"$work/list"
prompt=$(sed -n 's/^prompt //p' "$work/list")
n=$(sed -n 's/^n //p' "$work/list")
grep -v -e '^prompt ' -e '^n ' "$work/list" | while read -r name w h; do
    "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/mtmd_embd" "$backend" \
        "$work/text.gguf" "$work/mmproj.gguf" "$work/$name.rgb" "$w" "$h" "$out/$tower.$name.embd.f32" \
        >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    echo "$tower $name: $(grep '^n_tokens' "$work/$name.log")"
    [ -n "$prompt" ] || continue # a tower with a text model for the greedy run
    DIAG_LOGITS=$out/$tower.$name.logits.f32 "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/mtmd_greedy" \
        "$backend" "$work/text_vl.gguf" "$work/mmproj.gguf" "$work/$name.png" "$prompt" "$n" \
        >"$out/$tower.$name.greedy.txt" 2>"$work/$name.greedy.log" || { cat "$work/$name.greedy.log" >&2; exit 1; }
    grep -e '^text chunk' -e '^picture chunk' "$work/$name.greedy.log"
    echo "$name greedy: $(tr '\n' ' ' <"$out/$tower.$name.greedy.txt")"
    # llama-mtmd-cli prints a newline before the answer and two after it; now and then (0.7.0) it
    # exits with status 0 and prints nothing at all, so it runs until it has printed them
    for try in 1 2 3 4 5 6; do
        llamacpp_tool llama-mtmd-cli -m "$work/text_vl.gguf" --mmproj "$work/mmproj.gguf" --image "$work/$name.png" \
            -p "What is this?<__media__>" --temp 0 -n 8 --no-warmup -t 2 --chat-template chatml \
            >"$work/$name.chat" 2>"$work/$name.chat.log" || { tail -5 "$work/$name.chat.log" >&2; exit 1; }
        [ "$(tail -c 2 "$work/$name.chat" | od -An -c | tr -d ' ')" = '\n\n' ] && break
        [ "$try" = 6 ] && { echo "llama-mtmd-cli printed no answer in 6 runs" >&2; exit 1; }
    done
    tail -c +2 "$work/$name.chat" | head -c -2 >"$out/$tower.$name.chat.txt"
    echo "$name chat: $(od -An -c "$out/$tower.$name.chat.txt" | tr -s ' ')"
done
done
