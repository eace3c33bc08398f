#!/bin/sh
# e2e_device.sh: the device options (runtime/device/device.h) without a GPU, on
# the shipped model's pack (and, with ../shared, a stories260K one) built by iq3pack:
#  - bin/strata (CPU-only) refuses --device cuda with one line naming
#    `make strata-cuda` and exit 1; a bad --device value exits 2; an
#    explicit --device auto notes the CPU on stderr and gives --device cpu's
#    text; bench on the CPU prints no cache lines.
#  - --record-routing on the CPU writes a routing profile whose counts match
#    the router: tokens = evaluated positions, every MoE layer's counts sum
#    to tokens x top_k and the dense first layer's to 0, so all counts sum to
#    tokens x MoE layers x top_k; the file is read back by `strata budget
#    --profile` (the profile reader), is never overwritten, and a dense pack
#    (stories260K) is refused.
#  - serve --record-routing writes the profile when the server stops, and
#    /metrics carries strata_device_gpu 0.
#  - bin/strata-cuda, when it was built (make strata-cuda): without a usable
#    GPU --device cuda fails with one line ("no NVIDIA driver found", "no
#    NVIDIA GPU found" or "no CUDA device": e2e_device_nodriver.sh pins the
#    first on a machine without a driver) and auto runs on the CPU
#    with the same text as bin/strata.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
shared=${STRATA_SHARED:-../shared}
moe_gguf=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
dense_gguf="$shared/models/stories260K/stories260K.gguf"
[ -f "$moe_gguf" ] || { echo "FAIL: $moe_gguf is missing (it is part of the repository)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-device-XXXXXX") || exit 1
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
fails=0
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$bin/iq3pack" build "$moe_gguf" -o "$tmp/moe" >/dev/null 2>&1 || { echo "FAIL: iq3pack build tiny-moe"; exit 1; }

# --device on the CPU-only binary
"$bin/strata" run "$tmp/moe" -p "hello" -n 4 --device cuda >"$tmp/o" 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] || bad "--device cuda on a CPU-only strata: exit $rc, want 1"
[ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "this strata was built without CUDA (make strata-cuda)" "$tmp/e" ||
    bad "--device cuda message: $(cat "$tmp/e")"
for c in run bench perplexity; do
    "$bin/strata" $c "$tmp/moe" --device gpu -p x -f x >/dev/null 2>"$tmp/e"; rc=$?
    [ $rc -eq 2 ] && grep -q "\-\-device takes auto, cpu or cuda, not 'gpu'" "$tmp/e" || bad "$c --device gpu: exit $rc: $(head -1 "$tmp/e")"
    "$bin/strata" $c --help | grep -q -- "--device auto|cpu|cuda" || bad "$c --help lacks --device"
    "$bin/strata" $c "$tmp/moe" --miss sometimes -p x -f x >/dev/null 2>"$tmp/e"; rc=$?
    [ $rc -eq 2 ] && grep -q "\-\-miss takes cpu, pcie or auto" "$tmp/e" || bad "$c --miss sometimes: exit $rc"
    "$bin/strata" $c "$tmp/moe" --vram-reserve lots -p x -f x >/dev/null 2>"$tmp/e"; rc=$?
    [ $rc -eq 2 ] && grep -q "\-\-vram-reserve takes a size" "$tmp/e" || bad "$c --vram-reserve lots: exit $rc"
done
"$bin/strata" serve "$tmp/moe" --device tpu >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 2 ] && grep -q "\-\-device takes auto" "$tmp/e" || bad "serve --device tpu: exit $rc"
"$bin/strata" run "$tmp/moe" -p "hello" -n 6 --temp 0 --device cpu >"$tmp/cpu.txt" 2>"$tmp/e" || bad "run --device cpu: $(cat "$tmp/e")"
# stderr: the one line of timings every run ends with, and nothing else
grep -v "^strata run: prompt .* tokens/s; generation .* tokens/s$" "$tmp/e" >"$tmp/e2"
[ -s "$tmp/e2" ] && bad "run --device cpu wrote to stderr: $(cat "$tmp/e2")"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || bad "run --device cpu: no timings line: $(cat "$tmp/e")"
"$bin/strata" run "$tmp/moe" -p "hello" -n 6 --temp 0 --device auto >"$tmp/auto.txt" 2>"$tmp/e" || bad "run --device auto"
cmp -s "$tmp/cpu.txt" "$tmp/auto.txt" || bad "--device auto gave other text than --device cpu"
grep -v "^strata run: prompt .* tokens/s; generation .* tokens/s$" "$tmp/e" >"$tmp/e2"
[ "$(wc -l <"$tmp/e2")" -eq 1 ] && grep -q "running on the CPU" "$tmp/e2" || bad "--device auto note: $(cat "$tmp/e")"
"$bin/strata" bench "$tmp/moe" -p 8 -n 4 -t 1 --device cpu >"$tmp/b" 2>&1 || bad "bench --device cpu: $(cat "$tmp/b")"
grep -q "^cache" "$tmp/b" && bad "bench on the CPU printed cache lines"
grep -q "of it" "$tmp/b" || bad "bench output: $(cat "$tmp/b")"

# --record-routing on the CPU
"$bin/strata" run "$tmp/moe" -p "the cat sat on the mat" -n 8 --temp 0 --logits-out "$tmp/l.f32" \
    --record-routing "$tmp/prof.txt" >"$tmp/rec.txt" 2>"$tmp/e" || bad "run --record-routing: $(cat "$tmp/e")"
[ -f "$tmp/prof.txt" ] || { bad "no profile written"; }
if [ -f "$tmp/prof.txt" ]; then
    # evaluated positions = rows of --logits-out (1536 f32 logits each); 4 layers run, the
    # first dense, 8 experts, top 2
    rows=$(( $(wc -c <"$tmp/l.f32") / (1536 * 4) ))
    head -1 "$tmp/prof.txt" | grep -q "^strata-routing-profile 1$" || bad "profile header: $(head -1 "$tmp/prof.txt")"
    grep -q "^shape 4 8 2$" "$tmp/prof.txt" || bad "profile shape: $(sed -n 2p "$tmp/prof.txt")"
    tokens=$(sed -n 's/^tokens //p' "$tmp/prof.txt")
    [ "$tokens" = "$rows" ] && [ "$rows" -gt 0 ] || bad "profile tokens $tokens, evaluated positions $rows"
    total=$(awk '/^layer/ { for (i = 3; i <= NF; i++) s += $i } END { print s }' "$tmp/prof.txt")
    [ "$total" = $((rows * 3 * 2)) ] || bad "profile counts sum to $total, want tokens x MoE layers x top_k = $((rows * 6))"
    awk -v t="$tokens" '/^layer/ { s = 0; for (i = 3; i <= NF; i++) s += $i; if (s != ($2 == 0 ? 0 : 2 * t)) exit 1 }' "$tmp/prof.txt" ||
        bad "a layer's counts do not sum to tokens x top_k (0 for the dense first layer)"
    tail -1 "$tmp/prof.txt" | grep -q "^end$" || bad "profile does not end with 'end'"
    # read back by the profile reader
    "$bin/strata" budget "$tmp/moe" --vram 1G --profile "$tmp/prof.txt" >"$tmp/bud" 2>&1 || bad "budget --profile: $(cat "$tmp/bud")"
    grep -q "predicted expert hit rate 1.0000 ($tmp/prof.txt)" "$tmp/bud" || bad "budget with the profile: $(cat "$tmp/bud")"
    "$bin/strata" budget "$tmp/moe" --vram 600M --vram-reserve 599.9M --profile "$tmp/prof.txt" >"$tmp/bud" 2>&1
    grep -q "predicted expert hit rate" "$tmp/bud" || bad "budget (few slots) with the profile: $(cat "$tmp/bud")"
    # the same text with and without recording
    "$bin/strata" run "$tmp/moe" -p "the cat sat on the mat" -n 8 --temp 0 >"$tmp/norec.txt" 2>/dev/null
    cmp -s "$tmp/rec.txt" "$tmp/norec.txt" || bad "recording changed the generated text"
    # never overwritten, refused before any work
    cp "$tmp/prof.txt" "$tmp/prof.bak"
    "$bin/strata" run "$tmp/moe" -p "x" -n 2 --record-routing "$tmp/prof.txt" >/dev/null 2>"$tmp/e"; rc=$?
    [ $rc -eq 1 ] && grep -q "the file exists" "$tmp/e" || bad "an existing profile: exit $rc: $(cat "$tmp/e")"
    cmp -s "$tmp/prof.txt" "$tmp/prof.bak" || bad "the existing profile was changed"
fi
# perplexity and bench record too
printf 'the cat sat on the mat and the dog sat on the log\n' >"$tmp/t.txt"
"$bin/strata" bench "$tmp/moe" -p 8 -n 4 -t 1 --record-routing "$tmp/bench.prof" >/dev/null 2>"$tmp/e" || bad "bench --record-routing: $(cat "$tmp/e")"
grep -q "^tokens 12$" "$tmp/bench.prof" 2>/dev/null || bad "bench profile: 8 + 4 tokens expected: $(sed -n 3p "$tmp/bench.prof" 2>/dev/null)"
if [ -f "$dense_gguf" ]; then
    "$bin/iq3pack" build "$dense_gguf" -o "$tmp/dense" >/dev/null 2>&1 || bad "iq3pack build stories260K"
    "$bin/strata" run "$tmp/dense" -p "x" -n 2 --record-routing "$tmp/d.prof" >/dev/null 2>"$tmp/e"; rc=$?
    [ $rc -eq 1 ] && grep -q "no routed experts" "$tmp/e" || bad "a dense pack with --record-routing: exit $rc: $(cat "$tmp/e")"
    [ -e "$tmp/d.prof" ] && bad "a profile was written for a dense pack"
fi

# serve: the profile is written when the server stops; /metrics has the device gauges
if command -v curl >/dev/null; then
    . "$(dirname "$0")/../lib/server.sh"
    "$bin/strata" serve "$tmp/moe" --port 0 --record-routing "$tmp/serve.prof" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    server_port 100
    for i in $(seq 100); do
        code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$url/health"); [ "$code" = 200 ] && break; sleep 0.1
    done
    [ "$code" = 200 ] || bad "serve: /health never became 200"
    curl -s -m 30 "$url/v1/completions" -H 'Content-Type: application/json' \
        -d '{"prompt":"the cat","max_tokens":4,"temperature":0}' >"$tmp/resp" || bad "serve: completion request"
    curl -s -m 5 "$url/metrics" >"$tmp/metrics" || bad "serve: /metrics"
    grep -q "^strata_device_gpu 0$" "$tmp/metrics" || bad "/metrics lacks strata_device_gpu 0"
    grep -q "^strata_expert_cache_hits_total 0$" "$tmp/metrics" || bad "/metrics lacks the cache counters"
    kill -TERM "$pid"; wait "$pid"; rc=$?; pid=""
    [ $rc -eq 0 ] || bad "serve exit $rc on SIGTERM"
    grep -q "^strata-routing-profile 1$" "$tmp/serve.prof" 2>/dev/null || bad "serve wrote no profile: $(cat "$tmp/err")"
    t=$(sed -n 's/^tokens //p' "$tmp/serve.prof" 2>/dev/null)
    [ -n "$t" ] && [ "$t" -ge 3 ] || bad "serve profile tokens '$t'"
fi

# the CUDA build, when there is one
if [ -x "$bin/strata-cuda" ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
        echo "note: a GPU is present; the GPU checks are tests/cuda/device_check.sh"
    else
        "$bin/strata-cuda" run "$tmp/moe" -p "hello" -n 4 --device cuda >/dev/null 2>"$tmp/e"; rc=$?
        [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "no NVIDIA driver found\|no NVIDIA GPU found\|no CUDA device" "$tmp/e" ||
            bad "strata-cuda --device cuda without a GPU: exit $rc: $(cat "$tmp/e")"
        "$bin/strata-cuda" run "$tmp/moe" -p "hello" -n 6 --temp 0 >"$tmp/cu.txt" 2>"$tmp/e" || bad "strata-cuda auto: $(cat "$tmp/e")"
        cmp -s "$tmp/cpu.txt" "$tmp/cu.txt" || bad "strata-cuda on the CPU gave other text"
        grep -q "no \(NVIDIA driver\|NVIDIA GPU\|CUDA device\).*running on the CPU" "$tmp/e" || bad "strata-cuda auto note: $(cat "$tmp/e")"
    fi
else
    echo "note: bin/strata-cuda was not built (make strata-cuda): its checks are skipped"
fi
[ $fails -eq 0 ] || exit 1
echo "device options, --record-routing on the CPU: ok"
