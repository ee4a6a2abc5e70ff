#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/: clang, ASan + UBSan) into build-fuzz/ and runs them.
#   bash scripts/fuzz.sh          # CI: each target replays its regressions, then runs
#                                 # 20000 inputs from a fixed seed (reproducible, seconds;
#                                 # the HDF5 target replays its seeds only, see below)
#   bash scripts/fuzz.sh 600      # a long run: 600 s per target; the corpus grows in
#                                 # build-fuzz/corpus/<target>/, crashes go to build-fuzz/findings/
# A crash is a failure; keep its input as a regression: fuzz/regressions/<target>/<name>.
# Prints one line per target (executions, corpus size) and exits non-zero on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-0}
if ! command -v clang++ >/dev/null; then
  source tests/support/skip.sh
  skip "clang++ is not installed (scripts/setup.sh installs clang and libclang-rt-14-dev)"
fi
build=build-fuzz
source scripts/cmake_steps.sh
cmake_configure fuzz $build -S fuzz -B $build -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake_compile fuzz $build
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$(pwd)/fuzz/lsan.supp
rc=0
for target in config idx uci_har h5_input; do
  bin=$build/fuzz_$target
  findings=$build/findings/$target
  log=$build/$target.log
  mkdir -p "$findings"
  # CI: a fresh copy of the seeds, so the run is the same every time; a long run keeps
  # and grows its corpus.
  corpus=$build/corpus/$target
  [ "$seconds" -gt 0 ] || { corpus=$build/ci-corpus/$target; rm -rf "$corpus"; }
  mkdir -p "$corpus"
  cp -n fuzz/corpus/$target/* "$corpus"/ 2>/dev/null || true
  regressions=()
  [ -d fuzz/regressions/$target ] && regressions=(fuzz/regressions/$target/*)
  if [ ${#regressions[@]} -gt 0 ] && ! "$bin" -rss_limit_mb=2048 "${regressions[@]}" >"$log.regressions" 2>&1; then
    echo "fuzz_$target: a regression input fails again"; grep -E "ERROR|SUMMARY|what\(\)" "$log.regressions" | head -5; rc=1; continue
  fi
  # Mutating HDF5 files mostly exercises libhdf5's own parser, whose crafted-file bugs
  # (allocations sized by corrupt metadata, leaks) are not hpdl's to fix: CI replays the
  # HDF5 seeds and regressions through hpdl's checks; a long run mutates them too.
  if [ "$seconds" -gt 0 ]; then
    limits=(-max_total_time="$seconds")
  elif [ "$target" = h5_input ]; then
    limits=(-runs=0)
  else
    limits=(-seed=1 -runs=20000)
  fi
  if "$bin" "${limits[@]}" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    -artifact_prefix="$findings/" "$corpus" >"$log" 2>&1; then
    execs=$(grep -Eo "stat::number_of_executed_units: *[0-9]+|Done [0-9]+ runs" "$log" | grep -Eo "[0-9]+" | tail -1)
    echo "fuzz_$target: ${execs:-?} executions (${limits[*]}), no finding, corpus $(ls "$corpus" | wc -l) inputs, ${#regressions[@]} regressions replayed"
  else
    echo "fuzz_$target: FINDING (inputs in $findings/)"
    grep -E "ERROR|runtime error|SUMMARY|terminate|what\(\)" "$log" | head -8
    rc=1
  fi
done
exit $rc
