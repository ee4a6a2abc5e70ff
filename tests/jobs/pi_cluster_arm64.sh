#!/usr/bin/env bash
# A Raspberry-Pi cluster job on emulated Pis: 4 arm64 hosts (scripts/netns_cluster.sh
# --arm64: network namespaces on 100 Mbit links, every process in the arm64 root under
# qemu as a Cortex-A72), a real hostfile, jobs/pi_cluster.sh training on Fashion-MNIST for a
# few steps: LeNet synchronously, and the MLP with Downpour (1 server + 3 workers; LeNet's
# three workers of batch 128 took 9 minutes under emulation, the MLP's 60 steps 16 s, and
# the parameter server's code is the same for either model). The same two jobs on 4
# x86-64 hosts must agree: the sync job's training loss within 0.1 % and its test accuracy
# within 1 point (x86-64 and arm64 round differently: fused multiply-adds, oneDNN's
# kernels). Downpour's arrival order is not fixed, so the two Downpour jobs are compared on
# the final model's test accuracy (0.66 .. 0.71 over 6 runs on x86-64 hosts after 20 steps
# a worker; within 0.1), and each mean training loss must show that training learned
# (below ln 10 = 2.30, the loss at the start; 1.45 .. 1.48 in those runs).
# On arm64 itself, CTest's sync_equivalence_np1/2/4 run there (scripts/arm64_test.sh): every
# rank ends with the same parameters bit for bit, and N ranks within 2e-5 of 1 rank.
# Usage: pi_cluster_arm64.sh SOURCE_DIR HPDL_X86 HPDL_ARM64 WORK_DIR (as root; WORK_DIR
# inside the checkout or /tmp, which the arm64 root shares)
set -eu
src=$1 x86=$2 arm64=$3
source "$(dirname "$0")/netns_lib.sh"
netns_test_setup "$4"
[ -f "$src/data/fashion-mnist-train.h5" ] || { echo "FAIL: $src/data/fashion-mnist-train.h5 is missing (scripts/setup.sh makes it)"; exit 1; }

# The first 1000 test images (evaluation under emulation is slow), with the file's attributes.
/usr/bin/python3 - "$src/data/fashion-mnist-test.h5" test1000.h5 <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "w") as b:
    for k, v in a.attrs.items(): b.attrs[k] = v
    for name in ("x", "y"):
        b.create_dataset(name, data=a[name][:1000])
        for k, v in a[name].attrs.items(): b[name].attrs[k] = v
EOF

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One job: ARCH (x86 or arm64), MODE (sync or downpour), its hpdl binary.
job() {
  local arch=$1 mode=$2 hpdl=$3 t0=$SECONDS
  local model=lenet_fashion_mnist extra=(--set train.max_steps=6)
  [ "$mode" = sync ] || model=mlp_fashion_mnist extra=(--set distributed.mode=downpour --set train.max_steps=20)
  HPDL=$hpdl $cluster pi_cluster 1 "$HPDL_NETNS_STATE/hostfile" \
    "$src/inputs/$model.toml" --set "run.output_dir=\"$work/$arch\"" --set "run.name=\"$mode\"" \
    --set "data.train_file=\"$src/data/fashion-mnist-train.h5\"" --set "data.test_file=\"$work/test1000.h5\"" \
    --set train.epochs=1 "${extra[@]}" >"$arch-$mode.log" 2>&1 ||
    { echo "FAIL: the $mode job on 4 $arch hosts"; tail -30 "$arch-$mode.log"; exit 1; }
  grep -q "pi_cluster: 4 ranks on 4 nodes" "$arch-$mode.log"
  grep -q '"status": "complete"' "$arch/$mode/manifest.json"
  echo "$mode on 4 $arch hosts: $((SECONDS - t0)) s, $(grep -o 'final: .*' "$arch-$mode.log")"
}
# column NAME of the last row of a metrics.csv
metric() { awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == name) c = i; next } { v = $c } END { print v }' "$1"; }
agree() {
  local what=$1 a=$2 b=$3 tol=$4 kind=$5
  awk -v a="$a" -v b="$b" -v t="$tol" -v k="$kind" 'BEGIN {
    d = a - b; if (d < 0) d = -d; if (k == "rel") d /= (b < 0 ? -b : b); exit !(d <= t) }' ||
    { echo "FAIL: $what: arm64 $a vs x86-64 $b (tolerance $tol, $kind)"; exit 1; }
  echo "$what: arm64 $a, x86-64 $b (within $tol, $kind)"
}
# WHAT's VALUE must be a number below LIMIT.
below() {
  awk -v v="$2" -v l="$3" 'BEGIN { exit !(v ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ && v + 0 < l) }' ||
    { echo "FAIL: $1: $2 (a number below $3 expected)"; exit 1; }
}

$cluster up 4 --rate 100mbit --arm64
# ELF machine 0xb7: AArch64.
[ "$(od -An -tx1 -j18 -N2 "$arm64" | tr -d ' ')" = b700 ] || { echo "FAIL: $arm64 is not an arm64 program"; exit 1; }
job arm64 sync "$arm64"
job arm64 downpour "$arm64"
$cluster up 4 --rate 100mbit
job x86 sync "$x86"
job x86 downpour "$x86"

agree "sync training loss" "$(metric arm64/sync/metrics.csv train_loss)" "$(metric x86/sync/metrics.csv train_loss)" 0.001 rel
agree "sync test accuracy" "$(metric arm64/sync/metrics.csv test_accuracy)" "$(metric x86/sync/metrics.csv test_accuracy)" 0.01 abs
agree "downpour test accuracy" "$(metric arm64/downpour/metrics.csv test_accuracy)" "$(metric x86/downpour/metrics.csv test_accuracy)" 0.1 abs
loss_arm64=$(metric arm64/downpour/metrics.csv train_loss) loss_x86=$(metric x86/downpour/metrics.csv train_loss)
below "downpour mean training loss on arm64 hosts (did not learn?)" "$loss_arm64" 2.30
below "downpour mean training loss on x86-64 hosts (did not learn?)" "$loss_x86" 2.30
echo "downpour mean training loss: arm64 $loss_arm64, x86-64 $loss_x86 (timing-dependent; both below 2.30)"
echo "PASS"
