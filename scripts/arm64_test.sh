#!/usr/bin/env bash
# hpdl's tests on an emulated Raspberry Pi: the cross-built build-arm64/ (scripts/arm64_build.sh)
# run with CTest inside the arm64 root of scripts/arm64_system.sh (qemu-user, Cortex-A72).
#   bash scripts/arm64_test.sh          what CI runs: the unit, gradient and parity tests,
#                                       multi-rank equivalence (sync np 1/2/4, the parameter
#                                       server), two bad-input tests; then the Pi-cluster job on
#                                       4 emulated arm64 hosts against the same job on x86-64
#                                       (tests/jobs/pi_cluster_arm64.sh; the x86-64 hpdl is
#                                       built into build-x86/)
#   bash scripts/arm64_test.sh --full   every test CTest has (hours under emulation)
# As in scripts/test.sh, CTest's summary line is the last line CTest prints; the exit status
# is non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-ci}
case $mode in ci | --full) ;; *) echo "arm64_test: unknown option '$mode' (--full)" >&2; exit 2 ;; esac
[ -x build-arm64/hpdl ] || { echo "arm64_test: build-arm64/hpdl is missing (bash scripts/arm64_build.sh)" >&2; exit 2; }

# The subset: what depends on the CPU (kernels, rounding, the BLAS path, MPI under emulation).
# The bad-input tests check the same code on any CPU (70 of them took 320 s here); two that
# read HDF5 files stay.
subset=()
[ "$mode" = --full ] || subset=(-R '\.|equivalence|gemm|low_communication_np|make_fixtures|^check_|bad_input_(truncated_data_file|validation_file_wrong_shape)$')
t0=$SECONDS
echo "== tests on emulated arm64 (${HPDL_ARM64_CPU:-cortex-a72})"
rc=0
bash scripts/arm64_system.sh "cd build-arm64 && ctest -j2 --output-on-failure --timeout 600 ${subset[*]@Q}" || rc=$?
echo "== CTest on emulated arm64: $((SECONDS - t0)) s"
[ "$mode" = ci ] || exit "$rc"

t1=$SECONDS
echo "== the Pi-cluster job on 4 emulated arm64 hosts (and on 4 x86-64 hosts)"
# Its x86-64 side needs hpdl alone: built without CUDA, tests or benchmarks, each library in
# batches (HPDL_UNITY), into build-x86/ (about 3 minutes, against 10 for setup.sh's build/).
bash scripts/setup.sh --packages-only
source scripts/cmake_steps.sh
cmake_configure arm64_test build-x86 -S . -B build-x86 -DCMAKE_BUILD_TYPE=Release -DHPDL_CUDA=OFF \
  -DHPDL_TESTS=OFF -DHPDL_BENCHMARKS=OFF -DHPDL_UNITY=ON
cmake_compile arm64_test build-x86 --target hpdl
HPDL=build-x86/hpdl bash scripts/prepare_data.sh >/dev/null
job=0
bash tests/jobs/pi_cluster_arm64.sh "$PWD" "$PWD/build-x86/hpdl" "$PWD/build-arm64/hpdl" "$PWD/build-arm64/pi_job" || job=$?
echo "== Pi-cluster job: $((SECONDS - t1)) s ($([ $job = 0 ] && echo passed || echo FAILED))"
[ "$rc" = 0 ] && exit "$job" || exit "$rc"
