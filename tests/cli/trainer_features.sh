#!/usr/bin/env bash
# What users expect from a trainer (issue 16), end to end through mpirun:
#  - a step schedule's rate per epoch in metrics.csv; validation columns every epoch, the
#    test split evaluated once; train.keep = "best" ends with the epoch of the best
#    val_loss (recomputed here from metrics.csv), and `hpdl eval` of model.h5 on 1 and 2
#    ranks prints the run's final test accuracy; scores.csv per class;
#  - train.patience stops early and says so;
#  - resume across decay boundaries (schedule + keep best): parameters and metrics equal to
#    the uninterrupted run;
#  - Downpour: server 0 logs a line per trained epoch; keep best works on snapshots;
#    `hpdl eval` of a checkpoint;
#  - hpdl eval refuses a model/data mismatch and files that are no model, with one line.
# Usage: trainer_features.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/features
expect="bash $(dirname "$0")/expect_error.sh"
source "$(dirname "$0")/interrupt.sh"
rm -rf "$out"
mkdir -p "$out"
common=(--set "run.output_dir=\"$out\"" --set data.validation_fraction=0.25
        --set 'optimizer.schedule="step"' --set optimizer.decay_epochs=2 --set optimizer.decay_factor=0.5
        --set 'train.keep="best"')
py=/usr/bin/python3

# 1. Schedule, validation, keep best, eval, on overlapping classes (accuracy ~0.9).
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" "${common[@]}" --set run.name=best --set train.epochs=10 \
  --set "data.train_file=\"$fx/noisy_train.h5\"" --set "data.test_file=\"$fx/noisy_test.h5\"" \
  --set optimizer.lr=0.03 --set 'train.keep_metric="val_accuracy"' >/dev/null
$py - "$out/best" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/metrics.csv")))
assert len(rows) == 10, len(rows)
lrs = [float(r["lr"]) for r in rows]
want = [0.03 * 0.5 ** ((e - 1) // 2) for e in range(1, 11)]
assert all(abs(a - b) < 1e-9 for a, b in zip(lrs, want)), (lrs, want)
assert all(r["val_loss"] != "" and r["test_accuracy"] == "" for r in rows), rows[0]
acc = [float(r["val_accuracy"]) for r in rows]
best = acc.index(max(acc)) + 1  # the first epoch with the best accuracy
m = json.load(open(d + "/manifest.json"))
assert m["final"]["keep"] == "best" and m["final"]["model_epoch"] == best, (m["final"], acc)
assert 0.5 < m["final"]["test_accuracy"] < 1, m["final"]
assert len(m["final"]["per_class"]) == 4
scores = open(d + "/scores.csv").read().splitlines()
assert scores[0] == "class,precision,recall,f1,support" and len(scores) == 5, scores
print("keep best: epoch", best, "of", acc)
open(d + "/final_accuracy", "w").write("loss %.4f | accuracy %.4f" % (m["final"]["test_loss"], m["final"]["test_accuracy"]))
PY
grep -q "model of epoch [0-9]* (best val_accuracy)" "$out/best/log.txt"
acc=$(cat "$out/best/final_accuracy")
for np in 1 2; do
  $mpirun -np $np "$hpdl" eval "$out/best/model.h5" "$fx/noisy_test.h5" >"$out/eval$np.txt"
  grep -q "^$acc " "$out/eval$np.txt" ||
    { echo "FAIL: hpdl eval on $np rank(s) differs from the run's final accuracy $acc"; cat "$out/eval$np.txt"; exit 1; }
done
grep -q "weighted avg" "$out/eval1.txt"
echo "hpdl eval on 1 and 2 ranks = the run's final test result: $acc"

# 2. Early stopping.
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" "${common[@]}" --set run.name=patience \
  --set train.epochs=200 --set train.patience=1 --set optimizer.lr=0.5 >/dev/null
$py - "$out/patience" <<'PY'
import json, sys
f = json.load(open(sys.argv[1] + "/manifest.json"))["final"]
assert f["stopped_early"] and f["epochs"] < 200 and f["epochs"] == f["model_epoch"] + 1, f
PY
grep -q "stopped early: no better val_loss in 1 epochs" "$out/patience/log.txt"
echo "patience 1: stopped early"

# 3. Resume across decay boundaries (one decay per epoch), keep best in the checkpoint. 1200
# epochs (about 0.8 s of steps): with 150 (0.1 s) a loaded machine once delivered the signal
# after the last step, and the run ended complete instead of interrupted.
args=("$fx/tiny.toml" "${common[@]}" --set optimizer.decay_epochs=1 --set optimizer.decay_factor=0.99
      --set train.epochs=1200)
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=full >/dev/null
interrupt_at_checkpoint "$out/cut/checkpoint.prev.h5" "$out/cut.log" \
  $mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=cut --set checkpoint.every_steps=100
cp "$out/cut/checkpoint.h5" "$out/interrupted_checkpoint.h5"  # for hpdl eval below
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=cut --set checkpoint.every_steps=100 --resume >/dev/null
grep -q "resumed from .*checkpoint.h5: epoch" "$out/cut/log.txt"
$py "$(dirname "$0")/params_equal.py" "$out/full/model.h5" "$out/cut/model.h5" ||
  { echo "FAIL: resumed run's parameters differ"; exit 1; }
cmp <(cut -d, -f1-6,11-14 "$out/full/metrics.csv") <(cut -d, -f1-6,11-14 "$out/cut/metrics.csv") ||
  { echo "FAIL: resumed run's metrics (lr, validation) differ"; exit 1; }
cmp <(grep -o '"model_epoch": [0-9]*' "$out/full/manifest.json") <(grep -o '"model_epoch": [0-9]*' "$out/cut/manifest.json")
echo "resume across decay boundaries: parameters, lr and validation columns equal"

# 4. Downpour: server 0's per-epoch lines, keep best among snapshots, eval of a checkpoint.
$mpirun -np 3 "$hpdl" train "$fx/tiny.toml" "${common[@]}" --set run.name=ps --set train.epochs=4 \
  --set 'distributed.mode="downpour"' --set 'optimizer.name="sgd"' --set optimizer.lr=0.05 \
  >/dev/null
for e in 1 2 3 4; do grep -q "^epoch $e trained in .* samples/s, .* pushes, staleness mean" "$out/ps/log.txt"; done
$py - "$out/ps" <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/metrics.csv")))
losses = [float(r["val_loss"]) for r in rows]
f = json.load(open(d + "/manifest.json"))["final"]
assert f["model_epoch"] == losses.index(min(losses)) + 1, (f, losses)
PY
echo "downpour: per-epoch progress lines, keep best"
# A checkpoint (the interrupted run's, mid-training) evaluates like a model.
$mpirun -np 2 "$hpdl" eval "$out/interrupted_checkpoint.h5" "$fx/test.h5" >"$out/eval_ckpt.txt"
grep -q "^checkpoint .*interrupted_checkpoint.h5 (1108 parameters)" "$out/eval_ckpt.txt" && grep -q "^loss .* | accuracy " "$out/eval_ckpt.txt" ||
  { echo "FAIL: eval of a checkpoint"; cat "$out/eval_ckpt.txt"; exit 1; }
echo "hpdl eval of a checkpoint: $(grep '^loss' "$out/eval_ckpt.txt")"

# 5. hpdl eval refuses what it cannot evaluate.
$expect "has samples of shape \[1, 28, 28\] but model.input = \[1, 8, 8\]|x has samples of shape" \
  $mpirun -np 2 "$hpdl" eval "$out/best/model.h5" "$fx/wrong_shape.h5"
$expect "train.h5 is neither an hpdl model \(no /params\) nor an hpdl checkpoint" \
  $mpirun -np 2 "$hpdl" eval "$fx/train.h5" "$fx/test.h5"
$expect "model .*nope.h5 not found" $mpirun -np 1 "$hpdl" eval "$out/nope.h5" "$fx/test.h5"
$expect "bad_labels.h5:/y\\[50\\] = 7 is outside the class range 0..3" \
  $mpirun -np 2 "$hpdl" eval "$out/best/model.h5" "$fx/bad_labels.h5"
$expect "no dataset /nope/x" $mpirun -np 2 "$hpdl" eval "$out/best/model.h5" "$fx/test.h5" --group /nope
echo "PASS"
