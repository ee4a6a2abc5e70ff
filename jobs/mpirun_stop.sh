#!/usr/bin/env bash
# Runs `mpirun ARGS...` so that a stop request always ends in a checkpoint: a SIGTERM or
# SIGINT to this script becomes one SIGUSR1 to mpirun, which OpenMPI forwards to the ranks at
# once; every rank finishes its step, writes the stop checkpoint and exits 75, and so does
# this script (it exits with mpirun's status).
# Why not let mpirun take the SIGTERM: OpenMPI 4 then sends the ranks SIGCONT, waits its kill
# grace (MCA odls_base_sigkill_timeout, 1 s by default), sends SIGTERM, waits again and sends
# SIGKILL, and while it waits it forwards no output, so a rank that prints blocks and never
# reaches its checkpoint (measured: exit 1 after 2 x the grace, no checkpoint).
# Usage: mpirun_stop.sh [mpirun arguments...]   (used by scripts/main.sh and jobs/pi_cluster.sh)
set -u
mpirun "$@" &
pid=$!
stop() { kill -USR1 "$pid" 2>/dev/null; }
trap stop TERM INT
# `wait` returns early (128 + signal) when a trapped signal arrives: wait until mpirun itself
# has ended, then take its status (bash keeps it for an ended child).
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
done
wait "$pid"
