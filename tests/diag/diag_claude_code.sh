#!/bin/sh
# diag_claude_code.sh: Claude Code against `strata serve` (a diagnostic run
# by hand, not by CI: Claude Code is npm's @anthropic-ai/claude-code, about
# 235 MB, under Anthropic's own licence). The fake engine, with Qwen3's tool
# format and a scripted answer that calls Bash, stands in for the model:
#   1. `claude -p` gets a plain answer (the script without a call) and
#      prints it;
#   2. `claude -p --allowedTools Bash` gets a Bash call, runs it (it writes
#      a marker file) and sends the result back in a second request.
# What this checks is the wire: the request shapes Claude Code sends
# (adaptive thinking, output_config, a system message among the messages,
# max_tokens 64000, HEAD /) are accepted, and its client reads strata's
# streamed answers and tool_use blocks.
#
#   sh tests/diag/diag_claude_code.sh            (from the repository root, after make)
#   CLAUDE_CODE_DIR=DIR                     where the package is installed (kept)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/lib/server.sh"
agent_diag_begin cc
cc_dir=${CLAUDE_CODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/claude-code}

agent_install "$cc_dir" @anthropic-ai/claude-code claude
claude=$agent
echo "Claude Code $("$claude" --version 2>/dev/null)"

ask() { # ARGS...: claude -p against the server, its own home
    mkdir -p "$tmp/home"
    HOME="$tmp/home" ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY=sk-local \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 timeout 300 "$claude" -p "$@"
}
served() { curl -s "$url/metrics" | sed -n 's|^strata_requests_total{endpoint="/v1/messages",status="200"} ||p'; }

agent_serve "Hello from strata."
ask "say hello" >"$tmp/answer" 2>&1 || fail "claude -p: $(cat "$tmp/answer")"
grep -q "Hello from strata." "$tmp/answer" || fail "the answer was not printed: $(cat "$tmp/answer")"
echo "ok: a plain answer ($(served) request)"
agent_stop

marker="$tmp/marker"
agent_serve "I will write it.
<tool_call>
{\"name\": \"Bash\", \"arguments\": {\"command\": \"echo strata-tool-ok > $marker\", \"description\": \"Write a marker file\"}}
</tool_call>"
# the scripted model calls the tool every turn, so the run ends at --max-turns
ask "write the marker" --allowedTools Bash --max-turns 2 >"$tmp/answer" 2>&1
grep -q strata-tool-ok "$marker" 2>/dev/null || fail "the Bash call did not run: $(cat "$tmp/answer")"
n=$(served)
[ "${n:-0}" -ge 2 ] || fail "the tool result did not come back ($n requests)"
echo "ok: a Bash call run and its result sent back ($n requests)"
agent_stop
echo "PASS"
