#!/bin/sh
# seed.sh TARGET CORPUS_DIR: starts a fuzz target's corpus from small real
# inputs in $STRATA_SHARED (absent data just means a thinner corpus).
set -eu
target=$1
corpus=$2
shared=${STRATA_SHARED:-../shared}
mkdir -p "$corpus"
case $target in
fuzz_gguf)
    # real GGUFs under 2 MB: the smaller vocabularies (large string arrays)
    # and a model; big inputs slow every run, so only a few of them
    for f in "$shared"/vocab/*.gguf "$shared"/models/stories260K/stories260K.gguf; do
        [ -f "$f" ] || continue
        case $f in */vocab/*) [ "$(wc -c < "$f")" -lt 1000000 ] || continue ;; esac
        [ "$(wc -c < "$f")" -lt 2000000 ] || continue
        cp -f "$f" "$corpus/$(basename "$f")"
        chmod u+w "$corpus/$(basename "$f")"
    done
    # imatrix GGUFs with shared payloads, if the vectors hold any
    find "$shared"/vectors/imatrix -name '*.gguf' -size -2000k 2>/dev/null | head -n 8 |
    while read -r f; do
        cp -f "$f" "$corpus/imatrix-$(basename "$(dirname "$f")")-$(basename "$f")"
        chmod u+w "$corpus/imatrix-$(basename "$(dirname "$f")")-$(basename "$f")"
    done
    ;;
fuzz_radgram)
    # the seed's recordings: real RADGRAM2 headers and diagonals, small k
    find "$shared"/vectors/imatrix -name 'gram.*.bin' -size -64k 2>/dev/null | head -n 16 |
    while read -r f; do
        n=$(echo "$f" | tr '/' '_')
        cp -f "$f" "$corpus/$n"
        chmod u+w "$corpus/$n"
    done
    ;;
esac
exit 0
