#!/bin/sh
# diag_agents_chat.sh: the agent CLIs that speak OpenAI's chat completions
# API, Qwen Code (npm @qwen-code/qwen-code, about 55 MB) and opencode (npm
# opencode-ai, about 354 MB, which fetches its provider package from npm on
# first use), against `strata serve` (a diagnostic run by hand, not by CI).
# The fake engine, with Qwen3's tool format, stands in for the model; for
# each agent:
#   1. a one-shot prompt gets a plain answer, which the agent prints;
#   2. it gets a shell call (Qwen Code's run_shell_command, opencode's
#      bash), runs it with its approvals off (it writes a marker file) and
#      sends the output back in the next request. The scripted model calls
#      the tool on every turn, so the agent is stopped after a few seconds;
#      the marker and the request count tell.
#
#   sh tests/diag/diag_agents_chat.sh [qwen-code] [opencode]   (after make; default both)
#   AGENTS_DIR=DIR                  where the packages are installed (kept)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/lib/server.sh"
agent_diag_begin agents
dir=${AGENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata}

served() { curl -s "$url/metrics" | sed -n 's|^strata_requests_total{endpoint="/v1/chat/completions",status="200"} ||p'; }

ask() { # AGENT SECONDS PROMPT: the agent, one-shot, approvals off, its own home, in $tmp/work
    mkdir -p "$tmp/work" "$tmp/home"
    case $1 in
    qwen-code)
        (cd "$tmp/work" && HOME="$tmp/home" timeout "$2" "$qwen" --auth-type openai --openai-api-key local \
            --openai-base-url "$url/v1" -m strata-fake --bare --yolo "$3") ;;
    opencode)
        cat >"$tmp/work/opencode.json" <<EOF
{"provider": {"strata": {"npm": "@ai-sdk/openai-compatible", "name": "strata",
  "options": {"baseURL": "$url/v1", "apiKey": "local"}, "models": {"strata-fake": {"name": "strata-fake"}}}}}
EOF
        (cd "$tmp/work" && HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/cfg" XDG_DATA_HOME="$tmp/home/data" \
            XDG_CACHE_HOME="$dir/opencode-cache" timeout "$2" "$opencode" run --auto -m strata/strata-fake "$3") ;;
    esac
}

check() { # AGENT SHELL_TOOL
    agent_serve "Hello from strata."
    ask "$1" 120 "say hello" >"$tmp/answer" 2>&1 || fail "$1: $(tail -n 5 "$tmp/answer")"
    grep -q "Hello from strata." "$tmp/answer" || fail "$1: the answer was not printed: $(tail -n 5 "$tmp/answer")"
    echo "ok: $1: a plain answer ($(served) requests)"
    agent_stop
    marker="$tmp/marker-$1"
    agent_serve "I will write it.
<tool_call>
{\"name\": \"$2\", \"arguments\": {\"command\": \"echo strata-tool-ok > $marker\", \"description\": \"Writes a marker\"}}
</tool_call>"
    ask "$1" 20 "write the marker" >"$tmp/answer" 2>&1
    grep -q strata-tool-ok "$marker" 2>/dev/null || fail "$1: the $2 call did not run: $(tail -n 5 "$tmp/answer")"
    n=$(served)
    [ "${n:-0}" -ge 2 ] || fail "$1: the call's output did not come back ($n requests)"
    echo "ok: $1: a $2 call run and its output sent back ($n requests)"
    agent_stop
}

for a in ${*:-qwen-code opencode}; do
    case $a in
    qwen-code)
        agent_install "$dir/qwen-code" @qwen-code/qwen-code qwen
        qwen=$agent
        echo "Qwen Code $("$qwen" --version 2>/dev/null)"
        check qwen-code run_shell_command ;;
    opencode)
        agent_install "$dir/opencode" opencode-ai opencode
        opencode=$agent
        echo "opencode $("$opencode" --version 2>/dev/null)"
        check opencode bash ;;
    *) echo "usage: $0 [qwen-code] [opencode]"; exit 2 ;;
    esac
done
echo "PASS"
