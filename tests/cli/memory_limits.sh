#!/usr/bin/env bash
# The memory check counts what the ranks of a host need together, against the machine's
# memory or the lower limit of the memory cgroup the job runs in (Slurm's --mem), and
# refuses in one line before anything is allocated (instead of the OOM killer's exit 137):
#  - 2 ranks on this host, each estimated at 0.6 of the machine's memory;
#  - 1 rank in a memory cgroup of 1 GiB, estimated at 4 GiB.
# Usage: memory_limits.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
expect="bash $(dirname "$0")/expect_error.sh"
source "$(dirname "$0")/../support/skip.sh"
# A dense layer of U units on the tiny model's 64 inputs, then 4: 68 U parameters at 16 bytes
# each (value, gradient, Adam's two buffers).
model() { echo "model.layers=[{type=\"flatten\"},{type=\"dense\",units=$1},{type=\"dense\",units=4}]"; }
mem=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))
$expect "the model at batch 8 needs .* GiB per rank, .* GiB for the 2 ranks on this host, more than this machine's" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=\"mem_host\" --set "$(model $((mem * 6 / 10 / 1088)))"
echo "2 ranks of 0.6 x this machine's memory refused"

# A memory cgroup of its own (v1 here, v2 where the machine has that).
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cg=/sys/fs/cgroup/hpdl_mem_test_$$ limit_file=memory.max
else
  cg=/sys/fs/cgroup/memory/hpdl_mem_test_$$ limit_file=memory.limit_in_bytes
fi
mkdir "$cg" 2>/dev/null || skip "cannot create the memory cgroup $cg"
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
echo $((1 << 30)) >"$cg/$limit_file" 2>/dev/null || skip "cannot set $cg/$limit_file"
$expect "the model at batch 16 needs 4\\.[0-9] GiB per rank, more than the 1\\.0 GiB its memory cgroup allows \\($cg/$limit_file\\)" \
  sh -c "echo \$\$ >$cg/cgroup.procs && exec $mpirun -np 1 $hpdl train $fx/tiny.toml --set run.name='\"mem_cgroup\"' --set '$(model $(((4 << 30) / 1088)))'"
echo "a 4 GiB model in a 1 GiB cgroup refused"
echo "PASS"
