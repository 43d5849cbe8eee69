#!/bin/sh
# bench/peers/compare.sh - herd's tcp engine side by side with Open MPI
# (btl tcp,self over loopback) and Gloo (ring, halving-doubling): float32
# sum all_reduce, 8 B latency and 16 MiB / 256 MiB bandwidth, on NP ranks.
# Usage: bench/peers/compare.sh BUILD_DIR [NP...]   (default NP: 2 4)
# Prints each harness's table lines; peers missing from BUILD_DIR are
# skipped. Results go to stdout; BENCHMARKS.md records them.
set -u
B=${1:?usage: compare.sh BUILD_DIR [NP...]}
shift
NPS=${*:-2 4}
HERD=$B/cli/herd
run_herd() { # np args...
    np=$1; shift
    "$HERD" launch --standalone --quiet --nproc-per-node "$np" -- \
        "$B/bench/bench_tcp_allreduce" "$@" | grep -v '^#'
}
run_mpi() {
    np=$1; shift
    [ -x "$B/bench/peers/bench_peer_mpi_allreduce" ] || return 0
    mpirun --allow-run-as-root --oversubscribe -np "$np" --mca btl tcp,self \
        --mca btl_tcp_if_include lo \
        "$B/bench/peers/bench_peer_mpi_allreduce" "$@" | grep -v '^#'
}
run_gloo() { # np algo args...
    np=$1; algo=$2; shift 2
    [ -x "$B/bench/peers/bench_peer_gloo_allreduce" ] || return 0
    d=$(mktemp -d)
    GLOO_STORE_DIR=$d "$HERD" launch --standalone --quiet \
        --nproc-per-node "$np" -- \
        "$B/bench/peers/bench_peer_gloo_allreduce" -a "$algo" "$@" |
        grep -v '^#'
    rm -rf "$d"
}
for np in $NPS; do
    for what in "-b 8 -e 8 -n 5000" "-b 16M -e 256M -f 16 -n 5"; do
        echo "== np=$np $what"
        echo "herd:";      run_herd "$np" $what
        echo "mpi:";       run_mpi "$np" $what
        echo "gloo ring:"; run_gloo "$np" ring $what
        echo "gloo rhd:";  run_gloo "$np" rhd $what
    done
done
