#!/bin/sh
# bench/testbed_ab.sh OLD NEW RATE [REPS] -- PERF_ARGS...: two herd
# binaries side by side on one testbed (4 hosts, links shaped to RATE):
# `herd perf --engine tcp PERF_ARGS` with OLD, then NEW, REPS times
# (default 2), so both see the same links and the same moments of the
# machine. Prints size, out-of-place and in-place time (us) per run.
# Root; runs under flock /tmp/herd-testbed.lock. Example (BENCHMARKS.md,
# "rhd's exchanges, one at a time"):
#   sh bench/testbed_ab.sh /tmp/herd-before build/cli/herd 1Gbit 2 -- \
#       --algo rhd -b 1M -e 64M -f 4 -n 5 -w 1 --chunk 4M
set -eu
[ $# -ge 4 ] || { echo "usage: $0 OLD NEW RATE [REPS] -- PERF_ARGS..." >&2; exit 2; }
OLD=$1 NEW=$2 RATE=$3
shift 3
REPS=2
if [ "$1" != "--" ]; then REPS=$1; shift; fi
[ "$1" = "--" ] && shift
HERD=${HERD:-$NEW}
LOCK=/tmp/herd-testbed.lock
exec 9>"$LOCK"
flock 9
"$HERD" testbed up --hosts 4 --bandwidth "$RATE" --force >/dev/null
trap '"$HERD" testbed down >/dev/null 2>&1 || :' EXIT
i=0
while [ "$i" -lt "$REPS" ]; do
    for b in "$OLD" "$NEW"; do
        echo "== $b"
        "$HERD" testbed run --timeout 900 -- "$b" perf --engine tcp "$@" 2>&1 |
            awk '!/^#/ && NF {print $1, $6, $10}'
    done
    i=$((i + 1))
done
