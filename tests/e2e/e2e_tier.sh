#!/bin/sh
# e2e_tier.sh: a pack bigger than its memory budget (issue "Packs bigger than
# memory"), on the shipped model's pack: with 1, 3 or 12 of its 24 routed
# experts kept in memory (STRATA_TIER_SLOTS forces the slots; --mem sizes
# them from a budget) `strata run` gives the logits of the whole pack in
# memory bit for bit, reads experts from experts.bin (misses counted in its
# summary) and says so on stderr; a --mem below what the dense weights need
# is refused with the figure it needs, exit 1, nothing on stdout; a bad
# --mem value is a usage error (exit 2); `strata bench` prints the tier's
# lines; `strata serve --parallel 2` over 3 slots answers the greedy
# completion `strata run` gives and exports the tier's counters on /metrics.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-tier-XXXXXX") || exit 1
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
. "$(dirname "$0")/../lib/server.sh"
shipped_gguf
S="$bin/strata"
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

pack="$tmp/tiny-moe"
"$bin/iq3pack" build "$gguf" -o "$pack" >/dev/null 2>&1 || fail "iq3pack build"
prompt="Once upon a time there was"
"$S" run "$pack" -p "$prompt" -n 24 --temp 0 --logits-out "$tmp/all.f32" >"$tmp/all.txt" 2>"$tmp/all.err" ||
    fail "strata run (whole pack in memory): $(cat "$tmp/all.err")"
grep -q "routed experts stay in memory" "$tmp/all.err" && bad "the whole pack fits, yet a tier was used: $(cat "$tmp/all.err")"

# forced slots: 1 (most experts read through a buffer of their own), 3, 12
for n in 1 3 12; do
    STRATA_TIER_SLOTS=$n "$S" run "$pack" -p "$prompt" -n 24 --temp 0 --logits-out "$tmp/t$n.f32" \
        >"$tmp/t$n.txt" 2>"$tmp/t$n.err" || { bad "$n slots: exit $?: $(cat "$tmp/t$n.err")"; continue; }
    cmp -s "$tmp/all.f32" "$tmp/t$n.f32" || bad "$n slots: the logits differ from the whole pack's"
    cmp -s "$tmp/all.txt" "$tmp/t$n.txt" || bad "$n slots: the text differs"
    grep -q "^strata: $pack: $n of its 24 routed experts stay in memory" "$tmp/t$n.err" ||
        bad "$n slots: no line saying what stays in memory: $(cat "$tmp/t$n.err")"
    line=$(grep "^strata run: experts: hit rate" "$tmp/t$n.err")
    mib=$(echo "$line" | sed -n 's/.*), \([0-9.]*\) MiB read from experts.bin.*/\1/p')
    [ -n "$mib" ] && awk -v m="$mib" 'BEGIN { exit !(m > 0) }' || bad "$n slots: no expert read from disk: '$line'"
done

# --mem: below the dense part, refused with what it needs; a little above, the tier
"$S" run "$pack" -p "$prompt" -n 4 --mem 1M >"$tmp/small.txt" 2>"$tmp/small.err"
rc=$?
[ "$rc" = 1 ] || bad "--mem 1M: exit $rc, not 1"
[ -s "$tmp/small.txt" ] && bad "--mem 1M: wrote to stdout: $(cat "$tmp/small.txt")"
need=$(sed -n 's/.*is less than the dense weights, KV cache and buffers need (\([0-9.]*\) MiB).*/\1/p' "$tmp/small.err")
[ -n "$need" ] || bad "--mem 1M: the message names no figure: $(cat "$tmp/small.err")"
grep -q "^strata: $pack: 1.0 MiB of memory (--mem)" "$tmp/small.err" || bad "--mem 1M: message: $(cat "$tmp/small.err")"
if [ -n "$need" ]; then
    mem=$(awk -v n="$need" 'BEGIN { printf "%.0fK", (n + 1.1) * 1024 }')
    "$S" run "$pack" -p "$prompt" -n 24 --temp 0 --mem "$mem" --logits-out "$tmp/mem.f32" >"$tmp/mem.txt" \
        2>"$tmp/mem.err" || bad "--mem $mem: exit $?: $(cat "$tmp/mem.err")"
    grep -q "^strata: $pack does not fit in .* of memory (--mem): [0-9]* of its 24 routed experts stay in memory" \
        "$tmp/mem.err" || bad "--mem $mem: no tier line: $(cat "$tmp/mem.err")"
    cmp -s "$tmp/all.f32" "$tmp/mem.f32" || bad "--mem $mem: the logits differ from the whole pack's"
fi
for v in abc 0 -5; do
    "$S" run "$pack" -p x --mem "$v" >/dev/null 2>"$tmp/bad.err"
    rc=$?
    [ "$rc" = 2 ] || bad "--mem $v: exit $rc, not 2"
    grep -q -- "--mem takes a size" "$tmp/bad.err" || bad "--mem $v: message: $(cat "$tmp/bad.err")"
done

# bench reports the tier
STRATA_TIER_SLOTS=4 "$S" bench "$pack" -r 2 -p 8 -n 8 >"$tmp/bench.out" 2>"$tmp/bench.err" ||
    bad "bench with a tier: exit $?: $(cat "$tmp/bench.err")"
for l in "tier: 4 of 24 routed experts in memory" "tier decode: hit rate" "tier prefetch:" \
    "disk read bandwidth (experts.bin" "tier floor:"; do
    grep -q "^$l" "$tmp/bench.out" || bad "bench: no '$l' line: $(cat "$tmp/bench.out")"
done

# serve: two contexts share one tier of 3 slots
want=$("$S" run "$pack" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
STRATA_TIER_SLOTS=3 "$S" serve "$pack" --port 0 --parallel 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100
got=$(curl -s -m 30 "$url/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}' |
    sed -n 's/.*"text": *"\(\([^"\\]\|\\.\)*\)".*/\1/p')
[ "$got" = "$(printf '%s' "$want" | sed 's/\\/\\\\/g; s/"/\\"/g')" ] || bad "serve's greedy completion '$got' is not strata run's '$want'"
curl -s -m 10 "$url/metrics" >"$tmp/metrics"
grep -q "^strata_expert_tier_slots 3$" "$tmp/metrics" || bad "/metrics: no tier slots: $(grep tier "$tmp/metrics")"
acc=$(sed -n 's/^strata_expert_tier_accesses_total \([0-9]*\)$/\1/p' "$tmp/metrics")
[ -n "$acc" ] && [ "$acc" -gt 0 ] || bad "/metrics: no tier accesses counted: $(grep tier "$tmp/metrics")"
grep -q "^strata_expert_tier_disk_bytes_total [1-9]" "$tmp/metrics" || bad "/metrics: no disk bytes"

[ "$fails" = 0 ] || exit 1
echo "PASS: tier: 1, 3, 12 slots and --mem give the whole pack's logits; --mem refusals; bench and serve report the tier"
