#!/bin/sh
# imatrix_llamacpp.sh: the shipped model's importance matrix, made once by
# Debian's llama.cpp 0.7.0 `llama-imatrix` from the calibration split
# (models/tiny-moe/calib.txt; the held-out split is never part of it) and
# committed as models/tiny-moe/imatrix.gguf, which `make demo` and setup.sh
# build the pack with. Needs network access to the Debian mirror of this
# machine's apt sources (tests/diag/diag_llamacpp_env.sh unpacks the packages
# under ~/.cache; nothing is installed).
#
#   sh tools/train/imatrix_llamacpp.sh [MODEL.gguf CALIB.txt OUT.gguf]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-$root/models/tiny-moe/tiny-moe.gguf}
calib=${2:-$root/models/tiny-moe/calib.txt}
out=${3:-$root/models/tiny-moe/imatrix.gguf}
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch_tools
version=$(llamacpp_tool llama-imatrix --version 2>&1 | grep -m 1 '^version:' || true)
case $version in
"version: 0.7.0 "*) echo "llama-imatrix: $version" ;;
*) echo "llama-imatrix is not llama.cpp 0.7.0 (it says: ${version:-nothing}); the committed matrix was made with 0.7.0" >&2; exit 1 ;;
esac
[ ! -e "$out" ] || { echo "$out exists; move it away first" >&2; exit 1; }
# -c 512: the model's context; one chunk = 512 tokens of the calibration text
llamacpp_tool llama-imatrix -m "$model" -f "$calib" -o "$out.tmp.gguf" -c 512 -b 512 -t "$(nproc)" --no-ppl 2>&1 | tail -n 3
mv "$out.tmp.gguf" "$out"
echo "wrote $out"
