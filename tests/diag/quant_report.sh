#!/bin/sh
# quant_report.sh: how close each way of putting a MoE's routed experts at
# ~3 bits stays to the model, on one held-out text (a diagnostic, not CI).
#
#   sh tests/diag/quant_report.sh MODEL.gguf CALIB.txt HELDOUT.txt [CTX]
#
# Against the model with its experts kept as they are (`iq3pack build
# --experts keep`), scored by `strata perplexity --kld-base` on HELDOUT in
# chunks of CTX (default 512): mean KL divergence and top-1 agreement of
#   llama.cpp IQ3_XXS  llama-quantize, experts only (every other tensor in
#                      its source type), with llama-imatrix's matrix of CALIB,
#                      moved into a pack losslessly
#   strata imatrix     iq3pack build --imatrix (the same matrix)
#   strata GPTQ        iq3pack build --imatrix --grams (strata calibrate on CALIB)
#   strata rotated     iq3pack build --imatrix --rotate hadamard (each part's default block)
#   strata GPTQ+rot    iq3pack build --imatrix --grams --rotate hadamard (the same recording,
#                      its Grams rotated exactly by the build)
# llama.cpp's tools come from the distribution's packages, unpacked under
# ~/.cache (tests/diag/diag_llamacpp_env.sh; needs the Debian mirror of this
# machine's apt sources once). Work files go to a temporary folder.
set -eu
[ $# -ge 3 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$1 calib=$2 held=$3 ctx=${4:-512}
for f in "$model" "$calib" "$held"; do [ -f "$f" ] || { echo "quant_report.sh: $f: no such file" >&2; exit 1; }; done
bin=$root/bin
[ -x "$bin/strata" ] && [ -x "$bin/iq3pack" ] || { echo "quant_report.sh: build the tools first (make)" >&2; exit 1; }
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch_tools
w=$(mktemp -d "${TMPDIR:-/tmp}/strata-quant-report-XXXXXX")
trap 'rm -rf "$w"' EXIT INT TERM
step() { echo "quant_report.sh: $*" >&2; }
step "the reference: experts kept"
"$bin/iq3pack" build "$model" --experts keep -o "$w/keep" >"$w/keep.log" 2>&1
"$bin/strata" perplexity "$w/keep" -f "$held" -c "$ctx" --logits-out "$w/base.f32" >"$w/base.log" 2>&1
step "llama-imatrix on $calib"
llamacpp_tool llama-imatrix -m "$model" -f "$calib" -o "$w/imatrix.gguf" -c "$ctx" -b "$ctx" -t "$(nproc)" --no-ppl \
    >"$w/imatrix.log" 2>&1
step "llama-quantize: experts to IQ3_XXS"
# the next-token-prediction blocks (never run, so without imatrix data, which IQ3_XXS insists
# on) take Q8_0: they do not enter the scores
info=$("$bin/iq3pack" info "$model")
blocks=$(echo "$info" | sed -n 's/^ *[a-z0-9_-]*\.block_count  *\([0-9]*\)$/\1/p')
nextn=$(echo "$info" | sed -n 's/^ *[a-z0-9_-]*\.nextn_predict_layers  *\([0-9]*\)$/\1/p')
mtp=""
if [ -n "$nextn" ] && [ "$nextn" -gt 0 ]; then
    l=$((blocks - nextn))
    while [ "$l" -lt "$blocks" ]; do mtp="$mtp --tensor-type blk\.$l\.ffn_.*_exps=q8_0"; l=$((l + 1)); done
fi
# everything that is not a routed expert keeps its type: the tensor names' own patterns
llamacpp_tool llama-quantize $mtp --imatrix "$w/imatrix.gguf" --token-embedding-type f32 --output-tensor-type f32 \
    --tensor-type "attn=f32" --tensor-type "shexp=f32" --tensor-type "ffn_gate\.weight=f32" \
    --tensor-type "ffn_up\.weight=f32" --tensor-type "ffn_down\.weight=f32" --tensor-type "nextn=f32" \
    --tensor-type "blk\.[0-9]*\.ffn_.*_exps=iq3_xxs" "$model" "$w/llama.gguf" IQ3_XXS >"$w/quantize.log" 2>&1 ||
    { tail -3 "$w/quantize.log" >&2; exit 1; }
"$bin/iq3pack" build "$w/llama.gguf" -o "$w/llama" >"$w/llama.log" 2>&1
step "strata calibrate on $calib"
"$bin/strata" calibrate "$w/keep" -f "$calib" -c "$ctx" -o "$w/grams" >"$w/grams.log" 2>&1
step "strata packs"
"$bin/iq3pack" build "$model" --imatrix "$w/imatrix.gguf" -o "$w/imatrix" >"$w/im.log" 2>&1
"$bin/iq3pack" build "$model" --imatrix "$w/imatrix.gguf" --grams "$w/grams" -o "$w/gptq" >"$w/gptq.log" 2>&1
"$bin/iq3pack" build "$model" --imatrix "$w/imatrix.gguf" --rotate hadamard -o "$w/rotated" >"$w/rot.log" 2>&1
"$bin/iq3pack" build "$model" --imatrix "$w/imatrix.gguf" --grams "$w/grams" --rotate hadamard -o "$w/gptq+rot" \
    >"$w/gptqrot.log" 2>&1
score() { "$bin/strata" perplexity "$1" -f "$held" -c "$ctx" --kld-base "$w/base.f32" 2>&1 |
          sed -n 's/^Mean KLD: \([0-9.]*\) *Same top: \([0-9.]*\) %$/\1 \2/p'; }
set -- $(score "$w/llama")
ref=$1
printf '%-20s %10s %8s %9s\n' "experts" "mean KLD" "top-1 %" "KLD ratio"
printf '%-20s %10s %8s %9s\n' "llama.cpp IQ3_XXS" "$1" "$2" "1.00"
for v in imatrix gptq rotated gptq+rot; do
    set -- $(score "$w/$v")
    printf '%-20s %10s %8s %9s\n' "strata $v" "$1" "$2" "$(awk -v a="$1" -v b="$ref" 'BEGIN { printf "%.2f", a / b }')"
done
