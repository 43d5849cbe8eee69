#!/bin/sh
# scripts/demo.sh - the default demo (`make demo`): simulate a scenario,
# print the result and write the timeline and plots into out/demo/.
set -eu
B=${1:-build}
HERD=$B/cli/herd
OUT=out/demo
echo "== herd $($HERD --version | cut -d' ' -f2): ring all_reduce on 4 ranks, rank 1's schedule"
$HERD schedule --algo ring --coll all_reduce -p 4 --count 8 --rank 1 || echo "(herd schedule is not available in this build)"
echo
echo "== herd sim scenarios/h100-8gpu.yaml: all_reduce sizes on one 8-GPU NVLink node"
$HERD sim scenarios/h100-8gpu.yaml -o "$OUT/h100-8gpu"
echo
echo "== herd sim scenarios/straggler.yaml: rank 5 computes 1.5x slower; the rest wait"
$HERD sim scenarios/straggler.yaml -o "$OUT/straggler"
echo
echo "== herd sim scenarios/mismatch-hang.yaml: a skipped all_reduce, diagnosed (exit 1 expected)"
if $HERD sim scenarios/mismatch-hang.yaml -o "$OUT/mismatch-hang" --no-plots; then
    echo "demo: expected the mismatch scenario to be reported as a hang" >&2
    exit 1
fi
echo
echo "== herd sweep scenarios/fsdp-gpt2-8n.yaml: FSDP's sharding strategies, step time and memory per rank on 16 GiB devices"
$HERD sweep scenarios/fsdp-gpt2-8n.yaml --set fsdp.strategy=FULL_SHARD,SHARD_GRAD_OP,HYBRID_SHARD,NO_SHARD \
    --set fsdp.steps=2 --set fsdp.gpu_mem=16 --out "$OUT/fsdp-sweep"
echo
echo "== herd sim scenarios/fsdp-gpt2-8n.yaml: one step's streams (compute, all_gather, reduce_scatter) per rank"
$HERD sim scenarios/fsdp-gpt2-8n.yaml --set fsdp.steps=2 -o "$OUT/fsdp" --gantt-ranks 0,1,63 | tail -n 4
echo
echo "== herd sweep scenarios/parallel-gpt-7b-16n.yaml on 2 nodes: tp x pp layouts against 80 GiB"
$HERD sweep scenarios/parallel-gpt-7b-16n.yaml --set parallel.tp=1,2,4,8 --set parallel.pp=1,2 \
    --set cluster.nodes=2 --out "$OUT/parallel-sweep"
echo
echo "demo: outputs in $OUT/ (timeline.json opens in https://ui.perfetto.dev;"
echo "      each plot's NAME.gp and NAME.dat re-plot it: cd DIR && gnuplot NAME.gp)"
