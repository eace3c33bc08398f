#!/bin/sh
# e2e_run.sh: the strata commands on a stories260K pack built by iq3pack:
# `run` streams llama.cpp's greedy continuation of v0 (f32 KV cache, as the
# reference was made), --logits-out writes one f32 row per evaluated
# position, `info`/`check`/`bench`/`perplexity` succeed, and a damaged pack
# gets one clear line and a non-zero exit from `check` and `run`.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
M=${STRATA_SHARED:-../shared}/models/stories260K
[ -f "$M/stories260K.gguf" ] || { echo "SKIP: $M/stories260K.gguf is absent"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-run-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$M/stories260K.gguf" -o "$TMP/p" >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
"$BIN/strata" run "$TMP/p" -p "" -n 32 --temp 0 --kv-type f32 --logits-out "$TMP/l.f32" >"$TMP/out.txt" 2>"$TMP/err.txt" || bad "run: $(cat "$TMP/err.txt")"
# v0.gen.txt is llama.cpp's text for the same 32 greedy tokens.
[ "$(cat "$TMP/out.txt")" = "$(cat "$M/v0.gen.txt")" ] || bad "run: '$(cat "$TMP/out.txt")' is not llama.cpp's '$(cat "$M/v0.gen.txt")'"
# 1 prompt row + 31 decoded rows (the 32nd token is printed, not evaluated), 512 logits each.
[ "$(wc -c <"$TMP/l.f32")" -eq $((32 * 512 * 4)) ] || bad "logits-out: $(wc -c <"$TMP/l.f32") bytes"
for c in run info check perplexity bench; do
    "$BIN/strata" $c --help | grep -q "usage: strata $c" || bad "$c --help"
done
"$BIN/strata" info "$TMP/p" | grep -q "5 layers" || bad "info"
"$BIN/strata" check "$TMP/p" >/dev/null || bad "check of a good pack"
"$BIN/strata" bench "$TMP/p" -p 16 -n 8 -t 2 | grep -q "fraction\|of it" || bad "bench"
"$BIN/strata" perplexity "$TMP/p" -f "$M/v3.gen.txt" -c 8 -t 2 | grep -q "Final estimate: PPL" || bad "perplexity"

printf 'X' | dd of="$TMP/p/embd.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
"$BIN/strata" check "$TMP/p" >/dev/null 2>"$TMP/err.txt" && bad "check accepted a corrupted embd.bin"
[ "$(wc -l <"$TMP/err.txt")" -eq 1 ] && grep -q "embd.bin: crc32" "$TMP/err.txt" || bad "check: $(cat "$TMP/err.txt")"
truncate -s 100 "$TMP/p/embd.bin"
"$BIN/strata" run "$TMP/p" -p hi -n 2 >/dev/null 2>"$TMP/err.txt" && bad "run accepted a truncated embd.bin"
[ "$(wc -l <"$TMP/err.txt")" -eq 1 ] && grep -q "embd.bin: 100 bytes, but the index says" "$TMP/err.txt" || bad "run: $(cat "$TMP/err.txt")"
rm "$TMP/p/index.txt"
"$BIN/strata" run "$TMP/p" -p hi >/dev/null 2>"$TMP/err.txt" && bad "run accepted a pack without index"
grep -q "no index" "$TMP/err.txt" || bad "run without index: $(cat "$TMP/err.txt")"
[ $fails -eq 0 ] || exit 1
echo "strata run/info/check/bench/perplexity: ok"
