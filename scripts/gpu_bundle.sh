#!/usr/bin/env bash
# Carries a CUDA build of hpdl, its tests and the Debian libraries they need to a GPU machine
# that has NVIDIA's driver and CUDA runtime but not Debian's OpenMPI, HDF5 or oneDNN.
#   pack   (here, after scripts/setup.sh built build/ with the CUDA backend): writes
#          .gpu/tree.tar.xz (build/ without objects, the UCI HAR subset's HDF5 file) and
#          .gpu/system.tar.xz (OpenMPI: its launcher, plugins, help texts and settings;
#          Fashion-MNIST's Debian files; every shared library these programs link with, except
#          the C and C++ runtimes and CUDA's own libraries, which the GPU machine has).
#   unpack (there, as root, from the repository root): puts build/ and data/ here, adds the
#          libraries and OpenMPI at their Debian paths without overwriting a file the machine
#          already has, converts the data (scripts/prepare_data.sh), and links /work/main to
#          this folder when they differ (CTest's files name build/ by its absolute path).
#          Then: source .gpu/env.sh (CUDA's libraries on LD_LIBRARY_PATH, OpenMPI's root
#          permission); scripts/gpu_checks.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case $mode in
  pack)
    [ -x build/hpdl ] || { echo "gpu_bundle: no build/hpdl (run scripts/setup.sh first)" >&2; exit 2; }
    ldd build/hpdl | grep -q libcublas ||
      { echo "gpu_bundle: build/hpdl was built without the CUDA backend" >&2; exit 2; }
    mkdir -p .gpu
    list=$(mktemp)
    trap 'rm -f "$list"' EXIT
    ompi=/usr/lib/x86_64-linux-gnu/openmpi
    pmix=/usr/lib/x86_64-linux-gnu/pmix2
    # Every program and plugin that will run there, then the libraries they load.
    programs=$(find build -type f -perm -u+x ! -path '*/CMakeFiles/*')
    plugins=$(find "$ompi" "$pmix" -name '*.so*' -type f)
    # (Scripts among the programs, such as the Lmod test's job files, have no libraries.)
    for f in $programs $plugins /usr/bin/orted /usr/bin/orterun; do
      { ldd "$f" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
    done | sort -u |
      grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux-x86-64|libcuda|libcudart|libcublas|libcublasLt|libnvToolsExt)\.so' \
        >"$list"
    {
      cat "$list"
      echo "$ompi" "$pmix" /usr/share/openmpi /usr/share/pmix /etc/openmpi /usr/bin/orted \
        /usr/bin/orterun /usr/share/datasets/fashion-mnist | tr ' ' '\n'
    } | while read -r p; do [ -e "$p" ] && echo "$p"; done >"$list.abs"
    # The build without objects, static libraries or CMake's scratch; the HAR subset as
    # prepared (its source is in ../shared, which does not travel).
    # Nor what earlier test runs wrote there (their outputs, logs, checkpoints, Slurm's and
    # Lmod's test trees).
    find build \( -path '*/CMakeFiles' -o -path '*/outputs' -o -path '*/out' \
      -o -path build/tests/slurm -o -path build/tests/lmod -o -path build/Testing \) -prune \
      -o -type f ! -name '*.o' ! -name '*.a' ! -name 'hpdl_bench_*' ! -name compile_commands.json \
      ! -name '*.log' ! -name 'model.h5' ! -name 'checkpoint*.h5' ! -name metrics.csv -print \
      >"$list.tree"
    [ ! -f data/uci-har-subset.h5 ] || echo data/uci-har-subset.h5 >>"$list.tree"
    # (A call to the GPU machine carries at most 64 MiB: static libraries and headers stay.)
    export XZ_OPT='-9 -T0'
    tar -cJf .gpu/system.tar.xz --dereference -P --exclude='*.a' --exclude='*/include' -T "$list.abs"
    tar -cJf .gpu/tree.tar.xz -T "$list.tree"
    rm -f "$list.abs" "$list.tree"
    cat >.gpu/env.sh <<'EOF'
# Sourced there after "scripts/gpu_bundle.sh unpack": CUDA's libraries as the machine has them.
cuda_libs=/usr/local/cuda/lib64
[ -e $cuda_libs/libcublasLt.so.13 ] ||
  cuda_libs=$(dirname "$(find / -xdev -name 'libcublasLt.so.13*' -print -quit 2>/dev/null)")
export LD_LIBRARY_PATH=$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF
    du -ch .gpu/*.tar.xz | tail -1
    ;;
  unpack)
    [ -f .gpu/system.tar.xz ] || { echo "gpu_bundle: no .gpu/system.tar.xz (pack it first)" >&2; exit 2; }
    unxz() {  # with xz, or with Python's lzma where the machine has no xz
      if command -v xz >/dev/null; then xz -dc "$1"; else
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
      fi
    }
    unxz .gpu/tree.tar.xz | tar -xf -
    # Debian's files at their own paths, never replacing one the machine has.
    unxz .gpu/system.tar.xz | tar -xf - -P --skip-old-files
    for l in mpirun mpiexec; do [ -e /usr/bin/$l ] || ln -s orterun /usr/bin/$l; done
    # CTest's files call CMake by the path it had here.
    [ -e /usr/bin/cmake ] || ln -s "$(command -v cmake)" /usr/bin/cmake
    ldconfig
    scripts/prepare_data.sh
    if [ "$(pwd -P)" != "$(cd /work/main 2>/dev/null && pwd -P)" ]; then
      [ -e /work/main ] && { echo "gpu_bundle: /work/main exists and is not this folder" >&2; exit 2; }
      mkdir -p /work
      ln -s "$(pwd -P)" /work/main
    fi
    ;;
  *)
    echo "gpu_bundle: say pack (here) or unpack (on the GPU machine)" >&2
    exit 2
    ;;
esac
