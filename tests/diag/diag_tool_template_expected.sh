#!/bin/sh
# diag_tool_template_expected.sh NAME TEMPLATE.jinja: rewrites the expected
# prompts of tests/fixtures/tool_chats/NAME/ (NAME.API.json ->
# NAME.API.expected; NAME is the --chat-template name: gpt-oss,
# qwen3-coder, glm-4.5, minimax-m2, kimi-k2-thinking, deepseek-v3.1, llama4, llama3.1, llama3.2,
# qwen3-thinking, qwen3-instruct, mistral-v3, mistral-v3-user-system, kimi-k2-0905, kimi-k2-0711) by running the model's own chat template
# under jinja2 (tests/fixtures/hf_chat_render.py, date 2026-12-03, string arguments as
# objects as llama.cpp passes them to templates that need objects; Kimi's template
# takes strings as they are, and they are left so).
# TEMPLATE is the model's chat_template (its tokenizer_config.json's, or
# llama.cpp's models/templates/: openai-gpt-oss-120b.jinja,
# Qwen3-Coder.jinja, GLM-4.6.jinja, MiniMax-M2.jinja, moonshotai-Kimi-K2-Thinking.jinja,
# deepseek-ai-DeepSeek-V3.1.jinja; for DeepSeek V3.1 the model card's tool section is added;
# Llama 4's: its tokenizer_config.json's, the default chat_template of transformers' Llama4Processor;
# Llama 3.1's / 3.3's: theirs; Llama 3.2's: theirs, which dates the system turn with strftime_now).
# Qwen3 Thinking-2507's: theirs; Qwen3 Instruct-2507's: Thinking-2507's without its reasoning parts
# and its last-query scan, answers opened plainly (no copy of it was reachable here).
# Mistral v3's: Mistral 7B Instruct v0.3's (tokenizer_config.json; a copy
# reached here in a test suite's source, labelled so), and the release that puts the system message
# into the last user turn (its test `(message == user_messages[-1]) and system_message is defined`
# instead of `loop.last and ...`, the rest the same).
# Kimi K2 Instruct's: 0905's (its chat_template.jinja, as a project's test fixture quotes it) and the
# first release's (the text llama.cpp's tests hold as Kimi K2's template).
# Llama's and Mistral's templates write BOS (stories260K's <s> in the kept test), Mistral's EOS (</s>). The tests cannot fetch these, so their renderings are
# kept and e2e_tool_template_kept.sh compares `strata template` with them.
# Run by hand when the fixtures change.
set -eu
[ $# -eq 2 ] && [ -d "$(dirname "$0")/../fixtures/tool_chats/$1" ] && [ -f "$2" ] ||
    { echo "usage: $0 gpt-oss|qwen3-coder|glm-4.5|minimax-m2|kimi-k2-thinking|deepseek-v3.1|llama4|llama3.1|llama3.2|qwen3-thinking|qwen3-instruct|mistral-v3|mistral-v3-user-system|kimi-k2-0905|kimi-k2-0711 TEMPLATE.jinja" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '{"chat_template": ""}' >"$tmp/config.json"
objargs=--object-arguments
case $1 in kimi-k2-* | qwen3-*) objargs= ;; esac # they write string arguments as they are
tmpl=$2
if [ "$1" = deepseek-v3.1 ]; then
    # DeepSeek's template writes BOS (stories260K's, <s>, in the kept test) and renders no tool
    # definitions: the model card's tool section ("{system prompt}\n\n{tool_description}") is put in
    # front of its bos_token, into the system prompt, as a template statement. Arguments are text
    # it concatenates; Anthropic's thinking "enabled" is its thinking switch.
    printf '{"chat_template": "", "bos_token": "<s>"}' >"$tmp/config.json"
    objargs="--string-arguments --thinking-kwarg"
    python3 - "$2" "$tmp/t.jinja" <<'PY'
import sys
src = open(sys.argv[1], encoding='utf-8').read()
card = ("{%- if tools -%}{%- set tool_ns = namespace(text='## Tools\\nYou have access to the following tools:\\n') -%}"
        "{%- for tool in tools -%}{%- set tool_ns.text = tool_ns.text + '\\n### ' + tool['function']['name'] + "
        "'\\nDescription: ' + (tool['function']['description'] or '') + '\\n\\nParameters: ' + "
        "((tool['function']['parameters'] or {}) | tojson) + '\\n' -%}{%- endfor -%}"
        "{%- set tool_ns.text = tool_ns.text + '\\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\\n"
        "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>tool_call_name"
        "<\uff5ctool\u2581sep\uff5c>tool_call_arguments<\uff5ctool\u2581call\u2581end\uff5c>{additional_tool_calls}"
        "<\uff5ctool\u2581calls\u2581end\uff5c>\\n\\nWhere:\\n"
        "- `tool_call_name` must be an exact match to one of the available tools\\n"
        "- `tool_call_arguments` must be valid JSON that strictly follows the tool\\'s Parameters Schema\\n"
        "- For multiple tool calls, chain them directly without separators or spaces' -%}"
        "{%- set ns.system_prompt = ns.system_prompt + '\\n\\n' + tool_ns.text -%}{%- endif -%}")
assert src.count('{{ bos_token }}') == 1, 'not DeepSeek V3.1\'s template'
open(sys.argv[2], 'w', encoding='utf-8').write(src.replace('{{ bos_token }}', card + '{{ bos_token }}'))
PY
    tmpl=$tmp/t.jinja
fi
# Llama 4's template writes BOS too (stories260K's <s> in the kept test)
case $1 in llama*) printf '{"chat_template": "", "bos_token": "<s>"}' >"$tmp/config.json" ;; esac
case $1 in mistral*) printf '{"chat_template": "", "bos_token": "<s>", "eos_token": "</s>"}' >"$tmp/config.json" ;; esac
for f in "$here/fixtures/tool_chats/$1"/*.json; do
    api=${f%.json}; api=${api##*.}
    python3 "$here/fixtures/hf_chat_render.py" "$tmp/config.json" --api "$api" "$f" --template "$tmpl" \
        --date 2026-12-03 $objargs >"$tmp/out"
    mv "$tmp/out" "${f%.json}.expected"
    echo "wrote ${f%.json}.expected"
done
