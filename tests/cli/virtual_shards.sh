#!/usr/bin/env bash
# distributed.virtual_shards = 4: the global batch as 4 fixed shards whose gradients are
# summed in shard order, so 1, 2 and 4 ranks end with the same parameters bit for bit, and
# 4 ranks stopped at a checkpoint and resumed on 2 end with them too (the log says bit for
# bit). A checkpoint written without shards is refused by a run with them, naming the key.
# Usage: virtual_shards.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
source "$(dirname "$0")/interrupt.sh"
expect="bash $(dirname "$0")/expect_error.sh"
out=$fx/outputs/shards
rm -rf "$out" && mkdir -p "$out"
args=("$fx/tiny.toml" --set "run.output_dir=\"$out\"" --set train.epochs=40
  --set checkpoint.every_steps=40 --set distributed.virtual_shards=4)
same() { /usr/bin/python3 "$(dirname "$0")/params_equal.py" "$out/$1/model.h5" "$out/$2/model.h5"; }

for n in 1 2 4; do $mpirun -np $n "$hpdl" train "${args[@]}" --set run.name=np$n >/dev/null; done
same np1 np2 && same np1 np4 || { echo "FAIL: 1, 2 and 4 ranks differ with virtual shards"; exit 1; }
echo "1, 2 and 4 ranks: the same parameters bit for bit"

interrupt_at_checkpoint "$out/cut/checkpoint.h5" "$out/cut.log" \
  $mpirun -np 4 "$hpdl" train "${args[@]}" --set run.name=cut
"$hpdl" check "${args[@]}" --ranks 2 --resume "$out/cut/checkpoint.h5" |
  grep -q "cut/checkpoint.h5: exact on 2 ranks (written by 4; distributed.virtual_shards = 4)" ||
  { echo "FAIL: hpdl check --resume with virtual shards"; exit 1; }
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=cut --resume >/dev/null
grep -q "resuming 4 ranks' checkpoint on 2: bit for bit (distributed.virtual_shards = 4" "$out/cut/log.txt" ||
  { echo "FAIL: no bit-for-bit resume line"; cat "$out/cut/log.txt"; exit 1; }
same np1 cut || { echo "FAIL: 4 ranks resumed on 2 differ from the uninterrupted run"; exit 1; }
echo "4 ranks stopped, resumed on 2: the uninterrupted parameters bit for bit"

interrupt_at_checkpoint "$out/plain/checkpoint.h5" "$out/plain.log" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=plain --set distributed.virtual_shards=0
$expect "plain/checkpoint.h5 is from a different gradient sum \\(distributed.virtual_shards\\): it has 0, this run 4" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=plain --resume
$expect "plain/checkpoint.h5 is from a different gradient sum \\(distributed.virtual_shards\\): it has 0, this run 4" \
  "$hpdl" check "${args[@]}" --ranks 2 --resume "$out/plain"
