# tests/lib/hf_mirror.sh: sourced by the end-to-end scripts that pull from
# tests/fixtures/hf_mirror.py (e2e_pull.sh, e2e_pull_pack.sh). Not a test
# itself: tests/run.sh runs only tests/e2e/e2e_*.sh.
#
# Contract: the caller sets $tmp (its scratch folder) and $bin (STRATA_BIN).
# mirror_start ARGS... starts the fixture on 127.0.0.1 with --port-file
# $tmp/port, --log $tmp/log and ARGS (--root, --repo, --split, limits), waits
# up to 10 s for its port, and sets srv (its pid) and ep (its URL), or exits 1.
# stop_server stops it (idempotent; the caller's EXIT trap calls it).
# pull ARGS... runs `strata pull` against it with the tests' 10 ms backoff.
# bad MSG counts a failure (fails) and shows the tail of $tmp/err; has RE FILE greps.
srv=
fails=0
stop_server() { if [ -n "$srv" ]; then kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; srv=; fi; }
mirror_start() {
    python3 "$(dirname "$0")/../fixtures/hf_mirror.py" --port-file "$tmp/port" --log "$tmp/log" "$@" &
    srv=$!
    _n=0
    while [ ! -s "$tmp/port" ]; do
        _n=$((_n + 1)); [ $_n -le 200 ] || { echo "FAIL: the fixture server did not start"; exit 1; }
        sleep 0.05
    done
    ep=http://127.0.0.1:$(cat "$tmp/port")
    unset HF_TOKEN
    export STRATA_PULL_BACKOFF_MS=10
}
pull() { HF_ENDPOINT=$ep "$bin/strata" pull "$@"; }
bad() { echo "FAIL: $*"; [ -f "$tmp/err" ] && sed 's/^/    /' "$tmp/err" | tail -n 8; fails=$((fails + 1)); }
has() { grep -q -- "$1" "$2"; }
