# Sourced by the side-by-side benchmarks (run from the repository root): builds hpdl and
# its data (scripts/setup.sh), installs the PyTorch peer's Debian packages if missing, and
# sets what both runners need: OPENBLAS (preloaded so PyTorch does not use the slow
# reference BLAS), cores (total threads for each side) and out (a scratch run directory).
bash scripts/setup.sh >/dev/null
for p in python3-torch libopenblas0-openmp; do
  dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $p >/dev/null
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OPENBLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
cores=$(nproc)
out=$(mktemp -d)
