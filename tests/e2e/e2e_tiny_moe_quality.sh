#!/bin/sh
# e2e_tiny_moe_quality.sh: the IQ3 encoder's quality on a trained model, as a
# regression bound. The shipped model (models/tiny-moe/tiny-moe.gguf) is built
# twice: routed experts kept in F16 (the reference) and in IQ3 weighted by the
# shipped importance matrix (models/tiny-moe/imatrix.gguf, from the
# calibration split). Both score the first 48 KB of the held-out split
# (models/tiny-moe/heldout.txt, never part of a calibration) with
# `strata perplexity -c 128`; the IQ3 pack's mean KL divergence from the F16
# pack and its top-1 agreement must stay within the bounds below, set from
# what the encoder measured when the model was shipped (models/tiny-moe/README.md:
# mean KLD 0.00440, top-1 95.71 %) with a small margin: a worse encoder fails
# here, as the same encoder without the importance matrix does (0.00505,
# 95.06 %: over both bounds).
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
top=$(cd "$(dirname "$0")/../.." && pwd)
M=$top/models/tiny-moe
MAX_KLD=0.0050
MIN_TOP1=95.3
for f in tiny-moe.gguf imatrix.gguf heldout.txt; do
    [ -f "$M/$f" ] || { echo "FAIL: $M/$f is missing (it is part of the repository)"; exit 1; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-tiny-moe-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
head -c 49152 "$M/heldout.txt" >"$TMP/heldout.txt"
"$BIN/iq3pack" build "$M/tiny-moe.gguf" -o "$TMP/keep" --experts keep --threads 2 >"$TMP/log" 2>&1 || { echo "FAIL: keep build"; cat "$TMP/log"; exit 1; }
"$BIN/iq3pack" build "$M/tiny-moe.gguf" --imatrix "$M/imatrix.gguf" -o "$TMP/iq3" --threads 2 >"$TMP/log" 2>&1 || { echo "FAIL: IQ3 build"; cat "$TMP/log"; exit 1; }
"$BIN/strata" perplexity "$TMP/keep" -f "$TMP/heldout.txt" -c 128 -t 2 --logits-out "$TMP/base.f32" >"$TMP/keep.out" 2>"$TMP/err" \
    || { echo "FAIL: perplexity of the F16 pack: $(cat "$TMP/err")"; exit 1; }
"$BIN/strata" perplexity "$TMP/iq3" -f "$TMP/heldout.txt" -c 128 -t 2 --kld-base "$TMP/base.f32" >"$TMP/iq3.out" 2>"$TMP/err" \
    || { echo "FAIL: perplexity of the IQ3 pack: $(cat "$TMP/err")"; exit 1; }
ppl16=$(sed -n 's/^Final estimate: PPL = \([0-9.]*\) .*/\1/p' "$TMP/keep.out")
ppl3=$(sed -n 's/^Final estimate: PPL = \([0-9.]*\) .*/\1/p' "$TMP/iq3.out")
kld=$(sed -n 's/^Mean KLD: \([0-9.]*\) .*/\1/p' "$TMP/iq3.out")
top1=$(sed -n 's/.*Same top: \([0-9.]*\) %.*/\1/p' "$TMP/iq3.out")
[ -n "$kld" ] && [ -n "$top1" ] && [ -n "$ppl16" ] && [ -n "$ppl3" ] || { echo "FAIL: no figures:"; cat "$TMP/keep.out" "$TMP/iq3.out"; exit 1; }
echo "held-out (48 KB, -c 128): PPL F16 $ppl16, IQ3 $ppl3; IQ3 against F16: mean KLD $kld (at most $MAX_KLD), top-1 $top1 % (at least $MIN_TOP1 %)"
awk -v k="$kld" -v mk="$MAX_KLD" -v t="$top1" -v mt="$MIN_TOP1" 'BEGIN { exit !(k <= mk && t >= mt) }' \
    || { echo "FAIL: the IQ3 encoder got worse on the shipped model"; exit 1; }
