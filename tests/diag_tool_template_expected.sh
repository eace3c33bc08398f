#!/bin/sh
# diag_tool_template_expected.sh NAME TEMPLATE.jinja: rewrites the expected
# prompts of tests/fixtures/tool_chats/NAME/ (NAME.API.json ->
# NAME.API.expected; NAME is the --chat-template name: gpt-oss,
# qwen3-coder, glm-4.5, minimax-m2, kimi-k2-thinking) by running the model's own chat template
# under jinja2 (tests/fixtures/hf_chat_render.py, date 2026-12-03, string arguments as
# objects as llama.cpp passes them to templates that need objects; Kimi's template
# takes strings as they are, and they are left so).
# TEMPLATE is the model's chat_template (its tokenizer_config.json's, or
# llama.cpp's models/templates/: openai-gpt-oss-120b.jinja,
# Qwen3-Coder.jinja, GLM-4.6.jinja, MiniMax-M2.jinja, moonshotai-Kimi-K2-Thinking.jinja). The tests cannot fetch these, so their renderings are
# kept and e2e_tool_template_kept.sh compares `strata template` with them.
# Run by hand when the fixtures change.
set -eu
[ $# -eq 2 ] && [ -d "$(dirname "$0")/fixtures/tool_chats/$1" ] && [ -f "$2" ] ||
    { echo "usage: $0 gpt-oss|qwen3-coder|glm-4.5|minimax-m2|kimi-k2-thinking TEMPLATE.jinja" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '{"chat_template": ""}' >"$tmp/config.json"
objargs=--object-arguments
[ "$1" = kimi-k2-thinking ] && objargs=
for f in "$here/fixtures/tool_chats/$1"/*.json; do
    api=${f%.json}; api=${api##*.}
    python3 "$here/fixtures/hf_chat_render.py" "$tmp/config.json" --api "$api" "$f" --template "$2" \
        --date 2026-12-03 $objargs >"$tmp/out"
    mv "$tmp/out" "${f%.json}.expected"
    echo "wrote ${f%.json}.expected"
done
