#!/usr/bin/env bash
# Test runner: runs each cmocka suite and end-to-end script given on the
# command line, up to JOBS at a time (-j JOBS, default 1), prints one line per
# suite as it ends (with its time) and ends with ONE summary line
# "N passed, N failed, N skipped".
# cmocka suites are counted per test case; an e2e script counts as one test
# (exit 0 pass, 77 skip, anything else fail). A suite that crashes before
# reporting counts as one failure. Exit status is non-zero if anything failed.
jobs=1
if [ "${1:-}" = -j ]; then jobs=${2:-1}; shift 2; fi
case $jobs in ''|*[!0-9]*|0) jobs=1 ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-tests-XXXXXX") || exit 2
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# run_one INDEX PATH: runs one suite; writes "$work/INDEX.res" (passed failed
# skipped) and the lines to print into "$work/INDEX.txt".
run_one() {
    local i=$1 t=$2 name log rc p f s t0 ms secs
    name=$(basename "$t"); log="$work/$i.log"
    t0=$(date +%s%N)
    case "$t" in
    *.sh)
        if sh "$t" >"$log" 2>&1; then rc=0; else rc=$?; fi
        ms=$(( ($(date +%s%N) - t0) / 1000000 )); secs="$((ms / 1000)).$((ms % 1000 / 100))"
        if [ $rc -eq 0 ]; then echo "1 0 0" >"$work/$i.res"; printf 'PASS  %s [%ss]\n' "$name" "$secs"
        elif [ $rc -eq 77 ]; then echo "0 0 1" >"$work/$i.res"; printf 'SKIP  %s [%ss]: %s\n' "$name" "$secs" "$(tail -n 1 "$log")"
        else echo "0 1 0" >"$work/$i.res"; printf 'FAIL  %s (exit %d) [%ss]\n' "$name" $rc "$secs"; sed 's/^/    /' "$log" | tail -n 40
        fi ;;
    *)
        if CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$log" 2>&1; then rc=0; else rc=$?; fi
        ms=$(( ($(date +%s%N) - t0) / 1000000 )); secs="$((ms / 1000)).$((ms % 1000 / 100))"
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        p=${p:-0}; f=${f:-0}; s=${s:-0}
        if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
        echo "$p $f $s" >"$work/$i.res"
        if [ "$f" -ne 0 ]; then
            printf 'FAIL  %s (%d passed, %d failed, exit %d) [%ss]\n' "$name" "$p" "$f" $rc "$secs"
            grep -v '^\[ \(RUN\|      OK\) ' "$log" | sed 's/^/    /' | tail -n 60
        else
            if [ "$s" -ne 0 ]; then printf 'PASS  %s (%d passed, %d skipped) [%ss]\n' "$name" "$p" "$s" "$secs"
            else printf 'PASS  %s (%d passed) [%ss]\n' "$name" "$p" "$secs"; fi
            grep '^\[  SKIPPED \]\|^SKIP' "$log" | sed 's/^/    /' | head -n 20
        fi ;;
    esac >"$work/$i.txt"
    # one write of the whole block, so that parallel suites do not interleave
    cat "$work/$i.txt"
}

start=$(date +%s)
i=0; running=0
for t in "$@"; do
    i=$((i + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
    run_one "$i" "$t" &
    running=$((running + 1))
done
wait

passed=0; failed=0; skipped=0; failed_names=""; i=0
for t in "$@"; do
    i=$((i + 1))
    read -r p f s <"$work/$i.res" 2>/dev/null || { p=0; f=1; s=0; }
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    [ "$f" -ne 0 ] && failed_names="$failed_names $(basename "$t")"
done
echo "tests took $(( $(date +%s) - start )) s with $jobs at a time"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
