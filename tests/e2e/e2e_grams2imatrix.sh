#!/bin/sh
# e2e_grams2imatrix.sh: runs bin/grams2imatrix over every recording in
# $STRATA_SHARED/vectors/imatrix/ and compares with the seed's answers: exit
# status, stderr line for line (notes, -v lines, IMATRIX_OK or REFUSED), the
# output GGUF byte for byte, and no output left behind after a refusal.
# Three kinds of case differ on purpose: usage_missing_out (argparse's own
# wording; only the status and the complaint are compared),
# ref_expert_conflict_nan (the seed's NaN != NaN quirk: we refuse the NaN
# itself, NONFINITE, by name) and ref_exists* (the seed's keyword and path,
# with advice that names no private folder).
# Also: --names llama on ok_basic gives a file that our reader opens.
set -u
BIN=${STRATA_BIN:?STRATA_BIN unset}
SET=${STRATA_SHARED:-../shared}/vectors/imatrix
[ -d "$SET" ] || { echo "skip: $SET is absent"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-g2i-XXXXXX") || exit 1
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
fails=0; n=0
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }

for dir in "$SET"/*/; do
    name=$(basename "$dir")
    [ -f "$dir/cmd.txt" ] || continue
    n=$((n + 1))
    cp -R "$dir" "$T/$name" && chmod -R u+w "$T/$name"
    rm -f "$T/$name/out.gguf"                  # the seed's answer, kept aside
    case "$name" in                            # empty dirs that git cannot carry
    ref_no_grams_empty|ref_exists_first|ref_bad_chunk_size_negative) mkdir -p "$T/$name/calib" ;;
    esac
    args=$(sed 's/.*grams-to-imatrix\.py //' "$dir/cmd.txt")
    want_rc=$(cat "$dir/exit_code.txt")
    # shellcheck disable=SC2086 # the arguments are plain words
    (cd "$T" && "$BIN/grams2imatrix" $args) >"$T/$name.out" 2>"$T/$name.err"
    rc=$?
    [ "$rc" = "$want_rc" ] || fail "$name" "exit $rc, expected $want_rc"
    [ -s "$T/$name.out" ] && fail "$name" "stdout is not empty"
    case "$name" in
    usage_missing_out)
        grep -q 'the following arguments are required: -o/--out' "$T/$name.err" ||
            fail "$name" "no usage complaint: $(cat "$T/$name.err")" ;;
    ref_expert_conflict_nan)
        want="REFUSED NONFINITE ref_expert_conflict_nan/calib/gram.r0.blk.0.ffn_down_exps.0.bin: diagonal element 1 is nan; a non-finite second moment is a corrupt recording"
        [ "$(cat "$T/$name.err")" = "$want" ] || fail "$name" "stderr: $(cat "$T/$name.err")" ;;
    ref_exists*)
        # the seed's line up to its advice, which named a private folder
        want="$(sed 's/; move it to .AGENTTRASH\/ or name another -o$//' "$dir/stderr.txt"); move or delete it, or name another -o"
        [ "$(cat "$T/$name.err")" = "$want" ] || fail "$name" "stderr: $(cat "$T/$name.err"), expected: $want" ;;
    *)
        cmp -s "$T/$name.err" "$dir/stderr.txt" ||
            { fail "$name" "stderr differs:"; diff "$dir/stderr.txt" "$T/$name.err" | head -n 10; } ;;
    esac
    out=$(echo "$args" | sed -n 's/.*-o \([^ ]*\).*/\1/p')
    if [ "$want_rc" = 0 ]; then
        cmp "$T/$out" "$dir/out.gguf" || fail "$name" "out.gguf differs from the seed's"
    elif [ -f "$dir/preexisting.gguf" ]; then
        cmp -s "$T/$out" "$dir/preexisting.gguf" || fail "$name" "the preexisting file changed"
    elif [ -n "$out" ] && [ -e "$T/$out" ]; then
        fail "$name" "a refusal left $out behind"
    fi
    leftovers=$(find "$T/$name" -name '*.tmp.*' | head -n 1)
    [ -z "$leftovers" ] || fail "$name" "temporary file left: $leftovers"
done
[ "$n" -ge 30 ] || fail "set" "only $n cases found in $SET"

# llama.cpp names: a fresh file in the other style that our reader accepts.
if [ -d "$T/ok_basic/calib" ]; then
    (cd "$T" && "$BIN/grams2imatrix" ok_basic/calib -o llama.gguf --names llama) 2>"$T/llama.err" ||
        fail llama "exit $?: $(cat "$T/llama.err")"
    grep -q '^IMATRIX_OK entries=24 ' "$T/llama.err" || fail llama "$(cat "$T/llama.err")"
    grep -q 'general.type' "$T/llama.gguf" || fail llama "no general.type key"
    grep -q 'blk.0.ffn_gate_exps.weight.in_sum2' "$T/llama.gguf" || fail llama "no ffn_gate_exps entry"
fi

[ "$fails" -eq 0 ] || { echo "$fails failure(s) over $n cases"; exit 1; }
echo "all $n imatrix cases agree with the seed"
