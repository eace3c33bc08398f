# tests/lib/server.sh: sourced by the end-to-end scripts that start
# `strata serve` (e2e_serve.sh, e2e_serve_real.sh). Not a test itself:
# tests/run.sh runs only tests/e2e_*.sh.
#
# Contract: the caller sets $tmp (its scratch folder) and starts the server
# in the background with stdout in $tmp/out and stderr in $tmp/err.
# fail MSG... prints "FAIL: MSG" and the server's stderr, then exits 1.
# server_port TRIES waits up to TRIES x 0.1 s for the server's "listening on"
# line and sets port and url, or fails with "no listening line".

fail() { echo "FAIL: $*"; [ -f "$tmp/err" ] && sed 's/^/  server: /' "$tmp/err"; exit 1; }

server_port() {
    port=""
    for i in $(seq "$1"); do
        port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/out")
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || fail "no listening line"
    url="http://127.0.0.1:$port"
}
