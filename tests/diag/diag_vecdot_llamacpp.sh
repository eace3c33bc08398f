#!/bin/sh
# diag_vecdot_llamacpp.sh: strata's integer dot of every native ggml type it
# has one for, against llama.cpp's own (ggml's vec_dot through a CPU backend
# of Debian's packages), bit for bit: each of the shared reference vectors'
# 8 x 512 quantized matrices (vectors/quant/<type>.bin, or .imat.bin where
# ggml needs an imatrix) against each of the 8 rows of input.f32 as the
# activation, every kernel table of this CPU. A diagnostic, not run by CI
# (it needs the Debian mirror this machine's apt uses; see
# tests/diag/diag_llamacpp_env.sh).
#
#   sh tests/diag/diag_vecdot_llamacpp.sh [CPU_VARIANT]   (haswell, the AVX2 backend, by default)
#
# STRATA_SHARED: the shared data directory (default ../shared). Exits 1 when
# any table differs from llama.cpp on any type but Q6_K: strata's Q6_K
# follows the older AVX2 kernel of the shared reference logits, which takes
# the -32 offset out inside each lane where 0.7.0's does it through the
# activation's block sums at the end (docs/runtime.md, "Q6_K over two
# super-blocks"): the same total, last bits apart on some rows.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${STRATA_SHARED:-$root/../shared}
vec=$shared/vectors/quant
[ -f "$vec/input.f32" ] || { echo "diag_vecdot_llamacpp.sh: no $vec/input.f32 (set STRATA_SHARED)" >&2; exit 2; }
variant=${1:-haswell}
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
llamacpp_build "$root/tests/diag/diag_vecdot_ggml.c" vecdot_ggml
(cd "$root" && make -s build/cc/libruntime.a build/cc/libformats.a)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -std=c11 -D_DEFAULT_SOURCE -O2 -I"$root" "$root/tests/diag/diag_vecdot_strata.c" "$root/build/cc/libruntime.a" \
    "$root/build/cc/libformats.a" -lm -pthread -o "$work/vecdot_strata"
echo "llama.cpp $(gzip -dc "$deb"/root/usr/share/doc/libllama0/changelog.Debian.gz 2>/dev/null | head -1 | cut -d' ' -f2 | tr -d '()'), CPU backend $variant"
bad=0
# name, ggml type id, and "expected" where a difference is known (above)
while read -r name id known; do
    w=$vec/$name.bin
    [ -f "$w" ] || w=$vec/$name.imat.bin
    "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/vecdot_ggml" \
        "$sys/ggml/backends0/libggml-cpu-$variant.so" "$id" 8 512 "$w" "$vec/input.f32" 8 "$work/ggml.f32"
    tables=$("$work/vecdot_strata" "$id" 8 512 "$w" "$vec/input.f32" 8 "$work/strata")
    line=""
    for t in $tables; do
        if cmp -s "$work/strata.$t.f32" "$work/ggml.f32"; then
            line="$line $t=same"
        elif [ -n "$known" ]; then
            line="$line $t=differs(expected)"
        else
            line="$line $t=DIFFERS"
            bad=1
        fi
    done
    printf '%-8s %s (%s)\n' "$name" "$line" "$(basename "$w")"
done <<'TYPES'
q4_1 3
q5_1 7
q8_0 8
q2_K 10
q3_K 11
q4_K 12
q5_K 13
q6_K 14 expected
iq2_xxs 16
iq2_xs 17
iq3_xxs 18
iq1_s 19
iq3_s 21
iq2_s 22
iq4_xs 23
iq1_m 29
tq1_0 34
tq2_0 35
mxfp4 39
nvfp4 40
q1_0 41
TYPES
[ "$bad" = 0 ] && echo "every table gives llama.cpp's bits on every type" || { echo "some dots differ from llama.cpp's" >&2; exit 1; }
