# Sourced by jobs/pi_cluster.sh when HPDL_RESTARTS > 0, and by jobs/lib.sh for Slurm (its
# restart_wanted and run_dir_free). `supervise HOSTFILE ARGS...` keeps a job training when a
# host dies or a process is killed. It runs the job on the hostfile's hosts that answer; when
# a run ends with an error and a host that ran it no longer
# answers, it drops that host and runs the job again with --resume on the hosts left (a
# checkpoint resumes on another rank count; a parameter server's on another worker count),
# at most HPDL_RESTARTS times and while at least HPDL_MIN_HOSTS hosts answer. A run ended by
# a signal (exit >= 128: a rank or mpirun killed) is restarted the same way with every host
# answering. A host that answers again is used at the next start. Each event is one line on
# stderr and a row in the run directory's restarts.csv. A run that ends well (exit 0), is
# stopped on request (exit 75) or fails by hpdl's own error with every host answering (exit
# 1: a bad input, a diverged run) is not restarted.
# Before a restart, the last run's rank 0 must have let go of the run directory (its lock):
# waited for up to HPDL_LOCK_WAIT_S seconds (default 60; ranks whose mpirun was killed end
# within about 2 s).
# A host answers when `$HPDL_RSH HOST true` succeeds within HPDL_PROBE_S seconds (default:
# ssh in batch mode, as mpirun starts its daemons; 10 s).
# Needs from pi_cluster.sh: hosts[] and slots[] (the hostfile), per_node, hpdl, and
# mpirun_args HOSTFILE RANKS (sets args[] for one mpirun).

# restart_wanted WHO LAUNCHER RC RESTART MAX HISTORY HOSTS [LOST...]: whether a run that ended
# with RC, with the hosts LOST no longer answering, is started again as restart RESTART of
# MAX (status 0) or not (1); one line on stderr either way, and for a restart a row in
# HISTORY (restarts.csv). Shared with the Slurm scripts (jobs/lib.sh).
restart_wanted() {
  local who=$1 launcher=$2 rc=$3 restart=$4 max=$5 history=$6 n=$7 what
  shift 7
  if [ $# -gt 0 ]; then
    what="lost $* (exit $rc)"
  elif [ "$rc" -ge 128 ]; then
    what="the job ended without an hpdl error (exit $rc: a rank or $launcher killed), every host answering"
  else
    echo "$who: the job failed (exit $rc) with every host answering: not restarted" >&2
    return 1
  fi
  if [ "$restart" -gt "$max" ]; then
    echo "$who: $what after $max restarts: giving up" >&2
    return 1
  fi
  echo "$who: $what: restart $restart of $max with --resume" >&2
  [ -s "$history" ] || echo "time_unix,restart,exit,lost,hosts_before" >"$history"
  echo "$(date +%s),$restart,$rc,$*,$n" >>"$history"
}

# run_dir_free WHO DIR: waits until the last run's rank 0 has let go of DIR (its lock), for
# up to HPDL_LOCK_WAIT_S seconds; status 1, with a line naming the holder, if it has not.
run_dir_free() {
  [ -n "$2" ] && [ -f "$2/.lock" ] || return 0
  flock -w "${HPDL_LOCK_WAIT_S:-60}" "$2/.lock" true && return 0
  echo "$1: $2 is still held by the last run's rank 0 (pid $(cat "$2/.lock")) after ${HPDL_LOCK_WAIT_S:-60} s: giving up" >&2
  return 1
}

probe() {
  # shellcheck disable=SC2086
  timeout "${HPDL_PROBE_S:-10}" ${HPDL_RSH:-ssh -o BatchMode=yes -o ConnectTimeout=5} "$1" true \
    </dev/null >/dev/null 2>&1
}

# One run of the job on HOSTFILE with RANKS ranks; returns its exit code. A SIGTERM or SIGHUP
# to the supervisor goes to the run (jobs/mpirun_stop.sh turns it into a checkpoint and
# exit 75, which ends the supervision); Ctrl-C reaches the run through the process group.
launch() {
  local file=$1 n=$2 child args
  shift 2
  mpirun_args "$file" "$n"
  # shellcheck disable=SC2086
  bash "$(dirname "${BASH_SOURCE[0]}")/mpirun_stop.sh" "${args[@]}" ${HPDL_MPIRUN_ARGS:-} "$hpdl" train "$@" &
  child=$!
  trap 'kill -TERM $child 2>/dev/null' TERM HUP
  trap '' INT
  while :; do
    wait "$child"
    local rc=$?
    kill -0 "$child" 2>/dev/null || break  # wait returned for a trapped signal: wait again
  done
  trap - TERM HUP INT
  return "$rc"
}

supervise() {
  local args=("$@") restarts=0 max=$HPDL_RESTARTS min=${HPDL_MIN_HOSTS:-1} live rc i n
  local run_dir history t_end t_start
  live=$(mktemp /tmp/hpdl-hosts.XXXXXX)
  # Where the run writes, for restarts.csv (the train arguments' --set pairs decide it).
  local sets=() a prev=""
  for a in "${args[@]:1}"; do [ "$prev" = --set ] && sets+=(--set "$a"); prev=$a; done
  run_dir=$("$hpdl" check "${args[0]}" "${sets[@]}" 2>/dev/null | sed -n 's/^run directory: //p')
  history=${run_dir:-.}/restarts.csv
  while :; do
    : >"$live"
    n=0
    local gone=()
    for i in "${!hosts[@]}"; do
      if probe "${hosts[$i]}"; then
        echo "${hosts[$i]} slots=${slots[$i]}" >>"$live"
        n=$((n + 1))
      else
        gone+=("${hosts[$i]}")
      fi
    done
    if [ "$n" -lt "$min" ]; then
      echo "pi_cluster: $n of ${#hosts[@]} hosts answer (not: ${gone[*]}), fewer than HPDL_MIN_HOSTS=$min: giving up" >&2
      rm -f "$live"
      return 1
    fi
    [ ${#gone[@]} -eq 0 ] || echo "pi_cluster: left out, not answering: ${gone[*]}" >&2
    t_start=$(date +%s.%N)
    [ -z "${t_end:-}" ] || echo "pi_cluster: $(awk -v a="$t_end" -v b="$t_start" 'BEGIN {printf "%.1f", b - a}') s from the end of the last run to this start" >&2
    launch "$live" $((n * per_node)) "${args[@]}"
    rc=$?
    t_end=$(date +%s.%N)
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 75 ]; then rm -f "$live"; return "$rc"; fi
    local lost=() host
    while read -r host _; do probe "$host" || lost+=("$host"); done <"$live"
    restarts=$((restarts + 1))
    if ! restart_wanted pi_cluster mpirun "$rc" "$restarts" "$max" "$history" "$n" ${lost[@]+"${lost[@]}"} ||
      ! run_dir_free pi_cluster "$run_dir"; then
      rm -f "$live"
      return "$rc"
    fi
    [[ " ${args[*]} " == *" --resume "* ]] || args+=(--resume)
  done
}
