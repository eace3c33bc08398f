#!/bin/sh
# e2e_webui.sh: the chat page (/) and the dashboard (/dashboard) of `strata
# serve`, in the distribution's Chromium, headless, driven by
# tests/fixtures/webui_check.cjs through playwright-core (from npm, pinned,
# kept under build/npm-webui). On stories260K's pack: a prompt typed, the
# answer streamed and finished, the conversation still there after a reload,
# the request counted on the dashboard, the page's weight and first paint
# printed; stop pressed during a long answer (EOS biased away, up to 3 tries)
# ends it (/metrics: a generation ended early). On strata-fake (the same
# server with a scripted engine, 30 ms a token): the same stop with nothing
# left to timing, and nothing arriving after it;
# an answer holding <script> and <img onerror> shown as text, its reasoning
# (a Qwen3 template's <think> block) apart and folded; with
# --api-key the page asks for the key, then answers. No Content-Security-
# Policy violation anywhere; --no-webui turns the pages off and / answers as
# /health; HEAD / is 200 either way. Screenshots: build/test-artefacts/webui/.
# Skips (77) without Chromium, node/npm or the registry (setup.sh --deps
# installs Chromium under CI=true), or without ../shared's stories260K.
set -u
. "$(dirname "$0")/../lib/server.sh"
bin=${STRATA_BIN:?STRATA_BIN is not set}
fake=${STRATA_FAKE:?STRATA_FAKE is not set}
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${STRATA_SHARED:-$root/../shared}
s260=$shared/models/stories260K/stories260K.gguf
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || { echo "SKIP: Chromium is not installed (setup.sh --deps installs it under CI=true)"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: node/npm are not installed"; exit 77; }
[ -f "$s260" ] || { echo "SKIP: $s260 is absent"; exit 77; }
npmdir=$root/build/npm-webui
if [ ! -f "$npmdir/node_modules/playwright-core/package.json" ]; then
    mkdir -p "$npmdir"
    (cd "$npmdir" && timeout 180 npm install --no-audit --no-fund --silent playwright-core@1.64.1 >npm.log 2>&1) ||
        { echo "SKIP: npm install playwright-core: $(tail -n 1 "$npmdir/npm.log")"; exit 77; }
fi
shots=$root/build/test-artefacts/webui
mkdir -p "$shots"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-webui-XXXXXX") || exit 1
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
shipped_gguf
check() { # MODE [KEY]: the browser's checks against $url
    CHROMIUM=$chromium PLAYWRIGHT=$npmdir/node_modules/playwright-core HOME=$tmp \
        timeout 120 node "$root/tests/fixtures/webui_check.cjs" "$1" "$url" "$shots" ${2:+"$2"} || fail "the browser's $1 checks"
}
stop_server() { kill -TERM "$pid"; wait "$pid"; pid=""; }

"$bin/iq3pack" build "$s260" -o "$tmp/pack" >/dev/null 2>&1 || fail "iq3pack build $s260"
"$bin/strata" serve "$tmp/pack" --port 0 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100
code=$(curl -s -o /dev/null -w '%{http_code}' -I "$url/")
[ "$code" = 200 ] || fail "HEAD / with the pages: $code"
csp=$(curl -s -D - -o /dev/null "$url/" | tr -d '\r' | sed -n 's/^Content-Security-Policy: //Ip')
case $csp in *"default-src 'none'"*"connect-src 'self'"*) ;; *) fail "no strict Content-Security-Policy on /: '$csp'" ;; esac
check chat
# stop on the real model: its EOS biased away (the page's requests amended by the browser check)
eos=$("$bin/iq3pack" info "$s260" | sed -n 's/^ *tokenizer\.ggml\.eos_token_id  *\([0-9]*\)$/\1/p')
[ -n "$eos" ] || fail "no eos_token_id in $s260"
check stop-real "$eos"
stop_server

# a slow scripted answer to stop; an answer that is markup
words=$(i=0; while [ $i -lt 400 ]; do printf 'word%d ' $i; i=$((i + 1)); done)
"$fake" serve "$gguf" --port 0 --fake-delay-ms 30 --fake-script "$words" >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
check stop
stop_server
"$fake" serve "$gguf" --port 0 --fake-template "$qwen3_markers" \
    --fake-script '<think>I ponder <b>this</b>.</think>Here: <script>window.__strataXss=1</script> and <img src=x onerror="window.__strataXss=2"> and **bold** `code`' >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
check inject
stop_server
"$fake" serve "$gguf" --port 0 --api-key sesame >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics")
[ "$code" = 401 ] || fail "/metrics without the key: $code"
STRATA_KEY=sesame check key sesame
stop_server

# --no-webui: / answers as /health, the rest of the pages are gone
"$fake" serve "$gguf" --port 0 --no-webui >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
body=$(curl -s "$url/")
[ "$body" = '{"status":"ok"}' ] || fail "--no-webui: / gave $body"
code=$(curl -s -o /dev/null -w '%{http_code}' -I "$url/")
[ "$code" = 200 ] || fail "--no-webui: HEAD / gave $code"
for p in /dashboard /static/chat.js; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url$p")
    [ "$code" = 404 ] || fail "--no-webui: $p gave $code"
done
stop_server
echo "screenshots in $shots: $(ls "$shots" | tr '\n' ' ')"
echo PASS
