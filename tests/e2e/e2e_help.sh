#!/bin/sh
# Every tool answers --help with a usage line and exit 0, and refuses an
# unknown option with a non-zero exit and a message on stderr.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
fail=0
for tool in grams2imatrix iq3pack packindex strata; do
    out=$("$bin/$tool" --help 2>&1); rc=$?
    if [ $rc -ne 0 ]; then echo "$tool --help exited $rc"; fail=1; fi
    case "$out" in *usage:*) ;; *) echo "$tool --help printed no usage line"; fail=1 ;; esac
    err=$("$bin/$tool" --no-such-option 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 0 ]; then echo "$tool accepted --no-such-option"; fail=1; fi
    if [ -z "$err" ]; then echo "$tool said nothing on stderr for --no-such-option"; fail=1; fi
done
exit $fail
