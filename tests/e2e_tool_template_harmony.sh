#!/bin/sh
# e2e_tool_template_harmony.sh: gpt-oss's tool layout against jinja2's
# renderings of gpt-oss's own chat template, byte for byte. The template is
# not fetchable here, so its renderings are kept beside each request body
# (tests/fixtures/tool_chats/harmony/NAME.API.expected, written by
# tests/diag_harmony_expected.sh TEMPLATE.jinja): TypeScript schemas with
# enums, defaults, nullables, arrays, oneOf and nested objects, calls and
# results, analysis text dropped once a final answer follows, Anthropic
# tool blocks. `strata template --chat-template gpt-oss --date 2026-12-03`
# must reproduce each. Then the template's refusals. Needs only a GGUF with
# a tokenizer (stories260K from ../shared); exit 77 when it is absent.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
shared=${STRATA_SHARED:-../shared}
here=$(cd "$(dirname "$0")" && pwd)
gguf=$shared/models/stories260K/stories260K.gguf
[ -f "$gguf" ] || { echo "SKIP: $gguf is absent"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-harmony-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

n=0
for body in "$here"/fixtures/tool_chats/harmony/*.json; do
    name=$(basename "$body" .json); api=${name##*.}
    want=${body%.json}.expected
    [ -f "$want" ] || fail "$name: no $want"
    "$bin/strata" template "$gguf" --chat-template gpt-oss --date 2026-12-03 --api "$api" -f "$body" \
        >"$tmp/got" 2>"$tmp/err" || fail "$name: strata template: $(cat "$tmp/err")"
    grep -q "tool calls: gpt-oss" "$tmp/err" || fail "$name: not gpt-oss's tool layout: $(cat "$tmp/err")"
    if ! cmp -s "$want" "$tmp/got"; then
        diff "$want" "$tmp/got" | head -n 20
        fail "$name: strata's prompt differs from jinja2's rendering of gpt-oss's template"
    fi
    echo "$name: equal to jinja2's rendering ($(wc -c <"$tmp/got") bytes)"
    n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "only $n request bodies found"

refuse() { # BODY WANT
    printf '%s' "$1" >"$tmp/req.json"
    "$bin/strata" template "$gguf" --chat-template gpt-oss -f "$tmp/req.json" >"$tmp/got" 2>"$tmp/err" &&
        fail "accepted: $1"
    grep -q "$2" "$tmp/err" || fail "refusal of $1: $(cat "$tmp/err")"
    [ ! -s "$tmp/got" ] || fail "a refused request printed a prompt"
}
refuse '{"messages":[{"role":"user","content":"x"},{"role":"tool","content":"r"}]}' \
    "messages\[1\]: a tool result with no assistant tool call before it"
refuse '{"messages":[{"role":"assistant","content":"<|channel|>final<|message|>x","tool_calls":[{"function":{"name":"f"}}]}]}' \
    "messages\[0\]: gpt-oss's template refuses harmony's <|channel|> tags"
echo "$n request bodies rendered as jinja2 renders gpt-oss's template; refusals named"
