#!/bin/sh
# bench/torch_fsdp/run.sh - issue 16's FSDP validation, end to end:
#   capture  real PyTorch FSDP1 (gloo, CPU, 2 ranks, one per testbed host)
#            for each strategy x backward_prefetch, ROUNDS rounds (each
#            round runs every configuration once, so that load from other
#            jobs falls on all alike); herd calibrate on the same links;
#            the model file exported by herd_torch on this machine, and
#            FSDP's own compute overhead (FSDP-wrapped against plain steps
#            at world size 1: fsdp.compute_scale)
#   predict  herd fsdp run for each configuration with the calibrated
#            links and the exported model; OUT/compare.tsv
# Usage: sh bench/torch_fsdp/run.sh [capture|predict|all]  (root)
# Env: HERD, PY (python with torch >= 2.1), OUT, RATE, CONFIGS
#      ("STRATEGY:PREFETCH ..."), BATCH, STEPS, WARMUP, ROUNDS, NICE, PIN.
# Every testbed use holds /tmp/herd-testbed.lock (one testbed per machine).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
HERD=${HERD:-$root/build/cli/herd}
PY=${PY:-/work/venv-torch/bin/python3}
OUT=${OUT:-$root/out-torch-fsdp}
RATE=${RATE:-400Mbit}
CONFIGS=${CONFIGS:-"FULL_SHARD:BACKWARD_PRE FULL_SHARD:none SHARD_GRAD_OP:BACKWARD_PRE SHARD_GRAD_OP:none"}
BATCH=${BATCH:-128}
STEPS=${STEPS:-8}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-2}
NICE=${NICE:--10}
PIN=${PIN:-1}
LOCK=/tmp/herd-testbed.lock
stage=${1:-all}
mkdir -p "$OUT"

bench_run() { # strategy prefetch round
    tag=fsdp_$1_$2_r$3
    [ -f "$OUT/${tag}_rank0.steps.json" ] && return 0
    echo "== $1 backward_prefetch=$2 round $3"
    nice -n "$NICE" "$HERD" testbed run --timeout 600 -- "$PY" \
        "$here/fsdp_bench.py" --strategy "$1" --backward-prefetch "$2" \
        --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" \
        --tag "$tag" --out "$OUT" $([ "$PIN" = 1 ] && echo --pin)
}

capture() {
    "$HERD" testbed down >/dev/null 2>&1 || true
    trap '"$HERD" testbed down >/dev/null 2>&1 || true' EXIT
    "$HERD" testbed up --hosts 2 --bandwidth "$RATE"
    [ -s "$OUT/calibrate.yaml" ] ||
        nice -n "$NICE" "$HERD" testbed run --timeout 300 -- "$HERD" \
            calibrate -o "$OUT/calibrate.yaml" >"$OUT/calibrate.log" 2>&1
    for round in $(seq 1 "$ROUNDS"); do
        for c in $CONFIGS; do
            bench_run "${c%%:*}" "${c##*:}" "$round"
        done
    done
    "$HERD" testbed down
    trap - EXIT
}

case $stage in
_capture) capture; exit 0 ;;
capture | predict | all) ;;
*) echo "usage: $0 [capture|predict|all]" >&2; exit 2 ;;
esac
if [ "$stage" != predict ]; then
    [ -s "$OUT/model.json" ] ||
        nice -n "$NICE" "$PY" "$here/fsdp_bench.py" --export "$OUT/model.json" \
            --batch "$BATCH"
    [ -s "$OUT/overhead.json" ] ||
        nice -n "$NICE" "$PY" "$here/fsdp_bench.py" --overhead \
            --batch "$BATCH" --steps 10 --warmup 2 >"$OUT/overhead.json"
    flock "$LOCK" sh "$here/run.sh" _capture
fi
if [ "$stage" != capture ]; then
    PYTHONPATH= python3 "$here/compare.py" --herd "$HERD" --out "$OUT" \
        --configs "$CONFIGS" | tee "$OUT/compare.tsv"
fi
