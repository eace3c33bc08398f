#!/bin/sh
# e2e_run.sh: the strata commands on the shipped model's pack built by
# iq3pack: `run` streams a greedy continuation, the same text twice;
# --logits-out writes one f32 row per evaluated position; `info`/`check`/
# `bench`/`perplexity` succeed; and a damaged pack gets one clear line and a
# non-zero exit from `check` and `run`. With ../shared, the same on a
# stories260K pack against llama.cpp: `run` streams llama.cpp's greedy
# continuation of v0 (f32 KV cache, as the reference was made) and
# `perplexity` gives llama-perplexity's figures for the same text.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
G=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$G" ] || { echo "FAIL: $G is missing (it is part of the repository)"; exit 1; }
VOCAB=1536 # the shipped model's: the floats in a --logits-out row
M=${STRATA_SHARED:-../shared}/models/stories260K
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-run-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$G" -o "$TMP/p" >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
"$BIN/strata" run "$TMP/p" -p "" -n 32 --temp 0 --kv-type f32 --logits-out "$TMP/l.f32" >"$TMP/out.txt" 2>"$TMP/err.txt" || bad "run: $(cat "$TMP/err.txt")"
[ -s "$TMP/out.txt" ] || bad "run printed nothing"
"$BIN/strata" run "$TMP/p" -p "" -n 32 --temp 0 --kv-type f32 >"$TMP/again.txt" 2>/dev/null || bad "run again"
cmp -s "$TMP/out.txt" "$TMP/again.txt" || bad "greedy runs differ: '$(cat "$TMP/out.txt")' then '$(cat "$TMP/again.txt")'"
# one row per evaluated position: the prompt's, then each generated token's but the last
# (printed, not evaluated); 32 rows when the run ended by -n
gen=$(sed -n 's/.*; generation \([0-9]*\) tokens.*/\1/p' "$TMP/err.txt")
size=$(wc -c <"$TMP/l.f32")
[ $((size % (VOCAB * 4))) -eq 0 ] && [ "$size" -gt 0 ] || bad "logits-out: $size bytes, not rows of $VOCAB floats"
[ "$gen" != 32 ] || [ "$size" -eq $((32 * VOCAB * 4)) ] || bad "logits-out: $size bytes for 32 generated tokens"
for c in run info check perplexity bench; do
    "$BIN/strata" $c --help | grep -q "usage: strata $c" || bad "$c --help"
done
# --cpu-kernels: each kernel table this CPU runs (`strata --version` lists them) gives the
# default's logits bit for bit, the scalar reference the same greedy text; a name it does not
# run is refused with the list
tables=$("$BIN/strata" --version | sed -n 's/^CPU kernels: \(.*\) (this CPU runs these.*/\1/p' | tr -d ',')
[ -n "$tables" ] || bad "--version lists no kernel tables"
"$BIN/strata" run "$TMP/p" -p "Once upon a time" -n 12 --temp 0 --logits-out "$TMP/k.f32" >"$TMP/k.txt" 2>/dev/null || bad "run for --cpu-kernels"
for k in $tables; do
    "$BIN/strata" run "$TMP/p" -p "Once upon a time" -n 12 --temp 0 --cpu-kernels "$k" --logits-out "$TMP/k.$k.f32" \
        >"$TMP/k.$k.txt" 2>"$TMP/err.txt" || bad "run --cpu-kernels $k: $(cat "$TMP/err.txt")"
    cmp -s "$TMP/k.txt" "$TMP/k.$k.txt" || bad "--cpu-kernels $k: '$(cat "$TMP/k.$k.txt")', default '$(cat "$TMP/k.txt")'"
    [ "$k" = scalar ] || cmp -s "$TMP/k.f32" "$TMP/k.$k.f32" || bad "--cpu-kernels $k: other logits than the default's"
done
"$BIN/strata" bench "$TMP/p" -p 4 -n 4 -r 1 --cpu-kernels scalar 2>/dev/null | grep -q "^kernels scalar$" ||
    bad "bench --cpu-kernels scalar does not say it ran the scalar kernels"
"$BIN/strata" run "$TMP/p" -p hi -n 1 --cpu-kernels sse9 >/dev/null 2>"$TMP/err.txt" && bad "--cpu-kernels sse9 accepted"
grep -q "cpu-kernels: 'sse9' is not a kernel table this CPU runs (it runs: scalar" "$TMP/err.txt" || bad "--cpu-kernels sse9: $(head -n 1 "$TMP/err.txt")"
"$BIN/strata" info "$TMP/p" >"$TMP/info" || bad "info: exit $?"
grep -q "arch glm4moe, 4 layers" "$TMP/info" || bad "info: $(cat "$TMP/info")"
grep -q "^  chat template: .*; tool calls: " "$TMP/info" || bad "info: no chat template line: $(cat "$TMP/info")"
"$BIN/strata" check "$TMP/p" >/dev/null || bad "check of a good pack"
"$BIN/strata" bench "$TMP/p" -p 16 -n 8 -t 2 | grep -q "fraction\|of it" || bad "bench"
i=0; while [ $i -lt 8 ]; do
    echo "In the beginning God created the heaven and the earth. And the earth was without form, and void."
    i=$((i + 1))
done >"$TMP/text.txt"
"$BIN/strata" perplexity "$TMP/p" -f "$TMP/text.txt" -c 16 -t 2 >"$TMP/ppl.out" 2>"$TMP/err.txt" || bad "perplexity: $(cat "$TMP/err.txt")"
grep -q "Final estimate: PPL = [0-9.]* over [0-9]* tokens ([0-9]* chunks of 16)" "$TMP/ppl.out" || bad "perplexity: $(tail -n 1 "$TMP/ppl.out")"

printf 'X' | dd of="$TMP/p/embd.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
"$BIN/strata" check "$TMP/p" >/dev/null 2>"$TMP/err.txt" && bad "check accepted a corrupted embd.bin"
[ "$(wc -l <"$TMP/err.txt")" -eq 1 ] && grep -q "embd.bin: crc32" "$TMP/err.txt" || bad "check: $(cat "$TMP/err.txt")"
truncate -s 100 "$TMP/p/embd.bin"
"$BIN/strata" run "$TMP/p" -p hi -n 2 >/dev/null 2>"$TMP/err.txt" && bad "run accepted a truncated embd.bin"
[ "$(wc -l <"$TMP/err.txt")" -eq 1 ] && grep -q "embd.bin: 100 bytes, but the index says" "$TMP/err.txt" || bad "run: $(cat "$TMP/err.txt")"
rm "$TMP/p/index.txt"
"$BIN/strata" run "$TMP/p" -p hi >/dev/null 2>"$TMP/err.txt" && bad "run accepted a pack without index"
grep -q "no index" "$TMP/err.txt" || bad "run without index: $(cat "$TMP/err.txt")"

# against llama.cpp, on stories260K
if [ -f "$M/stories260K.gguf" ]; then
    "$BIN/iq3pack" build "$M/stories260K.gguf" -o "$TMP/s" >/dev/null 2>&1 || { echo "FAIL: build stories260K"; exit 1; }
    "$BIN/strata" run "$TMP/s" -p "" -n 32 --temp 0 --kv-type f32 --logits-out "$TMP/ls.f32" >"$TMP/out.txt" 2>"$TMP/err.txt" ||
        bad "run: $(cat "$TMP/err.txt")"
    # v0.gen.txt is llama.cpp's text for the same 32 greedy tokens.
    [ "$(cat "$TMP/out.txt")" = "$(cat "$M/v0.gen.txt")" ] || bad "run: '$(cat "$TMP/out.txt")' is not llama.cpp's '$(cat "$M/v0.gen.txt")'"
    # 1 prompt row + 31 decoded rows (the 32nd token is printed, not evaluated), 512 logits each.
    [ "$(wc -c <"$TMP/ls.f32")" -eq $((32 * 512 * 4)) ] || bad "logits-out: $(wc -c <"$TMP/ls.f32") bytes"
    "$BIN/strata" info "$TMP/s" | grep -q "5 layers" || bad "info"
    "$BIN/strata" info "$TMP/s" | grep -q "chat template: none (serve falls back to chatml); tool calls: none" || bad "info: chat template"
    "$BIN/strata" perplexity "$TMP/s" -f "$M/v3.gen.txt" -c 8 -t 2 | grep -q "Final estimate: PPL" || bad "perplexity"
    # llama-perplexity's own figures (Debian's llama.cpp 0.7.0, -c 64 -b 64 -fa off
    # -ctk f32 -ctv f32) for the v0..v3 prompts then generations, four times over:
    # the same chunks and scores to the 4 printed decimals.
    for i in 1 2 3 4; do cat "$M"/v[0-3].prompt.txt "$M"/v[0-3].gen.txt; done >"$TMP/ppl.txt"
    "$BIN/strata" perplexity "$TMP/s" -f "$TMP/ppl.txt" -c 64 -t 2 --kv-type f32 >"$TMP/ppl.out" 2>"$TMP/err.txt" ||
        bad "perplexity: $(cat "$TMP/err.txt")"
    want='[1] 5.7326 [2] 4.1095 [3] 6.1430 [4] 5.2094 [5] 4.9347 [6] 5.8167 [7] 5.1375 [8] 5.0000 [9] 5.4947 [10] 4.9300 [11] 4.9134'
    got=$(grep '^\[' "$TMP/ppl.out" | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ] || bad "perplexity chunks: '$got', llama-perplexity: '$want'"
    grep -q "Final estimate: PPL = 4.9134 over 341 tokens (11 chunks of 64)" "$TMP/ppl.out" || bad "perplexity: $(tail -n 1 "$TMP/ppl.out")"
    ref="stories260K against llama.cpp"
else
    echo "SKIP (part): $M/stories260K.gguf is absent: llama.cpp's greedy text and perplexity figures not compared"
    ref="llama.cpp's figures not compared"
fi
[ $fails -eq 0 ] || exit 1
echo "strata run/info/check/bench/perplexity: ok ($ref)"
