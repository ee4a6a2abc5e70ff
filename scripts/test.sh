#!/usr/bin/env bash
# Set up and build (scripts/setup.sh), then run every test with CTest: unit and gradient
# checks, backend parity, multi-rank equivalence under mpirun -np 1/2/4, bad-input tests.
# A skipped test is listed with its one-line reason, and CTest's summary line ("N% tests
# passed, ...") is the last line printed. The exit status is CTest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
set +e
ctest -j2 --output-on-failure --timeout 600 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
# CTest does not show a skipped test's output: print each one's SKIP line from its log.
if grep -q "(Skipped)" ctest.log; then
  echo "Skipped tests and why:"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3; next }
       /^SKIP: / { print "  " name ": " substr($0, 7); next }
       /: Skipped$/ { reason = 1; next }   # GTEST_SKIP: the reason is the next line
       reason { print "  " name ": " $0; reason = 0 }' Testing/Temporary/LastTest.log | sort -u
  grep -E "^[0-9]+% tests passed" ctest.log | tail -n 1
fi
# A failed test's own lines sit in the middle of a long log: repeat each failed check (a
# GoogleTest failure and the lines that say why) just above the summary line.
if [ "$rc" != 0 ] && grep -q ": Failure$" Testing/Temporary/LastTest.log; then
  echo "Failed checks:"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3; next }
       /: Failure$/ { print "  " name ": " $0; left = 6; next }
       left > 0 && /^\[  FAILED  \]/ { left = 0; next }
       left > 0 { print "    " $0; left-- }' Testing/Temporary/LastTest.log | head -n 80
  grep -E "^[0-9]+% tests passed" ctest.log | tail -n 1
fi
exit "$rc"
