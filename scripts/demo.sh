#!/bin/sh
# scripts/demo.sh - the default demo: a short tour of what herd does now.
set -eu
B=${1:-build}
HERD=$B/cli/herd
echo "== herd $($HERD --version | cut -d' ' -f2): ring all_reduce on 4 ranks, rank 1's schedule"
$HERD schedule --algo ring --coll all_reduce -p 4 --count 8 --rank 1
