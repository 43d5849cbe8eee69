#!/bin/sh
# scripts/fuzz.sh - build the libFuzzer targets (fuzz/, Clang with ASan and
# UBSan) and run each on its committed seed corpus for SECONDS seconds.
# Used by `make fuzz` (and so by .ci/run with FUZZ_SECONDS=5).
#
#   sh scripts/fuzz.sh [BUILD_DIR [SECONDS [TARGET...]]]
#
# Resource limits are part of the check: an input that takes more than
# 2 GiB (-rss_limit_mb) or 10 s (-timeout) is a failure like a crash, so an
# alias bomb or a size taken on trust is found, not just a segfault. New
# inputs go to BUILD_DIR/fuzz-corpus/<target>/ (not the committed corpus);
# a failing input is saved as BUILD_DIR/fuzz-artifacts/<target>-crash-...
# Exit: 0 all targets ran clean, 1 a target failed, 2 no Clang/build.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-fuzz-clang}
seconds=${2:-60}
[ $# -gt 2 ] && shift 2 || set --
case $build in /*) ;; *) build=$root/$build ;; esac
cc=${FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found (Debian: apt-get install clang)" >&2
    exit 2
fi
jobs=$(nproc 2>/dev/null || echo 2)
CC=$cc cmake -S "$root" -B "$build" -DHERD_BUILD_FUZZ=ON \
    -DHERD_BUILD_TESTS=OFF -DHERD_BUILD_BENCH=OFF -DHERD_WITH_NCCL=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
targets=${*:-$(cat "$root/fuzz/targets.txt")}
names=
for t in $targets; do names="$names fuzz_$t"; done
# shellcheck disable=SC2086
mkdir -p "$build/fuzz-artifacts"
cmake --build "$build" -j "$jobs" --target $names \
    >"$build/fuzz-artifacts/build.log" 2>&1 || {
    grep -E 'error' "$build/fuzz-artifacts/build.log" | head -10 >&2
    echo "fuzz: build failed (log: $build/fuzz-artifacts/build.log)" >&2
    exit 2
}
failed=
for t in $targets; do
    seeds=$root/fuzz/corpus/$t
    work=$build/fuzz-corpus/$t
    mkdir -p "$work"
    log=$build/fuzz-artifacts/$t.log
    printf 'fuzz_%s: %ss ... ' "$t" "$seconds"
    if "$build/fuzz/fuzz_$t" "$work" "$seeds" -max_total_time="$seconds" \
        -rss_limit_mb=2048 -timeout=10 -max_len=65536 -close_fd_mask=3 \
        -print_final_stats=1 \
        -artifact_prefix="$build/fuzz-artifacts/$t-" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "ok (${runs:-?} runs)"
    else
        echo "FAILED (see $log)"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*out-of-memory|.*timeout)' \
            "$log" | head -5
        failed="$failed $t"
    fi
done
if [ -n "$failed" ]; then
    echo "fuzz: failed:$failed; inputs in $build/fuzz-artifacts/" >&2
    exit 1
fi
