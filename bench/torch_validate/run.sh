#!/bin/sh
# bench/torch_validate/run.sh - herd validate --torch over link rates x
# bucket_cap_mb x (without, with) a one-gradient straggler, resnet18 on
# 2 testbed hosts (BENCHMARKS.md, "Validation against real PyTorch").
# Usage: sh bench/torch_validate/run.sh RATE...   (root; e.g. 50Mbit)
# Env: HERD (herd binary), PY (python with torch), OUT, CAPS, SCEN (the
# scenario pair SCEN-2h.yaml and SCEN-2h-straggler.yaml: resnet18, the
# default, or transformer, which has no straggler variant), COMM_CPU (1,
# the default: validate --comm-cpu, which these cells are better with,
# BENCHMARKS.md; 0: without).
# Each cell is one `herd validate` under flock /tmp/herd-testbed.lock (a
# minute or so); the first cell of a rate calibrates the links, the others
# reuse that fit (--calibration). `python3 table.py OUT` makes the table.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
HERD=${HERD:-$root/build/cli/herd}
PY=${PY:-/work/venv-torch/bin/python3}
OUT=${OUT:-$root/out-torch-validate}
CAPS=${CAPS:-"1 5 25 100"}
SCEN=${SCEN:-resnet18}
COMM_CPU=${COMM_CPU:-1}
LOCK=/tmp/herd-testbed.lock
# PyTorch 2.x caps the first bucket by bucket_cap_mb when it is given
# (1.13: 1 MiB): the prediction must bucket as the real job does.
FIRST=1
"$PY" -c 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)' && FIRST=0
for rate in "$@"; do
    cal=$OUT/$rate/calibration.yaml
    for variant in plain straggler; do
        scen=$here/$SCEN-2h.yaml
        [ "$variant" = straggler ] && scen=$here/$SCEN-2h-straggler.yaml
        [ -f "$scen" ] || continue
        for cap in $CAPS; do
            dir=$OUT/$rate/$variant/b$cap
            [ -f "$dir/report.md" ] && continue
            rm -rf "$dir"
            mkdir -p "$OUT/$rate"
            if [ -f "$cal" ]; then set -- --calibration "$cal"; else set --; fi
            [ "$COMM_CPU" = 1 ] && set -- "$@" --comm-cpu
            echo "== $rate $variant bucket_cap_mb=$cap"
            flock "$LOCK" "$HERD" validate "$scen" --torch --python "$PY" \
                --bandwidth "$rate" --set ddp.bucket_cap_mb="$cap" --set ddp.first_bucket_mb=$FIRST \
                --calibrate-bytes 4MiB --keep-testbed --timeout 400 \
                -o "$dir" "$@" | tail -3
            [ -f "$cal" ] || cp "$dir/calibration.yaml" "$cal"
        done
    done
    flock "$LOCK" "$HERD" testbed down
done
