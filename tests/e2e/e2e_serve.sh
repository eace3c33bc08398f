#!/bin/sh
# strata serve through the binary and curl: refusals of a pack it cannot
# load, /health 503 while loading then 200, the API key, a chat completion,
# the OpenAI and Anthropic SSE streams, a client cut off mid-stream, and a
# clean stop on SIGTERM. Uses the test program strata-fake (strata serve
# with the fake engine, tests/lib/strata_fake_main.c) with the shipped
# model's tokenizer on a free 127.0.0.1 port chosen by the server.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
fake=${STRATA_FAKE:?STRATA_FAKE is not set}
command -v curl >/dev/null || { echo "curl is not installed"; exit 77; }
tmp=$(mktemp -d); pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
. "$(dirname "$0")/../lib/server.sh"
shipped_gguf

# a pack that cannot be loaded is a clear one-line refusal
"$bin/strata" serve "$tmp/no-such-pack" --port 0 >/dev/null 2>"$tmp/e1" && fail "served a missing pack"
grep -q "no-such-pack: does not exist" "$tmp/e1" || fail "unclear message: $(cat "$tmp/e1")"
"$fake" serve "$gguf" --chat-template nonesuch >/dev/null 2>"$tmp/e2" && fail "accepted --chat-template nonesuch"
grep -q "nonesuch" "$tmp/e2" || fail "unclear message: $(cat "$tmp/e2")"

"$fake" serve "$gguf" --port 0 --api-key k3y --fake-load-ms 700 \
    --fake-delay-ms 10 --parallel 2 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 50
c() { curl -s -m 20 "$@"; }

code=$(c -o /dev/null -w '%{http_code}' "$url/health")
[ "$code" = 503 ] || fail "/health while loading gave $code"
for i in $(seq 50); do
    code=$(c -o /dev/null -w '%{http_code}' "$url/health"); [ "$code" = 200 ] && break; sleep 0.1
done
[ "$code" = 200 ] || fail "/health never became 200"

code=$(c -o "$tmp/b" -w '%{http_code}' "$url/v1/models")
[ "$code" = 401 ] || fail "no key gave $code"
grep -q '"authentication_error"' "$tmp/b" || fail "401 body: $(cat "$tmp/b")"

chat='{"messages":[{"role":"user","content":"Hello"}],"temperature":0,"max_tokens":12'
c -H 'Authorization: Bearer k3y' "$url/v1/chat/completions" -d "$chat}" >"$tmp/b"
grep -q '"object":"chat.completion"' "$tmp/b" || fail "chat: $(cat "$tmp/b")"
grep -q '"content":" Once upon a time' "$tmp/b" || fail "chat text: $(cat "$tmp/b")"

c -N -H 'x-api-key: k3y' "$url/v1/chat/completions" -d "$chat,\"stream\":true}" >"$tmp/s"
head -n 1 "$tmp/s" | grep -q '"role":"assistant"' || fail "first chunk: $(head -n 1 "$tmp/s")"
grep -q '"finish_reason":"length"' "$tmp/s" || fail "no finish chunk"
[ "$(grep -v '^$' "$tmp/s" | tail -n 1)" = "data: [DONE]" ] || fail "stream does not end with [DONE]"

c -N -H 'x-api-key: k3y' -H 'anthropic-version: 2023-06-01' "$url/v1/messages?beta=true" \
    -d '{"model":"x","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"Hi"}]}' >"$tmp/a"
events=$(sed -n 's/^event: //p' "$tmp/a" | uniq | tr '\n' ' ')
[ "$events" = "message_start content_block_start ping content_block_delta content_block_stop message_delta message_stop " ] ||
    fail "anthropic events: $events"

# a client that gives up mid-stream must not hold its slot
c -N -m 0.3 -H 'x-api-key: k3y' "$url/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"stream":true}' >/dev/null
c -N -m 0.3 -H 'x-api-key: k3y' "$url/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"stream":true}' >/dev/null
code=$(c -m 5 -o /dev/null -w '%{http_code}' -H 'x-api-key: k3y' "$url/v1/chat/completions" -d "$chat}")
[ "$code" = 200 ] || fail "after two cut-off streams: $code"
c -H 'x-api-key: k3y' "$url/metrics" | grep -q '^strata_busy_slots 0' || fail "slots still busy"

kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
grep -q "stopping" "$tmp/out" || fail "no stopping line"
exit 0
