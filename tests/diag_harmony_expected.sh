#!/bin/sh
# diag_harmony_expected.sh TEMPLATE.jinja: rewrites the expected prompts of
# tests/fixtures/tool_chats/harmony/ (NAME.API.json -> NAME.API.expected)
# by running gpt-oss's chat template under jinja2 (tests/fixtures/
# hf_chat_render.py, date 2026-12-03, string arguments as objects as
# llama.cpp passes them). TEMPLATE is gpt-oss's chat_template.jinja (its
# tokenizer_config.json's chat_template, or llama.cpp's
# models/templates/openai-gpt-oss-120b.jinja); the tests cannot fetch it,
# so its renderings are kept, and e2e_tool_template.sh compares `strata
# template` against them. Run by hand when the fixtures change.
set -eu
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 TEMPLATE.jinja" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '{"chat_template": ""}' >"$tmp/config.json"
for f in "$here"/fixtures/tool_chats/harmony/*.json; do
    api=${f%.json}; api=${api##*.}
    python3 "$here/fixtures/hf_chat_render.py" "$tmp/config.json" --api "$api" "$f" --template "$1" \
        --date 2026-12-03 --object-arguments >"$tmp/out"
    mv "$tmp/out" "${f%.json}.expected"
    echo "wrote ${f%.json}.expected"
done
