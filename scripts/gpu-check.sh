#!/usr/bin/env bash
# scripts/gpu-check.sh - herd's check on a GPU machine, in one go (about
# 8 minutes at most): build herd (or use a prebuilt one), run the `gpu`
# test suites, measure `herd perf --engine nccl` for all_reduce,
# all_gather, reduce_scatter and broadcast from 8 B to 1 GiB, replay a DDP
# trace with spin kernels, predict the same on the simulator (NCCL model),
# compare, and print a summary table last. Everything lands in OUT.
#
# The machine has one GPU. NCCL < 2.30 refuses two ranks of a
# communicator on one device; from 2.30 NCCL_MULTI_RANK_GPU_ENABLE=1
# allows it, so the script runs up to 4 ranks on the GPU where NCCL does
# (or one rank per GPU when there are several), world size 1 otherwise,
# and records which.
#
# The GPU machine cannot reach any network. If cmake, a compiler, nvcc or
# the libraries (libevent, jansson, libfyaml, zlib, check) are missing there,
# build elsewhere and bring the result:
#   scripts/gpu-check.sh --pack DIR      # on a build machine with CUDA+NCCL
#   HERD_PREBUILT=DIR scripts/gpu-check.sh   # on the GPU machine
# HERD_PREBUILT names a build directory (cli/herd, tests/gpu_*); shared
# libraries are taken from HERD_PREBUILT_LIBS (default DIR/lib).
#
# Exit: 0 all checks ran and passed, 1 a check failed, 2 bad usage,
# 3 no GPU, 4 cannot build or run herd (missing tools or libraries).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${HERD_GPU_OUT:-$ROOT/out/gpu-check}
BUDGET=${HERD_GPU_BUDGET:-480} # seconds for everything after the build
MAXBYTES=${HERD_GPU_MAXBYTES:-1GiB}
DDP_STEPS=${HERD_GPU_DDP_STEPS:-3}
ENGINE=nccl
BUILD=""
HERD=""
RANKS=1
RANKS_NOTE=""
NCCL_VER="unknown"
FAILED=0
ROWS=()  # summary: one line per collective
NOTES=() # summary: other results

usage() {
    cat <<'EOF'
usage: scripts/gpu-check.sh [--out DIR] [--engine nccl|tcp] [--dry-run]
       scripts/gpu-check.sh --pack DIR
       scripts/gpu-check.sh --check-deps
Builds herd, runs the gpu tests, measures herd perf (nccl) for all_reduce,
all_gather, reduce_scatter and broadcast (8 B .. 1 GiB), replays a DDP
trace, predicts both on the simulator's NCCL model and compares them.
  --out DIR      results (default out/gpu-check; env HERD_GPU_OUT)
  --engine tcp   rehearse every step on CPUs (no GPU needed)
  --dry-run      the same: everything but the device calls
  --pack DIR     build here (HERD_WITH_NCCL=ON) and copy herd, the gpu
                 tests and the non-system shared libraries into DIR
  --check-deps   report which build tools and libraries are missing
Environment: HERD_PREBUILT=DIR (use that build), HERD_PREBUILT_LIBS=DIR,
HERD_GPU_BUILD (where to build, default build-gpu),
HERD_GPU_BUDGET (seconds, default 480), HERD_GPU_MAXBYTES (default 1GiB),
HERD_GPU_RANKS (force the number of ranks), HERD_GPU_DDP_STEPS (3).
Exit: 0 ok, 1 a check failed, 2 usage, 3 no GPU, 4 cannot build or run.
EOF
}

say() { printf 'gpu-check: %s\n' "$*"; }
fail() { # message, exit code
    printf 'gpu-check: %s\n' "$1" >&2
    exit "$2"
}

left() { echo $((BUDGET - SECONDS)); }

# Run with the remaining budget (capped at $1 seconds) as a timeout.
budgeted() {
    local cap=$1 t
    shift
    t=$(left)
    if [ "$t" -le 5 ]; then
        say "out of time budget: skipped: $*"
        return 124
    fi
    [ "$t" -gt "$cap" ] && t=$cap
    timeout --kill-after=10 "$t" "$@"
}

# ---- dependencies ----

missing_deps() {
    local m=() tool mod
    for tool in cmake cc pkg-config; do
        command -v "$tool" >/dev/null 2>&1 || m+=("$tool")
    done
    if ! command -v nvcc >/dev/null 2>&1 &&
        [ ! -x /usr/local/cuda/bin/nvcc ]; then
        m+=("nvcc (CUDA toolkit)")
    fi
    if command -v pkg-config >/dev/null 2>&1; then
        for mod in libevent_core libevent_pthreads jansson libfyaml zlib check; do
            pkg-config --exists "$mod" 2>/dev/null || m+=("$mod (pkg-config)")
        done
    fi
    if [ ! -e /usr/local/cuda/include/nccl.h ] &&
        [ ! -e /usr/local/include/nccl.h ] && [ ! -e /usr/include/nccl.h ]; then
        m+=("nccl.h (NCCL development files)")
    fi
    printf '%s\n' "${m[@]}"
}

check_deps() {
    local miss
    miss=$(missing_deps)
    if [ -n "$miss" ]; then
        say "missing to build herd here:"
        printf '%s\n' "$miss" | sed 's/^/  - /'
        return 1
    fi
    say "all build tools and libraries are present"
}

no_build_help() {
    cat >&2 <<'EOF'
gpu-check: this machine cannot build herd and cannot download anything.
  On a machine with CUDA, NCCL and the libraries, run
      scripts/gpu-check.sh --pack DIR
  bring DIR here and run
      HERD_PREBUILT=DIR scripts/gpu-check.sh
EOF
}

# ---- build or prebuilt ----

use_prebuilt() {
    BUILD=$HERD_PREBUILT
    HERD=$BUILD/cli/herd
    [ -x "$HERD" ] || fail "HERD_PREBUILT=$BUILD: no executable cli/herd" 4
    local libs=${HERD_PREBUILT_LIBS:-$BUILD/lib}
    if [ -d "$libs" ]; then
        export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    local nf
    nf=$(ldd "$HERD" 2>/dev/null | grep 'not found' || true)
    if [ -n "$nf" ]; then
        printf 'gpu-check: %s needs shared libraries this machine lacks:\n%s\n' \
            "$HERD" "$nf" >&2
        fail "put them in $libs (or HERD_PREBUILT_LIBS); --pack does" 4
    fi
    say "using prebuilt $BUILD"
}

build_here() {
    BUILD=${HERD_GPU_BUILD:-$ROOT/build-gpu}
    HERD=$BUILD/cli/herd
    local miss
    miss=$(missing_deps)
    if [ -n "$miss" ]; then
        printf 'gpu-check: missing: %s\n' "$(printf '%s' "$miss" | paste -sd ',' -)" >&2
        no_build_help
        exit 4
    fi
    local targets=(herd_cli) t
    for t in "$ROOT"/tests/gpu_*.c; do
        [ -e "$t" ] && targets+=("$(basename "$t" .c)")
    done
    say "building in $BUILD (${targets[*]})"
    local conf=(-DHERD_WITH_NCCL=ON -DHERD_BUILD_BENCH=OFF
        -DCMAKE_BUILD_TYPE=Release)
    # An existing build directory keeps its configuration.
    [ -e "$BUILD/CMakeCache.txt" ] && conf=()
    if ! cmake -S "$ROOT" -B "$BUILD" "${conf[@]}" >"$OUT/build.log" 2>&1 ||
        ! cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" \
            >>"$OUT/build.log" 2>&1; then
        tail -20 "$OUT/build.log" >&2
        fail "build failed (full log: $OUT/build.log)" 4
    fi
}

pack() {
    local dest=$1
    OUT=${HERD_GPU_OUT:-$ROOT/out/gpu-check}
    mkdir -p "$OUT" "$dest/cli" "$dest/tests" "$dest/lib" ||
        fail "cannot create $dest" 2
    build_here
    cp "$HERD" "$dest/cli/" || fail "copy failed" 4
    local t lib
    for t in "$BUILD"/tests/gpu_*; do
        [ -x "$t" ] && cp "$t" "$dest/tests/"
    done
    # Everything but the C runtime, CUDA driver and NCCL (the GPU
    # machine's own must match its driver).
    for lib in $(ldd "$HERD" "$dest"/tests/* 2>/dev/null |
        awk '/=> \//{print $3}' | sort -u); do
        case $(basename "$lib") in
        libc.so* | libm.so* | libpthread* | libdl.so* | librt.so* | \
            ld-linux* | libgcc_s* | libstdc++* | libcuda.so* | libnccl*) ;;
        *) cp -L "$lib" "$dest/lib/" ;;
        esac
    done
    say "packed $dest ($(du -sh "$dest" | cut -f1)); on the GPU machine:"
    say "  HERD_PREBUILT=$dest scripts/gpu-check.sh"
}

# ---- GPU and NCCL ----

gpu_count() {
    local n=0 d
    if command -v nvidia-smi >/dev/null 2>&1; then
        n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    else
        for d in /dev/nvidia[0-9]*; do
            [ -e "$d" ] && n=$((n + 1))
        done
    fi
    echo "${n:-0}"
}

# NCCL's version as loaded by herd (its library's embedded string), else
# the header's.
nccl_version() {
    local lib v h
    lib=$(ldd "$HERD" 2>/dev/null | awk '/libnccl/{print $3}' | head -1)
    if [ -n "$lib" ] && [ -r "$lib" ]; then
        v=$(strings "$lib" 2>/dev/null |
            grep -oE 'NCCL version [0-9]+\.[0-9]+\.[0-9]+' | head -1 |
            awk '{print $3}')
    fi
    if [ -z "${v:-}" ]; then
        for h in /usr/local/cuda/include/nccl.h /usr/local/include/nccl.h \
            /usr/include/nccl.h; do
            [ -r "$h" ] || continue
            v=$(awk '/define NCCL_MAJOR/{a=$3} /define NCCL_MINOR/{b=$3}
                     /define NCCL_PATCH/{c=$3} END{if(a!="")print a"."b"."c}' "$h")
            [ -n "$v" ] && break
        done
    fi
    echo "${v:-unknown}"
}

# 1 when version $1 >= 2.30
multi_rank_ok() {
    local maj min
    maj=$(echo "$1" | cut -d. -f1)
    min=$(echo "$1" | cut -d. -f2)
    case $maj$min in *[!0-9]* | "") return 1 ;; esac
    [ "$maj" -gt 2 ] || { [ "$maj" -eq 2 ] && [ "$min" -ge 30 ]; }
}

probe_ranks() { # can N ranks run a collective here?
    budgeted 90 "$HERD" launch --standalone --nproc-per-node "$1" --quiet \
        -- "$HERD" perf --engine "$ENGINE" -b 8 -e 8 -n 1 -w 0 \
        >"$OUT/probe-$1.log" 2>&1
}

choose_ranks() {
    local ngpu=$1 n
    if [ -n "${HERD_GPU_RANKS:-}" ]; then
        RANKS=$HERD_GPU_RANKS
        RANKS_NOTE="forced by HERD_GPU_RANKS"
        return
    fi
    if [ "$ENGINE" = tcp ]; then
        RANKS=2
        RANKS_NOTE="tcp rehearsal"
        return
    fi
    if [ "$ngpu" -ge 2 ]; then
        RANKS=$((ngpu < 4 ? ngpu : 4))
        RANKS_NOTE="one rank per GPU"
        return
    fi
    RANKS=1
    RANKS_NOTE="NCCL $NCCL_VER < 2.30: one rank per GPU"
    if multi_rank_ok "$NCCL_VER"; then
        export NCCL_MULTI_RANK_GPU_ENABLE=1
        for n in 4 2; do
            if probe_ranks "$n"; then
                RANKS=$n
                RANKS_NOTE="NCCL $NCCL_VER, NCCL_MULTI_RANK_GPU_ENABLE=1"
                return
            fi
        done
        RANKS_NOTE="NCCL $NCCL_VER refused several ranks on one GPU"
    fi
}

# ---- checks ----

run_gpu_tests() {
    local t rc n=0 bad=0 skip=0
    for t in "$BUILD"/tests/gpu_*; do
        [ -x "$t" ] || continue
        n=$((n + 1))
        budgeted 120 env HERD_BINARY="$HERD" HERD_SOURCE_DIR="$ROOT" \
            "$t" >"$OUT/$(basename "$t").log" 2>&1
        rc=$?
        case $rc in
        0) say "$(basename "$t"): passed" ;;
        77)
            say "$(basename "$t"): skipped (no usable GPU)"
            skip=$((skip + 1))
            ;;
        *)
            say "$(basename "$t"): FAILED ($rc), see $OUT/$(basename "$t").log"
            bad=$((bad + 1))
            ;;
        esac
    done
    [ "$n" -gt 0 ] || say "no gpu test binaries in $BUILD/tests"
    NOTES+=("gpu tests: $n run, $skip skipped, $bad failed (logs: $OUT/gpu_*.log)")
    [ "$skip" -eq 0 ] || FAILED=1 # on a GPU machine nothing may skip
    [ "$bad" -eq 0 ] || FAILED=1
}

# Last data row of an nccl-tests table: "time busbw" of the largest size,
# and the time of the smallest.
table_stats() {
    awk '!/^#/ && NF >= 9 && $1 ~ /^[0-9]+$/ {
             if (first == "") first = $6; last_t = $6; last_b = $8; size = $1 }
         END { if (first == "") print "- - - -";
               else print first, size, last_t, last_b }' "$1"
}

# Measured and simulated tables side by side, by size (TSV rows).
perf_join() { # collective measured simulated
    awk -v c="$1" '!/^#/ && NF >= 9 && $1 ~ /^[0-9]+$/ {
            if (FILENAME == ARGV[1]) { t[$1] = $6; b[$1] = $8; next }
            if ($1 in t)
                printf "%s\t%s\t%s\t%s\t%s\t%s\n", c, $1, t[$1], $6, b[$1], $8
        }' "$2" "$3"
}

perf_one() { # collective
    local c=$1
    local mfile=$OUT/perf-$c-$ENGINE.txt sfile=$OUT/perf-$c-sim.txt
    local flags=(--coll "$c" -b 8 -e "$MAXBYTES" -f 4 -n 5 -w 1)
    if ! budgeted 150 "$HERD" launch --standalone --nproc-per-node "$RANKS" \
        --quiet -- "$HERD" perf --engine "$ENGINE" "${flags[@]}" >"$mfile" 2>&1; then
        say "perf $c on $ENGINE FAILED (see $mfile)"
        NOTES+=("perf $c on $ENGINE: FAILED, see $mfile")
        FAILED=1
    fi
    budgeted 60 "$HERD" perf --engine sim --algo nccl --nodes 1 \
        --gpus-per-node "$RANKS" "${flags[@]}" >"$sfile" 2>&1 ||
        say "perf $c on sim failed (see $sfile)"
    perf_join "$c" "$mfile" "$sfile" >>"$OUT/perf-compare.tsv"
    local meas pred
    read -r -a meas <<<"$(table_stats "$mfile")"
    read -r -a pred <<<"$(table_stats "$sfile")"
    ROWS+=("$(printf '%-15s %5s %12s %12s %12s %12s' "$c" "$RANKS" \
        "${meas[0]}" "${pred[0]}" "${meas[3]}" "${pred[3]}")")
}

ddp_replay() {
    local t=$OUT/ddp-trace.json sc=$OUT/sim-scenario.yaml line
    if ! budgeted 60 "$HERD" ddp run --set cluster.nodes=1 \
        --set "cluster.gpus_per_node=$RANKS" --set "ddp.steps=$DDP_STEPS" \
        --trace "$t" --quiet >"$OUT/ddp-run.log" 2>&1; then
        say "herd ddp run failed (see $OUT/ddp-run.log)"
        NOTES+=("ddp replay: herd ddp run FAILED, see $OUT/ddp-run.log")
        FAILED=1
        return
    fi
    rm -rf "$OUT/replay-$ENGINE" "$OUT/replay-sim" "$OUT/compare"
    if ! budgeted 150 "$HERD" launch --standalone --nproc-per-node "$RANKS" \
        --quiet -- "$HERD" replay "$t" --engine "$ENGINE" \
        -o "$OUT/replay-$ENGINE" --no-plots >"$OUT/replay-$ENGINE.log" 2>&1; then
        say "replay on $ENGINE FAILED (see $OUT/replay-$ENGINE.log)"
        NOTES+=("ddp replay on $ENGINE: FAILED, see $OUT/replay-$ENGINE.log")
        FAILED=1
        return
    fi
    printf 'name: gpu-check\ncluster:\n  nodes: 1\n  gpus_per_node: %s\n%s\n' \
        "$RANKS" "collectives:
  nccl_model: true" >"$sc"
    budgeted 60 "$HERD" replay "$t" --engine sim --scenario "$sc" \
        -o "$OUT/replay-sim" --no-plots >"$OUT/replay-sim.log" 2>&1 ||
        say "replay on sim failed (see $OUT/replay-sim.log)"
    budgeted 60 "$HERD" compare "$OUT/replay-sim/timeline.json" \
        "$OUT/replay-$ENGINE"/timeline-rank*.json -o "$OUT/compare" \
        --no-plots >"$OUT/compare.txt" 2>&1 ||
        say "herd compare failed (see $OUT/compare.txt)"
    line=$(grep -m1 '^end to end' "$OUT/compare.txt" || echo "no comparison")
    NOTES+=("ddp replay (spin kernels), $RANKS rank(s), sim vs $ENGINE: $line")
}

summary() {
    {
        echo
        echo "==== herd gpu-check summary ($(date -u +%FT%TZ)) ===="
        echo "engine $ENGINE; NCCL $NCCL_VER; ranks $RANKS ($RANKS_NOTE)"
        echo "GPU: $GPU_NAME"
        echo "(smallest size: time in us; largest size ($MAXBYTES): busbw in GB/s)"
        printf '%-15s %5s %12s %12s %12s %12s\n' collective ranks \
            "t meas" "t sim" "busbw meas" "busbw sim"
        printf '%s\n' "${ROWS[@]}"
        printf '%s\n' "${NOTES[@]}"
        echo "results: $OUT ($(left)s of the ${BUDGET}s budget left)"
        [ "$FAILED" -eq 0 ] && echo "verdict: OK" || echo "verdict: FAILED"
    } | tee "$OUT/summary.txt"
}

main() {
    while [ $# -gt 0 ]; do
        case $1 in
        --out)
            [ $# -ge 2 ] || fail "--out needs a directory" 2
            OUT=$2
            shift 2
            ;;
        --dry-run)
            # everything but the device calls: the same steps on CPUs
            ENGINE=tcp
            shift
            ;;
        --engine)
            [ $# -ge 2 ] || fail "--engine needs nccl or tcp" 2
            case $2 in nccl | tcp) ENGINE=$2 ;; *) fail "--engine: '$2' is not nccl or tcp" 2 ;; esac
            shift 2
            ;;
        --pack)
            [ $# -ge 2 ] || fail "--pack needs a directory" 2
            pack "$2"
            exit 0
            ;;
        --check-deps)
            check_deps
            exit $?
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            usage >&2
            fail "unknown argument '$1'" 2
            ;;
        esac
    done
    local ngpu=0
    GPU_NAME="none (tcp rehearsal)"
    if [ "$ENGINE" = nccl ]; then
        ngpu=$(gpu_count)
        if [ "$ngpu" -lt 1 ]; then
            fail "no GPU found (nvidia-smi lists none, no /dev/nvidia*): this check needs a CUDA GPU (use --engine tcp to rehearse on CPUs)" 3
        fi
        GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null |
            head -1)
        GPU_NAME="${ngpu} x ${GPU_NAME:-unknown}"
    fi
    mkdir -p "$OUT" || fail "cannot create $OUT" 2
    if [ -n "${HERD_PREBUILT:-}" ]; then use_prebuilt; else build_here; fi
    SECONDS=0 # the budget counts from here
    [ "$ENGINE" = nccl ] && NCCL_VER=$(nccl_version)
    say "NCCL $NCCL_VER; $ngpu GPU(s)"
    choose_ranks "$ngpu"
    say "ranks: $RANKS ($RANKS_NOTE)"
    [ "$ENGINE" = nccl ] && run_gpu_tests
    local c
    printf 'collective\tbytes\ttime_meas_us\ttime_sim_us\tbusbw_meas\tbusbw_sim\n' \
        >"$OUT/perf-compare.tsv"
    for c in all_reduce all_gather reduce_scatter broadcast; do
        perf_one "$c"
    done
    NOTES+=("perf, measured vs simulated per size: $OUT/perf-compare.tsv")
    ddp_replay
    summary
    [ "$FAILED" -eq 0 ]
}

# Sourcing (for tests of the functions) does not run the check.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
