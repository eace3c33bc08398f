#!/bin/sh
# diag_rope_llamacpp.sh: llama.cpp's logits for test_rope_scaling's variants
# (a diagnostic, not run by CI; needs network access to deb.debian.org, see
# tests/diag_llamacpp_env.sh). Writes each variant's GGUF and tokens with
# build/.../test_rope_scaling --write, runs Debian's llama.cpp on them
# (tests/diag_llamacpp.sh: the prompt as one batch, then one token at a
# time, F32 KV cache) and puts the logits, and layer 0's K before and after
# llama.cpp's rope, in OUTDIR (default tests/fixtures/rope, the fixtures the
# test compares against).
#
#   sh tests/diag_rope_llamacpp.sh [OUTDIR] [CPU_VARIANT]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/tests/fixtures/rope}
variant=${2:-haswell}
bin=$(ls -d "$root"/build/*/tests/test_rope_scaling 2>/dev/null | head -n 1)
[ -x "$bin" ] || { echo "build the tests first (make tests)" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$out"
(cd "$root" && STRATA_SHARED=${STRATA_SHARED:-$root/../shared} "$bin" --write "$work") | while read -r name n_prompt n_tok; do
    sh "$root/tests/diag_llamacpp.sh" "$work/$name.gguf" "$work/$name.tokens.i32" "$n_prompt" \
        "$out/$name.logits.f32" "$variant" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    # the whole sequence as one batch: layer 0's K before its rope
    # (Kcur-0 as [kv_dim, n_tok]) and after ([head_dim, n_kv_heads, n_tok])
    mkdir "$work/$name.dump"
    DUMP=0 DUMPDIR="$work/$name.dump" sh "$root/tests/diag_llamacpp.sh" "$work/$name.gguf" "$work/$name.tokens.i32" \
        "$n_tok" "$work/$name.all.f32" "$variant" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    cp "$(ls "$work/$name.dump"/Kcur-0__*_"$n_tok"_1.f32 | grep -v view)" "$out/$name.k_pre.f32"
    cp "$(ls "$work/$name.dump"/Kcur-0__*_*_"$n_tok".f32 | grep -v view)" "$out/$name.k_post.f32"
    echo "$name: $(wc -c <"$out/$name.logits.f32") bytes of logits, $(wc -c <"$out/$name.k_pre.f32") of K"
done
