#!/usr/bin/env bash
# strata set-up: installs the build and test dependencies, then builds.
#   ./setup.sh            dependencies + build
#   ./setup.sh --deps     dependencies only (what CI runs)
#   ./setup.sh --help
# Idempotent: packages already present are not reinstalled, and make only
# rebuilds what changed. This file is the only place that lists dependencies.
set -eu

usage() {
    cat <<'USAGE'
usage: ./setup.sh [--deps] [--no-build] [--help]

  (no option)   install missing dependencies, then build every tool into bin/
  --deps        install missing build and test dependencies only
  --no-build    same as --deps
  --help        this text

Supported package managers: apt-get (Debian/Ubuntu), dnf (Fedora/RHEL),
pacman (Arch). Elsewhere it prints what to install by hand.
After it: run the tests with `make test`.
USAGE
}

deps_only=0
for arg in "$@"; do
    case "$arg" in
    --deps|--no-build) deps_only=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")"

# Debian names are the reference list (DESIGN.md); the others are equivalents.
APT_PKGS="build-essential clang make pkg-config libopenblas-dev zlib1g-dev libcurl4-openssl-dev libcmocka-dev libmicrohttpd-dev libjansson-dev libpcre2-dev"
DNF_PKGS="gcc clang make pkgconf-pkg-config openblas-devel zlib-devel libcurl-devel libcmocka-devel libmicrohttpd-devel jansson-devel pcre2-devel"
PACMAN_PKGS="base-devel clang make pkgconf openblas cblas zlib curl cmocka libmicrohttpd jansson pcre2"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else echo "setup.sh: need root to run: $*  (no sudo found)" >&2; exit 1
    fi
}

install_deps() {
    if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
        missing=""
        for p in $APT_PKGS; do
            if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
                missing="$missing $p"
            fi
        done
        if [ -z "$missing" ]; then
            echo "setup.sh: dependencies already installed"
            return 0
        fi
        echo "setup.sh: installing:$missing"
        as_root apt-get update -qq || { echo "setup.sh: apt-get update failed: check the network or your apt sources" >&2; exit 1; }
        # shellcheck disable=SC2086
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
            || { echo "setup.sh: apt-get install failed for:$missing" >&2; exit 1; }
    elif command -v dnf >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        rpm -q $DNF_PKGS >/dev/null 2>&1 && { echo "setup.sh: dependencies already installed"; return 0; }
        # shellcheck disable=SC2086
        as_root dnf install -y $DNF_PKGS
    elif command -v pacman >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        pacman -Q $PACMAN_PKGS >/dev/null 2>&1 && { echo "setup.sh: dependencies already installed"; return 0; }
        # shellcheck disable=SC2086
        as_root pacman -S --needed --noconfirm $PACMAN_PKGS
    else
        echo "setup.sh: no supported package manager (apt-get, dnf, pacman) found." >&2
        echo "Install by hand: a C11 compiler, make, pkg-config, OpenBLAS, zlib, libcurl, cmocka," >&2
        echo "libmicrohttpd, jansson and PCRE2 (development headers), then run: make" >&2
        exit 1
    fi
}

install_deps
[ "$deps_only" -eq 1 ] && exit 0

jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
echo "setup.sh: building with $jobs jobs"
make -j"$jobs" || { echo "setup.sh: build failed; see the compiler output above" >&2; exit 1; }
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    make cuda || { echo "setup.sh: CUDA build failed; the CPU build in bin/ is still usable" >&2; exit 1; }
fi
echo "setup.sh: done. Tools are in bin/. Run the tests with: make test"
