#!/usr/bin/env bash
# Runs `mpirun ARGS...` so that a stop request always ends in a checkpoint: a SIGTERM, SIGINT
# or SIGHUP to this script becomes one SIGUSR1 to mpirun, which OpenMPI forwards to the ranks
# at once; every rank finishes its step, writes the stop checkpoint and exits 75, and so does
# this script (it exits with mpirun's status).
# Why not let mpirun take the signal: OpenMPI 4 then sends the ranks SIGCONT, waits its kill
# grace (MCA odls_base_sigkill_timeout, 1 s by default), sends SIGTERM, waits the grace again
# and sends SIGKILL: the ranks get one grace to finish a step and write, and mpirun exits 1
# after 2 x the grace whatever they did (measured: 100 MB model, 2 ranks on 0.25 core, no
# checkpoint and a manifest left "running").
# mpirun runs in a session of its own (setsid, stdin from /dev/null): a terminal's Ctrl-C,
# which goes to the whole foreground process group, then reaches this script only, not mpirun.
# Open MPI's own files for the run (its session directory, about 8 MB, and the ranks'
# shared-memory segments, 4 MiB a rank) go into a folder of this run's, removed once mpirun
# has ended, however it ended: a killed run otherwise leaves them in /tmp/ompi.* and
# /dev/shm/vader_segment.* for good. Only for a run on this host alone: with a hostfile the
# other hosts would need the folder too, and Open MPI refuses a base for this host only
# ("either a global tmpdir base OR a local/remote tmpdir base"), so it keeps its defaults.
# Usage: mpirun_stop.sh [mpirun arguments...]   (used by scripts/main.sh and jobs/pi_cluster.sh)
set -u
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hpdl-mpirun.XXXXXX")
mca=(--mca orte_tmpdir_base "$scratch" --mca btl_vader_backing_directory "$scratch")
case " $* " in
  *" --hostfile "* | *" --machinefile "* | *" --host "* | *" -H "*)
    # Several hosts: a host whose link goes down sends nothing, not even a reset, and
    # mpirun would wait for its daemon for good (the default TCP keepalive notices after
    # 300 + 9 x 20 s). Probed after 5 s of silence, every 2 s, given up after 3 misses:
    # mpirun ends the job 5 to 11 s after the link went down. A user's own setting wins.
    mca=()
    for k in time:5 intvl:2 probes:3; do
      var=OMPI_MCA_oob_tcp_keepalive_${k%%:*}
      [ -n "${!var:-}" ] || [[ " $* " == *" oob_tcp_keepalive_${k%%:*} "* ]] ||
        mca+=(--mca "oob_tcp_keepalive_${k%%:*}" "${k#*:}")
    done ;;
esac
# mpirun's own report of a lost host (a dozen lines) becomes one line naming the host, and
# none when hpdl has already said how the job ended.
mkfifo "$scratch/stderr"
awk '
  /^hpdl: error:/ { said = 1 }
  lost && /Remote daemon:/ { host = $NF }
  lost && /^-+$/ {
    if (!said) print "hpdl: error: mpirun lost the connection to host " host \
      " (its link is down or it stopped) and ended the job"
    lost = 0; said = 1; fflush(); next
  }
  lost { next }
  held && /^ORTE has lost communication with a remote daemon/ { lost = 1; held = ""; next }
  held { print held; held = "" }
  /^-+$/ { held = $0; next }
  { print; fflush() }
  END { if (held) print held }' <"$scratch/stderr" >&2 &
filter=$!
setsid mpirun ${mca[@]+"${mca[@]}"} "$@" </dev/null 2>"$scratch/stderr" &
pid=$!
stop() { kill -USR1 "$pid" 2>/dev/null; }
trap stop TERM INT HUP
# Until mpirun has ended (polled: a trapped signal must not end the wait). Once the ranks it
# started on this host have all ended, an mpirun still up 6 s later (it takes 2 s to end a
# job whose rank failed: SIGCONT, SIGTERM, SIGKILL a second apart) waits for a daemon
# behind a dead link (its messages are retransmitted for a quarter of an hour), and the
# job is over: it is ended here (exit 1; hpdl's ranks have said why).
local_ranks() {  # mpirun's children that are not the agents starting remote daemons
  local c
  for c in $(pgrep -P "$pid"); do grep -qa orted "/proc/$c/cmdline" 2>/dev/null || echo "$c"; done
}
seen=0 gone_at=""
while kill -0 "$pid" 2>/dev/null; do
  sleep 0.5 & wait $! 2>/dev/null  # a trapped signal (the stop) cuts it short
  if [ -n "$(local_ranks)" ]; then seen=1 gone_at=""; continue; fi
  [ "$seen" = 1 ] || continue
  gone_at=${gone_at:-$SECONDS}
  if [ $((SECONDS - gone_at)) -ge 6 ] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    wait "$filter" 2>/dev/null
    echo "hpdl: mpirun was still waiting for a host it cannot reach 6 s after the ranks here ended: ended it" >&2
    rm -rf "$scratch"
    exit 1
  fi
done
wait "$pid"
rc=$?
wait "$filter" 2>/dev/null
rm -rf "$scratch"
exit $rc
