#!/usr/bin/env bash
# The modulefile with real Lmod: `cmake --install` into a fresh prefix, `module use`,
# `module load hpdl`, then `hpdl --version` must be the installed binary and the variables
# must point into the prefix. Usage: modulefile.sh BUILD_DIR WORK_DIR   (exit 77 = skipped)
set -u
build=$1 prefix=$2/prefix
init=/usr/share/lmod/lmod/init/bash
source "$(dirname "$0")/../support/skip.sh"
[ -f "$init" ] || skip "Lmod is not installed ($init missing; apt-get install lmod)"
rm -rf "$2" && mkdir -p "$2"
cmake --install "$build" --prefix "$prefix" >/dev/null || { echo "FAIL: cmake --install"; exit 1; }
# Lmod's init script reads unset variables.
set +u
source "$init"
module use "$prefix/modulefiles"
module load hpdl || { echo "FAIL: module load hpdl"; exit 1; }
set -u
[ "$(command -v hpdl)" = "$prefix/bin/hpdl" ] || { echo "FAIL: hpdl on PATH is $(command -v hpdl)"; exit 1; }
version=$(hpdl --version) || { echo "FAIL: hpdl --version"; exit 1; }
echo "$version" | grep -Eq '^hpdl [0-9]+\.[0-9]+\.[0-9]+ ' || { echo "FAIL: version line '$version'"; exit 1; }
[ -f "$HPDL_JOBS/train.sbatch" ] && [ -f "$HPDL_INPUTS/har_2x2.toml" ] ||
  { echo "FAIL: HPDL_JOBS=$HPDL_JOBS / HPDL_INPUTS=$HPDL_INPUTS"; exit 1; }
module list 2>&1 | grep -q "hpdl/" || { echo "FAIL: module list"; exit 1; }
[ "${OMPI_MCA_odls_base_sigkill_timeout:-}" = 10 ] ||
  { echo "FAIL: the module does not lengthen mpirun's kill grace"; exit 1; }
[ "${OMPI_MCA_oob_tcp_keepalive_time:-}/${OMPI_MCA_oob_tcp_keepalive_intvl:-}/${OMPI_MCA_oob_tcp_keepalive_probes:-}" = 5/2/3 ] ||
  { echo "FAIL: the module does not set mpirun's TCP keepalive (a dead host would go unnoticed)"; exit 1; }
echo "module load hpdl: $version from $prefix/bin (HPDL_JOBS=$HPDL_JOBS)"
module unload hpdl
[ "$(command -v hpdl)" != "$prefix/bin/hpdl" ] || { echo "FAIL: module unload left hpdl on PATH"; exit 1; }
echo "PASS"
