#!/bin/sh
# k8s_build.sh: the Kubernetes manifest of a pack built in shards: an Indexed
# Job of N pods (`iq3pack build --shard K/N`, K = JOB_COMPLETION_INDEX), and a
# merge Job that waits for them on the shared volume (`iq3pack merge`): the
# pack is the bytes one `iq3pack build` writes. It prints the manifest; the
# one command a user types is
#
#   sh convert/cluster/k8s_build.sh SRC.gguf -o PACKDIR -n N --claim PVC --image IMAGE
#        [--imatrix IMAT] [--grams DIR] [--rotate hadamard[:B]] [--experts iq3|keep] [--work DIR]
#        [--mount DIR] [--threads T]
#        [--parallel P] [--retries R] [--bin DIR] [--name NAME] [--deadline SECONDS]
#        [--pull REPO [--local DIR]] [--env NAME=VALUE]...   | kubectl create -f -
#
# Paths are as the pods see them: SRC, PACKDIR, IMAT and the DIRs on the claim PVC,
# mounted at --mount (default /data). IMAGE must hold iq3pack on its PATH (or
# in --bin DIR; strata and flock as well with --pull). The shards go to DIR/0
# .. DIR/N-1 (default PACKDIR.shards). A pod retries R times (default 1,
# backoffLimitPerIndex: Kubernetes 1.29 or later); the merge Job gives up, by
# name, on a shard whose tries are spent. Type the same command again after a
# failure: the pods of built shards stop at once, the rest build, and the newer
# merge Job takes over from any older one still waiting. With --pull REPO, SRC
# is a file of that Hugging Face repository: each node downloads it once into
# its own --local DIR (a hostPath, default /tmp/strata-source; `strata pull`:
# resumed, sha256 verified; the pods of one node take turns on a lock).
# --env NAME=VALUE adds to the pods' environment (HF_ENDPOINT for a mirror of
# the hub, say; a token belongs in a Secret, added to the manifest by hand).
set -eu
usage() { sed -n '8,12p' "$0" | sed 's/^# *//' >&2; exit 2; }
me=k8s_build.sh
src="" out="" n="" claim="" image="" imatrix="" grams="" rotate="" experts=iq3 work="" mount=/data threads=8 parallel=""
retries=1 bin="" name="" deadline=604800 repo="" local=/tmp/strata-source extra=""
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=${2:?-o needs a directory}; shift 2 ;;
        -n) n=${2:?-n needs a shard count}; shift 2 ;;
        --claim) claim=${2:?--claim needs a PersistentVolumeClaim}; shift 2 ;;
        --image) image=${2:?--image needs an image}; shift 2 ;;
        --imatrix) imatrix=${2:?--imatrix needs a file}; shift 2 ;;
        --grams) grams=${2:?--grams needs a folder}; shift 2 ;;
        --rotate) rotate=${2:?--rotate needs hadamard or hadamard:B}; shift 2 ;;
        --experts) experts=${2:?--experts needs iq3 or keep}; shift 2 ;;
        --work) work=${2:?--work needs a directory}; shift 2 ;;
        --mount) mount=${2:?--mount needs a directory}; shift 2 ;;
        --threads) threads=${2:?--threads needs a count}; shift 2 ;;
        --parallel) parallel=${2:?--parallel needs a count}; shift 2 ;;
        --retries) retries=${2:?--retries needs a count}; shift 2 ;;
        --bin) bin=${2:?--bin needs a directory}; shift 2 ;;
        --name) name=${2:?--name needs a name}; shift 2 ;;
        --deadline) deadline=${2:?--deadline needs seconds}; shift 2 ;;
        --pull) repo=${2:?--pull needs a repository}; shift 2 ;;
        --local) local=${2:?--local needs a directory}; shift 2 ;;
        --env) extra="$extra
${2:?--env needs NAME=VALUE}"; shift 2 ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "$me: unknown option $1" >&2; usage ;;
        *) [ -z "$src" ] || { echo "$me: one source only ($1)" >&2; exit 2; }; src=$1; shift ;;
    esac
done
[ -n "$src" ] && [ -n "$out" ] && [ -n "$n" ] || usage
[ -n "$claim" ] || { echo "$me: --claim names the PersistentVolumeClaim the pods share (source, shards, pack)" >&2; exit 2; }
[ -n "$image" ] || { echo "$me: --image names a container image with iq3pack on its PATH (or in --bin DIR)" >&2; exit 2; }
count() { # OPTION VALUE MIN
    case $2 in ''|*[!0-9]*) echo "$me: $1 takes a whole number, not '$2'" >&2; exit 2 ;; esac
    [ "$2" -ge "$3" ] || { echo "$me: $1 takes $3 or more, not $2" >&2; exit 2; }
}
count -n "$n" 1
count --threads "$threads" 1
count --retries "$retries" 0
count --deadline "$deadline" 1
parallel=${parallel:-$n}
count --parallel "$parallel" 1
[ "$parallel" -le "$n" ] || parallel=$n
case $experts in iq3|keep) ;; *) echo "$me: --experts takes iq3 or keep, not '$experts'" >&2; exit 2 ;; esac
# Every value goes into the manifest as a double-quoted YAML string and reaches
# the pods' scripts through the environment, never pasted into a command line.
plain() { # OPTION VALUE
    case $2 in
        *'"'*|*'\'*|*'$'*|*'`'*) echo "$me: $1 '$2': quotes, backslashes, \$ and \` are not taken" >&2; exit 2 ;;
    esac
    case $2 in *"
"*) echo "$me: $1: no line breaks" >&2; exit 2 ;; esac
}
for v in "-o=$out" "--claim=$claim" "--image=$image" "--imatrix=$imatrix" "--grams=$grams" "--rotate=$rotate" "--work=$work" "--mount=$mount" \
    "--bin=$bin" "--pull=$repo" "--local=$local" "SRC=$src"; do
    plain "${v%%=*}" "${v#*=}"
done
env_extra=""
ifs=$IFS
IFS='
'
for e in $extra; do
    plain --env "$e"
    case ${e%%=*} in ''|*[!A-Za-z0-9_]*|[0-9]*|"$e") echo "$me: --env takes NAME=VALUE, not '$e'" >&2; exit 2 ;; esac
    env_extra="$env_extra
            - {name: ${e%%=*}, value: \"${e#*=}\"}"
done
IFS=$ifs
case $mount in /*) ;; *) echo "$me: --mount takes an absolute path" >&2; exit 2 ;; esac
mount=${mount%/}
[ -n "$mount" ] || { echo "$me: --mount cannot be /" >&2; exit 2; }
on_claim() { # OPTION PATH: a path on the shared volume, as the pods see it
    case $2 in "$mount"/?*) ;; *) echo "$me: $1 $2 is not on the shared volume (under --mount $mount)" >&2; exit 2 ;; esac
}
on_claim -o "$out"
work=${work:-$out.shards}
on_claim --work "$work"
[ -z "$imatrix" ] || on_claim --imatrix "$imatrix"
[ -z "$grams" ] || on_claim --grams "$grams"
if [ -n "$repo" ]; then
    case $src in */*|'') echo "$me: with --pull, SRC is a file name of the repository, not '$src'" >&2; exit 2 ;; esac
    case $local in /?*) ;; *) echo "$me: --local takes an absolute path" >&2; exit 2 ;; esac
else
    on_claim SRC "$src"
fi
[ -z "$bin" ] || case $bin in /*) ;; *) echo "$me: --bin takes an absolute path" >&2; exit 2 ;; esac
# Job names: DNS-1123 labels; Kubernetes adds 5 characters to a generateName
if [ -z "$name" ]; then
    name=$(basename "$out" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-' | sed 's/^-*//; s/-*$//' | cut -c1-40)
    name=${name:+$name-}build
fi
case $name in
    *[!a-z0-9-]*|-*|*-|'') echo "$me: --name takes lower-case letters, digits and inner '-', not '$name'" >&2; exit 2 ;;
esac
[ ${#name} -le 48 ] || { echo "$me: --name is longer than 48 characters" >&2; exit 2; }
# one token a run: the merge Job of the newest run is the one that merges
run=$(date +%s)-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')

env_block() { # the values both Jobs' pods read
    cat <<EOF
            - {name: SRC, value: "$src"}
            - {name: PACK, value: "$out"}
            - {name: WORK, value: "$work"}
            - {name: SHARDS, value: "$n"}
            - {name: IMATRIX, value: "$imatrix"}
            - {name: GRAMS, value: "$grams"}
            - {name: ROTATE, value: "$rotate"}
            - {name: EXPERTS, value: "$experts"}
            - {name: THREADS, value: "$threads"}
            - {name: RETRIES, value: "$retries"}
            - {name: PULL_REPO, value: "$repo"}
            - {name: PULL_LOCAL, value: "$local"}
            - {name: STRATA_BIN, value: "$bin"}
            - {name: RUN, value: "$run"}$env_extra
EOF
}
volumes() { # the container's mounts
    cat <<EOF
          volumeMounts:
            - {name: data, mountPath: "$mount"}
EOF
    [ -z "$repo" ] || echo "            - {name: source, mountPath: \"$local\"}"
}
pod_volumes() {
    cat <<EOF
      volumes:
        - name: data
          persistentVolumeClaim: {claimName: "$claim"}
EOF
    [ -z "$repo" ] || cat <<EOF
        - name: source
          hostPath: {path: "$local", type: DirectoryOrCreate}
EOF
}

cat <<EOF
# A pack built in $n shards by convert/cluster/k8s_build.sh; create it with
#   kubectl create -f THIS-FILE
# Watch: kubectl get jobs,pods -l strata.build=$name
# The pack: $out (on claim $claim), when the merge Job completes.
apiVersion: batch/v1
kind: Job
metadata:
  generateName: $name-shards-
  labels: {strata.build: $name, strata.part: shards}
spec:
  completionMode: Indexed
  completions: $n
  parallelism: $parallel
  backoffLimitPerIndex: $retries
  template:
    metadata:
      labels: {strata.build: $name, strata.part: shards}
    spec:
      restartPolicy: Never
      containers:
        - name: shard
          image: "$image"
          command: ["sh", "-c"]
          args:
            - |
              # shard K of SHARDS: nothing to do when a run before built it
              K=\$JOB_COMPLETION_INDEX
              if [ -f "\$WORK/\$K/shard.json" ]; then echo "shard \$K of \$SHARDS: built already"; exit 0; fi
              mkdir -p "\$WORK" || exit 1
              failed() { echo "\$1" >>"\$WORK/\$K.failed.\$RUN"; exit "\$1"; }
              src=\$SRC
              if [ -n "\$PULL_REPO" ]; then
                flock "\$PULL_LOCAL/.pull.lock" "\${STRATA_BIN:+\$STRATA_BIN/}strata" pull "\$PULL_REPO" "\$SRC" \\
                  -o "\$PULL_LOCAL" || failed \$?
                src=\$PULL_LOCAL/\$SRC
              fi
              set -- build "\$src" --experts "\$EXPERTS" --threads "\$THREADS" --shard "\$K/\$SHARDS" -o "\$WORK/\$K"
              [ -z "\$IMATRIX" ] || set -- "\$@" --imatrix "\$IMATRIX"
              [ -z "\$GRAMS" ] || set -- "\$@" --grams "\$GRAMS"
              [ -z "\$ROTATE" ] || set -- "\$@" --rotate "\$ROTATE"
              # a background child, so that the pod's SIGTERM reaches it and it removes its partial folder
              "\${STRATA_BIN:+\$STRATA_BIN/}iq3pack" "\$@" &
              pid=\$!
              trap 'kill -TERM \$pid 2>/dev/null' TERM INT
              wait \$pid; rc=\$?
              if kill -0 \$pid 2>/dev/null; then wait \$pid; rc=\$?; fi
              # a failed try leaves a line the merge Job counts (an evicted pod leaves none: its deadline)
              [ \$rc -eq 0 ] || failed \$rc
          env:
$(env_block)
          resources:
            requests: {cpu: "$threads"}
$(volumes)
$(pod_volumes)
---
apiVersion: batch/v1
kind: Job
metadata:
  generateName: $name-merge-
  labels: {strata.build: $name, strata.part: merge}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: $deadline
  template:
    metadata:
      labels: {strata.build: $name, strata.part: merge}
    spec:
      restartPolicy: Never
      containers:
        - name: merge
          image: "$image"
          command: ["sh", "-c"]
          args:
            - |
              # the newest run's merge Job merges; an older one still waiting stops
              mkdir -p "\$WORK" || exit 1
              echo "\$RUN" >"\$WORK/merge.run"
              last=0
              while :; do
                if [ "\$(cat "\$WORK/merge.run" 2>/dev/null)" != "\$RUN" ]; then
                  echo "a newer merge Job took over; this one stops"; exit 0
                fi
                missing="" spent=""
                k=0
                while [ \$k -lt \$SHARDS ]; do
                  if [ ! -f "\$WORK/\$k/shard.json" ]; then
                    missing="\$missing \$k"
                    f=\$WORK/\$k.failed.\$RUN
                    if [ -f "\$f" ] && [ "\$(wc -l <"\$f")" -gt "\$RETRIES" ]; then spent="\$spent \$k"; fi
                  fi
                  k=\$((k + 1))
                done
                [ -n "\$missing" ] || break
                if [ -n "\$spent" ]; then
                  echo "shard(s)\$spent of \$SHARDS failed \$((RETRIES + 1)) time(s): the pack is not merged." >&2
                  echo "See kubectl logs of their pods; the same k8s_build.sh command again builds only the missing shards." >&2
                  exit 1
                fi
                now=\$(date +%s)
                if [ \$((now - last)) -ge 60 ]; then echo "waiting for shard(s)\$missing of \$SHARDS"; last=\$now; fi
                sleep 5
              done
              set --
              k=0
              while [ \$k -lt \$SHARDS ]; do set -- "\$@" "\$WORK/\$k"; k=\$((k + 1)); done
              "\${STRATA_BIN:+\$STRATA_BIN/}iq3pack" merge "\$@" -o "\$PACK" || exit \$?
              # what killed tries left behind
              rm -rf "\$WORK"/*.partial.* "\$WORK"/*.failed.* "\$WORK/merge.run"
              echo "\$PACK: merged from \$SHARDS shards"
          env:
$(env_block)
          resources:
            requests: {cpu: "1"}
$(volumes)
$(pod_volumes)
EOF
