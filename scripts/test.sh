#!/usr/bin/env bash
# Set up and build (scripts/setup.sh), then run every test with CTest: unit and gradient
# checks, backend parity, multi-rank equivalence under mpirun -np 1/2/4, bad-input tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
ctest -j2 --output-on-failure --timeout 600
