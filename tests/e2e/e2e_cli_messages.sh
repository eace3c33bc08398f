#!/bin/sh
# e2e_cli_messages.sh: what `strata` says to a user who gets something
# wrong, with no pack and no reference data needed:
# - a GGUF given where a pack is expected (by name or by its magic) gets one
#   line that says so and gives the `iq3pack build FILE -o PACKDIR` command,
#   from every subcommand that takes a pack; a missing path "does not exist";
#   a folder without index.txt is "not a finished pack"; none of them
#   suggests packindex;
# - every subcommand names the argument it rejects (exit 2), and -t and
#   --threads are both taken wherever threads are;
# - `strata --version` and `strata version` give the version and build;
# - no --help text points at private folders (seeds/, reference/, ../shared).
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-cli-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$TMP/m.gguf"
cp "$TMP/m.gguf" "$TMP/renamed.bin"
echo "some text" >"$TMP/t.txt"
mkdir "$TMP/half"

# args for each subcommand that takes a pack, with PACK where it goes
args() {
    case $1 in
    run) echo "run PACK -p hi" ;;
    perplexity) echo "perplexity PACK -f $TMP/t.txt" ;;
    routing) echo "routing PACK -f $TMP/t.txt" ;;
    *) echo "$1 PACK" ;;
    esac
}
# expect CODE WANT CMD...: exit CODE and one line on stderr containing WANT
expect() {
    code=$1 want=$2
    shift 2
    "$BIN/strata" "$@" >/dev/null 2>"$TMP/err"
    rc=$?
    [ $rc -eq "$code" ] || bad "strata $*: exit $rc, want $code ($(head -n 1 "$TMP/err"))"
    grep -qF -- "$want" "$TMP/err" || bad "strata $*: '$(head -n 1 "$TMP/err")' does not say '$want'"
    ! grep -q packindex "$TMP/err" || bad "strata $*: suggests packindex: $(cat "$TMP/err")"
}
for c in run info bench check budget perplexity routing; do
    a=$(args $c)
    # shellcheck disable=SC2086
    expect 1 "is a GGUF model file, not a pack: make a pack with \`iq3pack build $TMP/m.gguf -o PACKDIR\`" $(echo "$a" | sed "s#PACK#$TMP/m.gguf#")
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || bad "strata $c FILE.gguf: more than one line: $(cat "$TMP/err")"
    # shellcheck disable=SC2086
    expect 1 "is a GGUF model file" $(echo "$a" | sed "s#PACK#$TMP/renamed.bin#")
    # shellcheck disable=SC2086
    expect 1 "$TMP/nope: does not exist" $(echo "$a" | sed "s#PACK#$TMP/nope#")
    # shellcheck disable=SC2086
    expect 1 "no index (index.txt is missing): not a finished pack; remove it and build it again" $(echo "$a" | sed "s#PACK#$TMP/half#")
done

# the rejected argument is named; exit 2
expect 2 "--bogus" run "$TMP/half" -p hi --bogus
expect 2 "-n needs an integer" run "$TMP/half" -p hi -n abc
expect 2 "'abc'" run "$TMP/half" -p hi -n abc
expect 2 "--top-p needs a number in 0..1, got '2'" run "$TMP/half" -p hi --top-p 2
expect 2 "--min-p" run "$TMP/half" -p hi --min-p -1
expect 2 "--temp" run "$TMP/half" -p hi --temp x
expect 2 "--kv-type does not take 'q4'" run "$TMP/half" -p hi --kv-type q4
expect 2 "no prompt given" run "$TMP/half"
expect 2 "unexpected argument 'extra'" run "$TMP/half" extra -p hi
expect 2 "--bogus" perplexity "$TMP/half" -f "$TMP/t.txt" --bogus 1
expect 2 "-c needs an integer" perplexity "$TMP/half" -f "$TMP/t.txt" -c 2
expect 2 "no text given" perplexity "$TMP/half"
expect 2 "--bogus" routing "$TMP/half" -f "$TMP/t.txt" --bogus 1
expect 2 "-c needs an integer" routing "$TMP/half" -f "$TMP/t.txt" -c 1
expect 2 "no text given" routing "$TMP/half"
expect 2 "--bogus" bench "$TMP/half" --bogus 1
expect 2 "--cpu-kernels: 'x' is not a kernel table this CPU runs" bench "$TMP/half" --cpu-kernels x
expect 2 "-p needs an integer" bench "$TMP/half" -p zero
expect 2 "--bogus" info "$TMP/half" --bogus
expect 2 "unexpected argument 'more'" check "$TMP/half" more
expect 2 "no PACK given" info
expect 2 "--vram takes a size" budget "$TMP/half" --vram 3Q
expect 2 "--bogus" budget "$TMP/half" --bogus
expect 2 "--ctx needs an integer" budget "$TMP/half" --ctx none
expect 2 "--bogus" tokenize "$TMP/m.gguf" --bogus
expect 2 "--special goes only with --decode" tokenize "$TMP/m.gguf" --special
expect 2 "--bogus" template "$TMP/m.gguf" --bogus
expect 2 "--api takes openai, anthropic or responses, not 'x'" template "$TMP/m.gguf" --api x
# one spelling for threads: -t and --threads everywhere threads are taken
for c in run perplexity bench routing; do
    a=$(args $c | sed "s#PACK#$TMP/half#")
    for t in -t --threads; do
        # shellcheck disable=SC2086
        expect 2 "$t needs an integer in 0..1024, got 'many'" $a $t many
        # shellcheck disable=SC2086
        expect 1 "not a finished pack" $a $t 2
    done
done
expect 2 "--threads needs an integer" serve "$TMP/half" --threads many

# --version: version and build
for v in --version version; do
    "$BIN/strata" $v >"$TMP/out" 2>&1 || bad "strata $v: exit $?"
    grep -q "^strata [0-9][0-9]*\.[0-9][0-9]*\.[0-9]" "$TMP/out" || bad "strata $v: no version: $(cat "$TMP/out")"
    grep -q "^build: .*\(gcc\|clang\)" "$TMP/out" || bad "strata $v: no compiler: $(cat "$TMP/out")"
    grep -q "CPU kernels: scalar" "$TMP/out" || bad "strata $v: no kernels: $(cat "$TMP/out")"
    grep -q "^CUDA backend: \(built in\|not built\)" "$TMP/out" || bad "strata $v: no CUDA line: $(cat "$TMP/out")"
done
if [ -x "$BIN/strata-cuda" ]; then
    "$BIN/strata-cuda" --version | grep -q "^CUDA backend: built in" || bad "strata-cuda --version: not 'built in'"
fi

# no help text points at private folders
for c in "" run serve info check perplexity bench routing tokenize template budget pull version; do
    # shellcheck disable=SC2086
    "$BIN/strata" $c --help >"$TMP/help" 2>&1
    if grep -n "seeds/\|reference/\|\.\./shared\|AGENTTRASH" "$TMP/help" >"$TMP/hits"; then
        bad "strata $c --help points at a private folder: $(cat "$TMP/hits")"
    fi
done

[ $fails -eq 0 ] || exit 1
echo "strata messages: ok"
