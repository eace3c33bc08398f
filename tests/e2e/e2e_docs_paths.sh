#!/bin/sh
# e2e_docs_paths.sh: the paths that README.md, setup.sh's help and docs/*.md
# name inside the repository exist. A word like runtime/x.c, tests/e2e/y.sh,
# docs/z.md, formats/..., pack/..., convert/..., tools/..., seeds/... or
# reference/... must be a file or folder of the tree; bin/NAME must be a tool
# the Makefile builds. Globs and placeholders (*, {a,b}, <name>) are not
# checked; "X.h/.c" counts as X.h. docs/DESIGN.md is left out: its worked
# examples name files a reader would add. Allowed on purpose (see the
# ALLOWED list): words that are not paths of this repository.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# pack/full: packindex's default --pack, a folder of the user's;
# tools/pack_index.py: the literal text of index.txt's line 1 (docs/pack-format.md)
ALLOWED=' pack/full tools/pack_index.py '
bad=""
for f in README.md setup.sh docs/*.md; do
    [ "$f" = docs/DESIGN.md ] && continue
    grep -noE '(^|[^A-Za-z0-9_./~<$-])(bin|tests|runtime|formats|convert|pack|docs|tools|seeds|reference)/[A-Za-z0-9_./*{}<>-]*[A-Za-z0-9_*}>]' "$f" \
        | sed -E 's/^([0-9]+):[^A-Za-z]*/\1 /' >"${TMPDIR:-/tmp}/strata-docpaths.$$"
    while read -r line p; do
        case "$p" in *'*'*|*'{'*|*'<'*) continue ;; esac
        case "$ALLOWED" in *" $p "*) continue ;; esac
        p=${p%/.c}
        case "$p" in
        bin/*) grep -qE "(^|[^A-Za-z0-9_-])${p#bin/}([^A-Za-z0-9_-]|$)" Makefile || bad="$bad
  $f:$line: $p (no such tool in the Makefile)" ;;
        *) [ -e "$p" ] || bad="$bad
  $f:$line: $p" ;;
        esac
    done <"${TMPDIR:-/tmp}/strata-docpaths.$$"
done
rm -f "${TMPDIR:-/tmp}/strata-docpaths.$$"
[ -z "$bad" ] || { echo "FAIL: the documentation names paths that are not in the repository:$bad"; exit 1; }
echo "ok: every repository path named in README.md, setup.sh and docs/*.md exists"
exit 0
