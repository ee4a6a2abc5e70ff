#!/usr/bin/env bash
# One-time set-up on Debian 12 as root, safe to repeat: installs the Debian packages hpdl
# needs (skipped when present), configures and builds into build/, and converts
# Fashion-MNIST (Debian's dataset-fashion-mnist) to HDF5 under data/. The same on x86-64
# and arm64 (Raspberry Pi OS 64-bit).
#   --packages-only   install the packages and stop (scripts/arm64_system.sh's root)
#   --list-packages   print the package list and stop
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
case $mode in
  all | --packages-only | --list-packages) ;;
  *) echo "setup: unknown option '$mode' (--packages-only, --list-packages)" >&2; exit 2 ;;
esac

packages=(build-essential cmake git pkg-config xz-utils procps
  openmpi-bin libopenmpi-dev libdnnl-dev ocl-icd-opencl-dev libhdf5-dev zlib1g-dev
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev
  dataset-fashion-mnist python3 python3-matplotlib python3-h5py
  slurm-wlm munge lmod clang clang-format libclang-rt-14-dev iproute2 libopenblas-openmp-dev
  libjs-chart.js)
# The report pages' test opens them in a real browser (tests/report/browser_check.py). Not in
# the emulated Pi's root: its tests do not open pages, and chromium under qemu costs minutes.
[ "$(dpkg --print-architecture)" != amd64 ] || packages+=(chromium chromium-driver python3-selenium python3-pil)
if [ "$mode" = --list-packages ]; then echo "${packages[*]}"; exit 0; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$mode" != --packages-only ] || exit 0

# A failed configure or compile stops here with the tool's own error lines; the full log
# stays in build/. (No stale binary is ever tested: the build must succeed.)
# The CUDA backend is built when NVIDIA's CUDA toolkit is there (nvcc on PATH, or the usual
# /usr/local/cuda); it is not a Debian package and is not installed here. No GPU is needed
# to build it.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
echo "== building hpdl (build/; CUDA backend: $(command -v nvcc >/dev/null && echo "with $(command -v nvcc)" || echo "no nvcc, not built"))"
source scripts/cmake_steps.sh
cmake_configure setup build -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake_compile setup build
test -x build/hpdl

scripts/prepare_data.sh
