#!/bin/sh
# e2e_routing.sh: `strata routing` on a tinymoe pack built by iq3pack
# (2 MoE layers of 8 experts, 2 used, context 512):
#  - the table: a header, one row per MoE layer (0 and 1), then 'all'; each
#    row's tokens are the text's tokens, entropy <= uniform = log2(8) = 3,
#    the top-25% share in [0.25, 1] (the busiest quarter takes a quarter of
#    the uses at least), reuse in [0, 1] and not falling as the window grows;
#    'all' is the mean of the layers; --window sets the reuse columns;
#  - --trace-out writes a trace whose header has the table's token count and
#    whose line count matches; --trace-in reads it back (the loader) and
#    prints the same rows; -c 100 and -t 1 give the same trace (each chunk
#    from a fresh context) with other chunk boundaries, so only the rows'
#    count is compared; -c past the context is cut to it with a note;
#  - refusals: no PACK and no -f (exit 2), a bad --window (exit 2), an
#    existing --trace-out (exit 1, before any work: nothing on stdout, the
#    file untouched), a hostile --trace-in (exit 1, "FILE:LINE:"), a dense
#    pack (stories260K, when present: exit 1, "has no routed experts").
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
shared=${STRATA_SHARED:-../shared}
moe_gguf="$shared/models/tinymoe/tinymoe-f32.gguf"
dense_gguf="$shared/models/stories260K/stories260K.gguf"
text="$shared/models/tinymoe/calib.txt"
[ -f "$moe_gguf" ] && [ -f "$text" ] || { echo "SKIP: $moe_gguf or $text is absent"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-routing-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
# expect CODE WANT CMD...: exit CODE and WANT in stderr
expect() {
    code=$1 want=$2
    shift 2
    "$bin/strata" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq "$code" ] || bad "strata $*: exit $rc, want $code ($(head -n 1 "$tmp/err"))"
    grep -qF -- "$want" "$tmp/err" || bad "strata $*: '$(head -n 1 "$tmp/err")' does not say '$want'"
}

"$bin/iq3pack" build "$moe_gguf" -o "$tmp/moe" >/dev/null 2>&1 || { echo "FAIL: iq3pack build tinymoe"; exit 1; }

"$bin/strata" routing --help | grep -q "usage: strata routing PACK -f TEXT" || bad "routing --help"
"$bin/strata" --help | grep -q "^  routing " || bad "strata --help lacks routing"

"$bin/strata" routing "$tmp/moe" -f "$text" -t 2 --trace-out "$tmp/t.trace" >"$tmp/table" 2>"$tmp/err" ||
    bad "routing: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && bad "routing wrote to stderr: $(cat "$tmp/err")"
# shape: the comment, the header, layers 0 and 1, all
awk 'NR == 1 && !/^# / { print "line 1 is not a comment: " $0 }
     NR == 2 && $0 !~ /^layer +tokens +entropy +uniform +top25% +reuse@1 +reuse@4 +reuse@16$/ { print "header: " $0 }
     NR >= 3 && NF != 8 { print "row of " NF " fields: " $0 }
     NR == 3 && $1 != "0" { print "row 3 is not layer 0: " $0 }
     NR == 4 && $1 != "1" { print "row 4 is not layer 1: " $0 }
     NR == 5 && $1 != "all" { print "row 5 is not all: " $0 }
     END { if (NR != 5) print NR " lines, want 5" }' "$tmp/table" >"$tmp/shape"
[ -s "$tmp/shape" ] && bad "table shape: $(cat "$tmp/shape") in: $(cat "$tmp/table")"
# the figures
awk 'NR >= 3 {
        if ($3 > $4 + 1e-9) print $1 ": entropy " $3 " above uniform " $4
        if ($4 != "3.000") print $1 ": uniform " $4 ", want log2(8)"
        if ($5 < 0.25 - 1e-9 || $5 > 1) print $1 ": top25% " $5
        for (i = 6; i <= 8; i++) if ($i < 0 || $i > 1) print $1 ": reuse " $i
        if ($6 > $7 || $7 > $8) print $1 ": reuse falls as the window grows: " $6 " " $7 " " $8
        if (NR < 5) { n++; for (i = 3; i <= 8; i++) s[i] += $i }
        else for (i = 3; i <= 8; i++) if ((s[i] / n) - $i > 0.0011 || $i - (s[i] / n) > 0.0011) print "all: column " i " " $i " is not the mean " s[i] / n
     }' "$tmp/table" >"$tmp/figs"
[ -s "$tmp/figs" ] && bad "figures: $(cat "$tmp/figs")"
tokens=$(awk 'NR == 3 { print $2 }' "$tmp/table")
want=$("$bin/strata" tokenize "$tmp/moe" <"$text" | wc -w)
[ "$tokens" = "$want" ] || bad "the table counts $tokens tokens, strata tokenize $want"
awk 'NR >= 3 { print $2 }' "$tmp/table" | sort -u | grep -qx "$tokens" || bad "rows disagree on tokens"

# the trace: its header, one line per token, read back by the loader with the same rows
head -n 1 "$tmp/t.trace" | grep -qx "strata-routing-trace 1 layers 2 experts 8 used 2 tokens $tokens" ||
    bad "trace header: $(head -n 1 "$tmp/t.trace")"
[ "$(wc -l <"$tmp/t.trace")" -eq $((tokens + 1)) ] || bad "trace: $(wc -l <"$tmp/t.trace") lines for $tokens tokens"
"$bin/strata" routing --trace-in "$tmp/t.trace" >"$tmp/table2" 2>"$tmp/err" || bad "--trace-in: $(cat "$tmp/err")"
[ "$(tail -n +2 "$tmp/table")" = "$(tail -n +2 "$tmp/table2")" ] || bad "--trace-in gives other rows: $(cat "$tmp/table2")"
ls "$tmp" | grep -q '\.tmp\.' && bad "a temporary file was left: $(ls "$tmp")"

# --window; chunks of 100; -c past the context
"$bin/strata" routing --trace-in "$tmp/t.trace" --window 2,8 | sed -n 2p | grep -q "reuse@2  *reuse@8$" || bad "--window 2,8"
"$bin/strata" routing "$tmp/moe" -f "$text" -t 1 -c 100 >"$tmp/t100" 2>"$tmp/err" || bad "-c 100: $(cat "$tmp/err")"
head -n 1 "$tmp/t100" | grep -q "$tokens tokens in $(( (tokens + 99) / 100 )) chunks of at most 100" || bad "-c 100: $(head -n 1 "$tmp/t100")"
[ "$(wc -l <"$tmp/t100")" -eq 5 ] || bad "-c 100: $(cat "$tmp/t100")"
"$bin/strata" routing "$tmp/moe" -f "$text" -c 4096 >"$tmp/out" 2>"$tmp/err" || bad "-c 4096: $(cat "$tmp/err")"
grep -q "chunks of 512 tokens, the model's context" "$tmp/err" || bad "-c 4096 note: $(cat "$tmp/err")"
head -n 1 "$tmp/out" | grep -q "in 3 chunks of at most 512" || bad "-c 4096: $(head -n 1 "$tmp/out")"

# refusals
expect 2 "no PACK given" routing -f "$text"
expect 2 "no text given (-f TEXT)" routing "$tmp/moe"
expect 2 "--window needs windows in 1..1048576" routing "$tmp/moe" -f "$text" --window 0
expect 2 "--window needs windows" routing "$tmp/moe" -f "$text" --window 1,,4
expect 2 "--window takes at most 8 windows" routing "$tmp/moe" -f "$text" --window 1,2,3,4,5,6,7,8,9
expect 2 "unknown option" routing "$tmp/moe" -f "$text" --bogus
expect 2 "PACK is not used with it" routing "$tmp/moe" --trace-in "$tmp/t.trace"
cp "$tmp/t.trace" "$tmp/keep"
expect 1 "--trace-out $tmp/t.trace: the file exists (it is never overwritten)" routing "$tmp/moe" -f "$text" --trace-out "$tmp/t.trace"
[ -s "$tmp/out" ] && bad "an existing --trace-out still ran: $(cat "$tmp/out")"
cmp -s "$tmp/t.trace" "$tmp/keep" || bad "an existing --trace-out was changed"
expect 1 "$tmp/nope.txt" routing "$tmp/moe" -f "$tmp/nope.txt"
head -n "$tokens" "$tmp/t.trace" >"$tmp/short.trace"
expect 1 "$tmp/short.trace:$((tokens + 1)): truncated: the header promises $tokens tokens, the file ends after $((tokens - 1))" routing --trace-in "$tmp/short.trace"
head -n 3 "$tmp/t.trace" >"$tmp/cut.trace"
expect 1 "$tmp/cut.trace:1: truncated: the header promises $tokens tokens of 2 layers" routing --trace-in "$tmp/cut.trace"
sed '3s/.*/0,9 1,2/' "$tmp/t.trace" >"$tmp/range.trace"
expect 1 "$tmp/range.trace:3: layer 0: expert 9 of 8" routing --trace-in "$tmp/range.trace"
if [ -f "$dense_gguf" ]; then
    "$bin/iq3pack" build "$dense_gguf" -o "$tmp/dense" >/dev/null 2>&1 || bad "iq3pack build stories260K"
    expect 1 "$tmp/dense has no routed experts (a dense model)" routing "$tmp/dense" -f "$text" --trace-out "$tmp/d.trace"
    [ -e "$tmp/d.trace" ] && bad "a dense pack left a trace"
fi
[ $fails -eq 0 ] || exit 1
echo "strata routing: ok"
