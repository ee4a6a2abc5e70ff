#!/usr/bin/env bash
# The ASan + UBSan build (CMake preset "sanitize", build-sanitize/) and its test run: the
# unit and gradient tests, and the multi-rank sync and parameter-server tests under mpirun.
# A report from either sanitizer fails the test that meets it; leaks are checked in the
# single-process tests (under mpirun OpenMPI's unloaded plugins make them unattributable).
# The preset compiles at -O1 with line tables only (-g1): the build is nearly all of this
# script's time, and reports still name file and line (docs/testing.md has the figures).
# Usage: bash scripts/sanitize.sh     (after scripts/setup.sh has installed the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-sanitize
source scripts/cmake_steps.sh
cmake_configure sanitize $build --preset sanitize
cmake_compile sanitize $build --target hpdl_unit_tests hpdl_mpi_tests hpdl_async_tests
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd $build
# Every GoogleTest case (Suite.Name, Backends/...), with leak checking; then the mpirun
# equivalence tests without it: OpenMPI unloads its plugins before exit, so their
# allocations cannot be attributed (or suppressed) and would drown hpdl's.
rc=0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 ctest -j2 --output-on-failure --timeout 900 \
  -R '^([A-Za-z]+\.|Backends/)' >ctest-unit.log 2>&1 || rc=1
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ctest -j2 --output-on-failure --timeout 900 \
  -R 'equivalence_np[234]$' >ctest-mpi.log 2>&1 || rc=1
for log in ctest-unit.log ctest-mpi.log; do
  grep -E "ERROR: (Address|Leak)Sanitizer|runtime error|SUMMARY" $log | head -10 || true
  echo "sanitize ($log): $(grep -E "tests passed" $log)"
done
exit $rc
