#!/bin/sh
# device_bundle.sh: build here what tests/cuda/device_check.sh needs and put
# it in .devbundle/ (git-ignored), for a device machine that gets only the
# working tree plus carried folders (no ../shared, no network, probably none
# of our -dev packages). Run from the repository root on a machine with nvcc:
#   sh tests/cuda/device_bundle.sh
# then on the device: sh tests/cuda/device_check.sh --bundle .devbundle [--quick]
# (docs/cuda.md, "How to run the device check").
# .devbundle/ holds:
#   bin/        strata, strata-cuda, iq3pack, kernel_check, logits_cmp,
#               bench_moe_floor (built here, with nvcc for the CUDA ones)
#   libs.tar.xz the shared libraries those load per ldd, except glibc's
#               (libc, libm, libpthread, libdl, librt, libresolv, ld-linux,
#               ...), libstdc++/libgcc_s (the device's newer ones are
#               backward compatible and cuBLAS needs them) and CUDA's
#               (libcudart, libcublas, libcublasLt: the device has them)
#   models.tar.xz  models/... as device_check.sh reads them from ../shared
#   BUILDINFO   where and with what it was built
# Fails when the bundle plus the repository's tracked files exceed LIMIT_MIB
# (default 60; the carry limit is 64 MiB in all).
set -eu
CC=${CC:-cc}
B=build/$(basename "$CC")
SHARED=${STRATA_SHARED:-../shared}
D=${STRATA_DEVICE_BUNDLE_OUT:-.devbundle}
LIMIT_MIB=${LIMIT_MIB:-60}
J=${J:-2}
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}
[ -n "$NVCC" ] || { echo "device_bundle: nvcc not found (the bundle needs bin/strata-cuda)"; exit 1; }
[ -f Makefile ] && [ -f tests/cuda/device_check.sh ] || { echo "device_bundle: run from the repository root"; exit 1; }

echo "== build"
make -j"$J" CC="$CC" >/dev/null
make -j"$J" CC="$CC" cuda >/dev/null
make -j"$J" CC="$CC" strata-cuda >/dev/null
make -j"$J" CC="$CC" "$B/bench/bench_moe_floor" >/dev/null
rm -rf "$D"
mkdir -p "$D/bin"
"$CC" -std=c11 -O2 -Wall -Wextra -Werror tests/cuda/logits_cmp.c -o "$D/bin/logits_cmp" -lm
"$CC" -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror -I. -c tests/cuda/kernel_check.c -o "$D/kernel_check.o"
"$NVCC" -o "$D/bin/kernel_check" "$D/kernel_check.o" "$B"/cuda/*.o "$B/libruntime.a" "$B/libformats.a" -lcublas -lm -lpthread
rm -f "$D/kernel_check.o"
cp bin/strata bin/strata-cuda bin/iq3pack "$B/bench/bench_moe_floor" "$D/bin/"
strip "$D"/bin/* 2>/dev/null || true

echo "== libs"
L=$(mktemp -d)
trap 'rm -rf "$L"' EXIT
for f in "$D"/bin/*; do ldd "$f"; done | sed -n 's|.*=> \(/[^ ]*\) .*|\1|p' | sort -u >"$L/all"
if grep -q "not found" "$L/all"; then echo "device_bundle: a library is not found here"; exit 1; fi
mkdir "$L/lib"
while read -r p; do
    n=$(basename "$p")
    case "$n" in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*|libutil.so.*|libanl.so.*|libnss_*|libmvec.so.*|libBrokenLocale.so.*) echo "  skip (glibc)  $n" ;;
        libstdc++.so.*|libgcc_s.so.*) echo "  skip (gcc)    $n" ;;
        libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libcuda.so.*) echo "  skip (CUDA)   $n" ;;
        *) cp -L "$p" "$L/lib/$n"; echo "  take          $n ($(du -k "$L/lib/$n" | cut -f1) KiB)" ;;
    esac
done <"$L/all"
(cd "$L/lib" && tar -cf - -- *) | xz -9e -T1 >"$D/libs.tar.xz"

echo "== models"
mkdir -p "$L/models/tinymoe" "$L/models/stories260K"
for f in tinymoe/tinymoe-f32.gguf tinymoe/v0.prompt.txt tinymoe/v1.prompt.txt \
         stories260K/stories260K.gguf stories260K/v0.prompt.txt stories260K/v1.prompt.txt; do
    [ -f "$SHARED/models/$f" ] || { echo "device_bundle: $SHARED/models/$f is absent (set STRATA_SHARED)"; exit 1; }
    cp "$SHARED/models/$f" "$L/models/$f"
done
(cd "$L" && tar -cf - models) | xz -9 -T1 >"$D/models.tar.xz"

{
    echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -srm)"
    echo "glibc: $(ldd --version | head -1)"
    echo "nvcc:  $($NVCC --version | tail -1)"
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
    echo "needs from the device: libcudart, libcublas, libcublasLt (CUDA 13), glibc >= 2.36, libstdc++"
} >"$D/BUILDINFO"

echo "== size"
ls -l "$D" "$D/bin" | sed 's/^/  /'
bundle=$(du -sb "$D" | cut -f1)
tree=$(git ls-files -z | xargs -0 cat 2>/dev/null | wc -c)
total=$((bundle + tree))
echo "bundle $((bundle / 1024)) KiB, tracked tree $((tree / 1024)) KiB, together $((total / 1024)) KiB ($(awk -v t=$total 'BEGIN { printf "%.1f", t / 1048576 }') MiB; limit $LIMIT_MIB MiB)"
[ $total -le $((LIMIT_MIB * 1048576)) ] || { echo "device_bundle: FAIL: over $LIMIT_MIB MiB"; exit 1; }
echo "device_bundle: ok: $D (carry [\"$D\"]; sh tests/cuda/device_check.sh --bundle $D [--quick])"
