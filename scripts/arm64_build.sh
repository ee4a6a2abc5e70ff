#!/usr/bin/env bash
# The arm64 cross-build (Raspberry Pi OS 64-bit): hpdl and its tests compiled here with
# Debian's cross compiler (crossbuild-essential-arm64, installed when missing) against the
# arm64 root of scripts/arm64_system.sh as the sysroot, into build-arm64/. Tuned for the
# Pi 4's Cortex-A72; no CUDA, no Google Benchmark micro-benchmarks. A compiler warning
# fails the build (the x86-64 build has none either). Run the tests with
# scripts/arm64_test.sh.
#   bash scripts/arm64_build.sh            (as root: the root is made on first use)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/debian_root.sh
source scripts/cmake_steps.sh

root=$(bash scripts/arm64_system.sh --root)
root_install_tools aarch64-linux-gnu-g++:crossbuild-essential-arm64
t0=$SECONDS
echo "== cross-building hpdl for arm64 (build-arm64/, sysroot $root)"
cmake_configure arm64_build build-arm64 -S . -B build-arm64 --toolchain cmake/aarch64-linux-gnu.cmake \
  -DHPDL_ARM64_ROOT="$root" -DCMAKE_BUILD_TYPE=Release -DHPDL_NATIVE=OFF -DHPDL_CUDA=OFF \
  -DHPDL_BENCHMARKS=OFF -DHPDL_UNITY=ON
cmake_compile arm64_build build-arm64
if grep -q 'warning:' build-arm64/build.log; then
  grep -A3 'warning:' build-arm64/build.log | head -40 >&2
  echo "arm64_build: the arm64 build has compiler warnings (full log: build-arm64/build.log)" >&2
  exit 1
fi
echo "== built in $((SECONDS - t0)) s: build-arm64/hpdl for $(aarch64-linux-gnu-readelf -h build-arm64/hpdl | sed -n 's/^ *Machine: *//p')"
