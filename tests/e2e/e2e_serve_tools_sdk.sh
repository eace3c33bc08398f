#!/bin/sh
# e2e_serve_tools_sdk.sh: tool calls on the wire, read by the official
# `openai` and `@anthropic-ai/sdk` packages (tests/fixtures/sdk_tools_check.cjs):
# strata-fake (`strata serve` with the fake engine) with Qwen3's tool markers as its template
# replays an answer that reasons, says a sentence and calls get_weather and
# now; each SDK must find both calls in the plain and in the streamed
# answer (its own stream helper accumulating the deltas), and take the next
# turn carrying its assistant message and the tool results. The same
# answers are checked field by field in C (test_server.c); this is what the
# clients people use make of them. The fake engine tokenizes with the
# shipped model. Exit 77 (skip) when node, npm or the packages are not to be
# had.
set -u
fake=${STRATA_FAKE:?STRATA_FAKE is not set}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-tools-sdk-XXXXXX") || exit 1
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
. "$here/lib/server.sh"
shipped_gguf

sdk_install "$tmp/sdk" || { echo "SKIP: the SDKs: $(tail -n 1 "$tmp/sdk-npm.log")"; exit 77; }

script=$(printf '<think>\nLook it up.\n</think>\n\nI will check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>')
"$fake" serve "$gguf" --port 0 --fake-template "$qwen3_markers" --fake-script "$script" \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100
grep -q "tool calls: qwen3" "$tmp/out" || fail "the template's tool format was not recognised: $(cat "$tmp/out")"

cp "$here/fixtures/sdk_tools_check.cjs" "$tmp/sdk/"
(cd "$tmp/sdk" && timeout 60 node sdk_tools_check.cjs "$port") >"$tmp/sdk.log" 2>&1 || fail "SDKs: $(cat "$tmp/sdk.log")"
cat "$tmp/sdk.log"
kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
