#!/bin/sh
# strata pull against tests/fixtures/hf_mirror.py, a loopback stand-in for the
# Hugging Face hub serving a folder of ours with LFS headers: a repository
# "tiny-moe" holding the shipped model, a binary tokenizer.model and a
# README.md. Checks: byte-exact files, a second run downloads nothing, a cut
# transfer resumes with the Range the server log shows, a .part from an
# earlier run resumes, a server ignoring Range restarts cleanly, corrupt
# content fails the sha256 and leaves neither file nor .part, 404 (file,
# repo, revision), 401 with and without HF_TOKEN, 500 twice then OK, a
# split GGUF pulled whole, the free-space refusal, no server, unsafe names,
# an existing different file. Only 127.0.0.1 is contacted: HF_ENDPOINT
# always points at the fixture.
set -u
bin=${STRATA_BIN:?STRATA_BIN is not set}
shipped=$(cd "$(dirname "$0")/../.." && pwd)/models/tiny-moe/tiny-moe.gguf
[ -f "$shipped" ] || { echo "FAIL: $shipped is missing (it is part of the repository)"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 (for the fixture server) is absent"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-e2e-pull-XXXXXX") || exit 1
. "$(dirname "$0")/../lib/hf_mirror.sh"
trap 'stop_server; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# the repository (the mirror serves no links): the model, 100 KiB of its bytes as a binary
# file, a text file
models=$tmp/root
mkdir -p "$models/tiny-moe"
orig=$models/tiny-moe/tiny-moe.gguf
tok=$models/tiny-moe/tokenizer.model
cp "$shipped" "$orig"
dd if="$shipped" of="$tok" bs=1024 skip=40 count=100 2>/dev/null
printf '# tiny-moe\n\nA test repository.\n' >"$models/tiny-moe/README.md"

mirror_start --root "$models" --lifetime 120 --max-requests 400 --split tiny-moe/tiny-moe.gguf:3

# 1. LFS files byte-exact and verified; a text file (no sha256 stated) noted
if pull t/tiny-moe tiny-moe.gguf tokenizer.model README.md -o "$tmp/a" 2>"$tmp/err"; then
    cmp -s "$tmp/a/tiny-moe.gguf" "$orig" || bad "tiny-moe.gguf differs"
    cmp -s "$tmp/a/tokenizer.model" "$tok" || bad "tokenizer.model differs"
    cmp -s "$tmp/a/README.md" "$models/tiny-moe/README.md" || bad "README.md differs"
    has "tiny-moe.gguf: sha256 verified" "$tmp/err" || bad "no 'sha256 verified' line"
    has "README.md: the server states no sha256" "$tmp/err" || bad "README.md not noted as unverified"
    [ -z "$(find "$tmp/a" -name '*.part')" ] || bad ".part left after success"
else bad "plain pull failed"; fi

# 2. a second run finds everything in place and downloads nothing
gets=$(grep -c '^GET ' "$tmp/log")
pull t/tiny-moe tiny-moe.gguf tokenizer.model -o "$tmp/a" 2>"$tmp/err" || bad "second pull failed"
has "already there (sha256 matches)" "$tmp/err" || bad "second pull did not say 'already there'"
[ "$(grep -c '^GET ' "$tmp/log")" = "$gets" ] || bad "second pull downloaded again"

# 3. a transfer cut at 300000 bytes resumes from there
if pull cut-300000/tiny-moe tiny-moe.gguf -o "$tmp/b" 2>"$tmp/err"; then
    cmp -s "$tmp/b/tiny-moe.gguf" "$orig" || bad "resumed file differs"
    has "^GET /cdn/cut-300000/tiny-moe/tiny-moe.gguf range=bytes=300000- auth=0 -> 206" "$tmp/log" ||
        bad "no resume at bytes=300000- in the server log"
else bad "pull with a cut connection failed"; fi

# 4. a .part left by an earlier run resumes
mkdir -p "$tmp/c"; head -c 100000 "$orig" >"$tmp/c/tiny-moe.gguf.part"
if pull earlier/tiny-moe tiny-moe.gguf -o "$tmp/c" 2>"$tmp/err"; then
    cmp -s "$tmp/c/tiny-moe.gguf" "$orig" || bad "file resumed from an old .part differs"
    has "^GET /cdn/earlier/tiny-moe/tiny-moe.gguf range=bytes=100000- .* -> 206" "$tmp/log" ||
        bad "old .part not resumed at bytes=100000-"
else bad "pull resuming an old .part failed"; fi

# 5. a server that ignores Range: the .part (here garbage) restarts from 0
mkdir -p "$tmp/d"; head -c 100000 /dev/zero >"$tmp/d/tiny-moe.gguf.part"
if pull norange/tiny-moe tiny-moe.gguf -o "$tmp/d" 2>"$tmp/err"; then
    cmp -s "$tmp/d/tiny-moe.gguf" "$orig" || bad "restarted file differs"
    has "ignored the Range" "$tmp/err" || bad "restart not reported"
else bad "pull from a Range-ignoring server failed"; fi

# 6. corrupt content: loud failure, no file, no .part
if pull corrupt/tiny-moe tiny-moe.gguf -o "$tmp/e" 2>"$tmp/err"; then bad "corrupt download accepted"; fi
has "SHA256 MISMATCH" "$tmp/err" || bad "no SHA256 MISMATCH message"
[ ! -e "$tmp/e/tiny-moe.gguf" ] && [ ! -e "$tmp/e/tiny-moe.gguf.part" ] || bad "corrupt download left a file"

# 7. 404: file, repository, revision
if pull t/tiny-moe nope.gguf -o "$tmp/f" 2>"$tmp/err"; then bad "missing file accepted"; fi
has "file 'nope.gguf' not found at revision 'main'" "$tmp/err" || bad "no file-not-found message"
if pull t/no-such-repo x.gguf -o "$tmp/f" 2>"$tmp/err"; then bad "missing repo accepted"; fi
has "t/no-such-repo: 404: repository not found" "$tmp/err" || bad "no repo-not-found message"
if pull t/tiny-moe tiny-moe.gguf --revision v9 -o "$tmp/f" 2>"$tmp/err"; then bad "missing revision accepted"; fi
has "revision 'v9' not found" "$tmp/err" || bad "no revision-not-found message"
[ -z "$(ls -A "$tmp/f")" ] || bad "404s left files"

# 8. 401 without a token, with a wrong one; success with the right one
if pull token-sesame/tiny-moe tokenizer.model -o "$tmp/g" 2>"$tmp/err"; then bad "401 accepted"; fi
has "401 Unauthorized.*set HF_TOKEN" "$tmp/err" || bad "401 message does not mention HF_TOKEN"
if HF_TOKEN=wrong pull token-sesame/tiny-moe tokenizer.model -o "$tmp/g" 2>"$tmp/err"; then bad "wrong token accepted"; fi
has "refused HF_TOKEN" "$tmp/err" || bad "no refused-token message"
if HF_TOKEN=sesame pull token-sesame/tiny-moe tokenizer.model -o "$tmp/g" 2>"$tmp/err"; then
    cmp -s "$tmp/g/tokenizer.model" "$tok" || bad "token download differs"
    has "^HEAD /token-sesame/tiny-moe/resolve/main/tokenizer.model range=- auth=1 -> 302" "$tmp/log" ||
        bad "token not sent"
else bad "pull with the right token failed"; fi

# 9. 500 twice, then OK
if pull fail-2/tiny-moe tokenizer.model -o "$tmp/h" 2>"$tmp/err"; then
    cmp -s "$tmp/h/tokenizer.model" "$tok" || bad "file after 500s differs"
    [ "$(grep -c '^[A-Z]* /fail-2/.* -> 500$' "$tmp/log")" = 2 ] || bad "server log does not show two 500s"
    has "HTTP 500.*retrying" "$tmp/err" || bad "retry not reported"
else bad "pull after two 500s failed"; fi

# 10. naming one part of a split GGUF pulls the set; parts concatenate to the original
if pull t/tiny-moe tiny-moe-00002-of-00003.gguf -o "$tmp/s" 2>"$tmp/err"; then
    cat "$tmp/s/tiny-moe-00001-of-00003.gguf" "$tmp/s/tiny-moe-00002-of-00003.gguf" \
        "$tmp/s/tiny-moe-00003-of-00003.gguf" >"$tmp/joined" 2>/dev/null
    cmp -s "$tmp/joined" "$orig" || bad "split set incomplete or wrong"
    has "all 3 parts" "$tmp/err" || bad "split expansion not announced"
else bad "split pull failed"; fi

# 11. not enough free space: refused before any byte is written
if pull claim-999999999999999999/tiny-moe tiny-moe.gguf -o "$tmp/i" 2>"$tmp/err"; then bad "no space check"; fi
has "not enough free space" "$tmp/err" || bad "no free-space message"
[ ! -e "$tmp/i/tiny-moe.gguf.part" ] || bad "free-space refusal left a .part"

# 12. unsafe names and an existing different file are refused
if pull t/tiny-moe ../x.gguf -o "$tmp/j" 2>"$tmp/err"; then bad "'../x.gguf' accepted"; fi
has "not a file path inside a repository" "$tmp/err" || bad "no unsafe-name message"
mkdir -p "$tmp/k"; echo mine >"$tmp/k/tokenizer.model"
if pull t/tiny-moe tokenizer.model -o "$tmp/k" 2>"$tmp/err"; then bad "overwrote a different file"; fi
has "not overwriting" "$tmp/err" || bad "no not-overwriting message"
[ "$(cat "$tmp/k/tokenizer.model")" = mine ] || bad "existing file changed"

# 13. no server: a clear message after bounded retries
stop_server
if pull t/tiny-moe tokenizer.model -o "$tmp/l" --retries 2 2>"$tmp/err"; then bad "pull without a server succeeded"; fi
has "cannot connect" "$tmp/err" || bad "no cannot-connect message"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
