#!/usr/bin/env bash
# The main job on its built-in default: set up, then synchronous data-parallel training of
# LeNet on Fashion-MNIST with 2 MPI ranks (the config's epochs: 10). Extra arguments go to `hpdl train`
# (e.g. --set train.epochs=1). Re-running replaces outputs/lenet_fashion_mnist/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ranks=2
threads=$(( $(nproc) / ranks )); [ "$threads" -ge 1 ] || threads=1
# A SIGTERM or Ctrl-C becomes a stop with a checkpoint (exit 75): see jobs/mpirun_stop.sh.
exec bash jobs/mpirun_stop.sh -np $ranks --oversubscribe --bind-to none -x OMP_NUM_THREADS=$threads \
  build/hpdl train inputs/lenet_fashion_mnist.toml --overwrite "$@"
