#!/usr/bin/env bash
# Bad-input check: runs CMD with a time limit and passes only if it exits non-zero before
# the limit, prints exactly one "hpdl: error:" line, and that line matches REGEX; the job
# ends the agreed way (no MPI_Abort of the job) and no line shows hpdl's source paths.
# Usage: expect_error.sh REGEX CMD [ARGS...]
set -u
regex=$1; shift
out=$(timeout -k 5 60 "$@" 2>&1); rc=$?
errors=$(printf '%s\n' "$out" | grep -c 'hpdl: error:')
line=$(printf '%s\n' "$out" | grep 'hpdl: error:' | head -1)
echo "exit $rc: $line"
if [ "$rc" -eq 0 ]; then echo "FAIL: exited 0"; exit 1; fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL: still running after 60 s"; exit 1; fi
if [ "$errors" -ne 1 ]; then printf 'FAIL: %s "hpdl: error:" lines\n%s\n' "$errors" "$out"; exit 1; fi
if printf '%s\n' "$out" | grep -q 'MPI_ABORT was invoked'; then printf 'FAIL: the job was aborted (MPI_Abort)\n%s\n' "$out"; exit 1; fi
if printf '%s\n' "$out" | grep -Eq 'src/[a-z_/]+\.(cpp|hpp|cu):[0-9]+'; then printf 'FAIL: a source path is shown\n%s\n' "$out"; exit 1; fi
if ! printf '%s\n' "$line" | grep -Eq -- "$regex"; then printf 'FAIL: error line does not match /%s/\n%s\n' "$regex" "$out"; exit 1; fi
# mpirun returns only once every rank has ended, so a return within the limit means no rank
# was left running.
exit 0
