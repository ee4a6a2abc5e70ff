#!/usr/bin/env bash
# How a stop request ends a job of a ~100 MB model (dense 64-5000-5000-4, 25.4 M parameters,
# SGD: a 97 MiB checkpoint), 2 ranks under mpirun, on this machine and on a slow host (the
# same job held to 0.25 core by a cgroup CPU quota: a step and the checkpoint write take
# ~10x longer, as on a Pi). Each route is one row: how the signal was sent, the kill grace
# (OpenMPI's odls_base_sigkill_timeout; 10 is what the hpdl module sets), the exit status
# of what was launched, the seconds from the signal to its end, the manifest's status and
# the checkpoint left. Needs root for the quota (its rows are skipped otherwise).
# Usage: profiling/bench_stop.sh [HPDL]   (default build/hpdl; fixtures from build/tests)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
hpdl=${1:-$src/build/hpdl}
fx=$src/build/tests/fixtures
work=$(mktemp -d /tmp/hpdl_bench_stop.XXXXXX)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$hpdl" ] && [ -f "$fx/train.h5" ] || { echo "bench_stop: build first (bash scripts/setup.sh)"; exit 2; }
# The fixture config with its layers replaced by the ~100 MB model.
model=(--set 'model.layers=[{type="flatten"},{type="dense",units=5000},{type="relu"},{type="dense",units=5000},{type="relu"},{type="dense",units=4}]'
  --set optimizer.name=sgd --set optimizer.lr=0.001 --set train.epochs=100000
  --set run.name=big --set "run.output_dir=\"$work/out\"")

# The slow host: a CPU budget of 0.25 core (scripts/cpu_budget.sh), or none.
source "$src/scripts/cpu_budget.sh"
slow_cg=$(cpu_budget_make hpdl_bench_stop 0.25 100000) || slow_cg=""
cleanup() {
  pkill -f "$work/out" 2>/dev/null
  [ -n "$slow_cg" ] && cpu_budget_remove "$slow_cg"
  rm -rf "$work"
}
trap cleanup EXIT

mpirun_args=(--oversubscribe --bind-to none -np 2 "$hpdl" train "$fx/tiny.toml" "${model[@]}")
# ROUTE GRACE HOST: one row. ROUTE: launcher-term (SIGTERM to jobs/mpirun_stop.sh),
# launcher-ctrlc (SIGINT to its process group, as a terminal's Ctrl-C), mpirun-term,
# mpirun-ctrlc (the same to a bare mpirun). HOST: fast or slow.
row() {
  local route=$1 grace=$2 host=$3 launcher pid rc took status ckpt sig=TERM group=""
  [ "$host" = slow ] && [ -z "$slow_cg" ] && { printf '| %s | %s | %s | skipped: no cgroup CPU quota | | | |\n' "$route" "$grace" "$host"; return; }
  rm -rf "$work/out"
  case $route in
    launcher-*) launcher=(bash "$src/jobs/mpirun_stop.sh") ;;
    *) launcher=(mpirun) ;;
  esac
  case $route in *-ctrlc) sig=INT group=- ;; esac
  (
    [ "$host" = slow ] && echo $BASHPID >"$slow_cg/cgroup.procs"
    if [ "$grace" = default ]; then unset OMPI_MCA_odls_base_sigkill_timeout; else export OMPI_MCA_odls_base_sigkill_timeout=$grace; fi
    # Its own process group with SIGINT at its default, as a terminal's foreground job.
    exec /usr/bin/python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' \
      "${launcher[@]}" "${mpirun_args[@]}"
  ) >"$work/run.log" 2>&1 &
  pid=$!
  # Signal 3 s after the log's table header: training is under way.
  for _ in $(seq 1200); do grep -q '^epoch ' "$work/out/big/log.txt" 2>/dev/null && break; sleep 0.1; done
  sleep 3
  kill -$sig -- ${group}$pid
  local t0; t0=$(date +%s.%N)
  rc=0; wait $pid || rc=$?
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  status=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['status'])" "$work/out/big/manifest.json" 2>/dev/null || echo "?")
  if [ -f "$work/out/big/checkpoint.h5" ]; then
    ckpt="complete, $(( $(stat -c %s "$work/out/big/checkpoint.h5") / 1048576 )) MiB"
  else ckpt=none; fi
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$route" "$grace" "$host" "$rc" "$took" "$status" "$ckpt"
}

echo "bench_stop: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $("$hpdl" --version | head -1)"
echo
echo "| route | grace (s) | host | exit | s to end | manifest | checkpoint |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for host in fast slow; do
  row launcher-term default $host
  row launcher-ctrlc default $host
  row mpirun-term default $host
  row mpirun-term 10 $host
  row mpirun-ctrlc 10 $host
done
