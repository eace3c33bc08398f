#!/bin/sh
# e2e_speculate.sh: speculative decoding from the command line on the
# shipped model's pack (built here by iq3pack: IQ3 experts, the other
# tensors as the GGUF has them):
#  - `run --draft ngram` on a prompt that repeats itself gives the text of
#    plain greedy decoding and the same --logits-out rows, byte for byte,
#    at --draft-max 1, 3 and 16, and through the RAM tier (--mem, 3 experts
#    in memory), and says how many guesses it kept (some);
#    with --temp 0.8 it runs and keeps some too;
#  - a context that fills up ends the same way with and without drafts;
#  - `bench --draft ngram` prints its comparison and "the same tokens";
#  - `serve --draft ngram --no-prompt-cache`: a greedy completion with logprobs equals the
#    same request with "draft": "none" (text and logprobs), "draft": "ngram"
#    with "draft_max": 2 too; /metrics counts the guesses, some kept; a bad
#    "draft" is a 400 naming the field;
#  - `--draft mtp` (the model's next-token-prediction block, which the pack
#    keeps): the same text and --logits-out rows as plain greedy decoding at
#    --draft-max 1 and 3, over a third of its guesses kept (chance: 1 in 1536); bench
#    prints its comparison; serve's "draft": "mtp" gives the "none" text and
#    logprobs; a pack built with --no-nextn is refused by name (run: exit 1;
#    serve --draft mtp: does not start; a request's "draft": "mtp": 400);
#  - bad values of --draft, --draft-max and --draft-prompt without --draft
#    are refused with one line and exit 2.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
G=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$G" ] || { echo "FAIL: $G is missing (it is part of the repository)"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-spec-XXXXXX") || exit 1
tmp=$TMP
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
. "$(dirname "$0")/../lib/server.sh"
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$G" -o "$TMP/p" >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
P="Once upon a time, Tom had a red ball. Tom liked the red ball. One day, Tom had a red ball"
"$BIN/strata" run "$TMP/p" -p "$P" -n 80 --temp 0 -t 2 --logits-out "$TMP/plain.f32" >"$TMP/plain.txt" 2>"$TMP/plain.err" ||
    bad "plain run: $(cat "$TMP/plain.err")"
for k in 1 3 16; do
    "$BIN/strata" run "$TMP/p" -p "$P" -n 80 --temp 0 -t 2 --draft ngram --draft-max $k --logits-out "$TMP/d$k.f32" \
        >"$TMP/d$k.txt" 2>"$TMP/d$k.err" || { bad "run --draft-max $k: $(cat "$TMP/d$k.err")"; continue; }
    cmp -s "$TMP/plain.txt" "$TMP/d$k.txt" || bad "--draft-max $k: text differs: '$(cat "$TMP/d$k.txt")' against '$(cat "$TMP/plain.txt")'"
    cmp -s "$TMP/plain.f32" "$TMP/d$k.f32" || bad "--draft-max $k: --logits-out differs from plain decoding's"
    kept=$(sed -n 's/.*draft ngram: \([0-9]*\) of \([0-9]*\) guessed.*/\1/p' "$TMP/d$k.err")
    [ -n "$kept" ] && [ "$kept" -gt 0 ] || bad "--draft-max $k: no guess kept: $(cat "$TMP/d$k.err")"
    echo "draft-max $k: $(grep 'draft ngram' "$TMP/d$k.err")"
done
# the next-token-prediction block: the same bytes, and its guesses mostly kept
for k in 1 3; do
    "$BIN/strata" run "$TMP/p" -p "$P" -n 80 --temp 0 -t 2 --draft mtp --draft-max $k --logits-out "$TMP/m$k.f32" \
        >"$TMP/m$k.txt" 2>"$TMP/m$k.err" || { bad "run --draft mtp --draft-max $k: $(cat "$TMP/m$k.err")"; continue; }
    cmp -s "$TMP/plain.txt" "$TMP/m$k.txt" || bad "mtp --draft-max $k: text differs: '$(cat "$TMP/m$k.txt")'"
    cmp -s "$TMP/plain.f32" "$TMP/m$k.f32" || bad "mtp --draft-max $k: --logits-out differs from plain decoding's"
    kept=$(sed -n 's/.*draft mtp: \([0-9]*\) of \([0-9]*\) guessed.*/\1 \2/p' "$TMP/m$k.err")
    set -- $kept
    [ $# -eq 2 ] && [ $(($1 * 3)) -gt "$2" ] || bad "mtp --draft-max $k: not a third of the guesses kept: $(cat "$TMP/m$k.err")"
    echo "mtp draft-max $k: $(grep 'draft mtp' "$TMP/m$k.err")"
done
"$BIN/iq3pack" build "$G" --no-nextn -o "$TMP/nn" >/dev/null 2>&1 || bad "build --no-nextn"
[ "$(du -sk "$TMP/nn" | cut -f1)" -lt "$(du -sk "$TMP/p" | cut -f1)" ] || bad "--no-nextn: the pack is not smaller"
"$BIN/strata" run "$TMP/nn" -p "$P" -n 4 --draft mtp >"$TMP/o" 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "^strata run: --draft mtp: the pack has no next-token-prediction block" "$TMP/e" ||
    bad "run --draft mtp on a --no-nextn pack: exit $rc, '$(head -1 "$TMP/e")'"
"$BIN/strata" run "$TMP/nn" -p "$P" -n 80 --temp 0 -t 2 >"$TMP/nn.txt" 2>/dev/null || bad "run on the --no-nextn pack"
cmp -s "$TMP/plain.txt" "$TMP/nn.txt" || bad "the --no-nextn pack's text differs"
# through the RAM tier (3 experts in memory, the rest read from experts.bin): the same bytes
STRATA_TIER_SLOTS=3 "$BIN/strata" run "$TMP/p" -p "$P" -n 80 --temp 0 -t 2 --mem 64M --draft ngram --logits-out "$TMP/tier.f32" \
    >"$TMP/tier.txt" 2>"$TMP/tier.err" || bad "run --draft ngram through the tier: $(cat "$TMP/tier.err")"
grep -q "routed experts stay in memory" "$TMP/tier.err" || bad "no tier: $(cat "$TMP/tier.err")"
cmp -s "$TMP/plain.txt" "$TMP/tier.txt" && cmp -s "$TMP/plain.f32" "$TMP/tier.f32" || bad "draft through the tier: text or logits differ"
"$BIN/strata" run "$TMP/p" -p "$P" -n 60 --temp 0.8 --seed 3 -t 2 --draft ngram >"$TMP/s.txt" 2>"$TMP/s.err" ||
    bad "sampled run: $(cat "$TMP/s.err")"
[ -s "$TMP/s.txt" ] || bad "sampled run printed nothing"
grep -q "draft ngram: [0-9]* of [0-9]* guessed" "$TMP/s.err" || bad "sampled run: no draft line: $(cat "$TMP/s.err")"
# a context of 48 tokens fills during generation: both stop at its end with the same text
"$BIN/strata" run "$TMP/p" -p "$P" -n 80 -c 48 --temp 0 -t 2 >"$TMP/c0.txt" 2>"$TMP/c0.err" || bad "plain -c 48"
"$BIN/strata" run "$TMP/p" -p "$P" -n 80 -c 48 --temp 0 -t 2 --draft ngram >"$TMP/c1.txt" 2>"$TMP/c1.err" || bad "draft -c 48: $(cat "$TMP/c1.err")"
cmp -s "$TMP/c0.txt" "$TMP/c1.txt" || bad "-c 48: texts differ: '$(cat "$TMP/c1.txt")' against '$(cat "$TMP/c0.txt")'"
grep -q "stopped at the end of the context" "$TMP/c1.err" || bad "-c 48 with a draft: no end-of-context line: $(cat "$TMP/c1.err")"
for d in ngram mtp; do
    "$BIN/strata" bench "$TMP/p" -p 16 -n 48 -r 2 -t 2 --draft $d --draft-prompt "$P" >"$TMP/b.txt" 2>"$TMP/b.err" ||
        bad "bench --draft $d: $(cat "$TMP/b.err")"
    grep -q "^draft $d" "$TMP/b.txt" &&
        grep -q "speed-up [0-9.]*x; [0-9]* of [0-9]* guessed tokens kept.*the same tokens" "$TMP/b.txt" ||
        bad "bench --draft $d: $(cat "$TMP/b.txt")"
    grep "speed-up" "$TMP/b.txt"
done
# the server: its default --draft ngram, a request can turn it off or shorten it.
# Without the prompt cache: a cached prefix re-evaluates the prompt's last
# token alone, which moves later logits in their last bits (engine_model.h)
"$BIN/strata" serve "$TMP/p" --port 0 -t 2 --draft ngram --no-prompt-cache >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 300
req() { # FILE EXTRA-JSON
    curl -s -m 60 "$url/v1/completions" -H 'content-type: application/json' \
        -d "{\"prompt\": \"$P\", \"max_tokens\": 40, \"temperature\": 0, \"logprobs\": 2$2}" >"$TMP/$1"
}
req r-default ""
req r-none ', "draft": "none"'
req r-two ', "draft": "ngram", "draft_max": 2'
req r-mtp ', "draft": "mtp", "draft_max": 3'
# the choice's text and logprobs as one JSON line, or nothing
choice() { python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["choices"][0]; print(json.dumps([c["text"], c["logprobs"]]) if c["text"] else "")' "$1" 2>/dev/null; }
b=$(choice "$TMP/r-none")
[ -n "$b" ] || bad "serve: no text: $(cat "$TMP/r-none")"
for r in r-default r-two r-mtp; do
    a=$(choice "$TMP/$r")
    [ -n "$a" ] && [ "$a" = "$b" ] || bad "serve $r: text or logprobs differ from draft none: $(head -c 300 "$TMP/$r")"
done
curl -s "$url/metrics" >"$TMP/metrics"
kept=$(sed -n 's/^strata_draft_tokens_total{kept="yes"} \([0-9]*\)$/\1/p' "$TMP/metrics")
[ -n "$kept" ] && [ "$kept" -gt 0 ] || bad "serve: /metrics: no kept guesses: $(grep draft "$TMP/metrics")"
grep "^strata_draft" "$TMP/metrics"
code=$(curl -s -o "$TMP/r-bad" -w '%{http_code}' "$url/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "x", "max_tokens": 4, "draft": "fast"}')
[ "$code" = 400 ] && grep -q 'draft must be' "$TMP/r-bad" || bad "serve: draft fast: $code $(cat "$TMP/r-bad")"
kill "$pid"; wait "$pid" 2>/dev/null; pid=""
# without the block: a request that asks for it is a 400 naming the field; a default of mtp does not start
"$BIN/strata" serve "$TMP/nn" --port 0 -t 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 300
code=$(curl -s -o "$TMP/r-nomtp" -w '%{http_code}' "$url/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "x", "max_tokens": 4, "draft": "mtp"}')
[ "$code" = 400 ] && grep -q '"draft"' "$TMP/r-nomtp" && grep -q 'next-token-prediction' "$TMP/r-nomtp" ||
    bad "serve without the block: draft mtp: $code $(cat "$TMP/r-nomtp")"
kill "$pid"; wait "$pid" 2>/dev/null; pid=""
timeout 60 "$BIN/strata" serve "$TMP/nn" --port 0 -t 2 --draft mtp >"$TMP/o" 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "^strata serve: --draft mtp: .* has no next-token-prediction block" "$TMP/e" ||
    bad "serve --draft mtp without the block: exit $rc, '$(head -1 "$TMP/e")'"
for args in "--draft medusa" "--draft-max 0" "--draft-max 17" "--draft-prompt x"; do
    "$BIN/strata" bench "$TMP/p" $args >"$TMP/o" 2>"$TMP/e"; rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/e")" -ge 1 ] && grep -q "^strata bench: .*draft" "$TMP/e" || bad "bench $args: exit $rc, '$(head -1 "$TMP/e")'"
done
"$BIN/strata" run "$TMP/p" -p x --draft fast >"$TMP/o" 2>"$TMP/e"; rc=$?
[ $rc -eq 2 ] && grep -q "^strata run: --draft takes none, ngram or mtp, got 'fast'" "$TMP/e" || bad "run --draft fast: exit $rc, '$(head -1 "$TMP/e")'"
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
