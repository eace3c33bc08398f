#!/bin/sh
# host_steadiness.sh: how steady this machine is for memory-bound work
# against compute-bound work (a diagnostic; not run by CI). Builds
# tests/diag/host_steadiness.c and runs it; its arguments pass through:
#
#   sh tests/diag/host_steadiness.sh [-b BLOCKS] [-w SECONDS] [-m MIB]
#
# Each block times three windows one after another of reading a buffer (one
# thread, then two) and of multiply-adds in registers (one thread), as
# strata bench and llama-bench time three decodes; the spread of each kind is
# printed per block and summed up at the end. Run it beside
# tests/diag/vs_llamacpp.sh (not at the same time) to tell a program's own
# unsteadiness from the machine's: a decode near its bandwidth floor can be
# no steadier than the reads here.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -Werror -pthread "$here/tests/diag/host_steadiness.c" \
    -o "$out/host_steadiness"
"$out/host_steadiness" "$@"
