# tests/lib/server.sh: sourced by the end-to-end scripts that start
# `strata serve` (e2e_serve.sh, e2e_serve_real.sh, e2e_serve_start.sh, e2e_serve_tools_sdk.sh, e2e_readme_js.sh, e2e_tier.sh,
# diag_claude_code.sh, diag_codex.sh, diag_agents_chat.sh). Not a test itself:
# tests/run.sh runs only tests/e2e/e2e_*.sh.
#
# Contract: the caller sets $tmp (its scratch folder) and starts the server
# in the background with stdout in $tmp/out and stderr in $tmp/err.
# fail MSG... prints "FAIL: MSG" and the server's stderr, then exits 1.
# server_port TRIES waits up to TRIES x 0.1 s for the server's "listening on"
# line and sets port and url, or fails with "no listening line".
# server_healthy TRIES waits up to TRIES x 0.1 s for /health to answer 200
# (the model loaded), or fails.
# sdk_install DIR installs the official openai and @anthropic-ai/sdk packages
# under DIR with npm (120 s at most); non-zero, with the reason in DIR-npm.log,
# when node/npm are absent or the install fails.
# agent_install DIR PACKAGE BIN (the diag_*.sh agent checks) installs an
# agent's npm PACKAGE under DIR once (kept: they are hundreds of MB) and sets
# agent to DIR/node_modules/.bin/BIN, or exits 77 (skip) with npm's last line.
# qwen3_markers: a template text the server takes for Qwen3's tool format.
# shipped_gguf: the model the repository ships (models/tiny-moe/tiny-moe.gguf,
# found from the sourcing script's place under tests/), or exit 1 naming it:
# it is part of the repository, so its absence is a failure, not a skip.
# fake_e2e_begin NAME (an e2e script running strata-fake on the shipped
# model's tokenizer): sets fake ($STRATA_FAKE), gguf (shipped_gguf) and tmp,
# and a trap that stops the server ($pid) and removes tmp.
# agent_diag_begin NAME (the diag_*.sh agent checks, after setting root): sets
# shared, gguf (stories260K), fake (the test program strata-fake: $STRATA_FAKE,
# or the first build/*/tests/strata-fake) and tmp, and a trap that stops the
# server and removes tmp; exits 77 without the GGUF, 2 without strata-fake.
# agent_serve SCRIPT starts strata-fake (`strata serve` with the fake engine) on it
# answering SCRIPT in Qwen3's tool format, in a context that holds an
# agent's whole system prompt and tools (Claude Code's come to about 150000
# of stories260K's tokens), and waits for it; agent_stop stops it.

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

server_healthy() {
    code=""
    for i in $(seq "$1"); do
        code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$url/health"); [ "$code" = 200 ] && return 0; sleep 0.1
    done
    fail "/health never became 200"
}

shipped_gguf() {
    gguf="$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf"
    [ -f "$gguf" ] || { echo "FAIL: $gguf is missing (it is part of the repository)"; exit 1; }
}

fake_e2e_begin() {
    fake=${STRATA_FAKE:?STRATA_FAKE is not set}
    shipped_gguf
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-$1-XXXXXX") || exit 1
    pid=""
    trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
}

agent_diag_begin() {
    shared=${STRATA_SHARED:-$root/../shared}
    gguf="$shared/models/stories260K/stories260K.gguf"
    [ -f "$gguf" ] || { echo "SKIP: $gguf is absent"; exit 77; }
    fake=${STRATA_FAKE:-$(ls "$root"/build/*/tests/strata-fake 2>/dev/null | head -n 1)}
    [ -x "$fake" ] || { echo "strata-fake is not built (make tests)"; exit 2; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-diag-$1-XXXXXX") || exit 1
    pid=""
    trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
}

agent_serve() {
    "$fake" serve "$gguf" --port 0 --ctx 400000 --fake-template "$qwen3_markers" \
        --fake-script "$1" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    server_port 100
    server_healthy 100
}
agent_stop() { kill -TERM "$pid"; wait "$pid"; pid=""; }

agent_install() {
    if [ ! -x "$1/node_modules/.bin/$3" ]; then
        mkdir -p "$1"
        (cd "$1" && timeout 300 npm install --no-audit --no-fund "$2" >npm.log 2>&1) ||
            { echo "SKIP: npm install $2: $(tail -n 1 "$1/npm.log")"; exit 77; }
    fi
    agent="$1/node_modules/.bin/$3"
}
qwen3_markers="<|im_start|>{%- if tool_call.arguments is string %}{{- '<tool_call>\\n{\"name\": \"' }}{{ ns.last_query_index }}<tool_response>"

sdk_install() {
    if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
        echo "npm or node is not installed" >"$1-npm.log"
        return 1
    fi
    timeout 120 npm install --no-audit --no-fund --silent --prefix "$1" openai @anthropic-ai/sdk >"$1-npm.log" 2>&1
}
