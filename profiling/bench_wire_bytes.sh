#!/usr/bin/env bash
# Bytes on the wire per training step, read from the emulated cluster's links (tc -s
# counters of scripts/netns_cluster.sh), for the synchronous variants: each variant runs
# STEPS and 2 x STEPS steps on HOSTS hosts x 1 rank and the difference of the bytes every
# host sent, divided by STEPS, is what one step puts on the wire (launch, set-up and the
# end of the run cancel out). The payload column is what the variant's allreduces carry
# per step per rank by design (4 or 2 bytes a parameter, every step or every H steps).
#   MODEL=mlp_fashion_mnist HOSTS=4 STEPS=64 VARIANTS="sync bf16 fp16 local16 diloco64_bf16" \
#     profiling/bench_wire_bytes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
model=${MODEL:-mlp_fashion_mnist}
hosts=${HOSTS:-4}
steps=${STEPS:-64}
variants=${VARIANTS:-sync bf16 fp16 local16 diloco64 diloco64_bf16}
rate=${RATE:-1gbit}
hpdl=${HPDL:-build/hpdl}
source profiling/cluster_env.sh hpdl-wire
source profiling/variants.sh
$cluster up "$hosts" --rate "$rate" >/dev/null
sent_total() {  # the bytes all hosts have sent so far
  $cluster status | awk '/^host /{ s += $5 } END { print s }'
}
params=""
printf '%-16s %14s %16s %10s\n' variant "MB/step (wire)" "MB/step payload" "vs sync"
base=""
for v in $variants; do
  per=()
  for n in "$steps" $((2 * steps)); do
    sets=()
    while read -r s; do [ -z "$s" ] || sets+=(--set "$s"); done < <(variant_sets "$v")
    before=$(sent_total)
    $cluster mpirun -np "$hosts" --bind-to none -x OMP_NUM_THREADS=1 "$hpdl" train \
      "inputs/$model.toml" --set run.output_dir="\"$work/runs\"" --set run.name="\"${v}_$n\"" \
      --set train.progress=false --set train.max_steps="$n" --set train.epochs=1000 \
      --set 'data.test_file=""' "${sets[@]}" --overwrite >"$work/$v.log" 2>&1 ||
      { echo "FAILED: $v"; tail -3 "$work/$v.log"; exit 1; }
    per+=($(($(sent_total) - before)))
  done
  [ -n "$params" ] || params=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/runs/${v}_$steps/manifest.json'))['parameters'])")
  /usr/bin/python3 - "$v" "${per[0]}" "${per[1]}" "$steps" "$params" "${base:-0}" <<'PY'
import re, sys
v, a, b, steps, params, base = sys.argv[1], *map(float, sys.argv[2:])
wire = (b - a) / steps / 1e6
m = re.match(r"(local|diloco)(\d+)", v)
h = int(m.group(2)) if m else 1
payload = params * (2 if v.endswith(("bf16", "fp16")) else 4) / h / 1e6
ratio = f"1/{base / wire:.1f}" if base else "1"
print(f"{v:<16} {wire:>14.4f} {payload:>16.4f} {ratio:>10}")
PY
  [ -n "$base" ] || base=$(/usr/bin/python3 -c "print((${per[1]} - ${per[0]}) / $steps / 1e6)")
done
echo "($hosts hosts x 1 rank at $rate; $model, $params parameters; bytes summed over the hosts' links)"
