#!/usr/bin/env bash
# A synchronous checkpoint resumes on another rank count (docs/checkpoints.md): 4 ranks stop
# at a checkpoint (SIGUSR1), then the run resumes on 3 and, separately, on 2 ranks; each ends
# within the equivalence tests' tolerance of 1 rank trained without a stop, with a log line
# saying the resume is not bit for bit. What cannot continue is refused in one line: a
# batch the new count cannot split, per-rank state (compression's error feedback). A
# parameter server's checkpoint continues on another worker count (positions redistributed)
# but not on another server count.
# Usage: resume_other_ranks.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
source "$(dirname "$0")/interrupt.sh"
expect="bash $(dirname "$0")/expect_error.sh"
out=$fx/outputs/other_ranks
rm -rf "$out" && mkdir -p "$out"
args=("$fx/tiny.toml" --set "run.output_dir=\"$out\"" --set train.epochs=40 --set checkpoint.every_steps=40)
close() { /usr/bin/python3 "$(dirname "$0")/params_equal.py" "$1/model.h5" "$2/model.h5" 2e-5; }

$mpirun -np 1 "$hpdl" train "${args[@]}" --set run.name=one >/dev/null
interrupt_at_checkpoint "$out/cut/checkpoint.h5" "$out/cut.log" \
  $mpirun -np 4 "$hpdl" train "${args[@]}" --set run.name=cut
"$hpdl" check "${args[@]}" --ranks 4 --resume "$out/cut" | grep -q "^resume .*cut/checkpoint.h5: exact (the 4 ranks it was written by)$" ||
  { echo "FAIL: hpdl check --resume on 4 ranks"; "$hpdl" check "${args[@]}" --ranks 4 --resume "$out/cut"; exit 1; }
"$hpdl" check "${args[@]}" --ranks 3 --resume "$out/cut" | grep -q "4 ranks' checkpoint on 3: within rounding of an uninterrupted run, not bit for bit" ||
  { echo "FAIL: hpdl check --resume on 3 ranks"; exit 1; }
for n in 3 2; do
  cp -r "$out/cut" "$out/on$n"
  $mpirun -np $n "$hpdl" train "${args[@]}" --set run.name=on$n --resume >/dev/null
  grep -q "resuming 4 ranks' checkpoint on $n: the same global batch (16) and sample order" "$out/on$n/log.txt" ||
    { echo "FAIL: no line saying the resume on $n ranks is not bit for bit"; cat "$out/on$n/log.txt"; exit 1; }
  grep -q '"status": "complete"' "$out/on$n/manifest.json"
  close "$out/one" "$out/on$n" || { echo "FAIL: 4 ranks resumed on $n differ from 1 rank"; exit 1; }
done
echo "4 ranks stopped, resumed on 3 and on 2: within 2e-5 of 1 rank uninterrupted"

# What cannot continue: a batch of 16 on 17 ranks; compression's per-rank error feedback.
cp -r "$out/cut" "$out/split"
$expect "train.batch = 16 is smaller than the number of ranks \\(17\\)" \
  $mpirun -np 17 "$hpdl" train "${args[@]}" --set run.name=split --resume
interrupt_at_checkpoint "$out/fb/checkpoint.h5" "$out/fb.log" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=fb --set distributed.compression=\"bf16\"
$expect "fb/checkpoint.h5 holds state of each of its 2 ranks \\(feedback: compression's error feedback or local SGD's replicas\\): it resumes only on 2 ranks, this run has 3" \
  $mpirun -np 3 "$hpdl" train "${args[@]}" --set run.name=fb --set distributed.compression=\"bf16\" --resume
echo "refused in one line: a batch the ranks cannot split, per-rank state"

# A parameter server's checkpoint resumes on another worker count: 1 server + 2 workers
# stopped, resumed on 1 + 3 and on 1 + 1, each with the rule's log line and the accuracy of
# the run without a stop (within 1 point); another server count is refused in one line.
ps=(--set distributed.mode=\"downpour\" --set optimizer.name=\"sgd\" --set distributed.n_push=2)
$mpirun -np 3 "$hpdl" train "${args[@]}" --set run.name=ps_full "${ps[@]}" >/dev/null
interrupt_at_checkpoint "$out/ps/checkpoint.h5" "$out/ps.log" \
  $mpirun -np 3 "$hpdl" train "${args[@]}" --set run.name=ps "${ps[@]}"
"$hpdl" check "${args[@]}" "${ps[@]}" --ranks 4 --resume "$out/ps" | grep -q "2 workers' checkpoint on 3: the workers' positions are redistributed" ||
  { echo "FAIL: hpdl check --resume on 1 + 3"; "$hpdl" check "${args[@]}" "${ps[@]}" --ranks 4 --resume "$out/ps"; exit 1; }
for n in 4 2; do
  cp -r "$out/ps" "$out/ps_on$n"
  $mpirun -np $n "$hpdl" train "${args[@]}" --set run.name=ps_on$n "${ps[@]}" --resume >/dev/null
  grep -q "resuming 2 workers' checkpoint on $((n - 1)) workers*: every worker starts in epoch [0-9]*, [0-9]*% into its slice" "$out/ps_on$n/log.txt" ||
    { echo "FAIL: no line stating the redistribution on $n ranks"; cat "$out/ps_on$n/log.txt"; exit 1; }
  grep -q '"status": "complete"' "$out/ps_on$n/manifest.json"
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["resumed_from"]["workers_redistributed"]; sys.exit((r["from_workers"], r["to_workers"]) != (2, int(sys.argv[2])))' \
    "$out/ps_on$n/manifest.json" $((n - 1)) || { echo "FAIL: the manifest lacks the redistribution on $n ranks"; exit 1; }
  /usr/bin/python3 "$(dirname "$0")/accuracy_close.py" "$out/ps_full" "$out/ps_on$n" 0.01 ||
    { echo "FAIL: 1 + 2 resumed on $n ranks: accuracy not within 1 point of the run without the stop"; exit 1; }
done
echo "parameter server 1 + 2 stopped, resumed on 1 + 3 and 1 + 1: the rule logged, accuracy as without the stop"
cp -r "$out/ps" "$out/ps_servers"
$expect "ps_servers/checkpoint.h5 is from a different rank layout \\(distributed.servers\\): it has 1, this run 2" \
  $mpirun -np 4 "$hpdl" train "${args[@]}" --set run.name=ps_servers "${ps[@]}" --set distributed.servers=2 --resume
echo "refused in one line: a parameter server's checkpoint on another server count"
