#!/bin/sh
# e2e_device_nodriver.sh: bin/strata-cuda (make strata-cuda) on a machine
# with no NVIDIA driver (issue 22): --device cuda fails with one line that
# says "no NVIDIA driver found" (not the CUDA runtime's "driver version is
# insufficient", which sends the user to upgrade a driver they do not
# have), and --device auto notes it and runs on the CPU. Skipped when
# strata-cuda was not built, or when a driver is installed (libcuda.so.1
# known to the loader, or nvidia-smi lists a GPU): tests/cuda/ covers GPUs.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
shared=${STRATA_SHARED:-../shared}
moe_gguf="$shared/models/tinymoe/tinymoe-f32.gguf"
[ -x "$bin/strata-cuda" ] || { echo "SKIP: bin/strata-cuda was not built (make strata-cuda)"; exit 77; }
if { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; } ||
   { command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; } ||
   [ -e /proc/driver/nvidia/version ]; then
    echo "SKIP: an NVIDIA driver is installed here; this checks a machine without one"; exit 77
fi
[ -f "$moe_gguf" ] || { echo "SKIP: $moe_gguf is absent"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-nodriver-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$bin/iq3pack" build "$moe_gguf" -o "$tmp/moe" >/dev/null 2>&1 || fail "iq3pack build tinymoe"
"$bin/strata-cuda" run "$tmp/moe" -p hi -n 2 --device cuda >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] || fail "--device cuda: exit $rc: $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "--device cuda: not one line: $(cat "$tmp/e")"
grep -q "no NVIDIA driver found" "$tmp/e" || fail "--device cuda: $(cat "$tmp/e")"
! grep -qi "insufficient" "$tmp/e" || fail "--device cuda still says insufficient: $(cat "$tmp/e")"
"$bin/strata-cuda" run "$tmp/moe" -p hi -n 2 --device auto >/dev/null 2>"$tmp/e" || fail "--device auto: $(cat "$tmp/e")"
grep -q "no NVIDIA driver found.*running on the CPU" "$tmp/e" || fail "--device auto note: $(cat "$tmp/e")"
exit 0
