#!/bin/sh
# iq3pack info / dump through the binary: the dump of an F32 tensor of the
# shipped model is byte-identical to the tensor's bytes in the file (located
# with info's own offsets), and refusals leave no output.
set -u
bin=${STRATA_BIN:?}
src=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$src" ] || { echo "FAIL: $src is missing (it is part of the repository)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin/iq3pack" info "$src" --tensors >"$tmp/info.txt" || { echo "info failed"; exit 1; }
data=$(sed -n 's/.*data at \([0-9]*\)$/\1/p' "$tmp/info.txt")
line=$(grep ' output_norm.weight ' "$tmp/info.txt") || { echo "info lists no output_norm.weight"; exit 1; }
off=$(echo "$line" | sed 's/.*offset \([0-9]*\) bytes.*/\1/')
bytes=$(echo "$line" | sed 's/.*bytes \([0-9]*\)$/\1/')
"$bin/iq3pack" dump "$src" output_norm.weight -o "$tmp/t.f32" >/dev/null || { echo "dump failed"; exit 1; }
dd if="$src" of="$tmp/want.bin" bs=1 skip=$((data + off)) count="$bytes" 2>/dev/null
cmp "$tmp/t.f32" "$tmp/want.bin" || { echo "dump differs from the file's bytes"; exit 1; }
# refusals: existing output, unknown tensor, not a GGUF
if "$bin/iq3pack" dump "$src" output_norm.weight -o "$tmp/t.f32" 2>"$tmp/err"; then echo "overwrote"; exit 1; fi
grep -q "already exists" "$tmp/err" || { echo "no 'already exists' message"; cat "$tmp/err"; exit 1; }
if "$bin/iq3pack" dump "$src" nope -o "$tmp/n.f32" 2>"$tmp/err"; then echo "accepted unknown tensor"; exit 1; fi
[ ! -e "$tmp/n.f32" ] || { echo "left an output after a refusal"; exit 1; }
if "$bin/iq3pack" info "$tmp/info.txt" 2>"$tmp/err"; then echo "accepted a text file"; exit 1; fi
grep -q "info.txt" "$tmp/err" || { echo "error does not name the file"; cat "$tmp/err"; exit 1; }
exit 0
