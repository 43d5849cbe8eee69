#!/bin/sh
# bench/testbed_idle.sh HERD OUT [RATE [RUNS]]: `herd validate
# bench/testbed_idle.yaml` on the testbed with the hosts' slow start
# after idle on (Linux's default) and off, alternating, RUNS times
# (default 2) at RATE (default 50Mbit); prints each report's rows. Root;
# under flock /tmp/herd-testbed.lock. BENCHMARKS.md, "Slow start after
# idle".
set -eu
[ $# -ge 2 ] || { echo "usage: $0 HERD OUT [RATE [RUNS]]" >&2; exit 2; }
HERD=$1 OUT=$2 RATE=${3:-50Mbit} RUNS=${4:-2}
mkdir -p "$OUT"
SCEN=$(cd "$(dirname "$0")" && pwd)/testbed_idle.yaml
exec 9>/tmp/herd-testbed.lock
flock 9
i=1
while [ "$i" -le "$RUNS" ]; do
    for v in on off; do
        d=$OUT/$RATE-$v-$i
        "$HERD" validate "$SCEN" --bandwidth "$RATE" \
            --slow-start-after-idle "$v" -o "$d" >"$d.log" 2>&1 ||
            { echo "run $i ($v) failed: $d.log" >&2; exit 1; }
        echo "== slow start after idle $v, run $i"
        grep '^| all_reduce' "$d/report.md"
    done
    i=$((i + 1))
done
