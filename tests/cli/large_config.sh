#!/usr/bin/env bash
# A config of 3,000 layers (its resolved TOML about 120 KiB, beyond HDF5's 64 KiB object
# header): training writes its checkpoints and model.h5 (the config stored with them),
# `hpdl eval` reads the model back, and --resume continues from the checkpoint.
# Usage: large_config.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
out=$fx/outputs/large_config
rm -rf "$out" && mkdir -p "$out"
/usr/bin/python3 - "$fx/tiny.toml" "$out/large.toml" <<'PY'
import sys
text = open(sys.argv[1]).read()
last = '[[model.layers]]\ntype = "dense"\nunits = 4'
assert last in text
text = text.replace(last, '[[model.layers]]\ntype = "relu"\n' * 3000 + last)
open(sys.argv[2], "w").write(text)
PY
args=("$out/large.toml" --set "run.output_dir=\"$out\"" --set run.name=large --set train.epochs=1
      --set checkpoint.every_steps=4)
$mpirun -np 2 "$hpdl" train "${args[@]}" >"$out/train.txt"
size=$(stat -c %s "$out/large/config.toml")
[ "$size" -gt 65536 ] || { echo "FAIL: the resolved config is only $size bytes"; exit 1; }
for f in model.h5 checkpoint.h5; do [ -s "$out/large/$f" ] || { echo "FAIL: no $f"; exit 1; }; done
"$hpdl" eval "$out/large/model.h5" "$fx/test.h5" | grep -q "^loss .* accuracy"
$mpirun -np 2 "$hpdl" train "${args[@]}" --set run.name=resumed --set train.epochs=2 \
  --resume-from "$out/large/checkpoint.h5" >"$out/resume.txt"
grep -q "resum" "$out/resume.txt" || { echo "FAIL: no resume line"; cat "$out/resume.txt"; exit 1; }
echo "PASS: a $size-byte config trained, saved, evaluated and resumed"
