#!/bin/sh
# e2e_shard.sh: a pack built in shards (`iq3pack build --shard K/N`, as one
# Slurm array task each would) and assembled (`iq3pack merge`) is the pack
# one `iq3pack build` writes, byte for byte: the shipped model with its
# imatrix in 4 shards (one gets no expert layer: 3 layers) and in 2, merged
# in any order; and the merge refuses, naming the shard and writing nothing:
# a shard missing, one given twice, one built with other flags (--experts
# keep, another --imatrix), one from another source, a damaged or short part,
# an existing output. Bad --shard values are refused with exit 2.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
R=$(cd "$(dirname "$0")/../.." && pwd)
G=$R/models/tiny-moe/tiny-moe.gguf
IM=$R/models/tiny-moe/imatrix.gguf
[ -f "$G" ] && [ -f "$IM" ] || { echo "FAIL: $G or $IM is missing (they are part of the repository)"; exit 1; }
. "$R/tests/lib/pack_cmp.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-shard-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
cd "$TMP" || exit 1

"$BIN/iq3pack" build "$G" --imatrix "$IM" -o one >/dev/null 2>&1 || { echo "FAIL: one-shot build"; exit 1; }
for n in 4 2; do
    k=0
    while [ $k -lt $n ]; do
        "$BIN/iq3pack" build "$G" --imatrix "$IM" --shard $k/$n -o s$n-$k >"b$n-$k.out" 2>&1 || bad "build --shard $k/$n: $(cat "b$n-$k.out")"
        k=$((k + 1))
    done
done
cat b4-*.out
"$BIN/iq3pack" merge s4-2 s4-0 s4-3 s4-1 -o m4 >m4.out 2>&1 || bad "merge of 4: $(cat m4.out)"
"$BIN/iq3pack" merge s2-1 s2-0 -o m2 >m2.out 2>&1 || bad "merge of 2: $(cat m2.out)"
for m in m4 m2; do
    if d=$(pack_differs one "$m"); then bad "$m/$d differs from the one-shot build's"; fi
    [ "$(ls "$m" | wc -l)" = "$(ls one | wc -l)" ] || bad "$m holds other files than the one-shot build: $(ls "$m")"
done
[ -s s4-1/experts.part ] && [ ! -e s4-1/dense.bin ] || bad "shard 1: no experts.part, or a dense.bin it should not have"
"$BIN/strata" run m4 -p "Once upon a time" -n 8 --temp 0 >run.txt 2>run.err || bad "run on the merged pack: $(cat run.err)"

# refusals: exit 1, one line naming the problem, no output directory
refuse() { # NAME PATTERN ARGS...
    name=$1; pat=$2; shift 2
    "$BIN/iq3pack" merge "$@" -o "r-$name" >/dev/null 2>"r-$name.err"; rc=$?
    [ $rc -eq 1 ] && grep -q "$pat" "r-$name.err" && [ ! -e "r-$name" ] && ! ls -d r-"$name".partial.* >/dev/null 2>&1 ||
        bad "merge, $name: exit $rc, '$(cat "r-$name.err")'"
}
refuse missing "shard 3 of 4 is missing" s4-0 s4-1 s4-2
refuse twice "shard 1 of 4 given twice: s4-1 and s4-1" s4-0 s4-1 s4-1 s4-2 s4-3
refuse mixed-count "another shard count" s4-0 s4-1 s2-1
"$BIN/iq3pack" build "$G" --imatrix "$IM" --experts keep --shard 1/4 -o keep1 >/dev/null 2>&1 || bad "build --experts keep --shard 1/4"
refuse flags "keep1: built from other --experts" s4-0 keep1 s4-2 s4-3
"$BIN/iq3pack" build "$G" --shard 1/4 -o noim1 >/dev/null 2>&1 || bad "build --shard 1/4 without the imatrix"
refuse imatrix "noim1: built from another --imatrix" s4-0 noim1 s4-2 s4-3
# another source: the same model with one metadata byte changed (its name)
python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); i=b.find(b'strata tiny-moe'); b[i]=ord('S'); open(sys.argv[2],'wb').write(b)" "$G" other.gguf ||
    bad "could not write the other source"
"$BIN/iq3pack" build other.gguf --imatrix "$IM" --shard 2/4 -o other2 >/dev/null 2>&1 || bad "build other.gguf --shard 2/4"
refuse source "other2: built from another source file" s4-0 s4-1 other2 s4-3
cp -r s4-2 short2 && truncate -s -100 short2/experts.part
refuse short "short2/experts.part: not the size its shard.json says; build shard 2/4 again" s4-0 s4-1 short2 s4-3
cp -r s4-1 flip1 && printf 'X' | dd of=flip1/experts.part bs=1 seek=5000 conv=notrunc 2>/dev/null
refuse damaged "flip1/experts.part: damaged (crc32 differs); build shard 1/4 again" s4-0 flip1 s4-2 s4-3
refuse notshard "one: not a shard directory" one s4-1
mkdir exists
"$BIN/iq3pack" merge s4-0 s4-1 s4-2 s4-3 -o exists >/dev/null 2>e.err; rc=$?
[ $rc -eq 1 ] && grep -q "exists: already exists" e.err || bad "merge onto an existing directory: exit $rc, '$(cat e.err)'"
for v in 4/4 -1/4 1/0 x 1/4097; do
    "$BIN/iq3pack" build "$G" --shard "$v" -o bad >/dev/null 2>v.err; rc=$?
    [ $rc -eq 2 ] && grep -q -- "--shard takes K/N" v.err || bad "--shard $v: exit $rc, '$(cat v.err)'"
done
"$BIN/iq3pack" merge --help | grep -q "usage: iq3pack merge" || bad "merge --help"
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
