#!/bin/sh
# slurm_build.sh: build a pack on a Slurm cluster, one array task per shard
# (`iq3pack build --shard K/N`), then a merge job that waits for all of them
# (`iq3pack merge`): the pack is the bytes one `iq3pack build` writes.
#
#   sh convert/cluster/slurm_build.sh SRC.gguf -o PACKDIR -n N [--imatrix IMAT] [--grams DIR]
#        [--rotate hadamard[:B]] [--experts iq3|keep] [--work DIR] [--threads T] [--hold] [--wait]
#        [--pull REPO [--local DIR]]
#
# The shards go to DIR/0 .. DIR/N-1 (default PACKDIR.shards, on storage
# every node sees, as SRC must be). With --pull REPO, SRC is a file of that
# Hugging Face repository instead: each node downloads it once into its own
# --local DIR (default /tmp/strata-source; `strata pull`: resumed, sha256
# verified; the tasks of one node take turns) and builds from there.
# Run again after a failure: only the shards not yet built are submitted (a
# finished shard has its shard.json; a failed task leaves nothing but a
# *.partial.* folder, removed first), then the merge. --hold submits the array held (`scontrol release JOB`
# starts it); --wait returns when the merge job ends, with its exit status.
# Slurm's own variables choose the rest (SBATCH_PARTITION, SBATCH_ACCOUNT,
# SBATCH_TIMELIMIT...); each task asks for --threads CPUs (default 8).
set -eu
usage() { sed -n '6,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
src="" out="" n="" imatrix="" grams="" rotate="" experts="iq3" work="" threads=8 hold="" wait=0 repo="" local=/tmp/strata-source
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=${2:?-o needs a directory}; shift 2 ;;
        -n) n=${2:?-n needs a shard count}; shift 2 ;;
        --imatrix) imatrix=${2:?--imatrix needs a file}; shift 2 ;;
        --grams) grams=${2:?--grams needs a folder}; shift 2 ;;
        --rotate) rotate=${2:?--rotate needs hadamard or hadamard:B}; shift 2 ;;
        --experts) experts=${2:?--experts needs iq3 or keep}; shift 2 ;;
        --work) work=${2:?--work needs a directory}; shift 2 ;;
        --threads) threads=${2:?--threads needs a count}; shift 2 ;;
        --hold) hold=--hold; shift ;;
        --wait) wait=1; shift ;;
        --pull) repo=${2:?--pull needs a repository}; shift 2 ;;
        --local) local=${2:?--local needs a directory}; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "slurm_build.sh: unknown option $1" >&2; usage ;;
        *) [ -z "$src" ] || { echo "slurm_build.sh: one source only ($1)" >&2; exit 2; }; src=$1; shift ;;
    esac
done
[ -n "$src" ] && [ -n "$out" ] && [ -n "$n" ] || usage
case $n in ''|*[!0-9]*) echo "slurm_build.sh: -n takes a shard count, not '$n'" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "slurm_build.sh: -n takes 1 or more" >&2; exit 2; }
command -v sbatch >/dev/null 2>&1 || { echo "slurm_build.sh: sbatch not found (is this a Slurm login node?)" >&2; exit 1; }
[ -n "$repo" ] || [ -f "$src" ] || { echo "slurm_build.sh: $src: no such file" >&2; exit 1; }
[ ! -e "$out" ] || { echo "slurm_build.sh: $out already exists; a pack is never overwritten" >&2; exit 1; }
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
here=$(cd "$(dirname "$0")" && pwd)
iq3pack=$(command -v iq3pack 2>/dev/null || true)
[ -x "$here/../../bin/iq3pack" ] && iq3pack=$(abs "$here/../../bin/iq3pack")
[ -n "$iq3pack" ] || { echo "slurm_build.sh: iq3pack not found (make, or put it on PATH)" >&2; exit 1; }
strata=$(command -v strata 2>/dev/null || true)
[ -x "$here/../../bin/strata" ] && strata=$(abs "$here/../../bin/strata")
fetch=""
if [ -n "$repo" ]; then
    [ -n "$strata" ] || { echo "slurm_build.sh: --pull needs strata (make, or put it on PATH)" >&2; exit 1; }
    command -v flock >/dev/null 2>&1 || { echo "slurm_build.sh: --pull needs flock (util-linux)" >&2; exit 1; }
    case $local in /*) ;; *) echo "slurm_build.sh: --local takes an absolute path" >&2; exit 1 ;; esac
    # one download a node: the tasks of a node wait on its lock, the later ones find the file verified
    fetch="mkdir -p '$local' && flock '$local/.pull.lock' '$strata' pull '$repo' '$src' -o '$local' && "
    src=$local/$src
else
    src=$(abs "$src")
fi
out=$(abs "$out")
work=$(abs "${work:-$out.shards}")
mkdir -p "$work"
flags="--experts $experts"
[ -z "$imatrix" ] || flags="$flags --imatrix $(abs "$imatrix")"
[ -z "$grams" ] || flags="$flags --grams $(abs "$grams")"
case $rotate in ''|hadamard|hadamard:[0-9]*) ;; *) echo "slurm_build.sh: --rotate takes hadamard or hadamard:B" >&2; exit 2 ;; esac
case $rotate in *:*[!0-9]*) echo "slurm_build.sh: --rotate takes hadamard or hadamard:B" >&2; exit 2 ;; esac
[ -z "$rotate" ] || flags="$flags --rotate $rotate"
todo=""
k=0
while [ "$k" -lt "$n" ]; do
    if [ ! -f "$work/$k/shard.json" ]; then
        rm -rf "$work/$k" "$work/$k".partial.*
        todo="$todo${todo:+,}$k"
    fi
    k=$((k + 1))
done
dep=""
if [ -n "$todo" ]; then
    jid=$(sbatch --parsable $hold --job-name=iq3pack-shards --array="$todo" --cpus-per-task="$threads" \
        --output="$work/shard-%a.log" \
        --wrap="$fetch exec '$iq3pack' build '$src' $flags --threads $threads --shard \$SLURM_ARRAY_TASK_ID/$n -o '$work/'\$SLURM_ARRAY_TASK_ID")
    jid=${jid%%;*}
    echo "slurm_build.sh: shards $todo of $n submitted as job $jid (logs $work/shard-K.log)"
    dep="--dependency=afterok:$jid --kill-on-invalid-dep=yes"
else
    echo "slurm_build.sh: all $n shards are built already"
fi
shards=""
k=0
while [ "$k" -lt "$n" ]; do shards="$shards '$work/$k'"; k=$((k + 1)); done
w=""
[ "$wait" -eq 0 ] || w=--wait
mid=$(sbatch --parsable $w $dep --job-name=iq3pack-merge --output="$work/merge.log" \
    --wrap="exec '$iq3pack' merge $shards -o '$out'") && rc=0 || rc=$?
mid=${mid%%;*}
echo "slurm_build.sh: merge submitted as job $mid (log $work/merge.log); when a shard fails, it is cancelled: run this command again"
exit $rc
