#!/bin/sh
# bench/peers/campaign.sh - runs bench/peers/compare.sh RUNS times (each
# run interleaves herd, Open MPI and Gloo) and summarises every cell as
# median (min-max) over the runs: 8-byte time in us, busbw in GB/s at the
# larger sizes. The load average is printed before each run, since on a
# shared machine it explains most of the spread.
# Usage: bench/peers/campaign.sh BUILD_DIR RUNS [NP...]   (default NP: 2 4)
# Raw output of every run goes to stderr; the summary to stdout.
set -u
B=${1:?usage: campaign.sh BUILD_DIR RUNS [NP...]}
RUNS=${2:?usage: campaign.sh BUILD_DIR RUNS [NP...]}
shift 2
HERE=$(dirname "$0")
RAW=$(mktemp)
trap 'rm -f "$RAW"' EXIT
i=0
while [ "$i" -lt "$RUNS" ]; do
    i=$((i + 1))
    echo "# run $i: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$HERE/compare.sh" "$B" "$@" | tee -a "$RAW" >&2
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# One "np size tool value" line per measurement, then one summary line
# per (np, size, tool) in the order first seen.
awk '
/^== np=/ { split($2, a, "="); np = a[2]; next }
/:$/      { tool = $0; sub(/:$/, "", tool); gsub(/ /, "_", tool); next }
/^ *[0-9]/ { v = ($1 == 8) ? $3 : $5; print np, $1, tool, v }
' "$RAW" >"$RAW.v"
awk '{ k = $1 " " $2 " " $3; if (!(k in seen)) { seen[k] = 1; print k } }' \
    "$RAW.v" | while read -r np size tool; do
    vals=$(awk -v n="$np" -v s="$size" -v t="$tool" \
        '$1 == n && $2 == s && $3 == t { print $4 }' "$RAW.v" | sort -g)
    cnt=$(echo "$vals" | wc -l)
    med=$(echo "$vals" | awk -v c="$cnt" '
        { v[NR] = $1 }
        END { if (c % 2) print v[(c + 1) / 2];
              else printf "%.4g\n", (v[c / 2] + v[c / 2 + 1]) / 2 }')
    lo=$(echo "$vals" | head -1)
    hi=$(echo "$vals" | tail -1)
    unit=$([ "$size" = 8 ] && echo us || echo GB/s)
    printf "np=%s %10s B %-10s %s %s (%s-%s) n=%s\n" "$np" "$size" "$tool" \
        "$unit" "$med" "$lo" "$hi" "$cnt"
done
rm -f "$RAW.v"
