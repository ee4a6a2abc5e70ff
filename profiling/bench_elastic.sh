#!/usr/bin/env bash
# A soak of training through failures: a synchronous job on 4 emulated hosts
# (scripts/netns_cluster.sh, 1 Gbit) under jobs/pi_cluster.sh's supervisor (HPDL_RESTARTS),
# ended KILLS times at random moments, the kinds of failure in turn:
#   host   a host's link down and its processes killed (a board losing power)
#   link   a host's link down, its processes left running (a cable pulled)
#   rank   one rank killed (SIGKILL) on a host that stays up
#   mpirun mpirun itself killed
#   write  rank 0 killed while it writes a checkpoint (checkpoint.h5.tmp exists)
# A lost host comes back once the job runs again without it, and is used at the next
# restart. distributed.virtual_shards = 12 makes 4 and 3 hosts compute the same bits, so the
# final parameters must equal an uninterrupted run's exactly.
# Prints per kind and in all: kills survived, time from a kill to training again (mean,
# worst), resumes from an older checkpoint than the last one written or from
# checkpoint.prev.h5 (checkpoints lost or corrupted: target 0), and the final parameters'
# largest difference from the uninterrupted run (target 0).
# Needs root (network namespaces). Usage: [EPOCHS=60000] profiling/bench_elastic.sh [KILLS]
# (default 20 kills; the run must outlast them: about 5 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-20}
source profiling/cpu_line.sh
[ -x build/hpdl ] || bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/hpdl-elastic.XXXXXX)
export HPDL_NETNS_STATE=$work/state
cluster="bash scripts/netns_cluster.sh"
trap '$cluster down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
$cluster up 4 --rate 1gbit >/dev/null
# The test fixtures' tiny model and data (make them if missing), a batch of 48 in 12 shards.
[ -f build/tests/fixtures/tiny.toml ] || build/tests/hpdl_make_fixtures build/tests/fixtures >/dev/null
args=(build/tests/fixtures/tiny.toml --set "run.output_dir=\"$work/out\"" --set train.batch=48
  --set distributed.virtual_shards=12 --set checkpoint.every_steps=10 --set train.epochs="${EPOCHS:-30000}"
  --set train.progress=false)
mpirun -np 1 build/hpdl train "${args[@]}" --set run.name=uninterrupted >/dev/null

HPDL=$PWD/build/hpdl HPDL_RESTARTS=$((kills + 5)) HPDL_MIN_HOSTS=2 HPDL_PROBE_S=5 \
  $cluster pi_cluster 1 "$HPDL_NETNS_STATE/hostfile" "${args[@]}" --set run.name=soak >"$work/soak.out" 2>&1 &
job=$!
log=$work/out/soak/log.txt
count() { local n; n=$(grep -c "$1" "$log" 2>/dev/null) || true; echo "${n:-0}"; }
ckpt_step() { grep -o 'checkpoint: step [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$'; }
kinds=(host link rank mpirun write)
declare -A again_of
again=() lost_steps=() survived=0 out_host=0  # out_host: left out of the current run
for k in $(seq "$kills"); do
  kind=${kinds[$(((k - 1) % ${#kinds[@]}))]}
  # A random moment after the run's next checkpoint (2 in the first run: past its start).
  before=$(count 'checkpoint: step')
  for _ in $(seq 600); do [ "$(count 'checkpoint: step')" -ge $((before + 1)) ] && break; sleep 0.05; done
  sleep "$(awk -v r=$RANDOM 'BEGIN {print r % 1000 / 1000}')"
  # A host of the current run (the one lost last is back only from the next restart on).
  host=$((2 + RANDOM % 3))
  while [ "$host" -eq "$out_host" ]; do host=$((2 + RANDOM % 3)); done
  resumed=$(count 'resumed from')
  last=$(ckpt_step)
  case $kind in
    host | link)
      ip netns exec "hpdl-h$host" ip link set eth0 down
      # shellcheck disable=SC2046
      [ "$kind" = link ] || kill -9 $(ip netns pids "hpdl-h$host") 2>/dev/null || true ;;
    rank)
      for p in $(ip netns pids "hpdl-h$host"); do
        grep -qa "hpdl.train" "/proc/$p/cmdline" 2>/dev/null && kill -9 "$p"
      done ;;
    mpirun) pkill -9 -x mpirun ;;
    write)  # rank 0 holds the run directory's lock; killed the moment a write is under way
      /usr/bin/python3 -c '
import os, sys, time
tmp, lock = sys.argv[1] + "/checkpoint.h5.tmp", sys.argv[1] + "/.lock"
end = time.time() + 30
while time.time() < end and not os.path.exists(tmp): pass
os.kill(int(open(lock).read()), 9)' "$work/out/soak" ;;
  esac
  t0=$(date +%s.%N)
  for _ in $(seq 1200); do [ "$(count 'resumed from')" -gt "$resumed" ] && break; sleep 0.05; done
  [ "$(count 'resumed from')" -gt "$resumed" ] || { echo "kill $k ($kind): no resume within 60 s"; break; }
  t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
  again+=("$t") again_of[$kind]+="$t "
  at=$(grep -o 'resumed from .*global step [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  lost_steps+=("$((last - at))")  # > 0: resumed from an older checkpoint than the last one written
  survived=$((survived + 1))
  if [ "$kind" = host ] || [ "$kind" = link ]; then
    # shellcheck disable=SC2046
    [ "$kind" = host ] || kill -9 $(ip netns pids "hpdl-h$host") 2>/dev/null || true  # the orphans
    ip netns exec "hpdl-h$host" ip link set eth0 up
    out_host=$host
  else
    out_host=0  # every host answered at this restart
  fi
done
rc=0
wait $job || rc=$?
fallbacks=$(count 'resuming from the previous checkpoint')
diff=$(/usr/bin/python3 tests/cli/params_equal.py "$work/out/uninterrupted/model.h5" \
  "$work/out/soak/model.h5" inf 2>/dev/null | grep -o '[^ ]* (tolerance' | cut -d' ' -f1 || echo "no model")
cpu_line
stats() { printf '%s\n' "$@" | awk 'NF {s += $1; n++; if ($1 > m) m = $1} END {if (n) printf "%d, %.2f / %.2f", n, s / n, m; else printf "0"}'; }
echo "soak: tiny model, 4 emulated hosts at 1 Gbit, batch 48 in 12 virtual shards, a checkpoint every 10 steps"
printf '%-56s %s\n' "kills, in turn: ${kinds[*]}" "$kills" \
  "survived (training resumed)" "$survived" \
  "job exit" "$rc"
for kind in "${kinds[@]}"; do
  # shellcheck disable=SC2086
  printf '%-56s %s\n' "  $kind: resumed, s to training again (mean / worst)" "$(stats ${again_of[$kind]:-})"
done
printf '%-56s %s\n' "all: s from a kill to training again (mean / worst)" "$(stats "${again[@]}" | cut -d, -f2)" \
  "resumed from an older checkpoint than the last one" "$(printf '%s\n' "${lost_steps[@]}" | awk '$1 > 0' | wc -l) of $survived" \
  "steps lost per kill" "those since the last checkpoint (every 10 steps: at most 9)" \
  "resumes that fell back to checkpoint.prev.h5" "$fallbacks" \
  "final parameters against the uninterrupted run" "max |difference| $diff"
