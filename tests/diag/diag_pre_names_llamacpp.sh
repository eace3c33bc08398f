#!/bin/sh
# diag_pre_names_llamacpp.sh: writes tests/fixtures/tokenizer/pre_names.txt,
# which test_tokenizer.c's test_pre_names_llamacpp holds strata to. Every
# tokenizer.ggml.pre name of runtime/tokenizer/tokenizer_bpe.c's table is put on GPT-2's
# vocabulary ($STRATA_SHARED/vocab/ggml-vocab-gpt-2.gguf, relabelled by
# tests/fixtures/gguf_relabel.py), and Debian's llama.cpp 0.7.0
# (tests/diag/diag_llamacpp_env.sh) tokenizes our own texts with it,
# add_special = true: the split the name selects and whether it adds BOS.
# Whole-word lookup (ignore_merges) cannot show on GPT-2's vocabulary;
# tests/e2e/e2e_vocab_npm.sh checks it on Llama 3's.
# The texts hold no combining marks: after one, llama.cpp's emulation of
# the gpt-4o pattern differs from the pattern as written (docs/runtime.md).
# A diagnostic, not run by CI (needs the Debian mirror of this machine's apt sources).
#
#   sh tests/diag/diag_pre_names_llamacpp.sh [OUT]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${STRATA_SHARED:-$root/../shared}
out=${1:-$root/tests/fixtures/tokenizer/pre_names.txt}
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
llamacpp_build "$root/tests/diag/diag_llamacpp_tokenize.c" tokenize
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-diag-pre-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

names=$(grep -o '^    {"[^"]*"' "$root/runtime/tokenizer/tokenizer_bpe.c" | sed 's/.*{"//; s/"$//' | tr '|' ' ')
python3 - "$tmp/texts.inp" <<'PY'
import random, sys
r = random.Random(20261202)
pieces = ["the", "The", "THE", "Hello", "helloWorld", "don't", "we're", "I'll", "it's", "'s", "'T", "'se", "x'THE",
          "HTTP", "x86_64", "naïve", "Ωmega", "ǅemal", "ʰa", "привет", "日本語", "中文", "한국어", "مرحبا", "ไทย", "🦙",
          "👍🏽", "1", "12", "123", "1234567", "٣", "½", "3.14", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n",
          "\u3000", "\u00a0", ".", ",", "!", "?", "...", "--", "->", "::", "/", "//", "*/", "!/", "(", ")", "[", "]",
          "{", "}", "<", ">", "'", '"', "$", "+", "=", "^", "~", "|", "`", "@", "#", "%", "&", "_", "：", "。", "，",
          "「", "」", "’", "“", "<s>", "</s>", "<|endoftext|>", "    ", "IMGIMGAZ", "<sentinel:3>"]
texts = set()
while len(texts) < 96:
    texts.add("".join(r.choice(pieces) for _ in range(r.randint(1, 9))))
with open(sys.argv[1], "wb") as f:
    for t in sorted(texts):
        f.write(t.encode() + b"\n__ggml_vocab_test__\n")
PY
for n in $names; do
    python3 "$root/tests/fixtures/gguf_relabel.py" "$shared/vocab/ggml-vocab-gpt-2.gguf" "$tmp/v.gguf" tokenizer.ggml.pre "$n"
    "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/tokenize" "$tmp/v.gguf" "$tmp/texts.inp" "$tmp/ids-$n" 1 0
done
python3 - "$tmp" "$out" $names <<'PY'
import sys
tmp, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
texts = open(f"{tmp}/texts.inp", "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1]
groups, of = [], {}
for n in names:
    ids = open(f"{tmp}/ids-{n}").read().split("\n")[:-1]
    assert len(ids) == len(texts), n
    if ids not in groups:
        groups.append(ids)
    of[n] = groups.index(ids)
with open(out + ".tmp", "w") as f:
    f.write("# llama.cpp 0.7.0's llama_tokenize(add_special = true) on GPT-2's vocabulary relabelled with each\n"
            "# tokenizer.ggml.pre name; written by tests/diag/diag_pre_names_llamacpp.sh.\n"
            "# text HEX: the texts; group G: one line of ids per text follows; name NAME G\n")
    for t in texts:
        f.write(f"text {t.hex()}\n")
    for g, ids in enumerate(groups):
        f.write(f"group {g}\n")
        for line in ids:
            f.write(f"ids{line}\n")
    for n in names:
        f.write(f"name {n} {of[n]}\n")
import os
os.replace(out + ".tmp", out)
print(f"{out}: {len(names)} names, {len(groups)} distinct tokenizations of {len(texts)} texts")
PY
