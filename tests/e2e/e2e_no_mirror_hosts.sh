#!/bin/sh
# e2e_no_mirror_hosts.sh: no file of the repository names the host of a
# package mirror or registry (Debian, Ubuntu, Fedora, Arch, NodeSource, npm,
# PyPI, Rust's and Go's registries...): scripts that fetch packages read the
# mirror from the machine's own configuration at run time (the llama.cpp
# diagnostics: /etc/apt sources, tests/diag/diag_llamacpp_env.sh). The Hugging
# Face hub, which `strata pull` names, and loopback addresses are not package
# mirrors and pass. The patterns below are written so that this file does not
# match them itself.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# the tracked files when this is a git checkout, every file but the build
# outputs otherwise (a release tarball)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard >"${TMPDIR:-/tmp}/strata-mirror-files.$$"
else
    find . -path ./build -prune -o -path ./bin -prune -o -path ./.git -prune -o -type f -print0 \
        >"${TMPDIR:-/tmp}/strata-mirror-files.$$"
fi
list=${TMPDIR:-/tmp}/strata-mirror-files.$$
trap 'rm -f "$list"' EXIT
hosts='([a-z0-9-]+[.])*debian[.]org'
hosts="$hosts|([a-z0-9-]+[.])*(archive|security|ports)[.]ubuntu[.]com|[a-z0-9-]+[.]archive[.]ubuntu[.]com"
hosts="$hosts|([a-z0-9-]+[.])*fedoraproject[.]org|([a-z0-9-]+[.])*archlinux[.]org"
hosts="$hosts|deb[.]nodesource[.]com|rpm[.]nodesource[.]com|packages[.]cloud[.]google[.]com"
hosts="$hosts|registry[.](npmjs[.]org|yarnpkg[.]com|npmmirror[.]com)|(files[.])?pypi[.]org|files[.]pythonhosted[.]org"
hosts="$hosts|(index|static)?[.]?crates[.]io|proxy[.]golang[.]org|rubygems[.]org|repo[0-9]?[.]maven[.]org"
hosts="$hosts|([a-z0-9-]+[.])*mirrors?[.][a-z0-9.-]+|([a-z0-9-]+[.])*(debian|ubuntu)mirror[a-z0-9.-]*"
hits=$(xargs -0 grep -InoiE "$hosts" <"$list" 2>/dev/null | grep -v ':mirrors\?[.]\(py\|sh\|c\|h\|md\)$')
if [ -n "$hits" ]; then
    echo "FAIL: package-mirror or registry hosts named in the repository (read them from the machine's configuration at run time):"
    echo "$hits" | sed 's/^/  /'
    exit 1
fi
n=$(tr -cd '\0' <"$list" | wc -c)
echo "ok: no package-mirror host in $n files"
exit 0
