# Sourced by the checkpoint tests: interrupt_at_checkpoint FILE LOG CMD... runs CMD (an
# mpirun of hpdl train) in the background, sends it SIGUSR1 once FILE exists (a periodic
# checkpoint was written), and requires the run to stop at a checkpoint with exit 75.
interrupt_at_checkpoint() {
  local file=$1 log=$2 pid rc=0
  shift 2
  "$@" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 3000); do [ -f "$file" ] && break; sleep 0.01; done
  kill -USR1 $pid
  wait $pid || rc=$?
  [ "$rc" -eq 75 ] || { echo "FAIL: interrupted run exited $rc, expected 75"; cat "$log"; exit 1; }
}
