#!/bin/sh
# e2e_iq3pack.sh: iq3pack encode/decode/stats through the CLI. On the shipped
# model's embedding (dumped to f32 by iq3pack dump: 1536 rows of 256): quality
# mode's size and bits/weight, decode's size, wrong sizes / bad K / existing
# outputs / a bad mode refused with nothing left behind. With ../shared, on
# the seed's vectors: reference bytes equal the seed's .iq3, decode equals
# .dec.f32, quality mode beats the seed's error.
set -u
BIN=${STRATA_BIN:?STRATA_BIN not set}
G=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$G" ] || { echo "FAIL: $G is missing (it is part of the repository)"; exit 1; }
V=${STRATA_SHARED:-../shared}/vectors/iq3
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
P="$BIN/iq3pack"

"$P" --help | grep -q encode || fail "--help lists no encode"
for c in encode decode stats; do "$P" $c --help | grep -q "usage: iq3pack $c" || fail "$c --help"; done

"$P" dump "$G" token_embd.weight -o "$T/e.f32" >/dev/null || fail "dump of the shipped model's embedding"
[ "$(wc -c < "$T/e.f32")" -eq $((1536 * 256 * 4)) ] || fail "dump size"
"$P" encode --rows 1536 --cols 256 "$T/e.f32" -o "$T/q.iq3" || fail "encode quality"
[ "$(wc -c < "$T/q.iq3")" -eq $((1536 * 256 * 49 / 128)) ] || fail "quality size: $(wc -c < "$T/q.iq3")"
"$P" stats --rows 1536 --cols 256 "$T/e.f32" "$T/q.iq3" > "$T/stats" || fail "stats"
grep -q "3.0625 bits/weight, rel-RMSE [0-9.]*," "$T/stats" || fail "stats: $(cat "$T/stats")"
"$P" encode --rows 1536 --cols 256 --mode reference "$T/e.f32" -o "$T/ref.iq3" || fail "encode reference"
"$P" decode --rows 1536 --cols 256 "$T/ref.iq3" -o "$T/ref.f32" || fail "decode"
[ "$(wc -c < "$T/ref.f32")" -eq $((1536 * 256 * 4)) ] || fail "decode size"

# refusals: wrong sizes, bad K, existing output, bad mode; nothing written
"$P" encode --rows 1535 --cols 256 "$T/e.f32" -o "$T/x.iq3" 2> "$T/err" && fail "wrong rows accepted"
grep -q "1572864 bytes, but" "$T/err" || fail "size message: $(cat "$T/err")"
"$P" decode --rows 1536 --cols 512 "$T/ref.iq3" -o "$T/x.f32" 2> "$T/err" && fail "wrong iq3 size accepted"
"$P" encode --rows 3072 --cols 128 "$T/e.f32" -o "$T/x.iq3" 2> "$T/err" && fail "bad K accepted"
grep -q "fmt=5 needs K % 256 == 0, got 128" "$T/err" || fail "bad K message: $(cat "$T/err")"
"$P" encode --rows 1536 --cols 256 --mode fast "$T/e.f32" -o "$T/x.iq3" 2> /dev/null
[ $? -eq 2 ] || fail "bad mode not a usage error"
cp "$T/q.iq3" "$T/keep"
"$P" encode --rows 1536 --cols 256 --mode reference "$T/e.f32" -o "$T/q.iq3" 2> "$T/err" && fail "overwrote an output"
grep -q "already exists" "$T/err" || fail "exists message"
cmp "$T/q.iq3" "$T/keep" || fail "existing output changed"
"$P" decode --rows 1536 --cols 256 "$T/ref.iq3" -o "$T/ref.f32" 2> /dev/null && fail "decode overwrote an output"
ls "$T" | grep -q "x\.\|tmp" && fail "partial output left: $(ls "$T")"

# the seed's vectors
if [ ! -f "$V/normal_16x1024_s1.iq3" ]; then
    echo "SKIP (part): $V/normal_16x1024_s1.iq3 is absent: the seed's bytes not compared"
    exit 0
fi
"$P" encode --rows 16 --cols 1024 --mode reference --threads 2 "$V/normal_16x1024_s1.f32" -o "$T/sref.iq3" || fail "encode reference"
cmp "$T/sref.iq3" "$V/normal_16x1024_s1.iq3" || fail "reference bytes differ from the seed"
"$P" decode --rows 16 --cols 1024 "$T/sref.iq3" -o "$T/sref.f32" || fail "decode"
cmp "$T/sref.f32" "$V/normal_16x1024_s1.dec.f32" || fail "decode differs from the seed"
"$P" encode --rows 2 --cols 768 --mode reference "$V/batch_2x3x256_s7.f32" -o "$T/batch.iq3" || fail "encode batch"
cmp "$T/batch.iq3" "$V/batch_2x3x256_s7.iq3" || fail "batch bytes differ"
"$P" encode --rows 16 --cols 1024 "$V/normal_16x1024_s1.f32" -o "$T/sq.iq3" || fail "encode quality"
[ "$(wc -c < "$T/sq.iq3")" -eq 6272 ] || fail "quality size"
"$P" stats --rows 16 --cols 1024 "$V/normal_16x1024_s1.f32" "$T/sq.iq3" > "$T/stats" || fail "stats"
grep -q "3.0625 bits/weight" "$T/stats" || fail "stats bpw: $(cat "$T/stats")"
q=$(sed -n 's/.*rel-RMSE \([0-9.]*\), weighted.*/\1/p' "$T/stats")
awk -v q="$q" 'BEGIN { exit !(q < 0.1944) }' || fail "quality rel-RMSE $q not below the seed's 0.1944"
"$P" encode --rows 2 --cols 300 "$V/badk_2x300.f32" -o "$T/x.iq3" 2> "$T/err" && fail "bad K accepted"
grep -q "fmt=5 needs K % 256 == 0, got 300" "$T/err" || fail "bad K message: $(cat "$T/err")"
exit 0
