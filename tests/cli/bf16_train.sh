#!/usr/bin/env bash
# run.precision = "bf16" end to end under mpirun with 2 ranks. Everywhere: a CPU without bf16
# instructions is refused in one line naming them, with a non-zero exit and every rank ended
# (oneDNN capped to AVX-512 without bf16 by ONEDNN_MAX_CPU_ISA, as on such a CPU). With bf16
# instructions: the tiny fixture trains in bf16 and in f32 from the same seed; every epoch's
# loss must agree within 3 % (bf16 rounds the products' inputs), the log and the manifest
# must name the precision, and `hpdl eval` of the saved model must give the run's own test
# loss. Without them the test skips (exit 77) saying why.
# Usage: bf16_train.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
set +e  # each failing command is checked below
expect="bash $(dirname "$0")/expect_error.sh"
out=$fx/outputs
run() {  # run NAME PRECISION
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name="$1" --set run.precision=\""$2"\" --overwrite
}

ONEDNN_MAX_CPU_ISA=AVX512_CORE $expect 'run.precision = "bf16": (this CPU lacks the bf16 instructions oneDNN needs \(AVX512_BF16 or AMX-BF16; it has up to (AVX-512|AVX2|AVX)|hpdl.s bf16 needs an x86-64 CPU)' \
  $mpirun -x ONEDNN_MAX_CPU_ISA -np 2 "$hpdl" train "$fx/tiny.toml" --set run.name=bf16_refused \
  --set run.precision=\"bf16\" || exit 1

check=$("$hpdl" check "$fx/tiny.toml" --set run.precision=\"bf16\" | grep '^backend')
case $check in
  *"runs here"*) ;;
  *) echo "no bf16 here: $check"; exit 77 ;;
esac

run bf16_train bf16 >/dev/null || { echo "FAIL: the bf16 run failed"; exit 1; }
run f32_train f32 >/dev/null || { echo "FAIL: the f32 run failed"; exit 1; }
grep -q 'backend onednn (bf16)' "$out/bf16_train/log.txt" || { echo "FAIL: the log does not name bf16"; exit 1; }
grep -q '"precision": "bf16"' "$out/bf16_train/manifest.json" || { echo "FAIL: the manifest does not name bf16"; exit 1; }
python3 "$(dirname "$0")/losses_agree.py" "$out/f32_train/metrics.csv" "$out/bf16_train/metrics.csv" \
  0.03 f32 bf16 --differ || exit 1
# hpdl eval prints the loss to 4 decimals; the run's last test_loss must round to it.
loss=$(python3 -c "import csv,sys; print(list(csv.DictReader(open(sys.argv[1])))[-1]['test_loss'])" "$out/bf16_train/metrics.csv")
evaluated=$($mpirun -np 2 "$hpdl" eval "$out/bf16_train/model.h5" "$fx/test.h5" | sed -n 's/^loss \([0-9.]*\) |.*/\1/p')
python3 -c "import sys; a, e = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - e) <= 5.1e-5 else 1)" "$loss" "${evaluated:-nan}" ||
  { echo "FAIL: hpdl eval gave loss '$evaluated', the run's last test_loss is $loss"; exit 1; }
echo "hpdl eval: loss $evaluated (the run's last test_loss $loss)"
echo "PASS"
