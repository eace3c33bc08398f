#!/bin/sh
# e2e_k8s.sh: convert/cluster/k8s_build.sh's manifest, run by
# tests/fixtures/k8s_jobs.py (the Job controller's rules on this machine: no
# Kubernetes cluster can be had here; it refuses a field or value the Job API
# would not take). The shipped model with its imatrix in 4 shards, an Indexed
# Job and the merge Job run at once: the pack equals one `iq3pack build`, file
# for file. A shard's iq3pack killed (as by the OOM killer) with no try left:
# the merge Job gives up naming that shard, `iq3pack merge` refuses the missing
# shard, and the same command again builds that shard alone and completes the
# same pack. One killed with a try left: the retry completes it. With --pull:
# the source from a loopback stand-in of the hub (tests/fixtures/hf_mirror.py)
# into the node's --local folder. And the script's refusals.
# Skips (77) without Python's yaml module (Debian's python3-yaml; setup.sh
# --deps installs it under CI=true).
set -u
BIN=${STRATA_BIN:?STRATA_BIN is not set}
R=$(cd "$(dirname "$0")/../.." && pwd)
G=$R/models/tiny-moe/tiny-moe.gguf
IM=$R/models/tiny-moe/imatrix.gguf
PY=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: no python3 with the yaml module (the distribution's python3-yaml; setup.sh --deps installs it under CI=true)"; exit 77; }
command -v flock >/dev/null 2>&1 || { echo "SKIP: flock not found (util-linux)"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-k8s-XXXXXX") || exit 1
srv=
stop() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$TMP"; }
trap stop EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
die() { echo "FAIL: $1"; exit 1; }
V=$TMP/vol # the claim, mounted where this machine has it
mkdir -p "$V/in" "$TMP/logs"
cp "$G" "$V/in/tiny-moe.gguf" && cp "$IM" "$V/in/imatrix.gguf" || die "copy the model onto the volume"
cd "$TMP" || exit 1
"$BIN/iq3pack" build "$V/in/tiny-moe.gguf" --imatrix "$V/in/imatrix.gguf" -o one >/dev/null 2>&1 || die "one-shot build"
. "$R/tests/lib/pack_cmp.sh"
K8S="sh $R/convert/cluster/k8s_build.sh"
gen() { # PACK NAME [flags]: the manifest of a 4-shard build of the model on the volume
    p=$1 nm=$2; shift 2
    $K8S "$V/in/tiny-moe.gguf" --imatrix "$V/in/imatrix.gguf" -o "$V/$p" -n 4 --threads 1 --claim models \
        --image strata:test --mount "$V" --name "$nm" "$@" >"$nm.yaml" || die "k8s_build.sh for $p: exit $?"
}
jobs() { # NAME [runner flags]: run NAME.yaml; its report in NAME.out, its exit status returned
    nm=$1; shift
    timeout 300 "$PY" "$R/tests/fixtures/k8s_jobs.py" "$nm.yaml" --claim "models=$V" --path "$BIN" --logs "$TMP/logs" \
        "$@" >"$nm.out" 2>&1
}

# 4 shards and the merge, all at once
gen a a
jobs a || bad "the Jobs of a: $(cat a.out; cat logs/a-merge-0-0.log)"
grep -q "job a-shards: Complete" a.out && grep -q "job a-merge: Complete" a.out || bad "a: $(cat a.out)"
cat a.out
pack_same one "$V/a"
[ -z "$(ls "$V/a.shards" | grep -v '^[0-3]$')" ] || bad "left behind in a.shards: $(ls "$V/a.shards")"

# shard 2's iq3pack killed, no try left: the merge gives up by name, merge refuses; the same command again
gen b b --retries 0
jobs b --oom b-shards:2:iq3pack; rc=$?
[ $rc -eq 1 ] || bad "a killed shard: runner exit $rc, $(cat b.out)"
grep -q "job b-shards: Failed (failed indexes 2)" b.out && grep -q "job b-merge: Failed" b.out || bad "b: $(cat b.out)"
grep -q "shard(s) 2 of 4 failed 1 time(s)" logs/b-merge-0-0.log || bad "the merge Job's log: $(cat logs/b-merge-0-0.log)"
[ ! -e "$V/b" ] || bad "the merge ran with a shard missing"
[ -f "$V/b.shards/0/shard.json" ] && [ -f "$V/b.shards/3/shard.json" ] && [ ! -e "$V/b.shards/2" ] ||
    bad "shards after the kill: $(ls "$V/b.shards")"
"$BIN/iq3pack" merge "$V/b.shards/0" "$V/b.shards/1" "$V/b.shards/3" -o "$V/b" >m.out 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "shard 2 of 4 is missing" m.out || bad "merge without shard 2: exit $rc, $(cat m.out)"
gen b b --retries 0
jobs b || bad "the same command again: $(cat b.out)"
grep -q "built already" logs/b-shards-0-0.log || bad "shard 0 was built again: $(cat logs/b-shards-0-0.log)"
grep -q "built already" logs/b-shards-2-0.log && bad "shard 2 was not built again"
cat b.out
pack_same one "$V/b"

# shard 1's first try killed, a try left: the retry completes it
gen c c --retries 1
jobs c --oom c-shards:1:iq3pack || bad "a retried shard: $(cat c.out)"
[ -f logs/c-shards-1-1.log ] || bad "shard 1 was not tried again"
pack_same one "$V/c"

# --pull: the source from the hub (a loopback stand-in) into the node's --local folder
mkdir -p root/t
cp "$G" root/t/tiny-moe.gguf
"$PY" "$R/tests/fixtures/hf_mirror.py" --root "$TMP/root" --port-file "$TMP/port" --log "$TMP/hub.log" --lifetime 300 &
srv=$!
i=0
until [ -s "$TMP/port" ]; do i=$((i + 1)); [ $i -lt 200 ] || die "the hub stand-in did not start"; sleep 0.05; done
$K8S tiny-moe.gguf --pull t/t --local "$TMP/local" --imatrix "$V/in/imatrix.gguf" -o "$V/d" -n 3 --threads 1 \
    --claim models --image strata:test --mount "$V" --name d --env "HF_ENDPOINT=http://127.0.0.1:$(cat "$TMP/port")" \
    >d.yaml || die "k8s_build.sh --pull: exit $?"
jobs d || bad "--pull: $(cat d.out; cat logs/d-shards-*.log)"
cmp -s "$G" "$TMP/local/tiny-moe.gguf" || bad "--pull: the node's copy differs from the source"
grep -q "sha256 verified\|already there" logs/d-shards-0-0.log || bad "--pull: no verified download in shard 0's log"
"$BIN/iq3pack" build "$TMP/local/tiny-moe.gguf" --imatrix "$V/in/imatrix.gguf" -o d-one >/dev/null 2>&1 || bad "one-shot build from the copy"
pack_same d-one "$V/d" # the --pull build: that of one build of the downloaded copy

# refusals: each names what is wrong, exit 2, no manifest
refuse() { # PATTERN ARGS...
    pat=$1; shift
    $K8S "$@" >r.yaml 2>r.err; rc=$?
    [ $rc -eq 2 ] && grep -q -e "$pat" r.err && [ ! -s r.yaml ] || bad "k8s_build.sh $*: exit $rc, $(cat r.err)"
}
refuse "claim" /data/m.gguf -o /data/p -n 2 --image i
refuse "image" /data/m.gguf -o /data/p -n 2 --claim c
refuse "not on the shared volume" /elsewhere/m.gguf -o /data/p -n 2 --claim c --image i
refuse "-n takes 1 or more" /data/m.gguf -o /data/p -n 0 --claim c --image i
refuse "quotes" '/data/m"x.gguf' -o /data/p -n 2 --claim c --image i
refuse "experts takes iq3 or keep" /data/m.gguf -o /data/p -n 2 --claim c --image i --experts q4
refuse "name takes" /data/m.gguf -o /data/p -n 2 --claim c --image i --name Big_Name
# the runner refuses what the Job API would not take, so its passes mean something
sed 's/completionMode:/completionmode:/' a.yaml >typo.yaml
"$PY" "$R/tests/fixtures/k8s_jobs.py" typo.yaml --claim "models=$V" >typo.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "unknown field 'completionmode'" typo.out || bad "a misspelt field: exit $rc, $(cat typo.out)"
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
