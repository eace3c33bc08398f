#!/bin/sh
# START-HERE.bat, checked without Windows: CRLF line endings throughout, every
# `goto :label` / `call :label` has its label, parentheses balance, it passes
# its arguments on to setup.sh inside WSL, it keeps the window open (pause) on
# every exit path, and it never installs anything without asking first. When
# wine is installed, cmd also runs it (no WSL there: the no-WSL path).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd); bat=$here/START-HERE.bat
[ -f "$bat" ] || { echo "START-HERE.bat is missing"; exit 1; }
fail=0
lf=$(tr -cd '\n' < "$bat" | wc -c); crlf=$(grep -c "$(printf '\r')\$" "$bat")
[ "$lf" -eq "$crlf" ] || { echo "not every line ends in CRLF ($crlf of $lf)"; fail=1; }
body=$(tr -d '\r' < "$bat")
for l in $(echo "$body" | grep -io 'goto :[a-z_]*\|call :[a-z_]*' | sed 's/.*://' | sort -u); do
    echo "$body" | grep -qi "^:$l\$" || { echo "goto/call target :$l has no label"; fail=1; }
done
open=$(echo "$body" | grep -v '^ *rem \|^ *echo ' | tr -cd '(' | wc -c)
close=$(echo "$body" | grep -v '^ *rem \|^ *echo ' | tr -cd ')' | wc -c)
[ "$open" -eq "$close" ] || { echo "parentheses do not balance ($open vs $close)"; fail=1; }
echo "$body" | grep -q 'setup.sh %\*' || { echo "arguments are not passed to setup.sh"; fail=1; }
exits=$(echo "$body" | grep -c '^ *exit /b')
pauses=$(echo "$body" | grep -c '^ *pause')
[ "$pauses" -ge "$exits" ] || { echo "an exit path does not pause ($pauses pauses, $exits exits)"; fail=1; }
# the only install command must follow a question answered y
inst=$(echo "$body" | grep -n 'wsl.exe --install' | head -1 | cut -d: -f1)
ask=$(echo "$body" | grep -n 'set /p' | head -1 | cut -d: -f1)
[ -n "$ask" ] && [ -n "$inst" ] && [ "$ask" -lt "$inst" ] || { echo "installs without asking first"; fail=1; }
if command -v wine >/dev/null 2>&1; then
    out=$(cd "$here" && echo | timeout 60 wine cmd /c START-HERE.bat 2>/dev/null | tr -d '\r')
    echo "$out" | grep -q "needs WSL2" || { echo "under wine's cmd it did not take the no-WSL path:"; echo "$out"; fail=1; }
else
    echo "note: wine is not installed; static checks only"
fi
exit $fail
