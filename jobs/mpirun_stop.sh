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
  *" --hostfile "* | *" --machinefile "* | *" --host "* | *" -H "*) mca=() ;;
esac
setsid mpirun ${mca[@]+"${mca[@]}"} "$@" </dev/null &
pid=$!
stop() { kill -USR1 "$pid" 2>/dev/null; }
trap stop TERM INT HUP
# `wait` returns early (128 + signal) when a trapped signal arrives: wait until mpirun itself
# has ended, then take its status (bash keeps it for an ended child).
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
done
wait "$pid"
rc=$?
rm -rf "$scratch"
exit $rc
