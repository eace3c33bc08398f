#!/bin/sh
# diag_fixtures_llamacpp.sh: llama.cpp's outputs for the models a test
# writes itself (a diagnostic, not run by CI; needs network access to the
# Debian mirror of this machine's apt sources, see tests/diag/diag_llamacpp_env.sh). Runs
# build/.../TEST --write, which writes each model's GGUF and tokens and
# prints "NAME N_PROMPT N_TOK [k] [ctx=N] [last=R]" per model; runs Debian's
# llama.cpp on each (tests/diag/diag_llamacpp.sh: N_PROMPT tokens as one batch,
# then one at a time, F32 KV cache, a context of N, default 512) and puts
# the logits in OUTDIR as NAME.logits.f32 (the last R rows only, with
# last=R); with "k", also layer 0's K before and after llama.cpp's rope, the
# whole sequence as one batch (NAME.k_pre.f32, NAME.k_post.f32).
#
#   sh tests/diag/diag_fixtures_llamacpp.sh test_rope_scaling tests/fixtures/rope [CPU_VARIANT]
#   sh tests/diag/diag_fixtures_llamacpp.sh test_archs_llamacpp tests/fixtures/archs
set -eu
[ $# -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$2
variant=${3:-haswell}
bin=$root/build/cc/tests/$1
[ -x "$bin" ] || { echo "$bin: build the tests first (make tests)" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$out"
(cd "$root" && STRATA_SHARED=${STRATA_SHARED:-$root/../shared} "$bin" --write "$work") | while read -r name n_prompt n_tok opts; do
    k=; ctx=512; last=
    for o in $opts; do
        case $o in k) k=k ;; ctx=*) ctx=${o#ctx=} ;; last=*) last=${o#last=} ;; esac
    done
    DIAG_N_CTX=$ctx DIAG_LAST_ROWS=${last:-$n_tok} sh "$root/tests/diag/diag_llamacpp.sh" "$work/$name.gguf" "$work/$name.tokens.i32" "$n_prompt" \
        "$out/$name.logits.f32" "$variant" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    echo "$name: $(wc -c <"$out/$name.logits.f32") bytes of logits"
    [ "$k" = k ] || continue
    # Kcur-0 as [kv_dim, n_tok] is the rope's input, as [head_dim, n_kv_heads, n_tok] its output
    mkdir "$work/$name.dump"
    DUMP=0 DUMPDIR="$work/$name.dump" sh "$root/tests/diag/diag_llamacpp.sh" "$work/$name.gguf" "$work/$name.tokens.i32" \
        "$n_tok" "$work/$name.all.f32" "$variant" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
    cp "$(ls "$work/$name.dump"/Kcur-0__*_"$n_tok"_1.f32 | grep -v view)" "$out/$name.k_pre.f32"
    cp "$(ls "$work/$name.dump"/Kcur-0__*_*_"$n_tok".f32 | grep -v view)" "$out/$name.k_post.f32"
    echo "$name: $(wc -c <"$out/$name.k_pre.f32") bytes of K before and after the rope"
done
