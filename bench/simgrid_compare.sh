#!/usr/bin/env bash
# bench/simgrid_compare.sh - herd's simulator and SimGrid side by side on
# the same chunked ring all_reduce and the same cluster: predicted time of
# each, their relative difference, wall and user CPU time, the ratio
# SimGrid / herd, and peak RSS; the median of RUNS runs of each.
#
# herd runs `herd perf --algo ring -n 1 -w 0` (sim engine); SimGrid runs
# bench_peer_simgrid_ring (bench/peers/simgrid_ring.cpp, built when
# SimGrid is found; Debian: apt-get install libsimgrid-dev).
#
#   bench/simgrid_compare.sh [options] NODESxGPUS...      e.g. 1x8 8x8 64x8
# options:
#   -B DIR        build directory (default: build)
#   -r N          runs of each, median reported (default 3)
#   -t SECONDS    SimGrid time limit per run (default 180); over it the
#                 row says "timeout" and the remaining runs are skipped
#   -m MODES      SimGrid modes, comma separated (default fifo,herd):
#                 fifo   chunks of a connection one after the other; SimGrid
#                        latency (paid before the bytes move, every chunk)
#                 herd   same, links without latency; a chunk arrives its
#                        path latency after its last byte left (herd's rule)
#                 async  every chunk its own flow as soon as it is ready
#   -b BYTES      all_reduce size (default 1GiB)
#   -c CHANNELS   (default 16)      -k CHUNK   (default 2MiB)
#   -I GB/s,us    intra-node bandwidth and latency (default 370,1)
#   -X GB/s,us    NIC bandwidth and latency (default 50,4)
set -euo pipefail

build=build runs=3 limit=180 modes=fifo,herd
bytes=1GiB channels=16 chunk=2MiB intra=370,1 inter=50,4
while getopts "B:r:t:m:b:c:k:I:X:h" opt; do
    case $opt in
    B) build=$OPTARG ;; r) runs=$OPTARG ;; t) limit=$OPTARG ;;
    m) modes=$OPTARG ;; b) bytes=$OPTARG ;; c) channels=$OPTARG ;;
    k) chunk=$OPTARG ;; I) intra=$OPTARG ;; X) inter=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "simgrid_compare: give at least one NODESxGPUS (e.g. 8x8)" >&2; exit 2; }

herd_bin=$build/cli/herd
sg_bin=$build/bench/peers/bench_peer_simgrid_ring
for b in "$herd_bin" "$sg_bin"; do
    [ -x "$b" ] || { echo "simgrid_compare: $b not built (cmake --build $build --target herd_cli bench_peer_simgrid_ring)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "simgrid_compare: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

intra_gbs=${intra%,*} intra_us=${intra#*,} inter_gbs=${inter%,*} inter_us=${inter#*,}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median of the numbers in a file (one per line)
median() { sort -g "$1" | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "nan"}'; }

# run_timed BASE CMD...: command output in BASE.out, "wall user rss_kib"
# appended to BASE.time; returns the command's status
run_timed() {
    local base=$1; shift
    /usr/bin/time -o "$base.time" -a -f "%e %U %M" "$@" >"$base.out" 2>&1
}

herd_cmd() {
    echo "$herd_bin" perf --algo ring -b "$bytes" -e "$bytes" -n 1 -w 0 \
        --nodes "$1" --gpus-per-node "$2" --channels "$channels" --chunk "$chunk" \
        --intra-bw "${intra_gbs}GB/s" --intra-lat "${intra_us}us" \
        --inter-bw "${inter_gbs}GB/s" --inter-lat "${inter_us}us"
}

sg_cmd() {
    echo "$sg_bin" --nodes "$1" --gpus-per-node "$2" --bytes "$bytes" \
        --channels "$channels" --chunk "$chunk" \
        --intra-bw "${intra_gbs}e9" --intra-lat "${intra_us}e-6" \
        --inter-bw "${inter_gbs}e9" --inter-lat "${inter_us}e-6" --mode "$3"
}

# measure NAME LIMIT CMD: RUNS runs; sets pred (ms) wall user rss (MiB)
# or timed_out=1. Predicted time: herd perf's time column (us), SimGrid's
# predicted_ms.
measure() {
    local name=$1 lim=$2; shift 2
    local f=$tmp/$name i
    : >"$f.time"; : >"$f.pred"; timed_out=0
    for ((i = 0; i < runs; i++)); do
        if ! run_timed "$f" timeout "$lim" "$@"; then
            if grep -q "Command exited with non-zero status 124" "$f.time"; then
                timed_out=1; return
            fi
            echo "simgrid_compare: failed: $*" >&2; cat "$f.out" >&2; exit 1
        fi
        if [ "$name" = herd ]; then
            awk '$1 ~ /^[0-9]+$/ && NF >= 9 {printf "%.6f\n", $6 / 1000}' "$f.out" >>"$f.pred"
        else
            sed -n 's/.*predicted_ms \([0-9.]*\).*/\1/p' "$f.out" >>"$f.pred"
        fi
    done
    grep -v "status" "$f.time" >"$f.t" || true
    pred=$(median "$f.pred")
    awk '{print $1}' "$f.t" >"$f.w"; wall=$(median "$f.w")
    awk '{print $2}' "$f.t" >"$f.u"; user=$(median "$f.u")
    awk '{print $3 / 1024}' "$f.t" >"$f.r"; rss=$(median "$f.r")
}

for spec in "$@"; do
    [[ $spec =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || { echo "simgrid_compare: bad size '$spec' (NODESxGPUS, e.g. 8x8)" >&2; exit 2; }
done

echo "# ring all_reduce $bytes, $channels channels, $chunk chunks; intra ${intra_gbs} GB/s ${intra_us} us," \
     "NIC ${inter_gbs} GB/s ${inter_us} us, non-blocking; median of $runs runs; SimGrid limit ${limit} s"
echo "# herd:    $(herd_cmd N G)"
echo "# SimGrid: $(sg_cmd N G MODE)"
printf "%-12s %-6s %12s %12s %8s %9s %9s %8s %9s %9s %8s %8s %8s\n" \
    ranks mode herd_ms simgrid_ms diff herd_wall sg_wall wall_x herd_cpu sg_cpu cpu_x herd_MiB sg_MiB
for spec in "$@"; do
    nodes=${spec%x*} gpn=${spec#*x}
    # shellcheck disable=SC2046
    measure herd 0 $(herd_cmd "$nodes" "$gpn") # no limit for herd
    h_pred=$pred h_wall=$wall h_user=$user h_rss=$rss
    for mode in ${modes//,/ }; do
        label="$((nodes * gpn)) ($spec)"
        # shellcheck disable=SC2046
        measure "sg_$mode" "$limit" $(sg_cmd "$nodes" "$gpn" "$mode")
        if [ "$timed_out" = 1 ]; then
            printf "%-12s %-6s %12.3f %12s %8s %9.2f %9s %8s %9.2f %9s %8s %8.0f %8s\n" \
                "$label" "$mode" "$h_pred" "-" "-" "$h_wall" ">$limit" "-" "$h_user" "-" "-" "$h_rss" "-"
            continue
        fi
        awk -v l="$label" -v m="$mode" -v hp="$h_pred" -v sp="$pred" -v hw="$h_wall" -v sw="$wall" \
            -v hu="$h_user" -v su="$user" -v hr="$h_rss" -v sr="$rss" 'BEGIN {
            printf "%-12s %-6s %12.3f %12.3f %+7.2f%% %9.2f %9.2f %7.0fx %9.2f %9.2f %7.0fx %8.0f %8.0f\n",
                l, m, hp, sp, (sp - hp) / hp * 100, hw, sw, sw / (hw > 0.01 ? hw : 0.01),
                hu, su, su / (hu > 0.01 ? hu : 0.01), hr, sr }'
    done
done
