#!/bin/sh
# bench/torch_whatif/run.sh - issue 12's what-if acceptance, end to end:
#   capture  real PyTorch DDP (gloo, 2 ranks, one per testbed host) with
#            the profiler on, at each link rate and bucket size; herd
#            calibrate on the same links
#   table    OUT/measured.tsv: median step time per (rate, bucket size)
#   predict  herd import the 25 MB traces of each rate, herd sweep the
#            bucket sizes with the calibrated links, predicted vs measured
# Usage: sh bench/torch_whatif/run.sh [capture|table|predict|all]  (root)
# Env: HERD (herd binary), PY (python with torch >= 1.13), OUT, RATES,
#      CAPS, BASE_CAP (the size whose trace is imported), STEPS, WARMUP,
#      ROUNDS (each round runs every size once, so that load from other
#      jobs on the machine falls on all sizes alike; steps are pooled),
#      NICE (the runs' priority, default -10: ahead of other jobs' builds
#      on a shared machine, so their load disturbs the timing less),
#      PIN=1 (each rank on its own CPU: ddp_bench.py --pin).
# Every testbed use holds /tmp/herd-testbed.lock (one testbed per machine).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
HERD=${HERD:-$root/build/cli/herd}
PY=${PY:-/work/venv-torch/bin/python3}
OUT=${OUT:-$root/out-torch-whatif}
RATES=${RATES:-"100Mbit 400Mbit"}
CAPS=${CAPS:-"1 5 25 100"}
BASE_CAP=${BASE_CAP:-25}
STEPS=${STEPS:-10}
WARMUP=${WARMUP:-3}
ROUNDS=${ROUNDS:-3}
NICE=${NICE:--10}
PIN=${PIN:-0}
LOCK=/tmp/herd-testbed.lock
stage=${1:-all}
mkdir -p "$OUT"

# One DDP run on the testbed; a run already done (its steps file exists)
# is kept, so an interrupted capture resumes. A failed run (a testbed
# taken down under it) is retried once on a fresh testbed.
bench_run() {
    rate=$1 cap=$2 round=$3 dir=$OUT/$1
    tag=torch_b${cap}_r$round
    [ -f "$dir/${tag}_rank0.steps.json" ] && return 0
    echo "== $rate bucket_cap_mb=$cap round $round"
    for try in 1 2; do
        if nice -n "$NICE" "$HERD" testbed run --timeout 300 -- "$PY" "$here/ddp_bench.py" \
            --bucket-cap-mb "$cap" --tag "$tag" --out "$dir" \
            --steps "$STEPS" --warmup "$WARMUP" \
            $([ "$PIN" = 1 ] && echo --pin); then
            return 0
        fi
        echo "run failed (try $try); testbed up again" >&2
        rm -f "$dir/${tag}"_rank*
        "$HERD" testbed down >/dev/null 2>&1 || true
        "$HERD" testbed up --hosts 2 --bandwidth "$rate"
    done
    return 1
}

capture_rate() {
    rate=$1
    dir=$OUT/$rate
    mkdir -p "$dir"
    "$HERD" testbed down >/dev/null 2>&1 || true
    trap '"$HERD" testbed down >/dev/null 2>&1 || true' EXIT
    "$HERD" testbed up --hosts 2 --bandwidth "$rate"
    [ -s "$dir/calibrate.yaml" ] ||
        nice -n "$NICE" "$HERD" testbed run --timeout 300 -- "$HERD" calibrate \
            -o "$dir/calibrate.yaml" >"$dir/calibrate.log" 2>&1
    for round in $(seq 1 "$ROUNDS"); do
        for cap in $CAPS; do
            bench_run "$rate" "$cap" "$round"
        done
    done
    "$HERD" testbed down
    trap - EXIT
}

# The calibrated inter link as --set options for herd sweep.
link_sets() {
    awk '/^ *inter:/ {
        bw = $0; sub(/.*bandwidth: */, "", bw); sub(/[,}].*/, "", bw)
        lat = $0; sub(/.*latency: */, "", lat); sub(/[,}].*/, "", lat)
        printf "--set cluster.inter.bandwidth=%s --set cluster.inter.latency=%s", bw, lat
    }' "$1"
}

predict_rate() {
    rate=$1
    dir=$OUT/$rate
    imp=$dir/imported
    rm -rf "$imp"
    # every round of the base size: the model's compute over all of them
    "$HERD" import "$dir"/torch_b${BASE_CAP}_r*_rank*.pt.trace.json.gz \
        --bucket-cap-mb "$BASE_CAP" --ranks-per-node 1 -o "$imp" ||
        [ $? -eq 1 ]
    # shellcheck disable=SC2046
    "$HERD" sweep "$imp/scenario.yaml" \
        --set ddp.bucket_cap_mb=$(echo "$CAPS" | tr ' ' ',') \
        $(link_sets "$dir/calibrate.yaml") --out "$dir/sweep" \
        >"$dir/sweep.log"
    python3 "$here/table.py" compare "$OUT/measured.tsv" "$rate" \
        "$dir/sweep/sweep.tsv" | tee "$dir/compare.tsv"
}

case $stage in
_capture) capture_rate "$2" ;; # under the lock, from "capture"
capture | all | table | predict) ;;
*) echo "usage: $0 [capture|table|predict|all]" >&2; exit 2 ;;
esac
if [ "$stage" = capture ] || [ "$stage" = all ]; then
    for rate in $RATES; do
        flock "$LOCK" sh "$here/run.sh" _capture "$rate"
    done
fi
if [ "$stage" != _capture ] && [ "$stage" != predict ]; then
    python3 "$here/table.py" measured "$OUT" >"$OUT/measured.tsv"
    cat "$OUT/measured.tsv"
fi
if [ "$stage" = predict ] || [ "$stage" = all ]; then
    for rate in $RATES; do
        predict_rate "$rate"
    done
fi
