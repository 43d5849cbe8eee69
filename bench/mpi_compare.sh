#!/usr/bin/env bash
# bench/mpi_compare.sh - herd's mpi engine side by side with Open MPI's own
# MPI_Allreduce and with herd's tcp engine: float32 sum all_reduce, in
# place, sizes 8 B .. 64 MiB (x2), on 2 and 4 ranks on loopback, in one
# run; the median of REPEATS runs of each (the tools interleaved in every
# repeat), a table of times and ratios in Markdown on stdout.
#
#   bench/mpi_compare.sh [-B BUILD] [-r REPEATS] [-n "2 4"]
#
# Columns (time per call in µs, the slowest rank's, as nccl-tests -a 3):
#   MPI          an MPI benchmark loop of MPI_Allreduce (OSU's
#                osu_allreduce when it is on PATH, its average latency
#                column, a path not yet run here; Debian packages neither
#                the OSU micro-benchmarks nor Intel's IMB, so otherwise
#                bench/peers/mpi_allreduce.c, built here with mpicc: the
#                same loop, warm-up, barrier, mean per call, max over ranks)
#   herd mpi     `herd perf --engine mpi` (algorithm auto: MPI's own
#                MPI_Iallreduce behind herd's request layer)
#   herd mpi ring `herd perf --engine mpi --algo ring`: herd's ring
#                schedule over MPI point-to-point (core/sched_run.c)
#   herd tcp     `herd perf --engine tcp` under `herd launch` (auto)
# Open MPI runs with shared memory and tcp on loopback only (btl
# self,vader,tcp; lo). Sizes up to 1 MiB take ITERS_SMALL timed calls
# (default 200, 20 warm-up), larger ones ITERS_LARGE (default 5, 1).
# Run it at normal priority on a quiet machine; the load average is
# printed before each repeat.
set -euo pipefail

build=build repeats=3 nps="2 4"
iters_small=${ITERS_SMALL:-200} iters_large=${ITERS_LARGE:-5}
while getopts "B:r:n:h" opt; do
    case $opt in
    B) build=$OPTARG ;; r) repeats=$OPTARG ;; n) nps=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
herd=$build/cli/herd
[ -x "$herd" ] || { echo "mpi_compare: $herd not built" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "mpi_compare: needs mpirun (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The MPI benchmark program: OSU's when installed, else the peer loop.
peer=""
osu=$(command -v osu_allreduce || true)
if [ -z "$osu" ]; then
    command -v mpicc >/dev/null || { echo "mpi_compare: needs mpicc (libopenmpi-dev)" >&2; exit 1; }
    src=$(dirname "$0")/peers
    mpicc -O2 -std=c11 -D_GNU_SOURCE -I"$src" "$src/mpi_allreduce.c" -o "$tmp/mpi_allreduce"
    peer=$tmp/mpi_allreduce
fi
mpi_flags=(--oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo
           --mca oob_tcp_if_include lo --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" = 0 ] && mpi_flags=(--allow-run-as-root "${mpi_flags[@]}")
"$herd" perf --engine mpi --help >/dev/null 2>&1 ||
    { echo "mpi_compare: $herd has no mpi engine (build with libopenmpi-dev)" >&2; exit 1; }

# sweeps: "min max iters warmup"
sweeps=("8 1M $iters_small 20" "2M 64M $iters_large 1")

# Each tool prints "bytes time_us" lines into its file for (np, repeat).
run_peer() { # np min max iters warmup
    if [ -n "$osu" ]; then
        mpirun "${mpi_flags[@]}" -np "$1" "$osu" -m "$(numfmt --from=iec "$2"):$(numfmt --from=iec "$3")" \
            -i "$4" -x "$5" | awk '!/^#/ && NF >= 2 && $1 ~ /^[0-9]+$/ {print $1, $2}'
    else
        mpirun "${mpi_flags[@]}" -np "$1" "$peer" -b "$2" -e "$3" -n "$4" -w "$5" |
            awk '!/^#/ && $1 ~ /^[0-9]+$/ {print $1, $3}'
    fi
}
perf_cols() { awk '!/^#/ && $1 ~ /^[0-9]+$/ && NF >= 13 {print $1, $10}'; }
run_herd_mpi() { # np algo min max iters warmup
    mpirun "${mpi_flags[@]}" -np "$1" "$herd" perf --engine mpi --algo "$2" \
        -b "$3" -e "$4" -n "$5" -w "$6" -c 0 -a 3 | perf_cols
}
run_herd_tcp() { # np min max iters warmup
    "$herd" launch --standalone --quiet --nproc-per-node "$1" -- \
        "$herd" perf --engine tcp -b "$2" -e "$3" -n "$4" -w "$5" -c 0 -a 3 | perf_cols
}

tools=(mpi herd_mpi herd_mpi_ring herd_tcp)
for rep in $(seq 1 "$repeats"); do
    echo "# repeat $rep of $repeats, load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    for np in $nps; do
        for s in "${sweeps[@]}"; do
            set -- $s
            run_peer "$np" "$1" "$2" "$3" "$4" >>"$tmp/mpi.$np"
            run_herd_mpi "$np" auto "$1" "$2" "$3" "$4" >>"$tmp/herd_mpi.$np"
            run_herd_mpi "$np" ring "$1" "$2" "$3" "$4" >>"$tmp/herd_mpi_ring.$np"
            run_herd_tcp "$np" "$1" "$2" "$3" "$4" >>"$tmp/herd_tcp.$np"
        done
    done
done

# median per size of one tool's file
medians() { sort -k1,1n -k2,2g "$1" | awk '
    {v[$1] = v[$1] " " $2; n[$1]++}
    END {for (b in n) {k = split(substr(v[b], 2), a, " "); print b, a[int((k + 1) / 2)]}}' | sort -n; }

human() { numfmt --to=iec --suffix=B "$1" | sed 's/\.0//'; }
for np in $nps; do
    for t in "${tools[@]}"; do medians "$tmp/$t.$np" >"$tmp/$t.$np.med"; done
    echo
    echo "**$np ranks** (median of $repeats; time per call in µs, slowest rank)"
    echo
    echo "| size | MPI_Allreduce | herd mpi (auto) | herd mpi ring | herd tcp | mpi auto / MPI | mpi ring / MPI | tcp / MPI |"
    echo "|---|---|---|---|---|---|---|---|"
    awk 'FNR == 1 {f++} {v[$1, f] = $2; b[$1] = 1}
        END {for (x in b) if ((x, 1) in v && (x, 2) in v && (x, 3) in v && (x, 4) in v)
            print x, v[x, 1], v[x, 2], v[x, 3], v[x, 4]}' \
        "$tmp/mpi.$np.med" "$tmp/herd_mpi.$np.med" "$tmp/herd_mpi_ring.$np.med" \
        "$tmp/herd_tcp.$np.med" | sort -n | while read -r b m a r c; do
        printf '| %s | %s | %s | %s | %s | %s |\n' "$(human "$b")" "$m" "$a" "$r" "$c" \
            "$(awk -v m="$m" -v a="$a" -v r="$r" -v c="$c" \
                'BEGIN {printf "%.2f | %.2f | %.2f", a / m, r / m, c / m}')"
    done
done
echo
echo "MPI benchmark: ${osu:-bench/peers/mpi_allreduce.c (mpicc)}; $(mpirun --version 2>&1 | head -1)"
