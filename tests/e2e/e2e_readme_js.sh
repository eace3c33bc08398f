#!/bin/sh
# e2e_readme_js.sh: the README's JavaScript client example runs as written.
# The first ```js block of README.md is saved as client.mjs (the name its
# first line gives), its port 8080 replaced by the test server's, and run
# with node beside the official `openai` and `@anthropic-ai/sdk` packages
# (installed as tests/lib/server.sh's sdk_install does) against strata-fake
# (`strata serve` with the fake engine) answering a fixed sentence: node
# must exit 0 and print the sentence twice (once per SDK); the fake engine
# tokenizes with the shipped model. Exit 77 (skip) when node, npm or the
# packages are not to be had.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/server.sh"
fake_e2e_begin readme-js

awk '/^```js$/ { on = 1; next } on && /^```$/ { exit } on { print }' "$here/../README.md" >"$tmp/block.js"
[ -s "$tmp/block.js" ] || fail "README.md has no \`\`\`js block"
grep -q '127.0.0.1:8080' "$tmp/block.js" || fail "the README's js block does not talk to 127.0.0.1:8080"

sdk_install "$tmp/sdk" || { echo "SKIP: the SDKs: $(tail -n 1 "$tmp/sdk-npm.log")"; exit 77; }

sentence="Once upon a time there was a cat."
"$fake" serve "$gguf" --port 0 --fake-script "$sentence" >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100

sed "s/127[.]0[.]0[.]1:8080/127.0.0.1:$port/g" "$tmp/block.js" >"$tmp/sdk/client.mjs"
(cd "$tmp/sdk" && timeout 60 node client.mjs) >"$tmp/node.out" 2>"$tmp/node.err" \
    || fail "node client.mjs failed: $(cat "$tmp/node.err" "$tmp/node.out")"
n=$(grep -cF "$sentence" "$tmp/node.out")
[ "$n" -eq 2 ] || fail "expected the answer twice, got: $(cat "$tmp/node.out")"
echo "ok: the README's client example printed: $(tr '\n' '|' <"$tmp/node.out")"
kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
exit 0
