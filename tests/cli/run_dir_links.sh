#!/usr/bin/env bash
# No write leaves the run directory through a link (docs/errors.md): a symbolic link planted
# in place of any file or folder hpdl writes there (or of the run directory itself), fresh
# and on --resume, is refused in one line naming it, and the file it points at is unchanged.
# Also the one rule for run names: one made from Slurm's job id must stay inside output_dir.
# Usage: run_dir_links.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
expect="bash $(dirname "$0")/expect_error.sh"
out=$fx/outputs/links victim=$fx/links_victim
# shellcheck disable=SC2206
run=($mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=\"links\" --set profile.enabled=true --set profile.ceilings=false)

victim_intact() {
  [ "$(cat "$victim/file")" = "victim's data" ] && [ "$(ls "$victim")" = file ] ||
    { echo "FAIL: $1: the victim's directory changed: $(ls -l "$victim")"; exit 1; }
}
plant() {  # plant NAME [--resume]: a link outputs/links/NAME -> the victim, then a run
  rm -rf "$out" "$victim" && mkdir -p "$out" "$victim"
  echo "victim's data" >"$victim/file"
  local target=$victim/file
  [ "$1" != trace ] || target=$victim
  ln -s "$target" "$out/$1"
  $expect "links/$1 is a symbolic link: hpdl does not write through links" "${run[@]}" "${@:2}"
  victim_intact "$1 $*"
}
for name in log.txt metrics.csv .lock manifest.json manifest.json.tmp config.toml.tmp \
            checkpoint.h5 checkpoint.h5.tmp model.h5.tmp trace; do
  plant "$name"
done
plant log.txt --resume
plant checkpoint.h5.tmp --resume
echo "links inside the run directory refused (fresh and --resume)"

# A FIFO as manifest.json (read before the run starts) would block rank 0.
rm -rf "$out" && mkdir -p "$out" && mkfifo "$out/manifest.json"
$expect "links/manifest.json is not a regular file or folder" "${run[@]}"
echo "a FIFO in the run directory refused"

# The run directory itself a link to someone else's directory.
rm -rf "$out" "$victim" && mkdir -p "$victim" "$(dirname "$out")"
echo "victim's data" >"$victim/file"
ln -s "$victim" "$out"
$expect "links is a symbolic link" "${run[@]}"
victim_intact "the run directory"
echo "a linked run directory refused"

# A planted trace/ folder inside a folder hpdl writes (trace/rank0.json.tmp).
rm -rf "$out" "$victim" && mkdir -p "$out/trace" "$victim"
echo "victim's data" >"$victim/file"
ln -s "$victim/file" "$out/trace/rank0.json.tmp"
$expect "trace/rank0.json.tmp is a symbolic link" "${run[@]}"
victim_intact "trace/rank0.json.tmp"
echo "a link inside trace/ refused"

# Run names from Slurm's ids follow run.name's rule (SLURM_JOB_ID=.. would be output_dir's
# parent). Singletons: mpirun would read the fake ids as an allocation.
for ids in "SLURM_JOB_ID=..|the run name from SLURM_JOB_ID = \"\\.\\.\"" \
           "SLURM_JOB_ID=7 SLURM_ARRAY_TASK_ID=/../../x|SLURM_JOB_ID_SLURM_ARRAY_TASK_ID = \"7_/../../x\""; do
  # shellcheck disable=SC2086
  env ${ids%%|*} $expect "${ids#*|} must be a plain directory name" "$hpdl" train "$fx/unnamed.toml"
done
[ ! -e "$fx/x" ] && [ ! -e "$fx/outputs/../model.h5" ] || { echo "FAIL: a run escaped output_dir"; exit 1; }
echo "run names from Slurm's ids checked"
echo "PASS"
