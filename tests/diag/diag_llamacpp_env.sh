# diag_llamacpp_env.sh: sourced by the llama.cpp diagnostics (tests/diag/diag_*.sh;
# not run by CI, needs network access to the Debian mirror this machine's apt
# already uses: its URI is read from /etc/apt/sources.list and
# /etc/apt/sources.list.d at run time, or taken from $STRATA_DEBIAN_MIRROR).
# Unpacks Debian sid's llama.cpp and ggml packages, and the newer libc they need, under
# $STRATA_LLAMACPP_DIR (default ~/.cache/strata/llamacpp-deb; no system
# change, and not under build/, whose *.d files the Makefile includes), and
# builds small C programs against them. Programs run through sid's ld.so:
#   llamacpp_fetch                   the packages, once
#   llamacpp_fetch_tools             also llama.cpp-tools and -tools-extra (llama-imatrix,
#                                    llama-perplexity, ...: $deb/root/usr/bin), once
#   llamacpp_fetch_tools_native      llamacpp_fetch_tools with the CPU backend this machine
#                                    runs best ($LLAMACPP_CPU_VARIANT, unless set), and a line
#                                    naming the package version and the backend
#   llamacpp_tool NAME ARGS...       runs $deb/root/usr/bin/NAME on the haswell CPU backend
#                                    ($LLAMACPP_CPU_VARIANT picks another: zen4, icelake, ...;
#                                    some tools keep their code in $sys/llama/libllama-NAME-impl.so)
#   llamacpp_build SRC.c NAME        $deb/NAME from SRC.c, once
#   "$sys/ld-linux-x86-64.so.2" --library-path "$sys" "$deb/NAME" ARGS...
deb=${STRATA_LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/llamacpp-deb}
sys=$deb/root/usr/lib/x86_64-linux-gnu

# The Debian archive URI of this machine's apt configuration (one-line
# "deb [opts] URI suite..." files and deb822 "URIs:" files), the first one
# whose path ends in /debian; empty when there is none. Read at run time so
# that no mirror host is written into the repository.
apt_debian_mirror() {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" { print $2 }'
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        sed 's/#.*//' "$f" | awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }'
    done
}
llamacpp_mirror() {
    [ -n "${STRATA_DEBIAN_MIRROR:-}" ] && { echo "$STRATA_DEBIAN_MIRROR"; return 0; }
    apt_debian_mirror | grep -m 1 -E '/debian/?$'
}

llamacpp_fetch() {
    [ -f "$sys/libllama.so" ] && [ -f "$deb/root/usr/include/llama.h" ] && return 0
    mirror=$(llamacpp_mirror)
    [ -n "$mirror" ] || { echo "no Debian archive in /etc/apt/sources.list or /etc/apt/sources.list.d; set STRATA_DEBIAN_MIRROR to one" >&2; return 1; }
    mkdir -p "$deb/lists/partial" "$deb/cache/archives/partial" "$deb/debs"
    echo "deb $mirror sid main" > "$deb/sources.list"
    opts="-o Dir::Etc::sourcelist=$deb/sources.list -o Dir::Etc::sourceparts=/dev/null -o Dir::State::Lists=$deb/lists -o Dir::Cache=$deb/cache"
    # shellcheck disable=SC2086
    apt-get $opts update >/dev/null
    # shellcheck disable=SC2086
    (cd "$deb/debs" && apt-get $opts download libllama0 libllama-dev libggml0 libggml-dev libc6 libstdc++6 \
        libgcc-s1 libgomp1 libssl3t64 >/dev/null 2>&1)
    for f in "$deb"/debs/*.deb; do dpkg -x "$f" "$deb/root"; done
}

llamacpp_fetch_tools() {
    llamacpp_fetch || return 1
    [ -x "$deb/root/usr/bin/llama-imatrix" ] && return 0
    opts="-o Dir::Etc::sourcelist=$deb/sources.list -o Dir::Etc::sourceparts=/dev/null -o Dir::State::Lists=$deb/lists -o Dir::Cache=$deb/cache"
    # shellcheck disable=SC2086
    (cd "$deb/debs" && apt-get $opts download llama.cpp-tools llama.cpp-tools-extra >/dev/null 2>&1)
    for f in "$deb"/debs/llama.cpp-tools*.deb; do dpkg -x "$f" "$deb/root"; done
    [ -x "$deb/root/usr/bin/llama-imatrix" ] || { echo "llama.cpp-tools-extra did not unpack llama-imatrix" >&2; return 1; }
}

# The tools load their CPU backend from GGML_BACKEND_PATH (Debian's own path
# is under /usr, which is not where the packages were unpacked).
llamacpp_tool() { # NAME ARGS...
    t=$1; shift
    GGML_BACKEND_PATH=$sys/ggml/backends0/libggml-cpu-${LLAMACPP_CPU_VARIANT:-haswell}.so \
        "$sys/ld-linux-x86-64.so.2" --library-path "$sys:$sys/llama" "$deb/root/usr/bin/$t" "$@"
}

llamacpp_build() { # SRC.c NAME
    [ -x "$deb/$2" ] && [ "$deb/$2" -nt "$1" ] && return 0
    cc -O1 -I"$deb/root/usr/include" "$1" -o "$deb/$2" -L"$sys" -lllama -lggml -lggml-base -Wl,--allow-shlib-undefined
}

# The speed diagnostics (vs_llamacpp.sh, tier_vs_llamacpp.sh) compare against
# llama.cpp at its best on this CPU: the most capable backend it loads.
llamacpp_fetch_tools_native() {
    if [ -z "${LLAMACPP_CPU_VARIANT:-}" ]; then
        flags=$(grep -m 1 '^flags' /proc/cpuinfo)
        case $flags in
            *avx512_bf16*) LLAMACPP_CPU_VARIANT=zen4 ;;
            *avx512f*) LLAMACPP_CPU_VARIANT=skylakex ;;
            *avx2*) LLAMACPP_CPU_VARIANT=haswell ;;
            *) LLAMACPP_CPU_VARIANT=x64 ;;
        esac
    fi
    export LLAMACPP_CPU_VARIANT
    llamacpp_fetch_tools
    echo "llama.cpp: Debian package $(gzip -dc "$deb"/root/usr/share/doc/llama.cpp-tools/changelog.Debian.gz 2>/dev/null | head -1 | cut -d' ' -f2 | tr -d '()'), CPU backend $LLAMACPP_CPU_VARIANT"
}
