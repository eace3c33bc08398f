#!/bin/sh
# e2e_kld_llamacpp.sh: `strata perplexity --kld-base` on a base file written
# by llama.cpp itself. tests/fixtures/llamacpp-tinymoe-f32-c16.kld is what
# Debian's llama.cpp 0.7.0 wrote for the F32 tinymoe:
#   llama-perplexity -m tinymoe-f32.gguf -f TEXT -c 16 -b 16 --chunks 4 -fa off \
#       -ctk f32 -ctv f32 -t 2 --kl-divergence-base llamacpp-tinymoe-f32-c16.kld
# (TEXT: the stories260K v0..v3 prompts then generations, four times over),
# and `llama-perplexity -m tinymoe-q4_k.gguf ... --kl-divergence` against it
# printed, after the 4th chunk, KL divergence 0.16261 and same top 57.143 %.
# The q4_k file's --experts keep pack gives llama.cpp's logits bit for bit
# (tests/unit/model/test_loader.c), so its scores against the same base must print
# the same figures; the file's own tokens are used (no -f). Damaged or
# mismatched base files are refused with one line.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
M=${STRATA_SHARED:-../shared}/models/tinymoe
K=$(cd "$(dirname "$0")/.." && pwd)/fixtures/llamacpp-tinymoe-f32-c16.kld
[ -f "$M/tinymoe-q4_k.gguf" ] || { echo "SKIP: $M/tinymoe-q4_k.gguf is absent"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-kld-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$M/tinymoe-q4_k.gguf" -o "$TMP/p" --experts keep >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
"$BIN/strata" perplexity "$TMP/p" --kld-base "$K" --kv-type f32 -t 2 >"$TMP/out" 2>"$TMP/err" || bad "perplexity: $(cat "$TMP/err")"
grep -q "^Mean KLD: 0\.16261[0-9]*   Same top: 57\.143 %$" "$TMP/out" || bad "KLD against llama.cpp's base: $(tail -n 1 "$TMP/out"), llama.cpp printed 0.16261 / 57.143 %"
grep -q "over 28 tokens (4 chunks of 16)" "$TMP/out" || bad "chunks: $(grep Final "$TMP/out")"

# -c other than the file's, a cut file, a wrong header: one line, exit 1
"$BIN/strata" perplexity "$TMP/p" --kld-base "$K" -c 32 >/dev/null 2>"$TMP/err" && bad "-c 32 accepted against a -c 16 base"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "made with -c 16" "$TMP/err" || bad "-c mismatch: $(cat "$TMP/err")"
head -c 20000 "$K" >"$TMP/cut.kld"
"$BIN/strata" perplexity "$TMP/p" --kld-base "$TMP/cut.kld" >/dev/null 2>"$TMP/err" && bad "a cut base file accepted"
grep -q "cut.kld: 20000 bytes, but n_ctx 16, n_vocab 512 and 4 chunks make 29172" "$TMP/err" || bad "cut file: $(cat "$TMP/err")"
{ printf '_logits_'; head -c 12 /dev/zero; } >"$TMP/zero.kld"
"$BIN/strata" perplexity "$TMP/p" --kld-base "$TMP/zero.kld" >/dev/null 2>"$TMP/err" && bad "a zero header accepted"
grep -q "not plausible" "$TMP/err" || bad "zero header: $(cat "$TMP/err")"
[ $fails -eq 0 ] || exit 1
echo "strata perplexity --kld-base on llama.cpp's base file: llama.cpp's KLD and top-1 figures"
