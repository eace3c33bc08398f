#!/bin/sh
# e2e_serve_vision.sh: pictures end to end, on the Qwen3-VL tower and the
# qwen3vlmoe text model that tests/unit/vision/test_qwen3vl_llamacpp.c
# writes (--write): `iq3pack build --mmproj` makes the pack; `strata run
# --image` answers and refuses bad pictures by name; `strata serve`
# answers a chat with a picture in both APIs exactly as llama-mtmd-cli does
# (tests/fixtures/vision/qwen3vl.*.chat.txt, made by
# tests/diag/diag_vision_llamacpp.sh), reuses the cached prompt for the same
# picture and none of a picture's rows for another; then, when npm can
# install them, the official openai and @anthropic-ai/sdk packages send the
# picture and get llama-mtmd-cli's answer (tests/fixtures/sdk_check.cjs).
# Then, with --allow-remote-images, pictures by URL from python3's
# http.server on this machine, and its refusals (404, not a picture, over
# 20 MiB). Last, Llama 4's tower and a llama4 text model
# (tests/unit/vision/test_llama4_llamacpp.c --write) answer as
# llama-mtmd-cli does, for one slice and for tiles.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
tests=${STRATA_TESTS:?STRATA_TESTS (the test programs folder) is not set}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 (to read the replies) is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-vision-XXXXXX") || exit 1
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
. "$(dirname "$0")/../lib/server.sh"
fx=$here/fixtures/vision
m=$tmp/m
mkdir -p "$m"
(cd "$here/.." && "$tests/test_qwen3vl_llamacpp" --write "$m") >/dev/null || fail "writing the models"
"$bin/iq3pack" build "$m/text_vl.gguf" --mmproj "$m/mmproj.gguf" --experts keep -o "$tmp/pack" >/dev/null 2>&1 ||
    fail "iq3pack build --mmproj"

# strata budget counts the tower (the test tower's F32 weights: 4 bytes an element of vision.gguf's tensors)
"$bin/strata" budget "$tmp/pack" >"$tmp/budget" || fail "strata budget"
grep -q "vision tower 307.2 KiB (its weights on the CPU" "$tmp/budget" || fail "budget: $(cat "$tmp/budget")"

# strata run --image: an answer, different for another picture; refusals by name
a=$("$bin/strata" run "$tmp/pack" --image "$m/native.png" -p "The picture <__media__> shows" -n 8 --temp 0 2>"$tmp/run.err") ||
    fail "strata run --image: $(cat "$tmp/run.err")"
b=$("$bin/strata" run "$tmp/pack" --image "$m/resized.png" -p "The picture <__media__> shows" -n 8 --temp 0 2>/dev/null) ||
    fail "strata run --image (resized)"
[ -n "$a" ] && [ "$a" != "$b" ] || fail "strata run --image: '$a' for one picture, '$b' for another"
head -c 100 "$m/native.png" >"$tmp/cut.png"
"$bin/strata" run "$tmp/pack" --image "$tmp/cut.png" -p "x" 2>"$tmp/e1" && fail "a truncated PNG was taken"
grep -q "cut.png: PNG: the data ends early" "$tmp/e1" || fail "truncated PNG: $(cat "$tmp/e1")"
"$bin/strata" run "$tmp/pack" --image "$m/native.png" --image "$m/native.png" -p "one <__media__>" 2>"$tmp/e2" &&
    fail "a marker count that does not match was taken"
grep -q "1 <__media__> markers for 2 pictures" "$tmp/e2" || fail "markers: $(cat "$tmp/e2")"
echo "strata run --image: an answer; a truncated PNG and a wrong marker count refused by name"

"$bin/strata" serve "$tmp/pack" --port 0 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100

# the reply's text (invalid UTF-8 arrives as U+FFFD) and the fixture read the same way, then compared
same() { # REPLY FIXTURE FIELD
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
got = r["choices"][0]["message"]["content"] if sys.argv[3] == "openai" else r["content"][0]["text"]
want = open(sys.argv[2], "rb").read().decode("utf-8", "replace")
sys.exit(0 if got == want else 1)
PY
}
usage() { python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["usage"]; print(u[sys.argv[2]], u.get(sys.argv[3], {}).get("cached_tokens", 0) if sys.argv[3] else "")' "$@"; }
png64() { base64 -w0 "$1"; }
oai() { # PICTURE
    printf '{"model":"x","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}]}' "$(png64 "$1")" >"$tmp/req.json"
    curl -s -m 60 "$url/v1/chat/completions" -H 'Content-Type: application/json' -d @"$tmp/req.json"
}
for name in native resized; do
    oai "$m/$name.png" >"$tmp/r.json"
    same "$tmp/r.json" "$fx/qwen3vl.$name.chat.txt" openai || fail "OpenAI chat, $name picture: $(cat "$tmp/r.json")"
done
printf '{"model":"x","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%s"}}]}]}' "$(png64 "$m/native.png")" >"$tmp/areq.json"
curl -s -m 60 "$url/v1/messages" -H 'Content-Type: application/json' -d @"$tmp/areq.json" >"$tmp/a.json"
same "$tmp/a.json" "$fx/qwen3vl.native.chat.txt" anthropic || fail "Anthropic messages: $(cat "$tmp/a.json")"
echo "serve: both APIs answer with llama-mtmd-cli's text for each picture"

# the prompt cache: the same picture again reuses all but the last token; another picture none of its rows
oai "$m/native.png" >"$tmp/c1.json"
oai "$m/native.png" >"$tmp/c2.json"
set -- $(usage "$tmp/c2.json" prompt_tokens prompt_tokens_details)
[ "$2" -eq $(($1 - 1)) ] || fail "the same picture again: $2 of $1 prompt tokens cached"
oai "$m/resized.png" >"$tmp/c3.json"
set -- $(usage "$tmp/c3.json" prompt_tokens prompt_tokens_details)
# 12 rows and the text after them are new
[ "$2" -lt $(($1 - 12)) ] || fail "another picture: $2 of $1 prompt tokens cached"
echo "serve: the prompt cache keys on the picture"

# a client's own marker text is refused
printf '{"model":"x","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"a <__media__> b"},{"type":"image_url","image_url":{"url":"data:image/png;base64,%s"}}]}]}' "$(png64 "$m/native.png")" >"$tmp/req.json"
code=$(curl -s -m 30 -o "$tmp/m.json" -w '%{http_code}' "$url/v1/chat/completions" -H 'Content-Type: application/json' -d @"$tmp/req.json")
[ "$code" = 400 ] && grep -q "marks where a picture goes" "$tmp/m.json" || fail "marker text: $code $(cat "$tmp/m.json")"

# remote pictures: refused by name without --allow-remote-images
printf '{"model":"x","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"http://127.0.0.1:9/native.png"}}]}]}' >"$tmp/req.json"
code=$(curl -s -m 30 -o "$tmp/m.json" -w '%{http_code}' "$url/v1/chat/completions" -H 'Content-Type: application/json' -d @"$tmp/req.json")
[ "$code" = 400 ] && grep -q "remote image URLs are not fetched (strata serve --allow-remote-images" "$tmp/m.json" ||
    fail "remote picture without --allow-remote-images: $code $(cat "$tmp/m.json")"

if ! sdk_install "$tmp/sdk"; then
    echo "SDK checks skipped: $(tail -n 1 "$tmp/sdk-npm.log")"
else
    cp "$here/fixtures/sdk_check.cjs" "$tmp/sdk/"
    (cd "$tmp/sdk" && timeout 60 node sdk_check.cjs "$port" picture "$m/native.png" "$fx/qwen3vl.native.chat.txt") \
        >"$tmp/sdk.log" 2>&1 || fail "SDKs: $(cat "$tmp/sdk.log")"
    cat "$tmp/sdk.log"
fi

kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"

# --allow-remote-images: pictures fetched from a web server on this machine, within the limits
mkdir -p "$tmp/www"
cp "$m/native.png" "$tmp/www/"
echo "not a picture" >"$tmp/www/note.txt"
head -c $((21 << 20)) /dev/zero >"$tmp/www/big.png"
(cd "$tmp/www" && exec python3 -u -m http.server --bind 127.0.0.1 0) >"$tmp/www.log" 2>&1 &
web=$!
for i in $(seq 100); do grep -q "port" "$tmp/www.log" && break; sleep 0.1; done
wport=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$tmp/www.log" | head -n 1)
[ -n "$wport" ] || { kill "$web"; fail "python3 -m http.server did not start: $(cat "$tmp/www.log")"; }
"$bin/strata" serve "$tmp/pack" --port 0 --allow-remote-images >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100
remote() { # URL: a chat whose picture is at URL
    printf '{"model":"x","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"%s"}}]}]}' "$1" >"$tmp/req.json"
    curl -s -m 60 -o "$tmp/r.json" -w '%{http_code}' "$url/v1/chat/completions" -H 'Content-Type: application/json' -d @"$tmp/req.json"
}
code=$(remote "http://127.0.0.1:$wport/native.png")
[ "$code" = 200 ] && same "$tmp/r.json" "$fx/qwen3vl.native.chat.txt" openai || { kill "$web"; fail "remote picture: $code $(cat "$tmp/r.json")"; }
printf '{"model":"x","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"url","url":"http://127.0.0.1:%s/native.png"}}]}]}' "$wport" >"$tmp/areq.json"
curl -s -m 60 "$url/v1/messages" -H 'Content-Type: application/json' -d @"$tmp/areq.json" >"$tmp/a.json"
same "$tmp/a.json" "$fx/qwen3vl.native.chat.txt" anthropic || { kill "$web"; fail "remote picture (Anthropic url source): $(cat "$tmp/a.json")"; }
for c in "missing.png:HTTP status 404" "note.txt:not a PNG, JPEG or WebP picture" "big.png:is more than 20971520 bytes"; do
    code=$(remote "http://127.0.0.1:$wport/${c%%:*}")
    [ "$code" = 400 ] && grep -q "${c#*:}" "$tmp/r.json" || { kill "$web"; fail "remote ${c%%:*}: $code $(cat "$tmp/r.json")"; }
done
kill "$web"
echo "serve --allow-remote-images: a picture by URL answered in both APIs; a 404, a text file and 21 MiB refused by name"
kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"

# Llama 4: its tower (one slice, and 3 x 2 tiles with the overview) and a llama4 text model
m4=$tmp/m4
mkdir -p "$m4"
(cd "$here/.." && "$tests/test_llama4_llamacpp" --write "$m4") >/dev/null || fail "writing the Llama 4 models"
"$bin/iq3pack" build "$m4/text_vl.gguf" --mmproj "$m4/mmproj.gguf" --experts keep -o "$tmp/pack4" >/dev/null 2>&1 ||
    fail "iq3pack build --mmproj (llama4)"
"$bin/strata" serve "$tmp/pack4" --port 0 >"$tmp/out" 2>"$tmp/err" &
pid=$!
server_port 100
server_healthy 100
for name in native tiled; do
    oai "$m4/$name.png" >"$tmp/r.json"
    same "$tmp/r.json" "$fx/llama4.$name.chat.txt" openai || fail "Llama 4, $name picture: $(cat "$tmp/r.json")"
done
echo "serve (Llama 4): llama-mtmd-cli's answer for one slice and for 3 x 2 tiles and the overview"
kill -TERM "$pid"
wait "$pid"; rc=$?; pid=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
exit 0
