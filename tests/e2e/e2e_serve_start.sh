#!/bin/sh
# e2e_serve_start.sh: how `strata serve` starts (issue 22). A pack that
# cannot load (a missing path, a GGUF, a folder without index.txt, an index
# that does not parse, a file missing or of the wrong size) ends with one
# error line and never prints "listening"; --host localhost and --host ::1
# listen and answer /health (the ::1 part is skipped, with a note, where the
# machine has no IPv6 loopback) and print the URL a browser takes
# (http://[::1]:PORT); --ctx beyond the trained context is warned about.
# Loading shows how far it has come with stderr not a terminal (a file
# here): a line per tenth, the last at 100 %, each with the time left; and
# serve, run and info print no internal words ("engine pool", "VERBATIM").
# Uses the shipped model's pack built by iq3pack (its trained context: 512).
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-serve-start-XXXXXX") || exit 1
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
. "$(dirname "$0")/../lib/server.sh"
shipped_gguf
curl() { command curl -g "$@"; } # in http://[::1]:PORT the brackets are the host's, not a glob

pack="$tmp/tiny-moe"
"$bin/iq3pack" build "$gguf" -o "$pack" >/dev/null 2>&1 || fail "iq3pack build"

# refused: exit 1, one line on stderr that names the path, nothing on stdout
refused() { # NAME PATH WORD: PATH is refused and the line holds WORD
    "$bin/strata" serve "$2" --port 0 >"$tmp/out" 2>"$tmp/err" &
    p=$!
    for i in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
    if kill -0 $p 2>/dev/null; then kill $p; wait $p; fail "$1: still running after 10 s: $(cat "$tmp/out")"; fi
    wait $p; rc=$?
    [ $rc -eq 1 ] || fail "$1: exit status $rc"
    ! grep -q listening "$tmp/out" || fail "$1: printed a listening line before refusing"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1: not one line"
    grep -q "$3" "$tmp/err" || fail "$1: the line does not say '$3'"
}
refused "missing" "$tmp/no-such-pack" "does not exist"
refused "GGUF" "$gguf" "tiny-moe.gguf"
refused "GGUF advice" "$gguf" "iq3pack build"
mkdir "$tmp/empty"
refused "no index" "$tmp/empty" "index.txt"
cp -r "$pack" "$tmp/bad"; echo "garbage" >"$tmp/bad/index.txt"
refused "corrupt index" "$tmp/bad" "index.txt"
cp -r "$pack" "$tmp/gone"; rm "$tmp/gone/experts.bin"
refused "missing file" "$tmp/gone" "experts.bin"
cp -r "$pack" "$tmp/short"; : >"$tmp/short/dense.bin"
refused "truncated file" "$tmp/short" "dense.bin"

# serve_on HOST URL_HOST [OPTIONS]: listens on HOST, prints http://URL_HOST:PORT,
# /health answers 200 there
serve_on() {
    "$bin/strata" serve "$pack" --host "$1" --port 0 $3 >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    port=""
    for i in $(seq 100); do
        port=$(grep -F "listening on http://$2:" "$tmp/out" | sed -n 's|.*:\([0-9]*\)$|\1|p')
        [ -n "$port" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$port" ] || fail "--host $1: no 'listening on http://$2:PORT' line: $(cat "$tmp/out")"
    url="http://$2:$port"
    server_healthy 100
    kill -TERM $pid; wait $pid; pid=""
}
serve_on localhost localhost ""
grep -q "loading .*tiny-moe: 100% (.* of .*), [0-9]*:[0-9][0-9] left" "$tmp/err" || fail "no loading line at 100 %"
n=$(grep -c "loading .*tiny-moe: " "$tmp/err")
[ "$n" -ge 2 ] && [ "$n" -le 10 ] || fail "$n loading lines, want one per tenth reached"
"$bin/strata" run "$pack" -p hi -n 2 >"$tmp/run" 2>&1 || fail "strata run: $(cat "$tmp/run")"
"$bin/strata" info "$pack" >"$tmp/info" 2>&1 || fail "strata info: $(cat "$tmp/info")"
for f in out err run info; do
    if grep -n "engine pool\|VERBATIM" "$tmp/$f"; then fail "internal words in the output of $f"; fi
done
serve_on 127.0.0.1 127.0.0.1 "--ctx 8192"
grep -q "warning: a context of 8192 tokens is beyond the 512 the model was trained on" "$tmp/err" || fail "no --ctx warning"
serve_on 127.0.0.1 127.0.0.1 "--ctx 64"
! grep -q "warning: a context of" "$tmp/err" || fail "--ctx 64 warned"

if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null ||
   { ! command -v python3 >/dev/null && ip -6 addr show lo 2>/dev/null | grep -q '::1'; }; then
    serve_on ::1 '[::1]' ""
else
    echo "SKIP (part): this machine has no IPv6 loopback (::1), --host ::1 not tried"
fi
exit 0
