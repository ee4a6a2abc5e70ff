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
srun_train() {
  local hpdl rc=0
  hpdl=$(hpdl_bin)
  [ -x "$hpdl" ] || { echo "hpdl job: cannot find the hpdl binary (set HPDL or module load hpdl)" >&2; exit 1; }
  export OMP_NUM_THREADS=${HPDL_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
  cd "${SLURM_SUBMIT_DIR:-.}"
  echo "hpdl job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}): $SLURM_NTASKS tasks on ${SLURM_JOB_NODELIST:-?}, $OMP_NUM_THREADS threads each"
  srun --mpi="${HPDL_SRUN_MPI:-pmix}" --kill-on-bad-exit=1 ${HPDL_SRUN_ARGS:-} \
    "$hpdl" train "$@" --set "run.output_dir=\"${HPDL_OUTPUTS:-outputs}\"" \
    --set "run.name=\"${HPDL_RUN_NAME:-$SLURM_JOB_ID}\"" --resume || rc=$?
  if [ "$rc" -eq 75 ]; then
    echo "hpdl job $SLURM_JOB_ID: checkpointed before the time limit; requeueing"
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
  fi
  exit "$rc"
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
