#!/bin/sh
# e2e_serve_real.sh: `strata serve PACK` with the real model (issue 7's
# acceptance) on the shipped model's pack built by iq3pack, on a free 127.0.0.1
# port: /v1/models; the greedy completion of "Once upon a time" equals
# `strata run`'s; chat, completions and messages streamed (SSE parsed event
# by event, tests/fixtures/sse_check.py) equal the non-streamed text for the
# same seed; count_tokens equals the CLI tokenizer's count; 8 concurrent
# streaming clients all complete with the text each gets alone, while a slow
# client is killed mid-stream; /metrics counts every request. Then, when npm
# can install them, the official openai and @anthropic-ai/sdk packages make
# the same checks (tests/fixtures/sdk_check.cjs).
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 (to parse the streams) is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-serve-real-XXXXXX") || exit 1
pid=""; slow=""; clients=""
cleanup() {
    for p in $slow $clients $pid; do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
. "$(dirname "$0")/../lib/server.sh"
shipped_gguf
vocab=1536 # its n_vocab: the floats in a row of --logits-out
# the interpreter itself, not a version manager's shim that costs 0.3 s per call
py=$(python3 -c 'import sys; print(sys.executable)') || exit 1
chk() { "$py" "$here/fixtures/sse_check.py" "$@"; }

pack="$tmp/tiny-moe"
"$bin/iq3pack" build "$gguf" -o "$pack" >/dev/null 2>&1 || fail "iq3pack build"
want=$("$bin/strata" run "$pack" -p "Once upon a time" -n 24 --temp 0) || fail "strata run"

"$bin/strata" serve "$pack" --port 0 --parallel 4 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100
grep -q "ready: model tiny-moe, 512-token context" "$tmp/out" || fail "ready line: $(cat "$tmp/out")"

# Every API request goes through post(), which notes its path (in a file:
# posts run in subshells) for the /metrics check.
post() { # PATH BODY [curl options...]
    p=$1; b=$2; shift 2
    echo "${p%%\?*}" >>"$tmp/made"
    curl -s -N -m 30 "$@" "$url$p" -H 'Content-Type: application/json' -d "$b"
}

models=$(curl -s -m 10 "$url/v1/models")
[ "$(echo "$models" | chk get data.0.id)" = tiny-moe ] || fail "/v1/models: $models"
[ "$(echo "$models" | chk get data.0.context_length)" = 512 ] || fail "/v1/models: $models"

got=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}' | chk get choices.0.text)
[ "$got" = "$want" ] || fail "greedy completion '$got' is not strata run's '$want'"

# streamed == non-streamed, for the same seed, in each API
cmpl='{"prompt":"Once upon a time","max_tokens":40,"temperature":0.8,"seed":5'
a=$(post /v1/completions "$cmpl}" | chk get choices.0.text) || fail "completion"
b=$(post /v1/completions "$cmpl,\"stream\":true}" | chk openai-completion) || fail "completion stream"
[ -n "$a" ] && [ "$a" = "$b" ] || fail "completion stream '$b' != '$a'"

chat='{"messages":[{"role":"system","content":"You tell stories."},{"role":"user","content":"A story about a cat."}],"max_tokens":48,"temperature":0.9,"top_p":0.95,"seed":11'
post /v1/chat/completions "$chat}" >"$tmp/chat.json"
a=$(chk get choices.0.message.content <"$tmp/chat.json") || fail "chat"
b=$(post /v1/chat/completions "$chat,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" | chk openai-chat) ||
    fail "chat stream"
[ -n "$a" ] && [ "$a" = "$b" ] || fail "chat stream '$b' != '$a'"

# The prompt cache: the same chat again reuses all but its last prompt token, and says so.
post /v1/chat/completions "$chat}" >"$tmp/chat2.json"
[ "$(chk get choices.0.message.content <"$tmp/chat2.json")" = "$(chk get choices.0.message.content <"$tmp/chat.json")" ] ||
    fail "the same chat from the prompt cache answered otherwise"
pt=$(chk get usage.prompt_tokens <"$tmp/chat2.json"); ct=$(chk get usage.prompt_tokens_details.cached_tokens <"$tmp/chat2.json")
[ "$ct" -eq $((pt - 1)) ] || fail "cached_tokens $ct for a repeated $pt-token prompt (want $((pt - 1)))"

msg='{"model":"x","system":"You tell stories.","messages":[{"role":"user","content":"A story about a cat."}],"max_tokens":48,"temperature":0.9,"top_p":0.95,"seed":11'
post /v1/messages "$msg}" -H 'anthropic-version: 2023-06-01' >"$tmp/msg.json"
a=$(chk get content.0.text <"$tmp/msg.json") || fail "messages"
b=$(post '/v1/messages?beta=true' "$msg,\"stream\":true}" -H 'anthropic-version: 2023-06-01' | chk anthropic) ||
    fail "messages stream"
[ -n "$a" ] && [ "$a" = "$b" ] || fail "messages stream '$b' != '$a'"
# The same conversation, the same sampling, the same template: both APIs give the same text.
[ "$a" = "$(chk get choices.0.message.content <"$tmp/chat.json")" ] || fail "chat and messages differ"

# count_tokens == the CLI's own count of the rendered prompt (chatml: the
# pack has no template), which `strata run --logits-out` shows as rows.
count=$(post /v1/messages/count_tokens '{"model":"x","system":"You tell stories.","messages":[{"role":"user","content":"A story about a cat."}]}' |
        chk get input_tokens)
in=$(chk get usage.input_tokens <"$tmp/msg.json"); cr=$(chk get usage.cache_read_input_tokens <"$tmp/msg.json")
[ "$count" -eq $((in + cr)) ] || fail "count_tokens $count != usage's input_tokens $in + cache_read_input_tokens $cr"
rendered=$(printf '<|im_start|>system\nYou tell stories.<|im_end|>\n<|im_start|>user\nA story about a cat.<|im_end|>\n<|im_start|>assistant\n')
"$bin/strata" run "$pack" -p "$rendered
" -n 0 --logits-out "$tmp/rows.f32" >/dev/null || fail "strata run --logits-out"
rows=$(($(wc -c <"$tmp/rows.f32") / (vocab * 4)))
[ "$count" = "$rows" ] || fail "count_tokens says $count, the tokenizer $rows"

# 8 concurrent streaming clients while a slow reader is killed mid-stream (its
# answer cannot end early: </s>, id 2, is banned, so it runs to the context's end).
post /v1/chat/completions '{"messages":[{"role":"user","content":"Go on."}],"max_tokens":2000,"logit_bias":{"2":-100},"stream":true}' \
    --limit-rate 1000 >"$tmp/slow" 2>/dev/null &
slow=$!
for i in $(seq 50); do [ -s "$tmp/slow" ] && break; sleep 0.1; done
[ -s "$tmp/slow" ] || fail "the slow client got nothing"
body() { echo "{\"messages\":[{\"role\":\"user\",\"content\":\"Story $1.\"}],\"max_tokens\":48,\"temperature\":0.9,\"seed\":$1"; }
for i in 1 2 3 4 5 6 7 8; do
    post /v1/chat/completions "$(body $i),\"stream\":true}" >"$tmp/c$i" &
    clients="$clients $!"
done
kill -9 "$slow"; wait "$slow" 2>/dev/null; slow=""
for p in $clients; do wait "$p" || fail "a concurrent client failed"; done
clients=""
for i in 1 2 3 4 5 6 7 8; do
    s=$(chk openai-chat <"$tmp/c$i") || fail "concurrent client $i: $(head -c 300 "$tmp/c$i")"
    alone=$(post /v1/chat/completions "$(body $i)}" | chk get choices.0.message.content)
    [ -n "$s" ] && [ "$s" = "$alone" ] || fail "client $i under load got '$s', alone '$alone'"
done
# The killed reader's slot frees when the server's next write to it fails;
# under AddressSanitizer on a loaded 2-core machine that took 6.9 s once.
for i in $(seq 300); do
    curl -s -m 5 "$url/metrics" >"$tmp/metrics"
    grep -q '^strata_busy_slots 0' "$tmp/metrics" && break
    sleep 0.1
done
grep -q '^strata_busy_slots 0' "$tmp/metrics" || fail "slots still busy: $(grep busy "$tmp/metrics")"

metric() { sed -n "s|^strata_requests_total{endpoint=\"$1\",status=\"200\"} \\([0-9]*\\)|\\1|p" "$tmp/metrics"; }
cached=$(sed -n 's/^strata_prompt_tokens_cached_total //p' "$tmp/metrics")
[ "${cached:-0}" -ge "$ct" ] || fail "strata_prompt_tokens_cached_total ${cached:-absent}, at least $ct reused"
for e in /v1/chat/completions /v1/completions /v1/messages /v1/messages/count_tokens; do
    made=$(grep -cx "$e" "$tmp/made")
    [ "$(metric $e)" = "$made" ] || fail "metrics count $(metric $e) requests to $e, the test made $made"
done
# Memory stays flat: after the rounds above every context exists, so three more
# rounds of 8 streaming clients must not grow the server's resident set. (An
# ASan build keeps freed memory in quarantine; its leak check covers it there.)
if ! grep -q __asan_init "$bin/strata" 2>/dev/null && [ -r "/proc/$pid/status" ]; then
    rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
    before=$(rss)
    for round in 1 2 3; do
        for i in 1 2 3 4 5 6 7 8; do
            post /v1/chat/completions "$(body $i),\"stream\":true}" >/dev/null &
            clients="$clients $!"
        done
        for p in $clients; do wait "$p" || fail "a client in memory round $round failed"; done
        clients=""
    done
    after=$(rss)
    [ -n "$before" ] && [ -n "$after" ] || fail "cannot read the server's VmRSS"
    [ $((after - before)) -lt 8192 ] || fail "resident memory grew from ${before} kB to ${after} kB over 24 requests"
    echo "memory: ${before} kB -> ${after} kB after 24 more streaming requests"
fi
echo "curl: models, greedy == strata run, 3 APIs stream == non-stream, count_tokens, 8 clients + a killed one, metrics: ok"

# The official SDKs, when npm can fetch them.
if ! sdk_install "$tmp/sdk"; then
    echo "SDK checks skipped: $(tail -n 1 "$tmp/sdk-npm.log")"
else
    cp "$here/fixtures/sdk_check.cjs" "$tmp/sdk/"
    (cd "$tmp/sdk" && timeout 60 node sdk_check.cjs "$port") >"$tmp/sdk.log" 2>&1 || fail "SDKs: $(cat "$tmp/sdk.log")"
    cat "$tmp/sdk.log"
fi

kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
exit 0
