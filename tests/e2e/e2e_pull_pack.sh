#!/bin/sh
# strata pull REPO (no file names): a whole pack published as a Hugging Face
# repository, against tests/fixtures/hf_mirror.py (its /api/models file list
# and resolve URLs) on 127.0.0.1. Builds a pack from the shipped model with
# iq3pack build, serves it as a repository, pulls it whole and checks it
# (the pull's own check and `strata check`); a second pull downloads nothing;
# a cut transfer resumes; a damaged pack (crc32 off, sha256 consistent) fails
# the closing check; a repository without index.txt (a GGUF repo) and one
# whose pack sits in a folder are refused with the command to use; a listing
# 404 (repository, revision) and a 401 are one line each; 500s on the file
# list are retried.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
gguf=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$gguf" ] || { echo "FAIL: $gguf is missing (it is part of the repository)"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 (for the fixture server) is absent"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-pull-pack-XXXXXX") || exit 1
. "$(dirname "$0")/../lib/hf_mirror.sh"
trap 'stop_server; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

"$bin/iq3pack" build "$gguf" -o "$tmp/pack" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; echo "FAIL: iq3pack build"; exit 1; }
[ -f "$tmp/pack/index.txt" ] || { echo "FAIL: iq3pack build wrote no index.txt"; exit 1; }
# the same pack with one byte of dense.bin flipped: the hub states the sha256
# of what it serves, so only the crc32 in index.txt can catch it
cp -r "$tmp/pack" "$tmp/badpack"
printf '\377' | dd of="$tmp/badpack/dense.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
# a repository whose pack is in a folder, not at its top
mkdir -p "$tmp/nested"; cp -r "$tmp/pack" "$tmp/nested/mypack"
mkdir -p "$tmp/models/gguf-only"; cp "$gguf" "$tmp/models/gguf-only/"

mirror_start --root "$tmp/models" --lifetime 120 --max-requests 300 \
    --repo "pack=$tmp/pack" --repo "badpack=$tmp/badpack" --repo "nested=$tmp/nested"
oneline() { [ "$(wc -l <"$tmp/err")" -eq 1 ] || bad "$1: $(wc -l <"$tmp/err") lines on stderr, not one"; }

# 1. the whole pack: every file byte-exact, the check passes, strata check agrees
if pull t/pack -o "$tmp/a" 2>"$tmp/err"; then
    for f in dense.bin embd.bin experts.bin tokenizer.gguf index.txt manifest.json; do
        cmp -s "$tmp/a/$f" "$tmp/pack/$f" || bad "$f differs from the published pack"
    done
    [ ! -e "$tmp/a/.gitattributes" ] || bad ".gitattributes was downloaded into the pack"
    [ -z "$(find "$tmp/a" -name '*.part')" ] || bad ".part left after success"
    has "GET /api/models/t/pack/revision/main " "$tmp/log" || bad "the file list was not asked of the hub's API"
    has "dense.bin: sha256 verified" "$tmp/err" || bad "no 'sha256 verified' line"
    has "^ok  dense.bin" "$tmp/err" || bad "no check line for dense.bin"
    has "every pack file matches index.txt" "$tmp/err" || bad "no closing check line"
    has "next: strata run $tmp/a" "$tmp/err" || bad "no next command"
    # index.txt is fetched last, so an interrupted pull does not look whole
    [ "$(grep '^GET /t/pack/resolve/' "$tmp/log" | tail -n 1 | cut -d' ' -f2)" = /t/pack/resolve/main/index.txt ] ||
        bad "index.txt was not the last download"
    "$bin/strata" check "$tmp/a" >"$tmp/check" 2>&1 || bad "strata check on the pulled pack: $(cat "$tmp/check")"
else bad "pull of a whole pack failed"; fi

# 2. again: everything already there, nothing downloaded, still checked
gets=$(grep -c '^GET /t/pack/resolve/\|^GET /cdn/' "$tmp/log")
pull t/pack -o "$tmp/a" 2>"$tmp/err" || bad "second pull failed"
has "already there" "$tmp/err" || bad "second pull did not say 'already there'"
has "every pack file matches index.txt" "$tmp/err" || bad "second pull did not check"
[ "$(grep -c '^GET /t/pack/resolve/\|^GET /cdn/' "$tmp/log")" = "$gets" ] || bad "second pull downloaded again"

# 3. a transfer cut at 100000 bytes resumes, and the pack checks
if pull cut-100000/pack -o "$tmp/b" 2>"$tmp/err"; then
    has "^GET /cdn/cut-100000/pack/dense.bin range=bytes=100000- .* -> 206" "$tmp/log" ||
        bad "no resume at bytes=100000- in the server log"
    "$bin/strata" check "$tmp/b" >/dev/null 2>&1 || bad "the resumed pack fails strata check"
else bad "pull with a cut connection failed"; fi

# 4. a damaged pack: downloads verify (sha256 of what is served), the check fails
if pull t/badpack -o "$tmp/c" 2>"$tmp/err"; then bad "a pack with a wrong crc32 was accepted"; fi
has "strata pull: $tmp/c/dense.bin: crc32 .*the index says .*does not hold a whole pack" "$tmp/err" ||
    bad "no crc32 failure naming dense.bin"

# 5. not a pack: refused before any download, with the command that works
if pull t/gguf-only -o "$tmp/d" 2>"$tmp/err"; then bad "a repository without index.txt was pulled as a pack"; fi
has "not a strata pack (no index.txt at the top of the repository).*strata pull t/gguf-only FILE" "$tmp/err" ||
    bad "no not-a-pack message"
oneline "not a pack"
[ -z "$(ls -A "$tmp/d" 2>/dev/null)" ] || bad "the refusal left files"
if pull t/nested -o "$tmp/d" 2>"$tmp/err"; then bad "a pack in a folder was pulled as a pack"; fi
has "its index.txt is 'mypack/index.txt'" "$tmp/err" || bad "no message naming the folder's index.txt"
oneline "pack in a folder"

# 6. listing errors: one line each
if pull t/no-such-repo -o "$tmp/e" 2>"$tmp/err"; then bad "missing repository accepted"; fi
has "^strata pull: t/no-such-repo: 404: repository not found on $ep" "$tmp/err" || bad "no repo-not-found message"
oneline "repository not found"
if pull t/pack --revision v9 -o "$tmp/e" 2>"$tmp/err"; then bad "missing revision accepted"; fi
has "revision 'v9' not found" "$tmp/err" || bad "no revision-not-found message"
oneline "revision not found"
if pull token-sesame/pack -o "$tmp/e" 2>"$tmp/err"; then bad "401 accepted"; fi
has "401 Unauthorized.*set HF_TOKEN" "$tmp/err" || bad "401 message does not mention HF_TOKEN"
oneline "401"
if HF_TOKEN=sesame pull token-sesame/pack -o "$tmp/f" 2>"$tmp/err"; then
    "$bin/strata" check "$tmp/f" >/dev/null 2>&1 || bad "the pack pulled with a token fails strata check"
else bad "pull of a pack with the right token failed"; fi

# 7. the file list is retried like a download: 500 twice, then OK
if pull fail-2/pack -o "$tmp/g" 2>"$tmp/err"; then
    [ "$(grep -c '^GET /api/models/fail-2/pack/.* -> 500$' "$tmp/log")" = 2 ] || bad "server log does not show two 500s on the file list"
    has "HTTP 500 for its file list; retrying" "$tmp/err" || bad "file-list retry not reported"
    "$bin/strata" check "$tmp/g" >/dev/null 2>&1 || bad "the pack pulled after 500s fails strata check"
else bad "pull of a pack after two 500s failed"; fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
