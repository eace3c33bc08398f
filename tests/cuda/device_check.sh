#!/bin/sh
# device_check.sh: the CUDA backend on a machine with a GPU. Builds the
# tools and `make cuda`, links tests/cuda/kernel_check.c against the CUDA
# objects (nvcc, cuBLAS) and runs it: every kernel against the CPU scalar
# reference on random data of every form, then timings. Exit 77 with a
# message when nvcc or a GPU is absent; 0 when everything passes.
#   sh tests/cuda/device_check.sh [--quick]      (from the repository root)
set -u
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)}
[ -n "$NVCC" ] || { echo "SKIP: nvcc not found"; exit 77; }
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -q GPU || { echo "SKIP: nvidia-smi lists no GPU"; exit 77; }
else
    [ -e /dev/nvidia0 ] || { echo "SKIP: no GPU (no nvidia-smi, no /dev/nvidia0)"; exit 77; }
fi
CC=${CC:-cc}
B=build/$(basename "$CC")
make -j"$(nproc 2>/dev/null || echo 2)" CC="$CC" >/dev/null || { echo "FAIL: make"; exit 1; }
make cuda CC="$CC" || { echo "FAIL: make cuda"; exit 1; }
OUT=${OUT:-build/cuda-check}
mkdir -p "$OUT"
"$CC" -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror -I. -c tests/cuda/kernel_check.c -o "$OUT/kernel_check.o" || { echo "FAIL: compile kernel_check.c"; exit 1; }
"$NVCC" -o "$OUT/kernel_check" "$OUT/kernel_check.o" "$B"/cuda/*.o "$B/libruntime.a" "$B/libformats.a" -lcublas -lm -lpthread || { echo "FAIL: link"; exit 1; }
"$OUT/kernel_check" "$@"
rc=$?
[ $rc -eq 77 ] && echo "SKIP: kernel_check found no usable GPU"
exit $rc
