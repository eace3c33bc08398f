#!/bin/sh
# ./setup.sh --yes --model stories260K against a loopback Hugging Face mirror
# (tests/fixtures/hf_mirror.py serving a scratch folder in the hub layout):
# it downloads the model, builds a pack that `iq3pack verify` accepts and that
# `strata run` generates a text from; a second run does nothing new (no
# request reaches the mirror, nothing is rebuilt). Only 127.0.0.1 is contacted.
# The mirror serves the shipped model's bytes under the list's file name:
# set-up's download, build and run do not depend on which model the file holds.
set -u
bin=${STRATA_BIN:?}
here=$(cd "$(dirname "$0")/.." && pwd); top=$(cd "$here/.." && pwd)
gguf=$top/models/tiny-moe/tiny-moe.gguf
[ -f "$gguf" ] || { echo "FAIL: $gguf is missing (it is part of the repository)"; exit 1; }
command -v python3 >/dev/null || { echo "skip: python3 (for the mirror fixture) is absent"; exit 77; }
tmp=$(mktemp -d); pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# the built-in list names ggml-org/models tinyllamas/stories260K.gguf: lay that out
mkdir -p "$tmp/root/models/tinyllamas"
cp "$gguf" "$tmp/root/models/tinyllamas/stories260K.gguf"  # the mirror serves no links
python3 "$here/fixtures/hf_mirror.py" --root "$tmp/root" --port-file "$tmp/port" --log "$tmp/log" \
    --max-requests 50 --lifetime 120 &
pid=$!
i=0; while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/port" ] || { echo "the mirror did not start"; exit 1; }
export HF_ENDPOINT="http://127.0.0.1:$(cat "$tmp/port")" STRATA_PULL_BACKOFF_MS=10
unset MAKEFLAGS MFLAGS MAKELEVEL

run_setup() {
    (cd "$top" && ./setup.sh --yes --model stories260K --models-dir "$tmp/models" --packs-dir "$tmp/packs") \
        >"$tmp/setup.$1.log" 2>&1 </dev/null
}
run_setup 1 || { echo "first setup run failed:"; cat "$tmp/setup.1.log"; exit 1; }
pack=$tmp/packs/stories260K
[ -f "$pack/index.txt" ] || { echo "no finished pack:"; cat "$tmp/setup.1.log"; exit 1; }
cmp "$tmp/models/stories260K/tinyllamas/stories260K.gguf" "$gguf" || { echo "download differs"; exit 1; }
grep -q "serve it:" "$tmp/setup.1.log" || { echo "setup did not print the serve command"; exit 1; }
"$bin/iq3pack" verify "$pack" --source "$gguf" >"$tmp/verify.log" 2>&1 || { echo "verify failed:"; cat "$tmp/verify.log"; exit 1; }
"$bin/strata" run "$pack" -p "Once upon a time" -n 24 --seed 1 >"$tmp/story.txt" 2>"$tmp/run.err" \
    || { echo "strata run failed:"; cat "$tmp/run.err"; exit 1; }
[ "$(wc -w < "$tmp/story.txt")" -ge 5 ] || { echo "strata run printed no text:"; cat "$tmp/story.txt"; exit 1; }

requests=$(wc -l < "$tmp/log")
stamp=$(ls -l --time-style=+%s.%N "$pack/index.txt")
run_setup 2 || { echo "second setup run failed:"; cat "$tmp/setup.2.log"; exit 1; }
grep -q "already built" "$tmp/setup.2.log" || { echo "second run did not skip the pack:"; cat "$tmp/setup.2.log"; exit 1; }
[ "$(wc -l < "$tmp/log")" -eq "$requests" ] || { echo "second run contacted the mirror again"; exit 1; }
[ "$(ls -l --time-style=+%s.%N "$pack/index.txt")" = "$stamp" ] || { echo "second run rebuilt the pack"; exit 1; }
exit 0
