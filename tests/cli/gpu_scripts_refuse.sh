#!/usr/bin/env bash
# The GPU-machine scripts refuse what they cannot do with one line and exit 2, touching
# nothing: gpu_bundle.sh without a mode, pack without a build or with one built without
# CUDA, unpack without a bundle; gpu_checks.sh without LOGDIR, without an unpacked bundle,
# or with an unknown step. They run in a scratch copy of the repository's layout, so unpack
# can reach nothing outside it. Usage: gpu_scripts_refuse.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts"
cp "$src/scripts/gpu_bundle.sh" "$src/scripts/gpu_checks.sh" "$tmp/scripts/"
source "$(dirname "$0")/script_refusals.sh"
cd "$tmp"
expect "say pack .* or unpack" bash scripts/gpu_bundle.sh
expect "say pack .* or unpack" bash scripts/gpu_bundle.sh install
expect "no build/hpdl" bash scripts/gpu_bundle.sh pack
mkdir build && cp /bin/true build/hpdl
expect "built without the CUDA backend" bash scripts/gpu_bundle.sh pack
expect "no .gpu/system.tar.xz" bash scripts/gpu_bundle.sh unpack
expect "usage: gpu_checks.sh LOGDIR" bash scripts/gpu_checks.sh
expect "no .gpu/env.sh" bash scripts/gpu_checks.sh logs
mkdir .gpu && : >.gpu/env.sh
STEPS="cuda_tests bogus" expect "unknown step 'bogus'" bash scripts/gpu_checks.sh logs
[ ! -e .gpu/tree.tar.xz ] && [ ! -e logs ] || { echo "FAIL: a refused call wrote files"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo PASS
exit $((fails > 0))
