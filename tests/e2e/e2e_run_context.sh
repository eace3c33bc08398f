#!/bin/sh
# e2e_run_context.sh: `strata run` on a stories260K pack (trained context
# 2048) ends at a full context as it ends at EOS: the text so far on stdout,
# a note on stderr, exit 0; every run ends with one line of timings (prompt
# and generation tokens/s) on stderr; -c/--ctx beyond the trained context
# gets a warning from run, perplexity, bench and budget.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
M=${STRATA_SHARED:-../shared}/models/stories260K
[ -f "$M/stories260K.gguf" ] || { echo "SKIP: $M/stories260K.gguf is absent"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-ctx-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$M/stories260K.gguf" -o "$TMP/p" >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
S="$BIN/strata"

# a 16-token context: 5 prompt tokens, then 12 generated (the last from the
# 16th position's logits), a note, exit 0
"$S" run "$TMP/p" -p "Once upon a time" -c 16 -n 100 --temp 0 -t 1 >"$TMP/out" 2>"$TMP/err" ||
    bad "run to a full context: exit $? ($(cat "$TMP/err"))"
grep -q "stopped at the end of the context (16 tokens" "$TMP/err" || bad "no end-of-context note: $(cat "$TMP/err")"
[ -s "$TMP/out" ] || bad "run to a full context printed nothing"
grep -q "^strata run: prompt 5 tokens, [0-9.]* tokens/s; generation 12 tokens, [0-9.]* tokens/s$" "$TMP/err" ||
    bad "run: no timings line: $(cat "$TMP/err")"
"$S" run "$TMP/p" -p "Once upon a time" --ctx 16 -n 100 --temp 0 --threads 1 >/dev/null 2>"$TMP/err" ||
    bad "run --ctx 16: exit $?"
grep -q "end of the context" "$TMP/err" || bad "run --ctx: no note"

# a run that ends by -n: the timings line and nothing about the context
"$S" run "$TMP/p" -p "Once upon a time" -n 4 --temp 0 >/dev/null 2>"$TMP/err" || bad "run -n 4: exit $?"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "generation 4 tokens" "$TMP/err" || bad "run -n 4: stderr: $(cat "$TMP/err")"

# a prompt longer than the context is refused before anything is generated
"$S" run "$TMP/p" -p "Once upon a time there was a little girl" -c 4 >/dev/null 2>"$TMP/err" && bad "run: a prompt over -c accepted"
grep -q "longer than the context of 4" "$TMP/err" || bad "run: prompt over -c: $(cat "$TMP/err")"

# beyond the trained context: a warning, and the work still done
W="beyond the 2048 the model was trained on"
"$S" run "$TMP/p" -p "Once" -c 4096 -n 2 >/dev/null 2>"$TMP/err" || bad "run -c 4096: exit $?"
grep -q "warning: a context of 4096 tokens is $W" "$TMP/err" || bad "run -c 4096: no warning: $(cat "$TMP/err")"
"$S" bench "$TMP/p" --ctx 4096 -p 16 -n 4 -t 1 >/dev/null 2>"$TMP/err" || bad "bench --ctx 4096: exit $?"
grep -q "$W" "$TMP/err" || bad "bench --ctx 4096: no warning: $(cat "$TMP/err")"
"$S" budget "$TMP/p" --ctx 4096 >/dev/null 2>"$TMP/err" || bad "budget --ctx 4096: exit $?"
grep -q "$W" "$TMP/err" || bad "budget --ctx 4096: no warning: $(cat "$TMP/err")"
"$S" budget "$TMP/p" --ctx 2048 >/dev/null 2>"$TMP/err" || bad "budget --ctx 2048: exit $?"
[ -s "$TMP/err" ] && bad "budget --ctx 2048 warns: $(cat "$TMP/err")"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40; do
    cat "$M"/v[0-3].prompt.txt "$M"/v[0-3].gen.txt
done >"$TMP/text.txt"
"$S" perplexity "$TMP/p" -f "$TMP/text.txt" -c 2100 -t 1 >/dev/null 2>"$TMP/err" || bad "perplexity -c 2100: exit $? ($(cat "$TMP/err"))"
grep -q "warning: a context of 2100 tokens is $W" "$TMP/err" || bad "perplexity -c 2100: no warning: $(cat "$TMP/err")"
"$S" perplexity "$TMP/p" -f "$TMP/text.txt" -c 64 -t 1 >/dev/null 2>"$TMP/err" || bad "perplexity -c 64: exit $?"
! grep -q warning "$TMP/err" || bad "perplexity -c 64 warns: $(cat "$TMP/err")"

[ $fails -eq 0 ] || exit 1
echo "strata run: end of context, timings, context warnings: ok"
