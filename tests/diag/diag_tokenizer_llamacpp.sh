#!/bin/sh
# diag_tokenizer_llamacpp.sh: `strata tokenize` against llama.cpp's own
# llama_tokenize() (Debian's llama.cpp, tests/diag/diag_llamacpp_env.sh) on many
# random texts, for every vocabulary GGUF given (default: the vocab GGUFs in
# $STRATA_SHARED/vocab). A diagnostic, not run by CI: the vocab test pairs
# (tests/unit/tokenizer/test_tokenizer.c) hold 46 texts per vocabulary; this draws N more
# (default 2000, seed S, default 1) from words, numbers, whitespace runs,
# punctuation, contractions, accented, Greek, Cyrillic, CJK, Hangul, Arabic,
# Devanagari and emoji text, combining marks, the vocabulary's special-token
# texts, and (with BAD=1) invalid UTF-8 bytes, and runs them with the three
# flag sets strata tokenize has: no specials, BOS/EOS as the model says,
# and --parse-special. Prints per vocabulary and flag set how many texts
# give the same ids, and the first few that differ.
#
# PRES="NAME ..." runs each GGUF under each of these tokenizer.ggml.pre names
# instead of its own (relabelled by tests/fixtures/gguf_relabel.py), which is
# how a name's row is checked on a vocabulary that shows its flags (Llama 3's
# for whole-chunk lookup: tests/fixtures/hf_vocab_gguf.py makes one from the
# npm tokenizer.json of tests/e2e/e2e_vocab_npm.sh).
#
#   sh tests/diag/diag_tokenizer_llamacpp.sh [VOCAB.gguf ...]
#   N=10000 S=7 BAD=1 sh tests/diag/diag_tokenizer_llamacpp.sh
#   PRES="glm4 dbrx minimax-m2" sh tests/diag/diag_tokenizer_llamacpp.sh llama3.gguf
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${STRATA_SHARED:-$root/../shared}
bin=${STRATA_BIN:-$root/bin}
. "$root/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch
llamacpp_build "$root/tests/diag/diag_llamacpp_tokenize.c" tokenize
[ $# -gt 0 ] || set -- "$shared"/vocab/ggml-vocab-*.gguf
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-diag-tok-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# The texts: ids of a vocabulary's control tokens are not known here, so the
# special-token texts are the common ones of these families.
python3 - "$tmp/texts.inp" "${N:-2000}" "${S:-1}" "${BAD:-0}" <<'PY'
import random, sys
out, n, seed, bad = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
r = random.Random(seed)
words = ["the", "The", "THE", "Hello", "world", "don't", "we're", "I'll", "it's", "HTTP", "x86_64",
         "naïve", "café", "Führer", "straße", "Ωmega", "αβγ", "привет", "мир", "日本語", "中文", "한국어",
         "مرحبا", "नमस्ते", "ไทย", "🦙", "👍🏽", "🇫🇷", "e\u0301", "ﬁ", "Ⅻ", "½", "²", "٣", "𝔘𝔫𝔦"]
punct = list(".,;:!?-_'\"()[]{}<>/\\|@#$%^&*+=~`") + ["...", "--", "->", "=>", "::", "//", "/*", "*/", "'s", "'T"]
spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\t\n ", "\u3000", "\u00a0"]
special = ["<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "[CLS]", "[SEP]", "<|user|>",
           "<｜begin▁of▁sentence｜>", "<|begin_of_text|>"]
def piece():
    k = r.random()
    if k < 0.35: return r.choice(words)
    if k < 0.5: return str(r.randint(0, 10 ** r.randint(1, 12)))
    if k < 0.68: return r.choice(spaces)
    if k < 0.85: return r.choice(punct)
    if k < 0.9: return r.choice(special)
    if k < 0.97: return chr(r.choice([r.randint(0x20, 0x7e), r.randint(0xa0, 0x24f), r.randint(0x370, 0x52f),
                                      r.randint(0x4e00, 0x9fff), r.randint(0x1f300, 0x1faff), r.randint(0x300, 0x36f)]))
    return "\u2581"
with open(out, "wb") as f:
    for i in range(n):
        t = "".join(piece() for _ in range(r.randint(1, 12))).encode()
        if bad and r.random() < 0.2:
            p = r.randint(0, len(t))
            t = t[:p] + bytes([r.choice([0x80, 0xbf, 0xc3, 0xe2, 0xf0, 0xff, 0xc0])]) + t[p:]
        f.write(t + b"\n__ggml_vocab_test__\n")
PY

if [ -n "${PRES:-}" ]; then
    for v in "$@"; do
        for p in $PRES; do
            python3 "$root/tests/fixtures/gguf_relabel.py" "$v" "$tmp/$(basename "$v" .gguf)-as-$p.gguf" tokenizer.ggml.pre "$p"
        done
    done
    set -- "$tmp"/*-as-*.gguf
fi

total_bad=0
for v in "$@"; do
    name=$(basename "$v" .gguf)
    for flags in "0 0" "1 0" "0 1"; do
        set -- $flags
        opt=--no-bos
        [ "$1" = 1 ] && opt=
        [ "$2" = 1 ] && opt="--no-bos --parse-special"
        "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/tokenize" "$v" "$tmp/texts.inp" "$tmp/ref.out" "$1" "$2"
        # shellcheck disable=SC2086
        "$bin/strata" tokenize "$v" $opt --separator '\n__ggml_vocab_test__\n' <"$tmp/texts.inp" >"$tmp/our.out"
        python3 - "$tmp/texts.inp" "$tmp/ref.out" "$tmp/our.out" "$name" "add_special=$1 parse_special=$2" <<'PY' || total_bad=$((total_bad + 1))
import sys
texts = open(sys.argv[1], "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1]
ref = open(sys.argv[2]).read().split("\n")[:-1]
our = open(sys.argv[3]).read().split("\n")[:-1]
if len(ref) != len(texts) or len(our) != len(texts):
    print(f"{sys.argv[4]:28s} {sys.argv[5]}: line counts differ (texts {len(texts)}, llama.cpp {len(ref)}, strata {len(our)})")
    sys.exit(1)
bad = [i for i in range(len(texts)) if ref[i].split() != our[i].split()]
print(f"{sys.argv[4]:28s} {sys.argv[5]}: {len(texts) - len(bad)}/{len(texts)} equal")
for i in bad[:3]:
    print(f"    {texts[i]!r}\n      llama.cpp:{ref[i]}\n      strata:   {our[i]}")
sys.exit(1 if bad else 0)
PY
    done
done
echo "vocabulary/flag sets with differences: $total_bad"
[ "$total_bad" -eq 0 ]
