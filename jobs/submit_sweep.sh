#!/usr/bin/env bash
# Submits a sweep: checks every grid line with `hpdl check` (nothing is queued if one is
# bad), then the array job (c) with one task per line and the collection job (d) after it.
#   bash jobs/submit_sweep.sh GRID [sbatch options for the array tasks, e.g. -n 4 --time=2:00:00]
# Grid file: one configuration per line, "CONFIG key=value key=value ..." (the keys are
# hpdl --set overrides, values without spaces; threads=N runs that line's ranks with N OpenMP
# threads, at most the tasks' --cpus-per-task); '#' starts a comment. Prints the two job
# ids and the sweep directory.
set -eu
jobs_dir=$(cd "$(dirname "$0")" && pwd)
source "$jobs_dir/lib.sh"
[ $# -ge 1 ] || { echo "usage: submit_sweep.sh GRID [sbatch options...]" >&2; exit 2; }
grid=$1
shift
[ -f "$grid" ] || { echo "submit_sweep: grid file $grid not found" >&2; exit 1; }
hpdl=$(SLURM_SUBMIT_DIR=$PWD hpdl_bin)
# The tasks' --cpus-per-task, as these sbatch options give it (sweep.sbatch's default: 1):
# a line's threads=N may not exceed it.
cpus=1
for ((k = 1; k <= $#; k++)); do
  case ${!k} in
    --cpus-per-task=*) cpus=${!k#*=} ;;
    -c?*) cpus=${!k#-c} ;;
    -c | --cpus-per-task) next=$((k + 1)); cpus=${!next:-1} ;;
  esac
done
n=0
while IFS=$'\t' read -r lineno line; do
  mapfile -t args < <(grid_args "$line")
  threads=$(grid_threads "$line")
  if [ -n "$threads" ] && ! [[ "$threads" =~ ^[1-9][0-9]*$ ]]; then
    echo "submit_sweep: $grid:$lineno: threads=$threads is not a positive whole number" >&2
    exit 1
  fi
  if [ -n "$threads" ] && [[ "$cpus" =~ ^[0-9]+$ ]] && [ "$threads" -gt "$cpus" ]; then
    echo "submit_sweep: $grid:$lineno: threads=$threads is more than the tasks' --cpus-per-task=$cpus" >&2
    exit 1
  fi
  if ! err=$("$hpdl" check "${args[@]}" 2>&1 >/dev/null); then
    echo "submit_sweep: $grid:$lineno: ${err#hpdl: error: }" >&2
    exit 1
  fi
  n=$((n + 1))
done < <(grid_entries "$grid")
[ $n -gt 0 ] || { echo "submit_sweep: $grid has no configurations" >&2; exit 1; }
export HPDL_JOBS=$jobs_dir
array=$(sbatch --parsable --array=0-$((n - 1)) "$@" "$jobs_dir/sweep.sbatch" "$grid")
array=${array%%;*}
collect=$(sbatch --parsable --dependency=afterok:"$array" "$jobs_dir/collect.sbatch" \
  "${HPDL_OUTPUTS:-outputs}/$array" "$grid")
echo "sweep: $n configurations, array job $array, collection job $collect, results in ${HPDL_OUTPUTS:-outputs}/$array/"
