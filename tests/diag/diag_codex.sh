#!/bin/sh
# diag_codex.sh: OpenAI's Codex CLI against `strata serve` over the
# Responses API, the only one Codex speaks (a diagnostic run by hand, not by
# CI: npm's @openai/codex is about 424 MB). The fake engine, with Qwen3's
# tool format, stands in for the model:
#   1. `codex exec` gets a plain answer and prints it;
#   2. it gets an exec_command call, runs it (it writes a marker file) and
#      sends the output back as a function_call_output in the next request.
#      The scripted model calls the tool on every turn, so Codex is stopped
#      after a few seconds; the marker and the request count tell.
#
#   sh tests/diag/diag_codex.sh            (from the repository root, after make)
#   CODEX_DIR=DIR                     where the package is installed (kept)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/lib/server.sh"
agent_diag_begin codex
cx_dir=${CODEX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/codex}

agent_install "$cx_dir" @openai/codex codex
codex=$agent
echo "$("$codex" --version 2>/dev/null)"

serve() { # SCRIPT: the server, and Codex's configuration for it
    agent_serve "$1"
    mkdir -p "$tmp/home/.codex"
    cat >"$tmp/home/.codex/config.toml" <<EOF
model = "strata-fake"
model_provider = "strata"
[model_providers.strata]
name = "strata"
base_url = "$url/v1"
env_key = "STRATA_KEY"
EOF
}
ask() { # SECONDS PROMPT: codex exec against the server, its own home, in $tmp
    (cd "$tmp" && HOME="$tmp/home" CODEX_HOME="$tmp/home/.codex" STRATA_KEY=local \
        timeout "$1" "$codex" exec --skip-git-repo-check --sandbox workspace-write "$2")
}
served() { curl -s "$url/metrics" | sed -n 's|^strata_requests_total{endpoint="/v1/responses",status="200"} ||p'; }

serve "Hello from strata."
ask 120 "say hello" >"$tmp/answer" 2>&1 || fail "codex exec: $(tail -n 5 "$tmp/answer")"
grep -q "Hello from strata." "$tmp/answer" || fail "the answer was not printed: $(tail -n 5 "$tmp/answer")"
echo "ok: a plain answer ($(served) request)"
agent_stop

marker="$tmp/marker"
serve "I will write it.
<tool_call>
{\"name\": \"exec_command\", \"arguments\": {\"cmd\": \"echo strata-tool-ok > $marker\"}}
</tool_call>"
ask 15 "write the marker" >"$tmp/answer" 2>&1
grep -q strata-tool-ok "$marker" 2>/dev/null || fail "the exec_command call did not run: $(tail -n 5 "$tmp/answer")"
n=$(served)
[ "${n:-0}" -ge 2 ] || fail "the call's output did not come back ($n requests)"
echo "ok: an exec_command call run and its output sent back ($n requests)"
agent_stop
echo "PASS"
