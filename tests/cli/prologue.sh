# Sourced first by the command-line tests that CTest calls as `SCRIPT MPIRUN HPDL FIXTURES`
# (tests/CMakeLists.txt's cli_script): stop on an error or an unset variable, and name the
# three arguments: mpirun (with the options every test needs), hpdl, fx (the fixtures).
set -eu
mpirun="$1 --oversubscribe --bind-to none" hpdl=$2 fx=$3
