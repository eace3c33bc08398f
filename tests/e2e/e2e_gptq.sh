#!/bin/sh
# e2e_gptq.sh: `iq3pack build --grams` (GPTQ from a `strata calibrate`
# recording) on the shipped model. Recorded on the head of its calibration
# split; then, on the head of its held-out split, the GPTQ pack's KL
# divergence from the model with its F16 experts kept must be below that of
# the pack built with the imatrix alone, and its top-1 agreement higher
# (docs/iq3.md has the whole-split figures). The build says how many expert
# slices took GPTQ. Built in 2 shards with --grams and merged: the same
# bytes; a shard built with another recording, or without one, refused by
# the merge. The refusals: --grams with --experts keep, a path that is not
# a folder; a gram of another width or not a gram at all, named.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
root=$(cd "$(dirname "$0")/../.." && pwd)
G=$root/models/tiny-moe/tiny-moe.gguf
IM=$root/models/tiny-moe/imatrix.gguf
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-gptq-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
head -c 48000 "$root/models/tiny-moe/calib.txt" >calib.txt
head -c 40000 "$root/models/tiny-moe/heldout.txt" >heldout.txt
"$bin/iq3pack" build "$G" --experts keep -o keep >/dev/null 2>&1 || fail "build --experts keep"
"$bin/strata" calibrate keep -f calib.txt -o grams >cal.out 2>cal.err || fail "calibrate: $(cat cal.err)"
"$bin/iq3pack" build "$G" --imatrix "$IM" -o im >/dev/null 2>&1 || fail "build --imatrix"
"$bin/iq3pack" build "$G" --imatrix "$IM" --grams grams -o gptq >gptq.out 2>gptq.err || fail "build --grams: $(cat gptq.err)"
# 3 MoE layers x 8 experts x 3 parts have grams; the next-token-prediction block's 24 have none
grep -q "GPTQ from grams on 72 expert slices (24 with no gram" gptq.out || fail "the build's GPTQ line: $(cat gptq.out)"
cmp -s im/experts.bin gptq/experts.bin && fail "GPTQ changed nothing"
"$bin/strata" check gptq >/dev/null 2>&1 || fail "strata check on the GPTQ pack"
"$bin/strata" perplexity keep -f heldout.txt -c 512 --logits-out base.f32 >/dev/null 2>&1 || fail "base logits"
kld() { "$bin/strata" perplexity "$1" -f heldout.txt -c 512 --kld-base base.f32 2>&1 | sed -n 's/^Mean KLD: \([0-9.]*\) *Same top: \([0-9.]*\) %$/\1 \2/p'; }
set -- $(kld im) $(kld gptq)
[ $# -eq 4 ] || fail "no KLD lines"
echo "held-out head, against the F16 experts: imatrix KLD $1, top-1 $2 %; GPTQ KLD $3, top-1 $4 %"
awk -v a="$1" -v b="$3" -v ta="$2" -v tb="$4" 'BEGIN { exit !(b < 0.8 * a && tb > ta) }' ||
    fail "GPTQ is not better: KLD $3 against $1, top-1 $4 against $2"
# in 2 shards: the same bytes; shards of another recording, or of none, refused
. "$root/tests/lib/pack_cmp.sh"
bad() { fail "$*"; }
mkdir s
for k in 0 1; do
    "$bin/iq3pack" build "$G" --imatrix "$IM" --grams grams --shard $k/2 -o s/$k >/dev/null 2>&1 || fail "shard $k of 2"
done
"$bin/iq3pack" merge s/0 s/1 -o merged >/dev/null 2>&1 || fail "merge"
pack_same gptq merged
head -c 24000 calib.txt >calib2.txt
"$bin/strata" calibrate keep -f calib2.txt -o grams2 >/dev/null 2>&1 || fail "a second recording"
"$bin/iq3pack" build "$G" --imatrix "$IM" --grams grams2 --shard 1/2 -o s/1b >/dev/null 2>&1 || fail "shard 1 of another recording"
"$bin/iq3pack" build "$G" --imatrix "$IM" --shard 1/2 -o s/1c >/dev/null 2>&1 || fail "shard 1 without --grams"
for other in 1b 1c; do
    "$bin/iq3pack" merge s/0 s/$other -o m$other >m.out 2>&1; rc=$?
    [ $rc -ne 0 ] && grep -q "another --grams" m.out && [ ! -e m$other ] || fail "merge with s/$other: exit $rc, $(cat m.out)"
done
# refusals, exit 2, nothing built
"$bin/iq3pack" build "$G" --grams grams --experts keep -o r >r.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -e "--grams grams" r.out && [ ! -e r ] || fail "--grams with --experts keep: exit $rc, $(cat r.out)"
"$bin/iq3pack" build "$G" --grams calib.txt -o r >r.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "not a folder" r.out || fail "--grams on a file: exit $rc, $(cat r.out)"
mkdir narrow damaged
# a well-formed gram 8 wide (RADGRAM2, k 8, rank 0, 100 rows, domain 0, then 64 f32 zeros)
{ printf 'RADGRAM2\010\000\000\000\000\000\000\000\144\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000'
  head -c 256 /dev/zero; } >narrow/gram.r0.blk.1.ffn_down_exps.0.bin
"$bin/iq3pack" build "$G" --grams narrow -o r >r.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "a gram 8 wide, but blk.1.ffn_gate_exps.weight takes 256 inputs" r.out && [ ! -e r ] ||
    fail "a gram of another width: exit $rc, $(cat r.out)"
cp calib.txt damaged/gram.r0.blk.1.ffn_down_exps.0.bin # not a gram at all
"$bin/iq3pack" build "$G" --grams damaged -o r >r.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "damaged/gram.r0.blk.1.ffn_down_exps.0.bin" r.out && [ ! -e r ] ||
    fail "a damaged gram: exit $rc, $(cat r.out)"
echo PASS
