#!/usr/bin/env bash
# hpdl's tests on an emulated Raspberry Pi: the cross-built build-arm64/ (scripts/arm64_build.sh)
# run with CTest inside the arm64 root of scripts/arm64_system.sh (qemu-user, Cortex-A72).
#   bash scripts/arm64_test.sh          what CI runs: the unit, gradient and parity tests,
#                                       multi-rank equivalence (sync np 1/2/4, the parameter
#                                       server), the bad-input tests; then the Pi-cluster job on
#                                       4 emulated arm64 hosts against the same job on x86-64
#                                       (tests/jobs/pi_cluster_arm64.sh; it needs this machine's
#                                       own build/, which scripts/setup.sh makes)
#   bash scripts/arm64_test.sh --full   every test CTest has (hours under emulation)
# As in scripts/test.sh, CTest's summary line is the last line CTest prints; the exit status
# is non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-ci}
case $mode in ci | --full) ;; *) echo "arm64_test: unknown option '$mode' (--full)" >&2; exit 2 ;; esac
[ -x build-arm64/hpdl ] || { echo "arm64_test: build-arm64/hpdl is missing (bash scripts/arm64_build.sh)" >&2; exit 2; }

subset=()
[ "$mode" = --full ] || subset=(-R '\.|equivalence|gemm|low_communication|make_fixtures|bad_input|^check_')
t0=$SECONDS
echo "== tests on emulated arm64 (${HPDL_ARM64_CPU:-cortex-a72})"
rc=0
bash scripts/arm64_system.sh "cd build-arm64 && ctest -j2 --output-on-failure --timeout 600 ${subset[*]@Q}" || rc=$?
echo "== CTest on emulated arm64: $((SECONDS - t0)) s"
[ "$mode" = ci ] || exit "$rc"

t1=$SECONDS
echo "== the Pi-cluster job on 4 emulated arm64 hosts (and on 4 x86-64 hosts)"
bash scripts/setup.sh >/dev/null
job=0
bash tests/jobs/pi_cluster_arm64.sh "$PWD" "$PWD/build/hpdl" "$PWD/build-arm64/hpdl" "$PWD/build-arm64/pi_job" || job=$?
echo "== Pi-cluster job: $((SECONDS - t1)) s ($([ $job = 0 ] && echo passed || echo FAILED))"
[ "$rc" = 0 ] && exit "$job" || exit "$rc"
