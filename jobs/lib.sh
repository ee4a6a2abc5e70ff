# Shared by the sbatch scripts (sourced, not run): finds hpdl, launches it with srun inside
# the allocation, and requeues the job when hpdl stopped at a checkpoint (exit 75) because
# the time limit's warning signal (--signal=USR1@...) or Slurm's SIGTERM reached it.

# hpdl: $HPDL, else the one on PATH (module load hpdl), else build/hpdl of the directory
# the job was submitted from.
hpdl_bin() {
  if [ -n "${HPDL:-}" ]; then echo "$HPDL"; return; fi
  command -v hpdl 2>/dev/null && return
  echo "${SLURM_SUBMIT_DIR:-.}/build/hpdl"
}

# srun_train CONFIG [hpdl train arguments...]: one hpdl rank per Slurm task, OpenMP threads
# from HPDL_THREADS, else --cpus-per-task, outputs in outputs/<job id>/ (
# SLURM_JOB_ID; HPDL_OUTPUTS and HPDL_RUN_NAME change that), resuming from that directory's checkpoint after a requeue.
# With HPDL_RESTARTS=N (and `sbatch --no-kill`, so that Slurm keeps the job when a node
# fails), a run that ends with an error is started again inside the allocation, by
# jobs/elastic.sh's rule: on the job's nodes that still answer (`srun --overlap -w NODE
# true` within HPDL_PROBE_S, at least HPDL_MIN_HOSTS), with the same tasks per node, when a
# node was lost; on all of them when a rank or srun was killed (exit >= 128); never after
# hpdl's own error. One line per event, a row in the run directory's restarts.csv.
srun_train() {
  local hpdl rc=0 restarts=0 max=${HPDL_RESTARTS:-0} place=() nodes=() lost=() node n
  hpdl=$(hpdl_bin)
  [ -x "$hpdl" ] || { echo "hpdl job: cannot find the hpdl binary (set HPDL or module load hpdl)" >&2; exit 1; }
  export OMP_NUM_THREADS=${HPDL_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
  cd "${SLURM_SUBMIT_DIR:-.}"
  local run_dir=${HPDL_OUTPUTS:-outputs}/${HPDL_RUN_NAME:-$SLURM_JOB_ID}
  local per_node=$((SLURM_NTASKS / ${SLURM_NNODES:-1}))
  [ "$max" -eq 0 ] || source "${HPDL_JOBS:-${SLURM_SUBMIT_DIR:-.}/jobs}/elastic.sh"
  echo "hpdl job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}): $SLURM_NTASKS tasks on ${SLURM_JOB_NODELIST:-?}, $OMP_NUM_THREADS threads each"
  while :; do
    rc=0
    srun --mpi="${HPDL_SRUN_MPI:-pmix}" --kill-on-bad-exit=1 ${place[@]+"${place[@]}"} ${HPDL_SRUN_ARGS:-} \
      "$hpdl" train "$@" --set "run.output_dir=\"${HPDL_OUTPUTS:-outputs}\"" \
      --set "run.name=\"${HPDL_RUN_NAME:-$SLURM_JOB_ID}\"" --resume || rc=$?
    if [ "$rc" -eq 75 ]; then
      echo "hpdl job $SLURM_JOB_ID: checkpointed before the time limit; requeueing"
      scontrol requeue "$SLURM_JOB_ID"
      exit 0
    fi
    [ "$rc" -ne 0 ] && [ "$max" -gt 0 ] || exit "$rc"
    # The job's nodes now (Slurm drops a failed node from a --no-kill job) that answer.
    nodes=() lost=()
    for node in $(scontrol show hostnames "$(scontrol show job "$SLURM_JOB_ID" -o | grep -o ' NodeList=[^ ]*' | cut -d= -f2)"); do
      if timeout "${HPDL_PROBE_S:-10}" srun --overlap -N1 -n1 -w "$node" true >/dev/null 2>&1; then
        nodes+=("$node")
      else
        lost+=("$node")
      fi
    done
    n=${#nodes[@]}
    if [ "$n" -lt "${HPDL_MIN_HOSTS:-1}" ]; then
      echo "hpdl job $SLURM_JOB_ID: $n nodes answer (not: ${lost[*]}), fewer than HPDL_MIN_HOSTS=${HPDL_MIN_HOSTS:-1}: giving up" >&2
      exit "$rc"
    fi
    restarts=$((restarts + 1))
    restart_wanted "hpdl job $SLURM_JOB_ID" srun "$rc" "$restarts" "$max" "$run_dir/restarts.csv" \
      "$((n + ${#lost[@]}))" ${lost[@]+"${lost[@]}"} && run_dir_free "hpdl job $SLURM_JOB_ID" "$run_dir" || exit "$rc"
    if [ ${#lost[@]} -gt 0 ]; then
      place=(-N "$n" -n "$((n * per_node))" -w "$(IFS=,; echo "${nodes[*]}")")
    fi
  done
}

# grid_entries GRID: "LINE<TAB>CONFIG key=value ..." for every configuration of a sweep grid
# (comments after '#' and blank lines dropped; values contain no spaces: [1,28,28]).
# Entry k (0-based) is array task k; grid_lines prints the entries without line numbers.
grid_entries() {
  sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$1" | awk 'NF { print NR "\t" $0 }'
}
grid_lines() {
  grid_entries "$1" | cut -f2-
}

# grid_args LINE: "CONFIG key=value ..." as hpdl train arguments: CONFIG --set key=value ...
# (the word threads=N is the task's thread count, not a config key: grid_threads reads it).
grid_args() {
  local first=1 word
  for word in $1; do
    case $word in threads=*) continue ;; esac
    if [ $first -eq 1 ]; then printf '%s\n' "$word"; first=0; else printf -- '--set\n%s\n' "$word"; fi
  done
}
# grid_threads LINE: N of its threads=N (OpenMP threads per rank for that task), or nothing.
grid_threads() {
  local word
  for word in $1; do
    case $word in threads=*) echo "${word#threads=}" ;; esac
  done
}
