#!/bin/sh
# scripts/setup.sh - make sure the Debian packages herd needs are present.
# As root, installs the missing ones with apt-get; otherwise prints the
# exact apt-get line and fails.
set -eu
PKGS="cmake make gcc pkg-config libevent-dev check gnuplot-nox libfyaml-dev libjansson-dev zlib1g-dev iproute2 python3-torch libopenmpi-dev openmpi-bin"
missing=""
# `setup.sh --ci` adds what CI and developers need beyond a user's build:
# Debian's clang (the Clang build, libFuzzer targets) and git (the
# stand-alone clone).
if [ "${1:-}" = "--ci" ]; then
    PKGS="$PKGS clang git"
fi
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "herd: missing Debian packages:$missing" >&2
    echo "run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "herd: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends $missing
