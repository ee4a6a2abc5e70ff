#!/usr/bin/env bash
# Would a newer oneDNN make hpdl faster? LeNet's convolutions and the dense products of the
# presets as oneDNN primitives alone (profiling/onednn_primitives.cpp), built against
# Debian's oneDNN (what hpdl links) and against a release from PyPI (Intel's
# onednn-cpu-gomp wheels; VERSION=2023.2.0 is oneDNN 3.2), run alternately, ms per call side
# by side for each instruction set in ISAS (ONEDNN_MAX_CPU_ISA: ALL, or AVX2 for what an
# AVX2-only server runs) with all cores as OpenMP threads. Needs PyPI once (the wheels are
# kept in outputs/onednn-VERSION).
#   [VERSION=2023.2.0] [ISAS="ALL AVX2"] bash profiling/bench_onednn_versions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-2023.2.0}
isas=${ISAS:-ALL AVX2}
dir=outputs/onednn-$version
if [ ! -d "$dir/include" ]; then
  mkdir -p "$dir/wheels"
  python3 -m pip download --quiet --no-deps -d "$dir/wheels" "onednn-cpu-gomp==$version" \
    "onednn-devel-cpu-gomp==$version" ||
    { echo "bench_onednn_versions: cannot download oneDNN $version from PyPI" >&2; exit 1; }
  for w in "$dir"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dir/unpacked"; done
  mv "$(dirname "$(find "$dir/unpacked" -name dnnl.hpp -path '*/include/dnnl.hpp')")" "$dir/include"
  mv "$(dirname "$(find "$dir/unpacked" -name 'libdnnl.so.*' | head -1)")" "$dir/lib"
  rm -rf "$dir/unpacked"
fi
so=$(basename "$(find "$dir/lib" -name 'libdnnl.so.[0-9]' | head -1)")
g++ -O2 -std=c++17 profiling/onednn_primitives.cpp -ldnnl -fopenmp -o "$dir/debian"
g++ -O2 -std=c++17 -I"$dir/include" profiling/onednn_primitives.cpp -L"$dir/lib" -l:"$so" \
  -Wl,-rpath,"$PWD/$dir/lib" -fopenmp -o "$dir/pypi"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores as OpenMP threads"
for isa in $isas; do
  a=$(ONEDNN_MAX_CPU_ISA=$isa OMP_NUM_THREADS=$(nproc) "$dir/debian")
  b=$(ONEDNN_MAX_CPU_ISA=$isa OMP_NUM_THREADS=$(nproc) "$dir/pypi")
  echo
  echo "Debian: $(head -1 <<<"$a"); PyPI: $(head -1 <<<"$b")"
  printf '%-8s %-28s %10s %10s %8s  %s\n' "ISA" "primitive" "Debian ms" "PyPI ms" "Debian/" \
    "implementations (Debian / PyPI)"
  paste <(tail -n +2 <<<"$a") <(tail -n +2 <<<"$b") | awk -F'\t' -v isa="$isa" '{
    printf "%-8s %-28s %10.4f %10.4f %7.2fx  %s / %s\n", isa, $1, $2, $6, $2 / $6, $3, $7 }'
done
