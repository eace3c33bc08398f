#!/bin/sh
# e2e_bench.sh: `strata bench` on the shipped model's pack: with -r 3 the
# prefill, decode and bandwidth lines each give a median of 3 with its
# spread, min and max, which agree (min <= median <= max, spread =
# (max - min) / median); the floor's fraction is the decode median over the
# floor; a warning on stderr for exactly the figures whose spread is over
# 10 %; -r 1 prints one run and no spread; --record-routing counts one
# prefill and one decode whatever -r is; -r 0, -r abc and a missing value
# are refused with a line naming -r and exit 2, before any work.
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
G=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$G" ] || { echo "FAIL: $G is missing (it is part of the repository)"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-bench-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$BIN/iq3pack" build "$G" -o "$TMP/p" >/dev/null 2>&1 || { echo "FAIL: build"; exit 1; }
S="$BIN/strata"

# figure NAME PREC: checks the line starting with NAME (its figures printed
# with PREC decimals); sets med and sp, its median and spread
N='[0-9][0-9]*\.[0-9]*'
figure() {
    med=""; sp=""
    line=$(grep "^$1" "$TMP/out")
    [ -n "$line" ] || { bad "no '$1' line: $(cat "$TMP/out")"; return; }
    echo "$line" | grep -q ": $N [a-zA-Z/]* (median of 3; spread $N %: min $N, max $N)" ||
        { bad "'$1' line has no median of 3 with its spread: $line"; return; }
    r=$(echo "$line" | sed 's/.*: \([0-9.]*\) [a-zA-Z/]* (median of 3; spread \([0-9.]*\) %: min \([0-9.]*\), max \([0-9.]*\)).*/\1 \2 \3 \4/' |
        awk -v prec="$2" '{
            med = $1; sp = $2; lo = $3; hi = $4
            if (!(lo <= med && med <= hi)) { print "FAIL median " med " outside min " lo ", max " hi; exit }
            # the printed figures are rounded (half a unit of the last decimal each): max - min moves by up to
            # one unit, the median by half, which moves a large spread by sp / 2 units of it
            tol = 0.15 + 100 * 2 * 10 ^ -prec / med + sp * 10 ^ -prec / med
            d = 100 * (hi - lo) / med - sp
            if (d > tol || -d > tol) { print "FAIL spread " sp " % is not (max - min) / median"; exit }
            print med, sp
        }')
    case $r in FAIL*) bad "$1: ${r#FAIL }: $line"; return ;; esac
    med=${r% *}; sp=${r#* }
}

"$S" bench "$TMP/p" -r 3 -p 16 -n 8 -t 2 >"$TMP/out" 2>"$TMP/err" || bad "bench -r 3: exit $? ($(cat "$TMP/err"))"
grep -q "^prefill 16 tokens: .*, after one untimed warm-up pass$" "$TMP/out" || bad "prefill line: $(cat "$TMP/out")"
figure "prefill 16 tokens" 1; pre_sp=$sp
figure "decode  8 tokens" 1; dec_med=$med; dec_sp=$sp
figure "memory read bandwidth" 2; bw_sp=$sp
mib=$(sed -n 's/^memory read bandwidth ([0-9]* threads* as decode, \([0-9]*\) MiB sweep).*/\1/p' "$TMP/out")
[ -n "$mib" ] && [ "$mib" -ge 1 ] && [ "$mib" -le 512 ] || bad "sweep size '$mib' MiB: $(grep '^memory' "$TMP/out")"
# the fraction of the floor is the decode median over the floor
floor=$(sed -n 's/^bandwidth floor: \([0-9.]*\) tokens\/s; decode (median) is \([0-9.]*\) of it.*/\1 \2/p' "$TMP/out")
[ -n "$floor" ] || bad "no floor line: $(cat "$TMP/out")"
[ -z "$dec_med" ] || echo "$dec_med $floor" | awk '{ d = $1 / $2 - $3; if (d > 0.0015 || -d > 0.0015) exit 1 }' ||
    bad "decode is not its median over the floor: decode $dec_med, floor line '$floor'"
# a warning for each figure over 10 %, and none for the others (the printed spread is rounded: 10.0 may be either)
for f in "prefill:$pre_sp" "decode:$dec_sp" "bandwidth:$bw_sp"; do
    name=${f%%:*}; sp=${f#*:}
    [ -n "$sp" ] || continue
    if grep -q "^strata bench: warning: the $name figure is unreliable: its 3 runs spread $sp % (more than 10 %); .* can cause that$" "$TMP/err"; then
        awk -v s="$sp" 'BEGIN { exit !(s >= 10) }' || bad "$name: a warning for a spread of $sp %"
    else
        awk -v s="$sp" 'BEGIN { exit !(s <= 10) }' || bad "$name: no warning for a spread of $sp %: $(cat "$TMP/err")"
    fi
done
grep -v "^strata bench: warning: the \(prefill\|decode\|bandwidth\) figure is unreliable" "$TMP/err" >"$TMP/other"
[ -s "$TMP/other" ] && bad "bench -r 3: stderr: $(cat "$TMP/other")"

# one run: no spread, no warning
"$S" bench "$TMP/p" -r 1 -p 8 -n 4 -t 1 >"$TMP/out" 2>"$TMP/err" || bad "bench -r 1: exit $?"
[ "$(grep -c "(one run: -r 2 or more gives a spread)" "$TMP/out")" -eq 3 ] || bad "bench -r 1: $(cat "$TMP/out")"
grep -q "warning" "$TMP/err" && bad "bench -r 1 warns: $(cat "$TMP/err")"

# the profile holds the first timed prefill and decode: 16 + 8 tokens
"$S" bench "$TMP/p" --repetitions 3 -p 16 -n 8 -t 1 --record-routing "$TMP/prof" >/dev/null 2>"$TMP/err" ||
    bad "bench --record-routing: $(cat "$TMP/err")"
grep -q "^tokens 24$" "$TMP/prof" 2>/dev/null || bad "bench -r 3 profile: 16 + 8 tokens expected: $(sed -n 3p "$TMP/prof" 2>/dev/null)"

# refusals: exit 2, a line naming the option, nothing measured
for r in 0 abc -1 1001; do
    "$S" bench "$TMP/p" -r "$r" >"$TMP/out" 2>"$TMP/err"; rc=$?
    [ $rc -eq 2 ] || bad "bench -r $r: exit $rc, not 2"
    grep -q "^strata bench: -r needs an integer in 1\.\.1000, got '$r'$" "$TMP/err" || bad "bench -r $r: $(head -n 1 "$TMP/err")"
    [ -s "$TMP/out" ] && bad "bench -r $r printed: $(cat "$TMP/out")"
done
"$S" bench "$TMP/p" --repetitions >/dev/null 2>"$TMP/err"; rc=$?
[ $rc -eq 2 ] && grep -q "missing value: --repetitions" "$TMP/err" || bad "bench --repetitions without a value: exit $rc, $(head -n 1 "$TMP/err")"

# --help names -r and says what the spread is
"$S" bench --help >"$TMP/help" || bad "bench --help: exit $?"
grep -q -- "-r|--repetitions N" "$TMP/help" || bad "bench --help does not name -r"
grep -q "spread = (max - min) / median" "$TMP/help" || bad "bench --help does not define the spread"

[ $fails -eq 0 ] || exit 1
echo "strata bench: ok"
