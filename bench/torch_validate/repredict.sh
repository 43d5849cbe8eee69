#!/bin/sh
# bench/torch_validate/repredict.sh SRC OUT [ALGO] - predict again every
# cell of an earlier run.sh (SRC: its OUT) with this build of herd, from
# the cell's own trace and calibration, without the testbed; then
#   python3 bench/torch_validate/bucket_rows.py SRC OUT
# compares each cell's steps and buckets with SRC's measurements.
# ALGO (default: the scenario's) replaces collectives.algorithm. SCEN
# (env): the scenario pair run.sh ran (default resnet18). SETS
# (env, optional): more KEY=VALUE overrides, e.g. a calibration's
# cluster.compute_comm_slowdown for a capture calibrated before it existed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
HERD=${HERD:-$here/../../build/cli/herd}
SRC=$1 OUT=$2 ALGO=${3:-}
for cell in "$SRC"/*/*/b*; do
    [ -f "$cell/report.md" ] || continue
    rel=${cell#"$SRC"/}
    var=$(basename "$(dirname "$cell")")
    sc=$here/${SCEN:-resnet18}-2h.yaml
    [ "$var" = straggler ] && sc=$here/${SCEN:-resnet18}-2h-straggler.yaml
    set --
    for s in $(sed -n 's/.*simulator: calibrated link \(.*\)\.$/\1/p' \
        "$cell/report.md" | tr -d ' ' | tr ',' ' '); do
        set -- "$@" --set "$s"
    done
    [ -n "$ALGO" ] && set -- "$@" --set collectives.algorithm="$ALGO"
    for s in ${SETS:-}; do set -- "$@" --set "$s"; done
    mkdir -p "$OUT/$rel"
    "$HERD" replay "$cell/ddp/trace.json" --engine sim --scenario "$sc" \
        "$@" -o "$OUT/$rel/predicted" --no-plots >"$OUT/$rel/log" 2>&1 ||
        { echo "failed: $rel (see $OUT/$rel/log)" >&2; exit 1; }
done
