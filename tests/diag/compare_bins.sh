#!/bin/sh
# tests/diag/compare_bins.sh OLD_BIN NEW_BIN [OUT]: by hand, for refactors that
# must not change behaviour. Builds a pack from every model under
# $STRATA_SHARED/models with both sets of tools (IQ3 and kept experts), runs
# packindex, strata info, a greedy `strata run` with --logits-out and a served
# chat answer, and compares every file and output byte for byte. Prints one
# line per comparison and "N identical, N different"; exit 1 on any difference.
set -u
old=${1:?usage: compare_bins.sh OLD_BIN NEW_BIN [OUT]}; new=${2:?usage: compare_bins.sh OLD_BIN NEW_BIN [OUT]}
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${STRATA_SHARED:-$root/../shared}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/strata-compare-XXXXXX")}
mkdir -p "$out/old" "$out/new"
same=0 diff=0
cmpf() { # NAME FILE_OLD FILE_NEW
    if cmp -s "$2" "$3"; then same=$((same + 1)); echo "same  $1"
    else diff=$((diff + 1)); echo "DIFF  $1"; fi
}
models="stories260K/stories260K.gguf tinymoe/tinymoe-f16.gguf tinymoe/tinymoe-q8_0.gguf tinymoe/tinymoe-q4_k.gguf tinymoe/tinymoe-iq3_xxs.gguf archs/qwen2/qwen2-f16.gguf archs/qwen3/qwen3-f16.gguf archs/qwen3moe/qwen3moe-f16.gguf archs/olmoe/olmoe-f16.gguf"
for m in $models; do
    src="$shared/models/$m"; [ -f "$src" ] || { echo "skip  $m (absent)"; continue; }
    for ex in iq3 keep; do
        n=$(basename "$m" .gguf)-$ex
        imat=""; case $m in tinymoe/*) imat="--imatrix $shared/models/tinymoe/tinymoe-imatrix.dat";; esac
        for side in old new; do
            b=$old; [ $side = new ] && b=$new
            # relative paths, so that both sides print the same names
            (cd "$out/$side" && rm -rf "$n" && rm -f "$n".* &&
             "$b/iq3pack" build "$src" -o "$n" --experts $ex $imat >"$n.build" 2>&1
             "$b/packindex" --pack "$n" -o "$n.index" >"$n.packindex" 2>&1
             "$b/strata" info "$n" >"$n.info" 2>&1
             "$b/strata" run "$n" -p "Once upon a time" -n 16 --temp 0 -t 1 --logits-out "$n.logits" 2>/dev/null >"$n.run")
        done
        for f in $(cd "$out/old/$n" 2>/dev/null && ls); do cmpf "$n/$f" "$out/old/$n/$f" "$out/new/$n/$f"; done
        for s in index packindex info run logits; do cmpf "$n.$s" "$out/old/$n.$s" "$out/new/$n.$s"; done
    done
done
# a served answer from each side, on the stories260K pack
for side in old new; do
    b=$old; [ $side = new ] && b=$new
    d="$out/$side/stories260K-keep"; [ -d "$d" ] || continue
    "$b/strata" serve "$d" --port 0 >"$out/$side/serve.out" 2>"$out/$side/serve.err" & pid=$!
    port=""; for i in $(seq 100); do port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$out/$side/serve.out" 2>/dev/null); [ -n "$port" ] && break; sleep 0.1; done
    for i in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break; sleep 0.1; done
    curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
        -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}' | sed 's/"created":[0-9]*//; s/"id":"[^"]*"//' >"$out/$side/served.json"
    curl -s "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
        -d '{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":24,"temperature":0}' | sed 's/"created":[0-9]*//; s/"id":"[^"]*"//' >>"$out/$side/served.json"
    kill $pid; wait $pid 2>/dev/null
done
[ -f "$out/old/served.json" ] && cmpf served.json "$out/old/served.json" "$out/new/served.json"
echo "$same identical, $diff different   (outputs in $out)"
[ $diff -eq 0 ]
