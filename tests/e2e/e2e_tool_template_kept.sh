#!/bin/sh
# e2e_tool_template_kept.sh: the whole templates whose text the tests cannot
# fetch (gpt-oss's, Qwen3-Coder's, GLM-4.6's, MiniMax-M2's, Kimi K2 Thinking's, DeepSeek V3.1's, Llama 4's), against jinja2's
# renderings of them, byte
# for byte. Each folder tests/fixtures/tool_chats/NAME/ (NAME: the
# --chat-template name) holds request bodies NAME.API.json and, beside each,
# the prompt jinja2 rendered from the model's own template
# (NAME.API.expected, written by tests/diag/diag_tool_template_expected.sh):
# gpt-oss's TypeScript schemas (enums, defaults, nullables, arrays, oneOf,
# nested objects), calls and results, analysis text dropped once a final
# answer follows, reasoning effort; Qwen3-Coder's parameter blocks with
# Python's str() of schema values and arguments; GLM's think blocks, arg
# pairs, /nothink and observations; MiniMax's invokes and responses (its
# bodies all bring a system message: the template's identity line is the
# pack's, not ours to keep); Kimi's tool_declare turn, call ids and
# "## Return of" results, reasoning kept only after the last finished
# turn; DeepSeek V3.1's template with its model card's tool section (no
# system message, thinking by either kwarg or Anthropic's "enabled",
# answers after tool outputs, swift.openai: ms-swift's DeepSeek V3.1
# agent-template test conversation, whose expected text it equals byte for
# byte but for BOS); Llama 4's tools in the first user turn as tojson(indent=4)
# (nested schemas, non-ASCII), trimmed system and first messages, calls after
# <|python_end|>, results as JSON strings; Llama 3.1's (and 3.3's) and 3.2's,
# their system turn always written and dated (3.2's today: --date), every
# message trimmed; Qwen3 Thinking-2507's (the answer opened with <think>
# whatever enable_thinking says) and Instruct-2507's (assistants' text as it
# is; its template reconstructed, see diag_tool_template_expected.sh); Mistral v3's in
# both releases (the system message in the last message or the last user one;
# the tools before every user message equal to the last, string values
# unescaped; calls with their 9-character ids, results, non-ASCII); Kimi K2
# Instruct's, 0905's and the first release's (the tools under "# Tools",
# the template's indentation before results, calls after text); both APIs. `strata template
# --chat-template NAME --date 2026-12-03` must reproduce each. Then the
# templates' refusals. Needs only a GGUF with a tokenizer: the shipped
# model's (BOS <s>, EOS </s>).
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
here=$(cd "$(dirname "$0")/.." && pwd)
gguf=$(cd "$here/.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$gguf" ] || { echo "FAIL: $gguf is missing (it is part of the repository)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-kept-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

total=0
for name in gpt-oss qwen3-coder glm-4.5 minimax-m2 kimi-k2-thinking deepseek-v3.1 llama4 llama3.1 llama3.2 qwen3-thinking \
    qwen3-instruct mistral-v3 mistral-v3-user-system kimi-k2-0905 kimi-k2-0711; do
    n=0
    for body in "$here/fixtures/tool_chats/$name"/*.json; do
        case=$(basename "$body" .json); api=${case##*.}
        want=${body%.json}.expected
        [ -f "$want" ] || fail "$name/$case: no $want"
        "$bin/strata" template "$gguf" --chat-template "$name" --date 2026-12-03 --api "$api" -f "$body" \
            >"$tmp/got" 2>"$tmp/err" || fail "$name/$case: strata template: $(cat "$tmp/err")"
        grep -q "tool calls: $name" "$tmp/err" || fail "$name/$case: not $name's layout: $(cat "$tmp/err")"
        if ! cmp -s "$want" "$tmp/got"; then
            diff "$want" "$tmp/got" | head -n 20
            fail "$name/$case: strata's prompt differs from jinja2's rendering of $name's template"
        fi
        echo "$name/$case: equal to jinja2's rendering ($(wc -c <"$tmp/got") bytes)"
        n=$((n + 1))
    done
    [ "$n" -ge 4 ] || fail "$name: only $n request bodies found"
    total=$((total + n))
done

# the same conversation through the Responses API (Codex's): its input items (reasoning,
# function_call, function_call_output) give the chat body's prompt exactly
"$bin/strata" template "$gguf" --chat-template kimi-k2-thinking --api responses \
    -f "$here/fixtures/responses/kimi_ids.responses.json" >"$tmp/got" 2>"$tmp/err" ||
    fail "responses body: strata template: $(cat "$tmp/err")"
cmp -s "$here/fixtures/tool_chats/kimi-k2-thinking/kimi_ids.openai.expected" "$tmp/got" ||
    fail "the Responses body's prompt differs from the chat body's: $(diff "$here/fixtures/tool_chats/kimi-k2-thinking/kimi_ids.openai.expected" "$tmp/got" | head -n 10)"
echo "responses/kimi_ids: the chat body's prompt"

refuse() { # NAME BODY WANT
    printf '%s' "$2" >"$tmp/req.json"
    "$bin/strata" template "$gguf" --chat-template "$1" -f "$tmp/req.json" >"$tmp/got" 2>"$tmp/err" &&
        fail "$1 accepted: $2"
    grep -q "$3" "$tmp/err" || fail "$1's refusal of $2: $(cat "$tmp/err")"
    [ ! -s "$tmp/got" ] || fail "a refused request printed a prompt"
}
refuse gpt-oss '{"messages":[{"role":"user","content":"x"},{"role":"tool","content":"r"}]}' \
    "messages\[1\]: a tool result with no assistant tool call before it"
refuse gpt-oss '{"messages":[{"role":"assistant","content":"<|channel|>final<|message|>x","tool_calls":[{"function":{"name":"f"}}]}]}' \
    "messages\[0\]: gpt-oss's template refuses harmony's <|channel|> tags"
refuse qwen3-coder '{"messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]}]}' \
    "messages\[0\]: Qwen3-Coder's template needs each call's arguments to be a JSON object"
refuse glm-4.5 '{"messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"nope"}}]}]}' \
    "messages\[0\]: GLM-4.5's template needs each call's arguments to be a JSON object"
refuse minimax-m2 '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"},{"role":"tool","content":"r"}]}' \
    "messages\[2\]: a tool result with no assistant tool call before it"
refuse llama4 '{"messages":[{"role":"system","content":"s"}],"tools":[{"type":"function","function":{"name":"f"}}]}' \
    "the tools in the first user message, and there is none"
refuse llama3.1 '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{}"}},{"function":{"name":"g","arguments":"{}"}}]}]}' \
    "messages\[1\]: Llama 3.1's template takes one tool call per message"
refuse mistral-v3 '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"call_1","function":{"name":"f","arguments":"{}"}}]}]}' \
    "messages\[1\]: Mistral's template needs tool call ids of 9 characters"
refuse mistral-v3 '{"messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}]}' \
    "messages\[1\]: after the optional system message, conversation roles must alternate"
echo "$total request bodies rendered as jinja2 renders gpt-oss's, Qwen3-Coder's, GLM-4.6's, MiniMax-M2's, Kimi K2 Thinking's, DeepSeek V3.1's, Llama 4's, 3.1's and 3.2's, Qwen3 2507's, Mistral v3's and Kimi K2 Instruct's templates; refusals named"
