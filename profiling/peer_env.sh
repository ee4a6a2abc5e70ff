# Sourced by the side-by-side benchmarks (run from the repository root): builds hpdl and its
# data (scripts/setup.sh), makes the PyTorch peer's virtual environment if it is missing or
# its pins changed (PyPI's torch, profiling/peers/requirements.txt; never the system
# Python), and sets what both runners need: peer_py (the peer's Python), cores (total threads
# for each side), out (a scratch run directory) and peer_line (prints the peer's version
# and the BLAS, oneDNN and CPU kernels it reports, for a table's first lines).
# HPDL_PEER_DIR=DIR puts the environment elsewhere (default ~/.cache/hpdl/torch-peer).
bash scripts/setup.sh >/dev/null
peer_dir=${HPDL_PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hpdl/torch-peer}
peer_py=$peer_dir/bin/python
if ! cmp -s profiling/peers/requirements.txt "$peer_dir/requirements.txt"; then
  dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  echo "installing the PyTorch peer into $peer_dir (PyPI, profiling/peers/requirements.txt)" >&2
  rm -rf "$peer_dir"
  /usr/bin/python3 -m venv "$peer_dir"
  "$peer_dir/bin/pip" install -q --disable-pip-version-check -r profiling/peers/requirements.txt >&2
  cp profiling/peers/requirements.txt "$peer_dir/requirements.txt"
fi
peer_line() {
  "$peer_py" - <<'PY'
import re, torch
cfg = torch.__config__.show()
def find(pattern):
    m = re.search(pattern, cfg)
    return m.group(1).strip() if m else "none"
blas, mkl = find(r"BLAS_INFO=(\w+)"), find(r"Math Kernel Library Version ([\w.]+)")
onednn, isa = find(r"MKL-DNN (v[\d.]+)"), torch.backends.cpu.get_cpu_capability()
print(f"peer: PyTorch {torch.__version__} from PyPI; BLAS {blas} ({mkl}), oneDNN {onednn}, "
      f"CPU kernels {isa}")
PY
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
out=$(mktemp -d)
