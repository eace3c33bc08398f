#!/bin/sh
# tier_vs_llamacpp.sh: strata's RAM tier against llama.cpp when the model does
# not fit in memory: decode and prefill of the same MoE under the same memory
# limit (a diagnostic; not run by CI: it downloads llama.cpp's packages and
# writes about 5 GB).
#
#   sh tests/diag/tier_vs_llamacpp.sh [-r REPS] [-k ROUNDS] [-l LIMIT] [-t THREADS] [-p N] [-n N] [-d DIR]
#
# The models: tests/bench/bench_moe_floor.c's Mixtral-style MoE (10 layers,
# 8 experts of 2048 x 2048, top-2; 1.18 GB in Q8_0) with two routers: its
# random one ("random": layers 0-3 use their experts about alike, the deeper
# ones favour a few on their own) and the same with STRATA_MOE_FLOOR_SKEW=1
# ("skewed": layers 0-3 about like Zipf too). For each, the GGUF and its
# strata pack (iq3pack build --experts keep: the experts stay Q8_0) are
# made once and kept in DIR (default ~/.cache/strata/tier-vs-llamacpp);
# delete it to start over.
#
# Each round (-k, default 1) gives each router one run of `strata bench
# PACK --mem LIMIT` and one of `llama-bench -m GGUF`, in alternating order,
# both with -t THREADS -r REPS -p N -n N (defaults 2, 3, 16, 32), LIMIT 40 %
# of the pack's size unless -l gives it (bytes, or K/M/G, binary). The disk
# sets the pace and its speed moves from minute to minute: rounds give
# medians over several cold starts. Run as root where the memory cgroup
# can be written, each program runs in a child cgroup with LIMIT as its
# memory limit (v1 memory.limit_in_bytes, or v2 memory.max), and the page
# cache is dropped before each run so that every program starts cold.
# Otherwise strata gets --mem alone and llama.cpp no limit at all, which
# the report says. Printed: every run's figures, the medians, strata /
# llama.cpp, strata's tier lines (hit rate, its floor) and each run's exit
# status: 137 is a kill (the OOM killer), which strata must never get.
# strata prints its tier floor only when it has room to sweep memory for
# its bandwidth; when it had none in the cgroup (the reason is printed),
# strata runs once more outside it with --mem alone for that floor,
# reported as such. Logs: DIR/logs; every figure: DIR/raw.tsv.
#
# llama.cpp is Debian's 0.7.0, unpacked as tests/diag/vs_llamacpp.sh does
# (tests/diag/diag_llamacpp_env.sh; LLAMACPP_CPU_VARIANT picks the backend).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
reps=3
rounds=1
threads=2
np=16
ng=32
limit_arg=
dir=${STRATA_TIER_VS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/tier-vs-llamacpp}
while [ $# -gt 0 ]; do
    case $1 in
        -r) reps=$2; shift 2 ;;
        -k) rounds=$2; shift 2 ;;
        -l) limit_arg=$2; shift 2 ;;
        -t) threads=$2; shift 2 ;;
        -p) np=$2; shift 2 ;;
        -n) ng=$2; shift 2 ;;
        -d) dir=$2; shift 2 ;;
        -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tier_vs_llamacpp.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for v in "$reps" "$rounds" "$threads" "$np" "$ng"; do
    case $v in ''|*[!0-9]*|0) echo "tier_vs_llamacpp.sh: -r, -k, -t, -p and -n need positive counts, not '$v'" >&2; exit 2 ;; esac
done
# "800M" -> bytes (binary units, as strata's --mem reads them); empty when it is no size
to_bytes() {
    echo "$1" | awk '/^[0-9]+(\.[0-9]+)?[KkMmGg]?(i?B)?$/ {
        v = $0 + 0; u = toupper(substr($0, match($0, /[KkMmGg]/), 1))
        if (RSTART) v *= (u == "K" ? 1024 : u == "M" ? 1048576 : 1073741824)
        printf "%.0f\n", v }'
}
if [ -n "$limit_arg" ]; then
    limit_given=$(to_bytes "$limit_arg")
    if [ -z "$limit_given" ] || [ "$limit_given" -le 0 ]; then
        echo "tier_vs_llamacpp.sh: -l takes a size like 480M or 503316480, not '$limit_arg'" >&2
        exit 2
    fi
fi

# shellcheck source=tests/diag/diag_llamacpp_env.sh
. "$here/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch_tools_native

(cd "$here" && make -s bin/strata bin/iq3pack build/cc/bench/bench_moe_floor >/dev/null)
mkdir -p "$dir/logs"
trap 'rm -rf "$dir"/*.part' EXIT # an interrupted step leaves no half-made model or pack
for router in random skewed; do
    g="$dir/$router.gguf"
    if [ ! -f "$g" ]; then
        echo "writing the $router-router Q8_0 model (1.18 GB) ..."
        skew=0
        [ "$router" = skewed ] && skew=1
        STRATA_MOE_FLOOR_SKEW=$skew STRATA_MOE_FLOOR_GGUF="$g.part" "$here/build/cc/bench/bench_moe_floor" >/dev/null
        mv "$g.part" "$g"
    fi
    if [ ! -d "$dir/pack-$router" ]; then
        echo "building its pack (--experts keep) ..."
        "$here/bin/iq3pack" build "$g" -o "$dir/pack-$router.part" --experts keep >/dev/null 2>&1
        mv "$dir/pack-$router.part" "$dir/pack-$router"
    fi
done

# ------------------------------------------------ the memory limit

# A memory cgroup this script may make children in: cg_base (empty: none)
# and cg_kind (v1 or v2); cg_why says why there is none.
cg_base=
cg_kind=
cg_why=
if [ "$(id -u)" != 0 ]; then
    cg_why="not root"
else
    v1_path=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
    v1_mnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
    v2_path=$(awk -F: '$1 == "0" && $2 == "" { print $3; exit }' /proc/self/cgroup)
    v2_mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
    if [ -n "$v1_path" ] && [ -n "$v1_mnt" ] && [ -w "$v1_mnt$v1_path/cgroup.procs" ]; then
        cg_base=${v1_mnt}${v1_path%/}
        cg_kind=v1
    elif [ -n "$v2_mnt" ] && [ -n "$v2_path" ] && grep -qw memory "$v2_mnt$v2_path/cgroup.controllers" 2>/dev/null; then
        cg_base=${v2_mnt}${v2_path%/}
        cg_kind=v2
        # a child's memory.max needs the controller handed down; a group
        # holding processes (other than the root) may refuse that
        if ! grep -qw memory "$cg_base/cgroup.subtree_control" &&
            ! echo +memory > "$cg_base/cgroup.subtree_control" 2>/dev/null; then
            cg_base=
            cg_why="$v2_mnt$v2_path does not hand the memory controller to child groups"
        fi
    else
        cg_why="no writable memory cgroup (v1 or v2)"
    fi
fi
drop_ok=0
[ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ] && drop_ok=1

# run_limited LIMIT LOG CMD...: CMD (a function may be one) with its output
# in LOG, inside a fresh cgroup limited to LIMIT bytes when there is one;
# sets run_rc, run_peak (MiB, or "-") and run_ooms. A subshell moves itself
# into the group (read is a builtin: /proc/self is the subshell) and runs
# CMD there, so nothing else is charged or limited.
run_limited() {
    lim=$1 log=$2
    shift 2
    run_peak=- run_ooms=-
    [ "$drop_ok" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
    if [ -z "$cg_base" ]; then
        set +e
        "$@" > "$log" 2>&1
        run_rc=$?
        set -e
        return 0
    fi
    grp="$cg_base/strata-tier-vs-$$"
    mkdir "$grp"
    if [ "$cg_kind" = v1 ]; then
        echo "$lim" > "$grp/memory.limit_in_bytes"
        # with swap, memsw bounds memory plus swap: the limit is then all of it
        if [ -f "$grp/memory.memsw.limit_in_bytes" ]; then echo "$lim" 2>/dev/null > "$grp/memory.memsw.limit_in_bytes" || true; fi
    else
        echo "$lim" > "$grp/memory.max"
        [ -f "$grp/memory.swap.max" ] && echo 0 > "$grp/memory.swap.max"
    fi
    set +e
    (
        read -r pid _ < /proc/self/stat && echo "$pid" > "$grp/cgroup.procs" || exit 125
        "$@"
    ) > "$log" 2>&1
    run_rc=$?
    set -e
    if [ "$cg_kind" = v1 ]; then
        run_peak=$(awk '{ printf "%.0f", $1 / 1048576 }' "$grp/memory.max_usage_in_bytes")
        run_ooms=$(awk '$1 == "oom_kill" { print $2 }' "$grp/memory.oom_control")
    else
        [ -f "$grp/memory.peak" ] && run_peak=$(awk '{ printf "%.0f", $1 / 1048576 }' "$grp/memory.peak")
        run_ooms=$(awk '$1 == "oom_kill" { print $2 }' "$grp/memory.events")
    fi
    [ -n "$run_ooms" ] || run_ooms=-
    # the group empties a moment after its last process exits
    i=0
    while ! rmdir "$grp" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 50 ] || { echo "tier_vs_llamacpp.sh: could not remove the cgroup $grp" >&2; break; }
        sleep 0.1
    done
    [ "$run_rc" != 125 ] || { echo "tier_vs_llamacpp.sh: could not move a process into $grp" >&2; exit 1; }
}

strata_run() { "$here/bin/strata" bench "$dir/pack-$1" --mem "$2" -t "$threads" -r "$reps" -p "$np" -n "$ng"; }
llama_run() { llamacpp_tool llama-bench -m "$dir/$1.gguf" -t "$threads" -r "$reps" -p "$np" -n "$ng" -o jsonl; }

# A log's figures, one tab-separated line: prefill median, its runs, decode
# median, its runs (runs space-separated), then strata's tier fields.
strata_figures() {
    awk '/^(prefill|decode) / {
             match($0, /tokens: [0-9.]+/); med = substr($0, RSTART + 8, RLENGTH - 8); runs = med
             if (match($0, /min [0-9.]+, max [0-9.]+/)) {
                 split(substr($0, RSTART, RLENGTH), w, /[ ,]+/); runs = w[2] " " med " " w[4]
             }
             if ($1 == "prefill") { pm = med; pr = runs } else { dm = med; dr = runs }
         }
         /^tier:/ { slots = $2 " of " $4 }
         /^tier decode:/ { hit = $5 }
         /^tier prefetch:/ { if (match($0, /\([0-9.]+ %\)/)) pf = substr($0, RSTART + 1, RLENGTH - 4) }
         /^disk read bandwidth/ { if (match($0, /: [0-9.]+ GB\/s/)) disk = substr($0, RSTART + 2, RLENGTH - 7) }
         /^tier floor:/ { fl = $3; if (match($0, /is [0-9.]+ of it/)) fr = substr($0, RSTART + 3, RLENGTH - 9) }
         END { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pm, pr, dm, dr, slots, hit, pf, disk, fl, fr }' "$1"
}
# llama-bench -o jsonl: one line for the prompt test, one for generation;
# every run's tokens/s is in samples_ts, the median computed here.
llama_figures() {
    awk 'function med(s,   a, n, i, j, t) {
             n = split(s, a, " ")
             for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
             return n == 0 ? "" : n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
         }
         /"samples_ts"/ {
             match($0, /"samples_ts": *\[[^]]*\]/); s = substr($0, RSTART, RLENGTH)
             sub(/.*\[ */, "", s); sub(/ *\]$/, "", s); n = split(s, v, /, */); s = ""
             for (i = 1; i <= n; i++) s = s (i > 1 ? " " : "") sprintf("%.2f", v[i])
             match($0, /"n_gen": *[0-9]+/); gen = substr($0, RSTART, RLENGTH); sub(/.*: */, "", gen)
             if (gen + 0 > 0) dr = s; else pr = s
         }
         END { printf "%s\t%s\t%s\t%s\n", med(pr), pr, med(dr), dr }' "$1" |
        awk -F'\t' -v OFS='\t' '{ if ($1 != "") $1 = sprintf("%.2f", $1); if ($3 != "") $3 = sprintf("%.2f", $3); print }'
}
# Why a strata log has no "tier floor" line: its "not measured" line.
strata_no_floor() {
    awk '/^memory read bandwidth: not measured/ {
             sub(/^memory read bandwidth: not measured: /, ""); w = $0
             if (w ~ /a sweep$/ && getline > 0) { sub(/^ +/, ""); w = w " " $0 }
             print w }' "$1"
}

echo
if [ -n "$cg_base" ]; then
    echo "memory limit: each program in its own $cg_kind memory cgroup under $cg_base"
else
    echo "memory limit: no cgroup ($cg_why): strata gets --mem alone, llama.cpp runs WITHOUT a memory limit"
fi
if [ "$drop_ok" = 1 ]; then echo "page cache: dropped before every run (both programs start cold)"
else echo "page cache: NOT dropped (not root): a run may find the model in the page cache"; fi

raw="$dir/raw.tsv"
printf 'round\trouter\tprogram\tlimit_bytes\texit\tpeak_mib\toom_kills\tprefill\tprefill_runs\tdecode\tdecode_runs\ttier_slots\thit_rate\tprefetch_used_pct\tdisk_gbs\ttier_floor\tfloor_fraction\n' > "$raw"
round=1
while [ "$round" -le "$rounds" ]; do
    n=0
    for router in random skewed; do
        pack_bytes=$(du -sb "$dir/pack-$router" | cut -f1)
        limit=${limit_given:-$((pack_bytes * 40 / 100))}
        echo "round $round of $rounds, $router router: pack $(awk -v b="$pack_bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'), limit $limit bytes ($(awk -v b="$limit" 'BEGIN { printf "%.1f MiB", b / 1048576 }'))"
        # the order alternates: neither program always goes first
        if [ $(((round + n) % 2)) -eq 1 ]; then order="strata llama"; else order="llama strata"; fi
        n=$((n + 1))
        for prog in $order; do
            log="$dir/logs/$round-$router-$prog.txt"
            echo "  $prog ..."
            run_limited "$limit" "$log" "${prog}_run" "$router" "$limit"
            if [ "$prog" = strata ]; then fig=$(strata_figures "$log"); else fig=$(llama_figures "$log"); fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$router" "$prog" "$limit" "$run_rc" "$run_peak" "$run_ooms" "$fig" >> "$raw"
            [ "$run_rc" = 0 ] || echo "  $prog exited with status $run_rc$([ "$run_rc" = 137 ] && echo ' (killed: SIGKILL, the OOM killer)'); its log: $log"
            # strata prints its tier floor only when it could sweep memory
            # for its bandwidth; inside the cgroup it may find no room left.
            # The floor then comes from a second run outside it, said as such.
            if [ "$prog" = strata ] && [ "$run_rc" = 0 ] && [ -n "$cg_base" ] &&
                [ -z "$(printf '%s\n' "$fig" | cut -f9)" ]; then
                echo "  strata printed no tier floor in the cgroup: $(strata_no_floor "$log")"
                echo "  strata again outside the cgroup (--mem alone), for its floor ..."
                saved=$cg_base
                cg_base=
                olog="$dir/logs/$round-$router-strata-outside.txt"
                run_limited "$limit" "$olog" strata_run "$router" "$limit"
                cg_base=$saved
                printf '%s\t%s\t%s\t%s\t%s\t-\t-\t%s\n' "$round" "$router" strata-outside "$limit" "$run_rc" \
                    "$(strata_figures "$olog")" >> "$raw"
            fi
        done
    done
    round=$((round + 1))
done

echo
echo "every run (tokens/s; strata's are its min, median and max, with -r 3 all its runs), $raw:"
awk -F'\t' 'NR > 1 { printf "  %s %-7s %-14s prefill %-20s decode %-20s exit %-3s %s\n", $1, $2, ($3 == "llama" ? "llama.cpp" : $3), $9, $11, $5,
                     ($6 == "-" ? "no cgroup" : "cgroup peak " $6 " MiB (page cache included), OOM kills " $7) }' "$raw"
# med: the median of the values gathered under a key (numbers, any count)
median_awk='function med(k,   n, i, j, t, a) {
        n = cnt[k]; if (!n) return ""
        for (i = 1; i <= n; i++) a[i] = val[k, i] + 0
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function add(k, v) { if (v != "") val[k, ++cnt[k]] = v }'
echo
echo "medians over $rounds round(s) of each run's median (-t $threads -r $reps -p $np -n $ng; tokens/s), in the limit:"
awk -F'\t' "$median_awk"'
    NR > 1 && $3 != "strata-outside" { add("p" SUBSEP $2 SUBSEP $3, $8); add("d" SUBSEP $2 SUBSEP $3, $10); if (!($2 in seen)) { seen[$2] = 1; name[++nr] = $2 } }
    function ratio(a, b) { return (a != "" && b + 0 > 0) ? sprintf("%.2fx", a / b) : "-" }
    END {
        printf "  %-7s | %-14s %-10s %-7s | %-14s %-10s %-7s\n", "router", "prefill strata", "llama.cpp", "ratio", "decode strata", "llama.cpp", "ratio"
        for (i = 1; i <= nr; i++) {
            r = name[i]
            ps = med("p" SUBSEP r SUBSEP "strata"); pl = med("p" SUBSEP r SUBSEP "llama")
            ds = med("d" SUBSEP r SUBSEP "strata"); dl = med("d" SUBSEP r SUBSEP "llama")
            printf "  %-7s | %-14s %-10s %-7s | %-14s %-10s %-7s\n", r, ps, pl, ratio(ps, pl), ds, dl, ratio(ds, dl)
        }
    }' "$raw"
echo
echo "strata's tier over its decode runs (medians over the rounds):"
awk -F'\t' "$median_awk"'
    NR > 1 && $3 ~ /^strata/ {
        k = $2 SUBSEP $3; slots[k] = $12
        add("hit" SUBSEP k, $13); add("pf" SUBSEP k, $14); add("disk" SUBSEP k, $15); add("fl" SUBSEP k, $16)
        add("fr" SUBSEP k, $17); add("dec" SUBSEP k, $10)
        if (!(k in seen)) { seen[k] = 1; name[++nr] = k }
    }
    END {
        for (i = 1; i <= nr; i++) {
            k = name[i]; split(k, w, SUBSEP)
            printf "  %-7s %-12s %s routed experts in memory, hit rate %s, prefetches used %s %%, disk %s GB/s, ", w[1],
                   (w[2] == "strata" ? "in the limit" : "outside it"), slots[k], med("hit" SUBSEP k), med("pf" SUBSEP k), med("disk" SUBSEP k)
            if (!cnt["fl" SUBSEP k]) printf "no tier floor printed\n"
            else printf "tier floor %s tokens/s, decode (%s tokens/s) %s of it\n", med("fl" SUBSEP k), med("dec" SUBSEP k), med("fr" SUBSEP k)
        }
    }' "$raw"
killed=$(awk -F'\t' 'NR > 1 && $3 ~ /^strata/ && $5 == 137 { k = k " round " $1 " " $2 } END { print k }' "$raw")
failed=$(awk -F'\t' 'NR > 1 && $5 != 0 { f = f " " $1 "/" $2 "/" $3 "(" $5 ")" } END { print f }' "$raw")
echo
if [ -n "$killed" ]; then echo "strata was KILLED (exit status 137):$killed"; else echo "strata was not killed (no exit status 137)"; fi
[ -z "$failed" ] || echo "runs that did not exit 0:$failed (logs in $dir/logs)"
[ -z "$killed" ]
