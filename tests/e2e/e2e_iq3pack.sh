#!/bin/sh
# e2e_iq3pack.sh: iq3pack encode/decode/stats through the CLI on a seed vector:
# reference bytes equal the seed's .iq3, decode equals .dec.f32, quality mode
# round-trips, wrong sizes / bad K / existing outputs are refused and leave
# nothing behind.
set -u
BIN=${STRATA_BIN:?STRATA_BIN not set}
V=${STRATA_SHARED:-../shared}/vectors/iq3
[ -f "$V/normal_16x1024_s1.iq3" ] || { echo "skip: $V/normal_16x1024_s1.iq3 is absent"; exit 77; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
P="$BIN/iq3pack"

"$P" --help | grep -q encode || fail "--help lists no encode"
for c in encode decode stats; do "$P" $c --help | grep -q "usage: iq3pack $c" || fail "$c --help"; done

"$P" encode --rows 16 --cols 1024 --mode reference --threads 2 "$V/normal_16x1024_s1.f32" -o "$T/ref.iq3" || fail "encode reference"
cmp "$T/ref.iq3" "$V/normal_16x1024_s1.iq3" || fail "reference bytes differ from the seed"
"$P" decode --rows 16 --cols 1024 "$T/ref.iq3" -o "$T/ref.f32" || fail "decode"
cmp "$T/ref.f32" "$V/normal_16x1024_s1.dec.f32" || fail "decode differs from the seed"
"$P" encode --rows 2 --cols 768 --mode reference "$V/batch_2x3x256_s7.f32" -o "$T/batch.iq3" || fail "encode batch"
cmp "$T/batch.iq3" "$V/batch_2x3x256_s7.iq3" || fail "batch bytes differ"

"$P" encode --rows 16 --cols 1024 "$V/normal_16x1024_s1.f32" -o "$T/q.iq3" || fail "encode quality"
[ "$(wc -c < "$T/q.iq3")" -eq 6272 ] || fail "quality size"
"$P" stats --rows 16 --cols 1024 "$V/normal_16x1024_s1.f32" "$T/q.iq3" > "$T/stats" || fail "stats"
grep -q "3.0625 bits/weight" "$T/stats" || fail "stats bpw: $(cat "$T/stats")"
q=$(sed -n 's/.*rel-RMSE \([0-9.]*\), weighted.*/\1/p' "$T/stats")
awk -v q="$q" 'BEGIN { exit !(q < 0.1944) }' || fail "quality rel-RMSE $q not below the seed's 0.1944"

# refusals: wrong sizes, bad K, existing output, bad mode; nothing written
"$P" encode --rows 15 --cols 1024 "$V/normal_16x1024_s1.f32" -o "$T/x.iq3" 2> "$T/err" && fail "wrong rows accepted"
grep -q "65536 bytes, but" "$T/err" || fail "size message: $(cat "$T/err")"
"$P" decode --rows 16 --cols 768 "$T/ref.iq3" -o "$T/x.f32" 2> "$T/err" && fail "wrong iq3 size accepted"
"$P" encode --rows 2 --cols 300 "$V/badk_2x300.f32" -o "$T/x.iq3" 2> "$T/err" && fail "bad K accepted"
grep -q "fmt=5 needs K % 256 == 0, got 300" "$T/err" || fail "bad K message: $(cat "$T/err")"
"$P" encode --rows 16 --cols 1024 --mode fast "$V/normal_16x1024_s1.f32" -o "$T/x.iq3" 2> /dev/null
[ $? -eq 2 ] || fail "bad mode not a usage error"
cp "$T/q.iq3" "$T/keep" 
"$P" encode --rows 16 --cols 1024 --mode reference "$V/normal_16x1024_s1.f32" -o "$T/q.iq3" 2> "$T/err" && fail "overwrote an output"
grep -q "already exists" "$T/err" || fail "exists message"
cmp "$T/q.iq3" "$T/keep" || fail "existing output changed"
"$P" decode --rows 16 --cols 1024 "$T/ref.iq3" -o "$T/ref.f32" 2> /dev/null && fail "decode overwrote an output"
ls "$T" | grep -q "x\.\|tmp" && fail "partial output left: $(ls "$T")"
exit 0
