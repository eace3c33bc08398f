#!/bin/sh
# card_figures.sh: the figures models/tiny-moe/README.md quotes, measured with
# strata itself on the shipped files (run from anywhere; needs bin/ built):
# held-out perplexity of the F16 and IQ3 packs (the whole held-out split,
# -c 512), the IQ3 pack's KL divergence and top-1 agreement against F16 on
# the quality test's 48 KB, expert load and locality on the held-out split,
# and sample generations. Writes nothing outside a temporary folder.
#
#   sh tools/train/card_figures.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${STRATA_BIN:-$root/bin}
M=$root/models/tiny-moe
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
"$bin/iq3pack" build "$M/tiny-moe.gguf" -o "$tmp/keep" --experts keep >/dev/null 2>&1
"$bin/iq3pack" build "$M/tiny-moe.gguf" --imatrix "$M/imatrix.gguf" -o "$tmp/iq3" >/dev/null 2>&1
echo "== held-out perplexity (models/tiny-moe/heldout.txt, -c 512, second half of each chunk scored)"
for p in keep iq3; do
    printf '%s: ' "$p"; "$bin/strata" perplexity "$tmp/$p" -f "$M/heldout.txt" -c 512 | grep '^Final'
done
echo "== IQ3 against F16 (first 48 KB of the held-out split, -c 128)"
head -c 49152 "$M/heldout.txt" >"$tmp/h48.txt"
"$bin/strata" perplexity "$tmp/keep" -f "$tmp/h48.txt" -c 128 -t 2 --logits-out "$tmp/base.f32" | grep '^Final'
"$bin/strata" perplexity "$tmp/iq3" -f "$tmp/h48.txt" -c 128 -t 2 --kld-base "$tmp/base.f32" | grep -E '^Final|^Mean'
echo "== routing on the held-out split (F16 pack)"
"$bin/strata" routing "$tmp/keep" -f "$M/heldout.txt"
echo "== routing on the held-out split (IQ3 pack)"
"$bin/strata" routing "$tmp/iq3" -f "$M/heldout.txt"
echo "== samples (IQ3 pack, --temp 0.8 --seed 1, 60 tokens)"
for prompt in "And God said" "The programmer" "Python is" "A dictionary is" "In the beginning"; do
    echo "-- $prompt"
    "$bin/strata" run "$tmp/iq3" -p "$prompt" -n 60 --temp 0.8 --seed 1 2>/dev/null
    echo
done
