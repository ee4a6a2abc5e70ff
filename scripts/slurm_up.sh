#!/usr/bin/env bash
# Starts a real one-node Slurm cluster on this machine for the job tests (Debian's
# slurm-wlm and munge, installed if missing): munged, slurmctld and slurmd with a
# slurm.conf for node "localhost" in a state folder (default /tmp/hpdl-slurm). Prints
# nothing but errors; exits 0 once the node is idle, 1 if Slurm cannot be started.
# Safe to repeat: a running cluster from an earlier call is reused. Stop it with
# `bash scripts/slurm_up.sh --stop`.
set -u
state=${HPDL_SLURM_DIR:-/tmp/hpdl-slurm}
conf=$state/slurm.conf

stop() {
  for pidfile in "$state"/slurmd.pid "$state"/slurmctld.pid "$state"/munged.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  return 0
}
if [ "${1:-}" = "--stop" ]; then stop; exit 0; fi

if [ -f "$conf" ] && SLURM_CONF=$conf sinfo -h -o %t 2>/dev/null | grep -qE "^(idle|mix|alloc)"; then
  exit 0
fi

missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >/dev/null 2>&1 || { echo "slurm_up: cannot install ${missing[*]}" >&2; exit 1; }
fi

# failed DAEMON: one line naming the daemon and the last error in its log, then exit 1.
failed() {
  local log=$state/log/$1.log why
  why=$(grep -iE "error|fatal" "$log" 2>/dev/null | tail -n 2 | tr '\n' ' ')
  echo "slurm_up: $1 did not start: ${why:-no error in its log} (see $log)" >&2
  exit 1
}

stop
mkdir -p "$state"/{spool,ctld,log,munge}
rm -f "$state"/log/*.log   # so an error found below is from this start
chmod 700 "$state/munge"
# munge: a key of our own, its socket in the state folder.
[ -f "$state/munge/munge.key" ] || { dd if=/dev/urandom bs=1 count=1024 of="$state/munge/munge.key" 2>/dev/null; chmod 400 "$state/munge/munge.key"; }
sock=$state/munge/munge.socket
munged --force --key-file="$state/munge/munge.key" --socket="$sock" \
  --pid-file="$state/munged.pid" --log-file="$state/log/munged.log" --seed-file="$state/munge/seed" \
  || failed munged

cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > "$conf" <<CONF
ClusterName=hpdl
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock,cred_expire=10
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobRequeue=1
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=10
Waittime=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$conf
slurmctld -f "$conf" || failed slurmctld
slurmd -f "$conf" || failed slurmd
for _ in $(seq 60); do
  sinfo -h -o %t 2>/dev/null | grep -qE "^(idle|mix|alloc)" && exit 0
  scontrol update nodename=localhost state=resume >/dev/null 2>&1
  sleep 1
done
why=$(grep -ihE "error|fatal" "$state"/log/slurm*.log 2>/dev/null | tail -n 2 | tr '\n' ' ')
echo "slurm_up: the node did not become idle within 60 s: ${why:-no error logged} (see $state/log/)" >&2
exit 1
