#!/bin/sh
# tests/diag/check_layout.sh [BUILD]: checks the house rules of docs/DESIGN.md
# on the tree and on the objects of a build (default build/cc; run `make`
# first). Prints one line per rule, "ok" or what breaks it, and exits 1 when
# any rule is broken.
#  1. no folder under runtime/ holds more than 25 .c files;
#  2. tensor-name formats ("blk.%d.) stand in one product source file at most;
#  3. no switch on a ggml type in runtime/ outside the kernel-table builder;
#  4. runtime/device/cuda/ includes no model-private header;
#  5. the pack's file names are spelled in one product source file;
#  6. no two files use each other: A uses B when A's object refers to a
#     symbol B's object defines (nm), for every pair of product objects.
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build/cc}
bad=0
say() { if [ -z "$2" ]; then echo "ok    $1"; else bad=1; echo "FAIL  $1"; echo "$2" | sed 's/^/        /'; fi; }
product="formats convert pack runtime"

r=$(for d in $(find runtime -type d); do n=$(ls "$d"/*.c 2>/dev/null | wc -l); [ "$n" -gt 25 ] && echo "$d: $n .c files"; done)
say "no folder under runtime/ with more than 25 .c files" "$r"

r=$(grep -l '"blk\.%d\.' $(find $product -name '*.c' -o -name '*.h' -o -name '*.cu') 2>/dev/null)
[ "$(echo "$r" | grep -c .)" -le 1 ] && r=""
say 'tensor-name formats ("blk.%d.) in one product source file' "$r"

kt=${KERNEL_TABLE_BUILDER:-runtime/kernels/kernel_table.c}
r=$(grep -n 'switch *(' $(find runtime -name '*.c' ! -path "$kt") 2>/dev/null |
    while IFS=: read -r f l rest; do
        sed -n "$((l + 1)),$((l + 30))p" "$f" | grep -m1 'case ' | grep -q 'GGML_TYPE_' && echo "$f:$l: $rest"
    done)
say "no switch on a ggml type in runtime/ outside $kt" "$r"

r=$(grep -n '#include "runtime/model/model_impl.h"\|#include "runtime/model/[a-z_]*_impl.h"' runtime/device/cuda/* 2>/dev/null)
say "runtime/device/cuda/ includes no model-private header" "$r"

r=""
for name in manifest.json dense.bin embd.bin experts.bin tokenizer.gguf index.txt; do
    f=$(grep -l "\"$name\"" $(find $product -name '*.c' -o -name '*.h') 2>/dev/null)
    [ "$(echo "$f" | grep -c .)" -gt 1 ] && r="$r$name: $(echo $f)
"
done
say "the pack's file names are spelled in one product source file" "$(printf %s "$r")"

[ -d "$build" ] || { echo "FAIL  $build is absent: run make first"; exit 1; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
for o in $(find $(for m in $product; do echo "$build/$m"; done) -name '*.o' ! -name '*_main.o' 2>/dev/null); do
    src=${o#$build/}; src=${src%.o}.c
    nm -g --defined-only "$o" 2>/dev/null | awk -v s="$src" 'NF==3 {print $3, s}' >>"$tmp/def"
    nm -u "$o" 2>/dev/null | awk -v s="$src" '{print $NF, s}' >>"$tmp/use"
done
sort -k1,1 "$tmp/def" >"$tmp/def.s"; sort -k1,1 "$tmp/use" >"$tmp/use.s"
join "$tmp/use.s" "$tmp/def.s" | awk '$2 != $3 {print $2, $3}' | sort -u >"$tmp/edges"
r=$(awk '{e[$1" "$2]=1} END {for (k in e) {split(k, p, " "); if ((p[2]" "p[1]) in e && p[1] < p[2]) print p[1] " <-> " p[2]}}' "$tmp/edges" | sort)
say "no two files use each other" "$r"
exit $bad
