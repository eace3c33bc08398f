#!/bin/sh
# e2e_rotate.sh: rotated experts (`iq3pack build --rotate hadamard[:B]`,
# `strata calibrate --rotate`) on the shipped model.
#  - The pack: every IQ3-encoded part carries its block in the manifest and an
#    @expert_rotate line in the index; a pack built without --rotate has
#    neither; `iq3pack verify` measures the rotated parts against the rotated
#    source; the rows really changed.
#  - The runtime rotates the inputs: on the held-out head the rotated pack's
#    KL divergence from the F16 experts stays at the level of the unrotated
#    one (an unrotated input would give noise); decoding one token at a time,
#    checking drafts in batches (--draft ngram) and reading the experts
#    through the RAM tier give the same tokens and logits.
#  - A recording made with --rotate has the block as its files' domain; GPTQ
#    with it, or with an unrotated recording that the build rotates itself,
#    gives a pack better than the imatrix alone; a recording of another block,
#    or a rotated one for an unrotated build, is refused by name.
#  - Shards built with --rotate merge into the one-piece pack; a shard
#    without it is refused. Bad blocks are refused (iq3pack, calibrate, a
#    damaged index).
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
root=$(cd "$(dirname "$0")/../.." && pwd)
G=$root/models/tiny-moe/tiny-moe.gguf
IM=$root/models/tiny-moe/imatrix.gguf
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-rotate-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
S=$bin/strata I=$bin/iq3pack
head -c 48000 "$root/models/tiny-moe/calib.txt" >calib.txt
head -c 40000 "$root/models/tiny-moe/heldout.txt" >heldout.txt
"$I" build "$G" --experts keep -o keep >/dev/null 2>&1 || fail "build --experts keep"
"$I" build "$G" --imatrix "$IM" -o im >/dev/null 2>&1 || fail "build --imatrix"
"$I" build "$G" --imatrix "$IM" --rotate hadamard -o rot >rot.out 2>rot.err || fail "build --rotate: $(cat rot.err)"
"$I" build "$G" --imatrix "$IM" --rotate hadamard:64 -o rot64 >/dev/null 2>&1 || fail "build --rotate hadamard:64"

# the pack: 4 expert layers (3 MoE, 1 next-token block) x 3 parts, each 256 wide
grep -q "12 rotated (Hadamard blocks of 256)" rot.out || fail "the build's rotation line: $(cat rot.out)"
[ "$(grep -c '^@expert_rotate .* hadamard 256$' rot/index.txt)" = 12 ] || fail "rot/index.txt: not 12 @expert_rotate lines of 256"
[ "$(grep -c '^@expert_rotate .* hadamard 64$' rot64/index.txt)" = 12 ] || fail "rot64/index.txt: not 12 lines of 64"
grep -q '"block": 256' rot/manifest.json || fail "rot/manifest.json names no block"
grep -q '@expert_rotate' im/index.txt && fail "an unrotated pack has @expert_rotate lines"
grep -q '"rotate"' im/manifest.json && fail "an unrotated pack's manifest has a rotate key"
cmp -s im/experts.bin rot/experts.bin && fail "--rotate changed no byte of experts.bin"
cmp -s im/dense.bin rot/dense.bin || fail "--rotate changed dense.bin"
"$I" verify rot --source "$G" >v.out 2>&1 || fail "iq3pack verify of the rotated pack: $(cat v.out)"
grep -q "IQ3 gate .* rel-RMSE mean 0\.1[0-9]" v.out || fail "verify's rel-RMSE of the rotated gates: $(cat v.out)"
"$S" check rot >/dev/null 2>&1 || fail "strata check on the rotated pack"

# the runtime: logits near the F16 experts' (batch path)
"$S" perplexity keep -f heldout.txt -c 512 --logits-out base.f32 >/dev/null 2>&1 || fail "base logits"
kld() { "$S" perplexity "$1" -f heldout.txt -c 512 --kld-base base.f32 2>&1 | sed -n 's/^Mean KLD: \([0-9.]*\) *Same top: \([0-9.]*\) %$/\1 \2/p'; }
set -- $(kld im) $(kld rot) $(kld rot64)
[ $# -eq 6 ] || fail "no KLD lines"
echo "held-out head, against the F16 experts: imatrix KLD $1 top-1 $2 %; rotated $3, $4 %; blocks of 64 $5, $6 %"
awk -v a="$1" -v b="$3" -v c="$5" -v tb="$4" -v tc="$6" 'BEGIN { exit !(b < 1.5 * a && c < 1.5 * a && tb > 90 && tc > 90) }' ||
    fail "the rotated packs drift from the model: KLD $3 and $5 against $1"
# decode one token at a time = drafts checked in batches = experts through the tier
prompt="The little fox ran to the river and"
"$S" run rot -p "$prompt" -n 24 --temp 0 --logits-out d.f32 >d.txt 2>d.err || fail "strata run: $(cat d.err)"
"$S" run rot -p "$prompt" -n 24 --temp 0 --draft ngram >n.txt 2>n.err || fail "strata run --draft ngram: $(cat n.err)"
cmp -s d.txt n.txt || fail "greedy text with ngram drafts differs: '$(cat d.txt)' against '$(cat n.txt)'"
STRATA_TIER_SLOTS=3 "$S" run rot -p "$prompt" -n 24 --temp 0 --logits-out t.f32 >t.txt 2>t.err || fail "tier: $(cat t.err)"
cmp -s d.f32 t.f32 && cmp -s d.txt t.txt || fail "the experts through the tier give other logits"

# recordings: the domain, GPTQ, refusals
"$S" calibrate keep -f calib.txt -o grams >/dev/null 2>cal.err || fail "calibrate: $(cat cal.err)"
"$S" calibrate keep -f calib.txt --rotate hadamard -o gramsrot >/dev/null 2>cal.err || fail "calibrate --rotate: $(cat cal.err)"
dom() { od -A n -t u4 -j 24 -N 4 "$1" | tr -d ' '; }
[ "$(dom grams/gram.r0.blk.1.ffn_down_exps.0.bin)" = 0 ] || fail "an unrotated recording's domain is not 0"
[ "$(dom gramsrot/gram.r0.blk.1.ffn_down_exps.0.bin)" = 256 ] || fail "calibrate --rotate's domain is not 256"
[ "$(dom gramsrot/gram.r0.blk.1.ffn_down_input.0.bin)" = 256 ] || fail "calibrate --rotate's down domain is not 256"
"$I" build "$G" --imatrix "$IM" --grams gramsrot --rotate hadamard -o gr >/dev/null 2>gr.err || fail "GPTQ rotated: $(cat gr.err)"
"$I" build "$G" --imatrix "$IM" --grams grams --rotate hadamard -o gr0 >/dev/null 2>gr0.err ||
    fail "GPTQ rotated from an unrotated recording: $(cat gr0.err)"
set -- $(kld im) $(kld gr) $(kld gr0)
[ $# -eq 6 ] || fail "no KLD lines for GPTQ"
echo "GPTQ rotated: recorded rotated KLD $3 top-1 $4 %; rotated by the build $5, $6 % (imatrix alone $1)"
awk -v a="$1" -v b="$3" -v c="$5" 'BEGIN { exit !(b < 0.8 * a && c < 0.8 * a) }' || fail "rotated GPTQ is not better than the imatrix"
"$I" build "$G" --imatrix "$IM" --grams gramsrot -o r >r.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "gramsrot/gram.r0.blk.1.ffn_down_exps.0.bin: recorded with inputs rotated by Hadamard blocks of 256, but blk.1.ffn_gate_exps.weight is built unrotated" r.out && [ ! -e r ] ||
    fail "a rotated recording for an unrotated build: exit $rc, $(cat r.out)"
"$I" build "$G" --imatrix "$IM" --grams gramsrot --rotate hadamard:64 -o r >r.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "blocks of 256, but blk.1.ffn_gate_exps.weight is built with blocks of 64" r.out && [ ! -e r ] ||
    fail "a recording of another block: exit $rc, $(cat r.out)"

# shards
. "$root/tests/lib/pack_cmp.sh"
bad() { fail "$*"; }
mkdir s
for k in 0 1; do "$I" build "$G" --imatrix "$IM" --rotate hadamard --shard $k/2 -o s/$k >/dev/null 2>&1 || fail "shard $k"; done
"$I" merge s/0 s/1 -o merged >/dev/null 2>&1 || fail "merge"
pack_same rot merged
"$I" build "$G" --imatrix "$IM" --shard 1/2 -o s/1b >/dev/null 2>&1 || fail "shard 1 unrotated"
"$I" merge s/0 s/1b -o m >m.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "another --rotate" m.out && [ ! -e m ] || fail "merge of a rotated and an unrotated shard: exit $rc, $(cat m.out)"

# bad blocks
for b in hadamard:3 hadamard:0 walsh hadamard:64x; do
    "$I" build "$G" --rotate $b -o r >r.out 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q -e "--rotate takes hadamard" r.out && [ ! -e r ] || fail "--rotate $b: exit $rc, $(cat r.out)"
done
"$I" build "$G" --rotate hadamard:512 -o r >r.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "blk.1.ffn_gate_exps.weight: --rotate hadamard:512 does not divide its rows of 256" r.out && [ ! -e r ] ||
    fail "a block wider than the rows: exit $rc, $(cat r.out)"
"$I" build "$G" --rotate hadamard --experts keep -o r >r.out 2>&1; rc=$?
[ $rc -eq 2 ] && [ ! -e r ] || fail "--rotate with --experts keep: exit $rc, $(cat r.out)"
"$S" calibrate keep -f calib.txt --rotate hadamard:512 -o r >r.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "blocks of 512 do not divide" r.out && [ ! -e r ] || fail "calibrate --rotate hadamard:512: exit $rc, $(cat r.out)"
cp -r rot damaged
sed -i '0,/^@expert_rotate \(.*\) hadamard 256$/s//@expert_rotate \1 hadamard 48/' damaged/index.txt
"$S" run damaged -p "$prompt" -n 2 >r.out 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q "blk.1.ffn_gate_exps.weight: a Hadamard block of 48 on a part of form IQ3, 256 wide" r.out ||
    fail "an index with a block of 48: exit $rc, $(cat r.out)"
echo PASS
