#!/bin/sh
# Test runner: runs each cmocka suite and end-to-end script given on the
# command line and ends with ONE summary line "N passed, N failed, N skipped".
# cmocka suites are counted per test case; an e2e script counts as one test
# (exit 0 pass, 77 skip, anything else fail). A suite that crashes before
# reporting counts as one failure. Exit status is non-zero if anything failed.
passed=0; failed=0; skipped=0; failed_names=""
log=$(mktemp); trap 'rm -f "$log"' EXIT INT TERM
for t in "$@"; do
    name=$(basename "$t")
    case "$t" in
    *.sh)
        if sh "$t" >"$log" 2>&1; then rc=0; else rc=$?; fi
        if [ $rc -eq 0 ]; then passed=$((passed + 1)); echo "PASS  $name"
        elif [ $rc -eq 77 ]; then skipped=$((skipped + 1)); echo "SKIP  $name: $(tail -n 1 "$log")"
        else failed=$((failed + 1)); failed_names="$failed_names $name"; echo "FAIL  $name (exit $rc)"; sed 's/^/    /' "$log" | tail -n 40
        fi ;;
    *)
        if CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$log" 2>&1; then rc=0; else rc=$?; fi
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        p=${p:-0}; f=${f:-0}; s=${s:-0}
        if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
        if [ "$f" -ne 0 ]; then
            failed_names="$failed_names $name"
            echo "FAIL  $name ($p passed, $f failed, exit $rc)"
            grep -v '^\[ \(RUN\|      OK\) ' "$log" | sed 's/^/    /' | tail -n 60
        else
            echo "PASS  $name ($p passed${s:+, $s skipped})"
            grep '^\[  SKIPPED \]\|^SKIP' "$log" | sed 's/^/    /' | head -n 20
        fi ;;
    esac
done
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
