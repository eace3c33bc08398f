#!/bin/sh
# device_check.sh: the CUDA backend on a machine with a GPU, in one run.
# Stages (the first failure stops the run with "FAIL [stage]: ..."):
#   build    the tools, `make cuda`, `make strata-cuda` (bin/strata-cuda)
#   kernels  tests/cuda/kernel_check.c: every kernel against the CPU scalar
#            reference on random data of every form, then kernel timings
#   packs    tinymoe and stories260K packs built by iq3pack
#   logits   bin/strata (CPU) vs bin/strata-cuda --device cuda, --logits-out
#            on both: every row within 1e-3 x the row's max |logit|, the same
#            greedy text; tinymoe also with 3 expert slots (STRATA_CUDA_SLOTS)
#            under --miss pcie, --miss cpu and --miss auto, and with a
#            recorded --profile
#   serve    strata-cuda serve --device cuda: a completion equals the CPU
#            server's, /metrics says strata_device_gpu 1
#   bigpack  (not with --quick) a synthetic MoE pack of several GB
#            (tests/bench/bench_moe_floor.c's generator, STRATA_MOE_LAYERS
#            layers, default 40: ~4.3 GB, S8 experts) decoded by
#            `strata-cuda bench` against the floor from the GPU's measured
#            device-to-device bandwidth: all experts resident, then a quarter
#            of them (PCIe misses)
# Then one summary table. build and packs failures stop the run at once
# (later stages need them); a failure in another stage is printed loudly
# with its stage name and the run goes on to the next stage, so one device
# session gets every figure; the exit status is then 1. Exit 77 with a message when nvcc or a GPU is
# absent; 0 when everything passes.
#   sh tests/cuda/device_check.sh [--quick]      (from the repository root)
set -u
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)}
[ -n "$NVCC" ] || { echo "SKIP: nvcc not found"; exit 77; }
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -q GPU || { echo "SKIP: nvidia-smi lists no GPU"; exit 77; }
else
    [ -e /dev/nvidia0 ] || { echo "SKIP: no GPU (no nvidia-smi, no /dev/nvidia0)"; exit 77; }
fi
CC=${CC:-cc}
B=build/$(basename "$CC")
J=$(nproc 2>/dev/null || echo 2)
SHARED=${STRATA_SHARED:-../shared}
OUT=${OUT:-build/cuda-check}
mkdir -p "$OUT"
T0=$(date +%s)
STAGE=start
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
FAILS="$OUT/fails.txt"
: >"$FAILS"
die() { echo "FAIL [$STAGE]: $*"; echo "--- summary so far"; cat "$SUMMARY"; exit 1; }
bad() { echo "FAIL [$STAGE]: $*" | tee -a "$FAILS"; printf '%-10s %s\n' "$STAGE" "FAIL: $*" >>"$SUMMARY"; }
stage() { STAGE=$1; echo "== $1 ($(($(date +%s) - T0)) s)"; }
row() { printf '%-10s %-44s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY"; }

stage build
make -j"$J" CC="$CC" >"$OUT/make.log" 2>&1 || { tail -20 "$OUT/make.log"; die "make"; }
make -j"$J" CC="$CC" cuda >"$OUT/make-cuda.log" 2>&1 || { tail -20 "$OUT/make-cuda.log"; die "make cuda"; }
make -j"$J" CC="$CC" strata-cuda >"$OUT/make-strata-cuda.log" 2>&1 || { tail -20 "$OUT/make-strata-cuda.log"; die "make strata-cuda"; }
"$CC" -std=c11 -O2 -Wall -Wextra -Werror tests/cuda/logits_cmp.c -o "$OUT/logits_cmp" -lm || die "compile logits_cmp.c"
row build "bin/strata, bin/strata-cuda, make cuda" ok

stage kernels
"$CC" -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror -I. -c tests/cuda/kernel_check.c -o "$OUT/kernel_check.o" || die "compile kernel_check.c"
"$NVCC" -o "$OUT/kernel_check" "$OUT/kernel_check.o" "$B"/cuda/*.o "$B/libruntime.a" "$B/libformats.a" -lcublas -lm -lpthread || die "link kernel_check"
if [ $QUICK -eq 1 ]; then "$OUT/kernel_check" --quick >"$OUT/kernels.log" 2>&1; else "$OUT/kernel_check" >"$OUT/kernels.log" 2>&1; fi
rc=$?
cat "$OUT/kernels.log"
if [ $rc -eq 0 ]; then row kernels "every form vs the CPU scalar path" ok; else bad "kernel_check exit $rc"; fi

stage packs
for m in tinymoe/tinymoe-f32 stories260K/stories260K; do
    n=$(basename "$m" | sed 's/-f32//')
    [ -f "$SHARED/models/$m.gguf" ] || die "$SHARED/models/$m.gguf is absent (set STRATA_SHARED)"
    rm -rf "$OUT/$n"
    bin/iq3pack build "$SHARED/models/$m.gguf" -o "$OUT/$n" >"$OUT/pack-$n.log" 2>&1 || { tail -5 "$OUT/pack-$n.log"; die "iq3pack build $m"; }
done
row packs "tinymoe, stories260K (iq3pack build)" ok

stage logits
# compare PACK NAME PROMPT [ENV...] [-- extra strata-cuda options]
compare() {
    pack=$1; name=$2; prompt=$3; shift 3
    envs=""; while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    [ $# -gt 0 ] && shift
    cpu="$OUT/$name.cpu"; gpu="$OUT/$name.gpu"
    rm -f "$cpu.f32" "$gpu.f32"
    bin/strata run "$OUT/$pack" -p "$prompt" -n 24 --temp 0 --device cpu --logits-out "$cpu.f32" >"$cpu.txt" 2>"$cpu.err" || { bad "$name: CPU run: $(cat "$cpu.err")"; return; }
    env $envs bin/strata-cuda run "$OUT/$pack" -p "$prompt" -n 24 --temp 0 --device cuda --logits-out "$gpu.f32" "$@" >"$gpu.txt" 2>"$gpu.err" || { bad "$name: CUDA run: $(cat "$gpu.err")"; return; }
    res=$("$OUT/logits_cmp" "$cpu.f32" "$gpu.f32" 512 1e-3) || { bad "$name: logits: $res"; return; }
    cmp -s "$cpu.txt" "$gpu.txt" || { bad "$name: greedy text differs: CPU '$(cat "$cpu.txt")' CUDA '$(cat "$gpu.txt")'"; return; }
    row logits "$name" "$res; text equal"
}
compare tinymoe tinymoe-v0 "$(cat "$SHARED/models/tinymoe/v0.prompt.txt" 2>/dev/null || echo hello)"
compare tinymoe tinymoe-v1 "$(cat "$SHARED/models/tinymoe/v1.prompt.txt" 2>/dev/null || echo world)"
compare stories260K stories-v0 "Once upon a time"
compare stories260K stories-v1 "$(cat "$SHARED/models/stories260K/v1.prompt.txt" 2>/dev/null || echo Lily)"
compare tinymoe tinymoe-3slots-pcie "Once upon a time" STRATA_CUDA_SLOTS=3 -- --miss pcie
compare tinymoe tinymoe-3slots-cpu "Once upon a time" STRATA_CUDA_SLOTS=3 -- --miss cpu
compare tinymoe tinymoe-3slots-auto "Once upon a time" STRATA_CUDA_SLOTS=3 -- --miss auto
compare tinymoe tinymoe-0slots "Once upon a time" STRATA_CUDA_SLOTS=0 -- --miss pcie
rm -f "$OUT/tiny.prof"
bin/strata run "$OUT/tinymoe" -p "Once upon a time there was" -n 32 --temp 0 --record-routing "$OUT/tiny.prof" >/dev/null 2>&1 || bad "record a profile on the CPU"
compare tinymoe tinymoe-profile "Once upon a time" STRATA_CUDA_SLOTS=4 -- --profile "$OUT/tiny.prof"
rm -f "$OUT/tiny-gpu.prof"
if bin/strata-cuda run "$OUT/tinymoe" -p "Once upon a time there was" -n 32 --temp 0 --device cuda --record-routing "$OUT/tiny-gpu.prof" >/dev/null 2>"$OUT/rec.err"; then
    if cmp -s "$OUT/tiny.prof" "$OUT/tiny-gpu.prof"; then row logits "routing profile recorded on CUDA" "equals the CPU's"
    else bad "the routing profile recorded on CUDA differs from the CPU's"; fi
else
    bad "record a profile on CUDA: $(cat "$OUT/rec.err")"
fi
if bin/strata-cuda bench "$OUT/tinymoe" -p 32 -n 16 --device cuda >"$OUT/bench-tiny.txt" 2>&1 &&
   grep -q "^cache decode: hit rate" "$OUT/bench-tiny.txt"; then
    row logits "bench tinymoe" "$(grep '^cache decode' "$OUT/bench-tiny.txt")"
else
    bad "bench tinymoe: $(cat "$OUT/bench-tiny.txt")"
fi

stage serve
if command -v curl >/dev/null 2>&1; then
    serve_one() { # BIN DEVICE -> completion text in $OUT/serve-DEVICE.json
        "$1" serve "$OUT/tinymoe" --port 0 --device "$2" >"$OUT/serve-$2.out" 2>"$OUT/serve-$2.err" &
        spid=$!
        port=""
        for i in $(seq 200); do
            port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$OUT/serve-$2.out"); [ -n "$port" ] && break; sleep 0.1
        done
        [ -n "$port" ] || { kill $spid; bad "serve $2: no listening line: $(cat "$OUT/serve-$2.err")"; return; }
        for i in $(seq 200); do
            [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break; sleep 0.1
        done
        curl -s -m 60 "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
            -d '{"prompt":"Once upon a time","max_tokens":16,"temperature":0}' >"$OUT/serve-$2.json"
        sed -n 's/.*"text":"\([^"]*\)".*/\1/p' "$OUT/serve-$2.json" >"$OUT/serve-$2.text"
        curl -s -m 10 "http://127.0.0.1:$port/metrics" >"$OUT/serve-$2.metrics"
        kill -TERM $spid; wait $spid
    }
    serve_one bin/strata cpu
    serve_one bin/strata-cuda cuda
    if ! grep -q '"text"' "$OUT/serve-cuda.json"; then bad "serve cuda: no completion: $(cat "$OUT/serve-cuda.json")"
    elif ! cmp -s "$OUT/serve-cpu.text" "$OUT/serve-cuda.text"; then bad "serve: CUDA text '$(cat "$OUT/serve-cuda.text")' vs CPU '$(cat "$OUT/serve-cpu.text")'"
    elif ! grep -q "^strata_device_gpu 1$" "$OUT/serve-cuda.metrics"; then bad "/metrics lacks strata_device_gpu 1"
    else row serve "completion, /metrics" "text equal to the CPU's; $(grep '^strata_expert_cache_hit_rate' "$OUT/serve-cuda.metrics")"; fi
else
    row serve "curl absent" skipped
fi

if [ $QUICK -eq 0 ]; then
    stage bigpack
    L=${STRATA_MOE_LAYERS:-40}
    BIG="$OUT/bigmoe-$L"
    if [ ! -d "$BIG" ]; then
        make -j"$J" CC="$CC" "$B/bench/bench_moe_floor" >/dev/null 2>&1 || die "build bench_moe_floor"
        STRATA_MOE_FLOOR_LAYERS=$L STRATA_MOE_FLOOR_PACK="$BIG" STRATA_MOE_FLOOR_BUILD_ONLY=1 "$B/bench/bench_moe_floor" >"$OUT/bigpack.log" 2>&1 ||
            { tail -5 "$OUT/bigpack.log"; rm -rf "$BIG"; die "generate the synthetic pack"; }
    fi
    gb=$(du -sb "$BIG" | awk '{ printf "%.2f", $1 / 1e9 }')
    bin/strata-cuda bench "$BIG" -p 64 -n 64 --device cuda >"$OUT/bench-big.txt" 2>&1 || bad "bench: $(cat "$OUT/bench-big.txt")"
    cat "$OUT/bench-big.txt"
    row bigpack "$L layers, $gb GB, all experts in VRAM" "$(grep '^decode' "$OUT/bench-big.txt"); $(grep '^bandwidth floor' "$OUT/bench-big.txt")"
    row bigpack "device bandwidth" "$(grep '^memory read bandwidth' "$OUT/bench-big.txt")"
    q=$((L * 8 / 4))
    STRATA_CUDA_SLOTS=$q bin/strata-cuda bench "$BIG" -p 64 -n 64 --device cuda --miss pcie >"$OUT/bench-big-q.txt" 2>&1 || bad "bench with $q slots: $(cat "$OUT/bench-big-q.txt")"
    cat "$OUT/bench-big-q.txt"
    row bigpack "$q slots (a quarter), --miss pcie" "$(grep '^decode' "$OUT/bench-big-q.txt"); $(grep '^cache decode' "$OUT/bench-big-q.txt")"
    bin/strata bench "$BIG" -p 16 -n 16 --device cpu -t "$J" >"$OUT/bench-big-cpu.txt" 2>&1 || bad "CPU bench: $(cat "$OUT/bench-big-cpu.txt")"
    row bigpack "CPU, $J threads (reference)" "$(grep '^decode' "$OUT/bench-big-cpu.txt")"
fi
echo "== summary ($(($(date +%s) - T0)) s; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
cat "$SUMMARY"
if [ -s "$FAILS" ]; then echo "device_check: FAILED, first: $(head -1 "$FAILS")"; exit 1; fi
echo "device_check: ok"
