#!/bin/sh
# e2e_setup_offline.sh: first `./setup.sh` with no --model and no network
# builds the pack of the model shipped in models/tiny-moe/, prints the
# command to try it, and the README's first Quick start example runs on that
# pack as written (bin/ and packs/ being the tools and the packs folder).
# Then `./setup.sh --model stories260K` on a machine that
# cannot reach the hub fails within 15 s with one line that says so (no
# minute of retries, no "run again to resume" when nothing was downloaded),
# and leaves no empty folder behind. No network is touched: HF_ENDPOINT
# points at a loopback port nothing listens on (connection refused) and at a
# .invalid host (never resolves, RFC 6761). A third run against
# tests/fixtures/hf_mirror.py serving nothing (the download itself fails
# with a 404) must also leave no empty folder. apt-get, dnf, pacman and sudo
# are stubbed, so that setup.sh cannot install anything; without the
# dependencies the test skips. The default download and pack folders,
# models/ and packs/, are ignored by git.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
here=$(cd "$(dirname "$0")/.." && pwd); top=$(cd "$here/.." && pwd)
command -v curl >/dev/null || { echo "skip: curl (a setup.sh dependency) is absent"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-setup-offline-XXXXXX") || exit 1
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/stub" "$tmp/work"
for t in apt-get dnf pacman sudo; do
    printf '#!/bin/sh\necho "stub: %s is not run by this test" >&2\nexit 1\n' "$t" >"$tmp/stub/$t"
    chmod +x "$tmp/stub/$t"
done
unset MAKEFLAGS MFLAGS MAKELEVEL
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    for d in models/stories260K/x.gguf packs/stories260K/index.txt; do
        git -C "$top" check-ignore -q "$d" || { echo "FAIL: .gitignore does not cover $d"; exit 1; }
    done
fi
export STRATA_BIN="$bin"

# a port on 127.0.0.1 that nothing listens on: bind one, then let it go
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null) \
    || port=9

run_offline() { # NAME ENDPOINT
    start=$(date +%s)
    (cd "$top" && PATH="$tmp/stub:$PATH" HF_ENDPOINT=$2 timeout 60 ./setup.sh --model stories260K \
        --models-dir "$tmp/work/models" --packs-dir "$tmp/work/packs") >"$tmp/$1.out" 2>"$tmp/$1.err" </dev/null
    rc=$?
    secs=$(( $(date +%s) - start ))
    if grep -q "installing:" "$tmp/$1.out" "$tmp/$1.err"; then
        echo "skip: setup.sh's dependencies are not all installed here"; exit 77
    fi
    [ $rc -ne 0 ] || { echo "FAIL $1: setup.sh succeeded with HF_ENDPOINT=$2"; cat "$tmp/$1.out" "$tmp/$1.err"; exit 1; }
    [ $secs -le 15 ] || { echo "FAIL $1: setup.sh took ${secs}s to give up (at most 15)"; cat "$tmp/$1.err"; exit 1; }
    [ "$(wc -l <"$tmp/$1.err")" -eq 1 ] || { echo "FAIL $1: not one line on stderr:"; cat "$tmp/$1.err"; exit 1; }
    grep -q "cannot download stories260K" "$tmp/$1.err" && grep -q "unreachable" "$tmp/$1.err" \
        || { echo "FAIL $1: the line does not say the hub is unreachable:"; cat "$tmp/$1.err"; exit 1; }
    if grep -qi "resume" "$tmp/$1.err"; then echo "FAIL $1: offers to resume nothing:"; cat "$tmp/$1.err"; exit 1; fi
    left=$(find "$tmp/work" -mindepth 1)
    [ -z "$left" ] || { echo "FAIL $1: left behind: $left"; exit 1; }
    echo "ok $1: ${secs}s: $(cat "$tmp/$1.err")"
}
# no --model: the shipped model's pack, with the hub unreachable
(cd "$top" && PATH="$tmp/stub:$PATH" HF_ENDPOINT="http://127.0.0.1:$port" timeout 120 ./setup.sh \
    --models-dir "$tmp/work/models" --packs-dir "$tmp/work/packs") >"$tmp/shipped.out" 2>&1 </dev/null
rc=$?
if grep -q "installing:" "$tmp/shipped.out"; then echo "skip: setup.sh's dependencies are not all installed here"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL shipped: setup.sh with no --model failed offline:"; cat "$tmp/shipped.out"; exit 1; }
[ -f "$tmp/work/packs/tiny-moe/index.txt" ] || { echo "FAIL shipped: no pack in $tmp/work/packs/tiny-moe"; cat "$tmp/shipped.out"; exit 1; }
[ ! -e "$tmp/work/models" ] || { echo "FAIL shipped: a models folder was made for a shipped model"; exit 1; }
grep -q "try it: .*strata run .*packs/tiny-moe" "$tmp/shipped.out" || { echo "FAIL shipped: no next command:"; cat "$tmp/shipped.out"; exit 1; }
grep -q "importance matrix: models/tiny-moe/imatrix.gguf" "$tmp/shipped.out" \
    || { echo "FAIL shipped: the pack was not built with the shipped importance matrix:"; cat "$tmp/shipped.out"; exit 1; }
# the README's first example, as written, from a folder where bin/ and packs/ are these
example=$(sed -n '/^## Quick start/,/^## /p' "$top/README.md" | grep -m 1 '^bin/strata run ')
[ -n "$example" ] || { echo "FAIL readme: no 'bin/strata run' line in the Quick start"; exit 1; }
case $example in *packs/tiny-moe*) ;; *) echo "FAIL readme: the first example does not run the shipped model: $example"; exit 1 ;; esac
mkdir "$tmp/cwd" && ln -s "$bin" "$tmp/cwd/bin" && ln -s "$tmp/work/packs" "$tmp/cwd/packs"
(cd "$tmp/cwd" && eval "timeout 60 $example") >"$tmp/example.out" 2>"$tmp/example.err" \
    || { echo "FAIL readme: '$example' failed:"; cat "$tmp/example.err"; exit 1; }
[ "$(wc -w <"$tmp/example.out")" -ge 10 ] || { echo "FAIL readme: '$example' printed little:"; cat "$tmp/example.out"; exit 1; }
echo "ok shipped: $(grep -c . "$tmp/shipped.out") lines of set-up, then '$example': $(head -c 120 "$tmp/example.out" | tr '\n' ' ')"
rm -rf "$tmp/work/packs" "$tmp/cwd"

run_offline refused "http://127.0.0.1:$port"
run_offline unresolved "http://strata-no-such-host.invalid"

# the hub answers but has no such file: strata pull fails, nothing is left
command -v python3 >/dev/null || { echo "skip: python3 (for the mirror fixture) is absent"; exit 77; }
mkdir "$tmp/root"
python3 "$here/fixtures/hf_mirror.py" --root "$tmp/root" --port-file "$tmp/port" --log "$tmp/log" \
    --max-requests 50 --lifetime 60 &
pid=$!
i=0; while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/port" ] || { echo "FAIL: the mirror did not start"; exit 1; }
(cd "$top" && PATH="$tmp/stub:$PATH" STRATA_PULL_BACKOFF_MS=10 HF_ENDPOINT="http://127.0.0.1:$(cat "$tmp/port")" timeout 60 ./setup.sh \
    --model stories260K --models-dir "$tmp/work/models" --packs-dir "$tmp/work/packs") >"$tmp/404.out" 2>&1 </dev/null \
    && { echo "FAIL 404: setup.sh succeeded without the file"; cat "$tmp/404.out"; exit 1; }
left=$(find "$tmp/work" -mindepth 1)
[ -z "$left" ] || { echo "FAIL 404: left behind: $left"; cat "$tmp/404.out"; exit 1; }
if grep -qi "resume" "$tmp/404.out"; then echo "FAIL 404: offers to resume nothing:"; cat "$tmp/404.out"; exit 1; fi
echo "ok 404: nothing left behind"
exit 0
