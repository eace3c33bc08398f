#!/bin/sh
# e2e_iq3pack_ux.sh: what a user sees from the offline tools (issue 22):
# an architecture strata cannot run refused by name before anything is
# written; verify and info on a pack with a missing file; all cores by
# default with the same bytes as one thread; progress lines with an ETA when
# stderr is a file; SIGTERM removing the partial folder, and a stale one
# named with the command that removes it; the build's output pointing at `strata budget`, without the
# index step's jargon or zero counts (kept for --verbose); --imatrix on a
# file of another kind; grams2imatrix's EXISTS advice; --version. On the
# shipped model (an MoE).
set -u
bin=${STRATA_BIN:?STRATA_BIN not set}
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/models/tiny-moe/tiny-moe.gguf
moe=$src
[ -f "$src" ] || { echo "FAIL: $src is missing (it is part of the repository)"; exit 1; }
command -v python3 >/dev/null || { echo "skip: python3 is absent (needed to relabel a GGUF)"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
. "$root/tests/lib/pack_cmp.sh"
P=$bin/iq3pack
cd "$t" || exit 1

# --version: version and build on every offline tool
for tool in iq3pack packindex grams2imatrix; do
    v=$("$bin/$tool" --version) || fail "$tool --version exited non-zero"
    echo "$v" | grep -Eq "^$tool [0-9]+\.[0-9]+\.[0-9]+ \((gcc|clang) [0-9.]+, .*kernels.*; CPU only\)$" ||
        fail "$tool --version: $v"
done

# 1. architectures without a runtime row, or only a pack row, are refused first
for arch in phi3 no-such-arch; do
    python3 "$root/tests/fixtures/gguf_relabel.py" "$src" "$arch.gguf" general.architecture "$arch" ||
        fail "relabel $arch"
    "$P" build "$arch.gguf" -o "p-$arch" >out 2>err && fail "$arch: built a pack strata cannot run"
    [ "$(wc -l <err)" -eq 1 ] || fail "$arch: not one line: $(cat err)"
    grep -q "^$arch.gguf: architecture '$arch' is not one strata runs (it runs llama, .*qwen3moe" err ||
        fail "$arch refusal: $(cat err)"
    [ -z "$(ls -d p-"$arch"* 2>/dev/null)" ] || fail "$arch: left $(ls -d p-"$arch"*)"
done

# 3. all cores by default, --help says so, and the bytes equal one thread's
"$P" build --help | grep -q "default: all cores" || fail "build --help does not give the default threads"
"$P" build "$moe" -o one --threads 1 >one.out 2>one.err || fail "build --threads 1: $(cat one.err)"
"$P" build "$moe" -o all >all.out 2>all.err || fail "build: $(cat all.err)"
n=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
grep -q "on $n thread" all.out || fail "default threads not $n: $(grep thread all.out)"
if d=$(pack_differs one all); then fail "$d differs between --threads 1 and the default"; fi

# 4. progress when stderr is a file: a line per tenth with an ETA
grep -q "^iq3pack build: 50% (.* MiB) ETA [0-9:]*$" all.err || fail "build progress: $(cat all.err)"
"$P" verify all >v.out 2>v.err || fail "verify: $(cat v.err)"
grep -q "^iq3pack verify: [0-9]*0% (.* MiB) ETA [0-9:]*$" v.err || fail "verify progress: $(cat v.err)"

# 6. the build's normal output: strata budget, no jargon, no zero counts
grep -q "strata budget all" all.out || fail "no strata budget pointer: $(cat all.out)"
for w in pack_budget "engine pool" VERBATIM "kind " ".partial." " 0 "; do
    grep -q -- "$w" all.out && fail "build output has '$w': $(grep -- "$w" all.out)"
done
grep -q " 0 " v.out && fail "verify output has a zero count: $(grep " 0 " v.out)"
"$P" build "$src" -o verbose --verbose >verbose.out 2>&1 || fail "build --verbose"
grep -q "engine pool" verbose.out || fail "--verbose lost the index step's summary"

# 2. verify and info on a pack with files missing
cp -r all part
rm part/index.txt
"$P" verify part >out 2>err && fail "verify passed a pack without index.txt"
[ "$(wc -l <err)" -eq 1 ] && grep -q "^part/index.txt: missing" err || fail "verify without index: $(cat err)"
grep -q "packindex --pack part" err || fail "no packindex advice: $(cat err)"
"$P" info part >out 2>err && fail "info passed a pack without index.txt"
grep -q "index.txt *MISSING" out || fail "info does not report index.txt: $(cat out)"
grep -q "missing index.txt" err || fail "info stderr: $(cat err)"
rm part/experts.bin
"$P" verify part >out 2>err && fail "verify passed a pack without experts.bin"
[ "$(wc -l <err)" -eq 1 ] && grep -q "^part/experts.bin: missing (also missing: index.txt)" err ||
    fail "verify without experts.bin: $(cat err)"

# 5. a stale partial folder is named, with the command that removes it
mkdir -p "again.partial.Ab12Cd"
"$P" build "$src" -o again >out 2>err || fail "build beside a stale partial folder: $(cat err)"
grep -q "again.partial.Ab12Cd is left from an interrupted build.*rm -r 'again.partial.Ab12Cd'" err ||
    fail "stale folder not named: $(cat err)"
grep -q partial out && fail "the temporary folder in the normal output: $(cat out)"

# 5. SIGTERM mid-build: the partial folder is removed, the status says so
"$P" build "$moe" -o killed --threads 1 >k.out 2>k.err &
pid=$!
i=0
while [ $i -lt 200 ] && ! grep -q "iq3pack build: 10%" k.err 2>/dev/null; do sleep 0.02; i=$((i + 1)); done
kill -TERM $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc -eq 0 ]; then
    echo "note: the build finished before SIGTERM reached it; interruption not checked"
else
    [ $rc -eq 143 ] || fail "interrupted build: exit $rc, expected 143: $(cat k.err)"
    grep -q "^killed: interrupted; the partial pack was removed$" k.err || fail "interrupt message: $(cat k.err)"
    [ -z "$(ls -d killed* 2>/dev/null)" ] || fail "an interrupted build left $(ls -d killed*)"
fi

# 7. --imatrix on a file of another kind
"$P" build "$src" -o imx --imatrix "$src" >out 2>err && fail "a model GGUF taken as an imatrix"
grep -q "tiny-moe.gguf: neither an imatrix GGUF nor a legacy imatrix.dat" err || fail "model as imatrix: $(cat err)"
echo "just some notes" >notes.txt
"$P" build "$src" -o imx --imatrix notes.txt >out 2>err && fail "a text file taken as an imatrix"
[ "$(wc -l <err)" -eq 1 ] && grep -q "^notes.txt: neither an imatrix GGUF nor a legacy imatrix.dat" err ||
    fail "text as imatrix: $(cat err)"

# 8. grams2imatrix keeps its EXISTS keyword and gives advice that exists
mkdir grams
echo x >taken.gguf
"$bin/grams2imatrix" -o taken.gguf grams >out 2>err && fail "grams2imatrix overwrote an imatrix"
grep -q "EXISTS taken.gguf" err || fail "EXISTS keyword: $(cat err)"
grep -q "AGENTTRASH" err && fail "private convention in the advice: $(cat err)"
exit 0
