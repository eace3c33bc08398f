#!/bin/sh
# vs_llamacpp.sh: strata against llama.cpp on the same synthetic MoE, prefill
# and decode, side by side (a diagnostic; not run by CI: it downloads
# llama.cpp's packages and writes several GB).
#
#   sh tests/diag/vs_llamacpp.sh [-f "q8_0 q4_K iq3_xxs"] [-t "1 2"] [-r ROUNDS] [-i N] [-p N] [-n N] [-d DIR]
#                                [-k KERNELS]
#
# The models: tests/bench/bench_moe_floor.c writes a Mixtral-style MoE
# (10 layers, 8 experts of 2048 x 2048, top-2; 1.18 GB) in Q8_0;
# llama-imatrix measures an importance matrix for it on the shipped model's
# calibration text, and llama-quantize requantizes only its routed experts
# to each other form with that matrix (attention and the rest stay Q8_0).
# strata's packs keep the experts as they are (--experts keep), except the
# IQ3_XXS one, whose experts move losslessly into the IQ3 container
# (--experts iq3). Models and packs are made once and kept in DIR (default
# ~/.cache/strata/vs-llamacpp); delete it to start over.
#
# llama.cpp is Debian's 0.7.0 (its packages unpacked under
# ~/.cache/strata/llamacpp-deb, nothing installed; tests/diag/diag_llamacpp_env.sh),
# with the CPU backend for this CPU (LLAMACPP_CPU_VARIANT overrides it:
# zen4, skylakex, haswell, ...; -k KERNELS runs strata on that kernel table,
# `strata bench --cpu-kernels KERNELS`: with LLAMACPP_CPU_VARIANT=haswell and
# -k avx2 both run what an AVX2-only CPU would). Each round runs, for every form and thread
# count, `strata bench -r 1` and `llama-bench -r 1` with the same -p and -n,
# alternating which goes first; the medians over the rounds and their
# ratio (strata / llama.cpp) are printed with every raw figure. Both
# decode after -p tokens (llama-bench's tg at depth -p, as strata bench
# decodes after its prompt). A second table gives the memory read bandwidth
# strata bench measured right after each of its decode runs, that decode
# as a fraction of the floor the bandwidth sets and 1.2 x llama.cpp's decode
# of the same round as a fraction of it (above 1: out of reach of any
# program at that bandwidth); a third the ratios within
# each round (the two programs ran back to back): median, lowest, highest.
# With -i N (N > 1) each run repeats its test N times (strata bench -r N,
# llama-bench -r N): a run's figure is the median of its N, and a fourth
# table gives each program's decode spread within its runs, the run-to-run
# spread of one program on nearly the same machine. After each form of each
# round tests/diag/host_steadiness.c times the machine itself the same way (three
# windows of reading memory on one and on two threads, three of arithmetic):
# the last table says how steady memory-bound work could be while the two
# programs ran, whatever the program.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
forms="q8_0 q4_K iq3_xxs"
threads="1 2"
rounds=3
inner=1
np=128
ng=32
kernels=
dir=${STRATA_VS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/vs-llamacpp}
while [ $# -gt 0 ]; do
    case $1 in
        -f) forms=$2; shift 2 ;;
        -t) threads=$2; shift 2 ;;
        -r) rounds=$2; shift 2 ;;
        -i) inner=$2; shift 2 ;;
        -p) np=$2; shift 2 ;;
        -n) ng=$2; shift 2 ;;
        -d) dir=$2; shift 2 ;;
        -k) kernels=$2; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "vs_llamacpp.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case $rounds in ''|*[!0-9]*|0) echo "vs_llamacpp.sh: -r needs a positive count, not '$rounds'" >&2; exit 2 ;; esac
case $inner in ''|*[!0-9]*|0) echo "vs_llamacpp.sh: -i needs a positive count, not '$inner'" >&2; exit 2 ;; esac

# shellcheck source=tests/diag/diag_llamacpp_env.sh
. "$here/tests/diag/diag_llamacpp_env.sh"
llamacpp_fetch_tools_native

(cd "$here" && make -s bin/strata bin/iq3pack build/cc/bench/bench_moe_floor >/dev/null)
# the machine's own probe builds (it is built again for each sample, a second's work)
sh "$here/tests/diag/host_steadiness.sh" --help >/dev/null
if [ -n "$kernels" ] && ! "$here/bin/strata" --version | grep "^CPU kernels: " | tr -d , | tr ' ' '\n' | grep -qxF "$kernels"; then
    echo "vs_llamacpp.sh: -k $kernels: not a kernel table this CPU runs ($("$here/bin/strata" --version | sed -n 's/^CPU kernels: //p'))" >&2
    exit 2
fi
mkdir -p "$dir"
trap 'rm -f "$dir"/*.part "$dir"/*.part.gguf' EXIT # an interrupted step leaves no half file
q8="$dir/q8_0.gguf"
if [ ! -f "$q8" ]; then
    echo "writing the Q8_0 model (1.18 GB) ..."
    STRATA_MOE_FLOOR_GGUF="$q8.part" "$here/build/cc/bench/bench_moe_floor" >/dev/null
    mv "$q8.part" "$q8"
fi
imat="$dir/imatrix.gguf"
if [ ! -f "$imat" ]; then
    echo "measuring its importance matrix ..."
    head -c 60000 "$here/models/tiny-moe/calib.txt" > "$dir/calib.txt"
    llamacpp_tool llama-imatrix -m "$q8" -f "$dir/calib.txt" -o "$imat.part.gguf" -c 256 --chunks 8 >/dev/null 2>&1
    mv "$imat.part.gguf" "$imat"
fi
for f in $forms; do
    g="$dir/$f.gguf" # q8_0's is the model itself
    if [ ! -f "$g" ]; then
        echo "requantizing the experts to $f ..."
        llamacpp_tool llama-quantize --allow-requantize --imatrix "$imat" --tensor-type "ffn_gate_exps=$f" \
            --tensor-type "ffn_up_exps=$f" --tensor-type "ffn_down_exps=$f" "$q8" "$g.part" Q8_0 >/dev/null 2>&1
        mv "$g.part" "$g"
    fi
    if [ ! -d "$dir/pack-$f" ]; then
        mode=keep
        case $f in iq3_xxs) mode=iq3 ;; esac
        echo "building the $f pack (--experts $mode) ..."
        "$here/bin/iq3pack" build "$dir/$f.gguf" -o "$dir/pack-$f" --experts $mode >/dev/null
    fi
done

# The statistics of every awk below: sortmed(a, m) sorts a[1..m]
# in place, sets lo and hi and returns the median; spread() is (hi - lo)
# over that median, in per cent.
awk_stats='
    function sortmed(a, m,   i, j, t) {
        for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        lo = a[1]; hi = a[m]
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    function spread(x) { return x > 0 ? 100 * (hi - lo) / x : 0 }'
# strata bench prints "prefill N tokens: X tokens/s ...", "decode ...", then
# the memory read bandwidth it measures right after its decode and the decode
# as a fraction of the floor that bandwidth sets; one run (of -i repetitions)
# a round. Its context is -p + -n, as llama-bench sizes its own (the model
# says 256 tokens, which a -p 2048 run would otherwise be cut to).
strata_one() { # FORM THREADS -> "prefill decode bandwidth floor decode-spread"
    "$here/bin/strata" bench "$dir/pack-$1" -t "$2" -p "$np" -n "$ng" -c $((np + ng)) -r "$inner" \
        ${kernels:+--cpu-kernels "$kernels"} 2>/dev/null |
        awk '/^(prefill|decode) / { match($0, /tokens: [0-9.]+/); v = substr($0, RSTART + 8, RLENGTH - 8) }
             /^prefill / { p = v }
             /^decode / { d = v; if (match($0, /spread [0-9.]+ %/)) s = substr($0, RSTART + 7, RLENGTH - 9) }
             /^memory read bandwidth/ { match($0, /: [0-9.]+ GB\/s/); b = substr($0, RSTART + 2, RLENGTH - 7) }
             /^bandwidth floor/ { match($0, /is [0-9.]+ of it/); f = substr($0, RSTART + 3, RLENGTH - 9) }
             END { print p, d, (b == "" ? "-" : b), (f == "" ? "-" : f), (s == "" ? "-" : s) }'
}
# llama-bench -o jsonl: each test's samples_ts, the tokens/s of each of its
# -r repetitions; their median, and their spread as strata bench gives it.
# Its tg test starts from an empty context unless -d gives a depth, and
# strata bench decodes after its -p prompt: so the prefill from an empty
# context, the decode at depth -p.
llama_ts() { # FORM THREADS llama-bench-arguments... -> "tokens/s spread"
    f=$1 t=$2
    shift 2
    llamacpp_tool llama-bench -m "$dir/$f.gguf" -t "$t" -r "$inner" -o jsonl "$@" 2>/dev/null |
        awk "$awk_stats"'
            match($0, /"samples_ts": *\[[^]]*\]/) {
                v = substr($0, RSTART, RLENGTH); sub(/^[^[]*\[/, "", v); sub(/\]$/, "", v)
                m = split(v, a, /[ ,]+/); k = 0
                for (i = 1; i <= m; i++) if (a[i] != "") b[++k] = a[i] + 0
                if (k) { x = sortmed(b, k); print x, (k > 1 ? sprintf("%.1f", spread(x)) : "-") }
            }'
}
llama_one() { # FORM THREADS -> "prefill decode - - decode-spread"
    pre=$(llama_ts "$1" "$2" -p "$np" -n 0)
    dec=$(llama_ts "$1" "$2" -p 0 -n "$ng" -d "$np")
    echo "${pre% *} ${dec% *} - - ${dec#* }"
}

raw="$dir/raw.tsv" host="$dir/host.tsv"
printf 'round\tform\tthreads\tprogram\tprefill\tdecode\tbandwidth\tfloor\tdspread\n' > "$raw"
printf 'round\tkind\tmedian\tunit\tspread\n' > "$host"
r=1
while [ "$r" -le "$rounds" ]; do
    for f in $forms; do
        for t in $threads; do
            if [ $((r % 2)) -eq 1 ]; then order="strata llama"; else order="llama strata"; fi
            for prog in $order; do
                res=$(${prog}_one "$f" "$t")
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$f" "$t" "$prog" $res >> "$raw"
            done
        done
        sh "$here/tests/diag/host_steadiness.sh" -b 1 -w 1.5 | awk -F'\t' -v r="$r" 'NR > 1 && NF == 5 { print r "\t" $2 "\t" $3 "\t" $4 "\t" $5 }' >> "$host"
    done
    echo "round $r of $rounds done"
    r=$((r + 1))
done

echo
echo "raw figures (tokens/s), $raw:"
column -t "$raw"
echo
echo "medians of $rounds alternating rounds (-p $np -n $ng), spread = (max - min) / median:"
awk -F'\t' "$awk_stats"'
    NR > 1 { k = $2 "\t" $3; key[k] = 1; n[k, $4]++; P[k, $4, n[k, $4]] = $5; D[k, $4, n[k, $4]] = $6 }
    function med(A, k, p, m,   i, a) { for (i = 1; i <= m; i++) a[i] = A[k, p, i] + 0; return sortmed(a, m) }
    function spr(A, k, p, m) { return spread(med(A, k, p, m)) }
    END {
        printf "%-8s %-7s | %-22s %-22s %-6s | %-22s %-22s %-6s\n", "experts", "threads", "prefill strata", "llama.cpp", "ratio", "decode strata", "llama.cpp", "ratio"
        for (k in key) {
            split(k, kk, "\t"); m = n[k, "strata"]; ml = n[k, "llama"]
            ps = med(P, k, "strata", m); pss = spr(P, k, "strata", m); pl = med(P, k, "llama", ml); pls = spr(P, k, "llama", ml)
            ds = med(D, k, "strata", m); dss = spr(D, k, "strata", m); dl = med(D, k, "llama", ml); dls = spr(D, k, "llama", ml)
            printf "%-8s %-7s | %8.1f (%4.1f %%)      %8.1f (%4.1f %%)      %5.2fx | %8.1f (%4.1f %%)      %8.1f (%4.1f %%)      %5.2fx\n",
                kk[1], kk[2], ps, pss, pl, pls, (pl > 0 ? ps / pl : 0), ds, dss, dl, dls, (dl > 0 ? ds / dl : 0)
        }
    }' "$raw" | sort
# A decode near its bandwidth floor moves with the memory bandwidth the
# machine gives it at that moment (on a shared host that moves by tens of
# per cent within seconds), one further from its floor moves less: the
# fraction of the floor says whether the program or the machine moved.
# The last column puts a decode of 1.2 x llama.cpp's (from the same round)
# against that floor: above 1, no program reading the same bytes could have
# reached it at the bandwidth the machine gave at that moment (llama.cpp's
# files hold the same bytes per weight as strata's packs, within 3 %).
echo
echo "memory read bandwidth measured by strata bench right after each of its decode runs, that decode as a"
echo "fraction of the floor the bandwidth sets (medians, spread as above), and 1.2 x llama.cpp's decode of"
echo "the same round as a fraction of that floor (median; rounds where it was above the floor):"
awk -F'\t' "$awk_stats"'
    NR > 1 && $4 == "strata" && $7 != "-" { k = $2 "\t" $3; key[k] = 1; n[k]++; B[k, n[k]] = $7; F[k, n[k]] = $8
                                            SD[k, $1] = $6; SF[k, $1] = $8; if ($1 + 0 > R) R = $1 + 0 }
    NR > 1 && $4 == "llama" { LD[$2 "\t" $3, $1] = $6 }
    function med(A, k, m,   i, a) { for (i = 1; i <= m; i++) a[i] = A[k, i] + 0; return sortmed(a, m) }
    function spr(A, k, m) { return spread(med(A, k, m)) }
    function need(k,   i, a, m, over) {
        m = 0; over = 0
        for (i = 1; i <= R; i++)
            if (SF[k, i] + 0 > 0 && SD[k, i] + 0 > 0 && LD[k, i] + 0 > 0) {
                a[++m] = 1.2 * LD[k, i] / (SD[k, i] / SF[k, i]); if (a[m] > 1) over++
            }
        return m ? sprintf("%5.2f (%d of %d above)", sortmed(a, m), over, m) : "-"
    }
    END {
        printf "%-8s %-7s | %-22s | %-22s | %s\n", "experts", "threads", "bandwidth GB/s", "strata decode / floor", "1.2 x llama.cpp / floor"
        for (k in key) {
            split(k, kk, "\t")
            b = med(B, k, n[k]); bs = spr(B, k, n[k]); f = med(F, k, n[k]); fs = spr(F, k, n[k])
            printf "%-8s %-7s | %8.2f (%4.1f %%)      | %8.3f (%4.1f %%)      | %s\n", kk[1], kk[2], b, bs, f, fs, need(k)
        }
    }' "$raw" | sort
# The two programs of a round run back to back, so the ratio within a round
# compares them under nearly the same machine; the ratio of the medians above
# may pair a fast phase of one with a slow phase of the other. Both are
# printed: the per-round ratios' median, and their lowest and highest.
echo
echo "strata / llama.cpp within each round (the two ran back to back): median, lowest, highest:"
awk -F'\t' "$awk_stats"'
    NR > 1 { k = $2 "\t" $3; key[k] = 1; P[k, $1, $4] = $5; D[k, $1, $4] = $6; if ($1 + 0 > R) R = $1 + 0 }
    function stat(A, k,   i, a, m, x) {
        m = 0
        for (i = 1; i <= R; i++)
            if (A[k, i, "llama"] > 0 && A[k, i, "strata"] != "") a[++m] = A[k, i, "strata"] / A[k, i, "llama"]
        if (m == 0) return "-"
        x = sortmed(a, m)
        return sprintf("%5.2fx (%4.2f-%4.2f)", x, lo, hi)
    }
    END {
        printf "%-8s %-7s | %-22s | %-22s\n", "experts", "threads", "prefill", "decode"
        for (k in key) { split(k, kk, "\t"); printf "%-8s %-7s | %-22s | %-22s\n", kk[1], kk[2], stat(P, k), stat(D, k) }
    }' "$raw" | sort
# The spread within one run: the N repetitions of one program follow each
# other within a few seconds, so this says how steady the program is on
# nearly the same machine, which the spread across rounds (minutes apart,
# the machine's phases between them) cannot.
if [ "$inner" -gt 1 ]; then
echo
echo "decode spread within each run of $inner repetitions, (max - min) / median: median over the rounds and"
echo "highest; and in how many of the rounds where llama.cpp's run stayed within 10 % strata's did too:"
awk -F'\t' "$awk_stats"'
    NR > 1 && $9 != "-" { k = $2 "\t" $3; key[k] = 1; S[k, $1, $4] = $9; n[k, $4]++; V[k, $4, n[k, $4]] = $9; if ($1 + 0 > R) R = $1 + 0 }
    function stat(k, p,   i, a, m, x) {
        m = n[k, p]
        if (m == 0) return "-"
        for (i = 1; i <= m; i++) a[i] = V[k, p, i] + 0
        x = sortmed(a, m)
        return sprintf("%4.1f %% (%4.1f %%)", x, hi)
    }
    END {
        printf "%-8s %-7s | %-18s | %-18s | %s\n", "experts", "threads", "strata", "llama.cpp", "strata <= 10 % where llama.cpp was"
        for (k in key) {
            split(k, kk, "\t"); q = 0; ok = 0
            for (i = 1; i <= R; i++)
                if (S[k, i, "llama"] != "" && S[k, i, "strata"] != "" && S[k, i, "llama"] + 0 <= 10) { q++; if (S[k, i, "strata"] + 0 <= 10) ok++ }
            printf "%-8s %-7s | %-18s | %-18s | %d of %d\n", kk[1], kk[2], stat(k, "strata"), stat(k, "llama"), ok, q
        }
    }' "$raw" | sort
fi
# The machine alone, after each form of each round: a program's decode near its bandwidth
# floor can be no steadier than the reads here, while arithmetic (what holds
# a decode far from its floor) stays steady on the same machine.
echo
echo "the machine itself after each form of each round (tests/diag/host_steadiness.c): spread of three 1.5 s"
echo "windows one after another, (max - min) / median: median over the times, highest, times over 10 %; median rate:"
awk -F'\t' "$awk_stats"'
    NR > 1 { k = $2; key[k] = 1; n[k]++; S[k, n[k]] = $5; M[k, n[k]] = $3; U[k] = $4 }
    function med(A, k, m,   i, a) { for (i = 1; i <= m; i++) a[i] = A[k, i] + 0; return sortmed(a, m) }
    END {
        printf "%-24s | %-8s %-8s %-7s | %s\n", "kind", "median", "highest", "over", "rate"
        for (k in key) {
            over = 0
            for (i = 1; i <= n[k]; i++) over += S[k, i] + 0 > 10
            s = med(S, k, n[k]); h = hi
            printf "%-24s | %4.1f %%   %4.1f %%   %d of %d  | %.2f %s\n", k, s, h, over, n[k], med(M, k, n[k]), U[k]
        }
    }' "$host" | sort
