#!/bin/sh
# e2e_run_context.sh: `strata run` on the shipped model's pack (trained
# context 512) ends at a full context as it ends at EOS: the text so far on
# stdout, a note on stderr, exit 0; every run ends with one line of timings
# (prompt and generation tokens/s) on stderr; -c/--ctx beyond the trained
# context gets a warning from run, perplexity, bench and budget.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
G=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$G" ] || { echo "FAIL: $G is missing (it is part of the repository)"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-ctx-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$G" -o "$TMP/p" >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
S="$BIN/strata"

# a 24-token context: the prompt's tokens (BOS included; it stops mid-sentence, where an
# end of text is unlikely), then the rest generated (the last from the 24th position's
# logits), a note, exit 0
prompt="And God said unto Noah, The end of all flesh is come"
n=$("$S" tokenize "$TMP/p" -p "$prompt" | wc -w)
[ "$n" -gt 4 ] && [ "$n" -lt 20 ] || bad "the prompt is $n tokens"
"$S" run "$TMP/p" -p "$prompt" -c 24 -n 100 --temp 0 -t 1 >"$TMP/out" 2>"$TMP/err" ||
    bad "run to a full context: exit $? ($(cat "$TMP/err"))"
grep -q "stopped at the end of the context (24 tokens" "$TMP/err" || bad "no end-of-context note: $(cat "$TMP/err")"
[ -s "$TMP/out" ] || bad "run to a full context printed nothing"
grep -q "^strata run: prompt $n tokens, [0-9.]* tokens/s; generation $((24 - n + 1)) tokens, [0-9.]* tokens/s$" "$TMP/err" ||
    bad "run: no timings line for $n + $((24 - n + 1)) tokens: $(cat "$TMP/err")"
"$S" run "$TMP/p" -p "$prompt" --ctx 24 -n 100 --temp 0 --threads 1 >/dev/null 2>"$TMP/err" ||
    bad "run --ctx 24: exit $?"
grep -q "end of the context" "$TMP/err" || bad "run --ctx: no note"

# a run that ends by -n: the timings line and nothing about the context
"$S" run "$TMP/p" -p "$prompt" -n 4 --temp 0 >/dev/null 2>"$TMP/err" || bad "run -n 4: exit $?"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "generation 4 tokens" "$TMP/err" || bad "run -n 4: stderr: $(cat "$TMP/err")"

# a prompt longer than the context is refused before anything is generated
"$S" run "$TMP/p" -p "Once upon a time there was a little girl" -c 4 >/dev/null 2>"$TMP/err" && bad "run: a prompt over -c accepted"
grep -q "longer than the context of 4" "$TMP/err" || bad "run: prompt over -c: $(cat "$TMP/err")"

# beyond the trained context: a warning, and the work still done
W="beyond the 512 the model was trained on"
"$S" run "$TMP/p" -p "Once" -c 1024 -n 2 >/dev/null 2>"$TMP/err" || bad "run -c 1024: exit $?"
grep -q "warning: a context of 1024 tokens is $W" "$TMP/err" || bad "run -c 1024: no warning: $(cat "$TMP/err")"
"$S" bench "$TMP/p" --ctx 1024 -p 16 -n 4 -t 1 >/dev/null 2>"$TMP/err" || bad "bench --ctx 1024: exit $?"
grep -q "$W" "$TMP/err" || bad "bench --ctx 1024: no warning: $(cat "$TMP/err")"
"$S" budget "$TMP/p" --ctx 1024 >/dev/null 2>"$TMP/err" || bad "budget --ctx 1024: exit $?"
grep -q "$W" "$TMP/err" || bad "budget --ctx 1024: no warning: $(cat "$TMP/err")"
"$S" budget "$TMP/p" --ctx 512 >/dev/null 2>"$TMP/err" || bad "budget --ctx 512: exit $?"
[ -s "$TMP/err" ] && bad "budget --ctx 512 warns: $(cat "$TMP/err")"
i=0; while [ $i -lt 80 ]; do
    echo "In the beginning God created the heaven and the earth. And the earth was without form, and void."
    i=$((i + 1))
done >"$TMP/text.txt"
"$S" perplexity "$TMP/p" -f "$TMP/text.txt" -c 600 -t 1 >/dev/null 2>"$TMP/err" || bad "perplexity -c 600: exit $? ($(cat "$TMP/err"))"
grep -q "warning: a context of 600 tokens is $W" "$TMP/err" || bad "perplexity -c 600: no warning: $(cat "$TMP/err")"
"$S" perplexity "$TMP/p" -f "$TMP/text.txt" -c 64 -t 1 >/dev/null 2>"$TMP/err" || bad "perplexity -c 64: exit $?"
! grep -q warning "$TMP/err" || bad "perplexity -c 64 warns: $(cat "$TMP/err")"

[ $fails -eq 0 ] || exit 1
echo "strata run: end of context, timings, context warnings: ok"
