#!/usr/bin/env bash
# `hpdl report`'s pages, opened in a real headless browser (browser_check.py: Debian's
# chromium): (1) a profiled 2-rank run writes report.html itself and names it in its log's
# last line; the page loads from file:// with no console error and no request, its layer
# table has a row per layer of the model, every chart drew marks, the timeline zooms, the
# screenshot is not blank; (2) a parameter-server run's page draws its workers and staleness; (3) two runs
# compared; (4) a tiny study (two tasks at 1 and 2 threads per rank); (5) what is missing or
# unusual: a run without traces (the page says what is missing), a failed run and a running
# one (the header says so), a directory that is not a run (one line, exit 1).
# Without a browser, the pages are still written and checked as files; the test then ends
# with SKIP (77) for the browser checks.
# Usage: report_pages.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/../cli/prologue.sh"
out=$fx/outputs/report
check="/usr/bin/python3 $(dirname "$0")/browser_check.py"
expect="bash $(dirname "$0")/../cli/expect_error.sh"
rm -rf "$out" && mkdir -p "$out"
browser=1
command -v chromedriver >/dev/null && /usr/bin/python3 -c "import selenium" 2>/dev/null || browser=0
open_page() {  # PAGE [CHECKS...]: in the browser where there is one; else that it is a page
  if [ $browser = 1 ]; then
    $check "$@"
  else
    grep -q '<script type="application/json" id="report-data">' "$1" || { echo "FAIL: $1 is not a report page"; exit 1; }
  fi
}
run=(--set "run.output_dir=\"$out\"" --set train.epochs=2 --set profile.enabled=true
  --set profile.skip=1 --set profile.active=20 --overwrite)
layers=$(grep -c '^\[\[model.layers\]\]' "$fx/tiny.toml")

# (1) A profiled run on 2 ranks: the page is written by train itself.
$mpirun -np 2 "$hpdl" train "$fx/tiny.toml" "${run[@]}" --set run.name=a > "$out/a.log"
tail -n 1 "$out/a/log.txt" | grep -q "^report: $out/a/report.html" ||
  { echo "FAIL: the log's last line does not name the report"; tail -n 3 "$out/a/log.txt"; exit 1; }
size=$(stat -c %s "$out/a/report.html")
echo "(1) $out/a/report.html: $size bytes"
open_page "$out/a/report.html" --layers "$layers" --charts "step parts,layers,roofline,ranks,timeline,loss and accuracy" \
  --text "status: complete" --text "2 rank(s) x" --zoom --screenshot "$out/a.png"

# (2) The parameter server: its workers and the staleness histogram.
$mpirun -np 3 "$hpdl" train "$fx/tiny.toml" "${run[@]}" --set run.name=ps \
  --set distributed.mode=\"downpour\" --set optimizer.name=\"sgd\" > /dev/null
open_page "$out/ps/report.html" --layers "$layers" --charts "workers,staleness,timeline"

# (3) Two runs compared: what differs, per layer A against B.
$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" "${run[@]}" --set run.name=b --set train.batch=32 > /dev/null
"$hpdl" report "$out/a" "$out/b" --out "$out/compare.html" | grep -q "^report: $out/compare.html$"
open_page "$out/compare.html" --layers $((2 * layers)) --charts "layers A vs B" --text "train.batch"

# (4) A study: a sweep directory of two tasks, 1 and 2 threads per rank.
for t in 1 2; do
  OMP_NUM_THREADS=$t $mpirun -np 1 -x OMP_NUM_THREADS "$hpdl" train "$fx/tiny.toml" "${run[@]}" \
    --set "run.output_dir=\"$out/sweep\"" --set run.name=task$((t - 1)) > /dev/null
done
"$hpdl" report --study "$out/sweep" > /dev/null
open_page "$out/sweep/report.html" --charts "layer time across tasks" --text "threads_per_rank=2" \
  --text "Scaling with threads per rank"

# (5) A run that was not profiled: the page says what is missing and draws the rest.
$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" --set "run.output_dir=\"$out\"" --set run.name=plain > /dev/null
[ ! -e "$out/plain/report.html" ] || { echo "FAIL: an unprofiled run wrote a report by itself"; exit 1; }
"$hpdl" report "$out/plain" > /dev/null
open_page "$out/plain/report.html" --charts "loss and accuracy" \
  --text "not in this run: per-layer times (layers.csv): the run was not profiled"
# A failed run: the header says so, with the error.
set +e
$mpirun -np 1 "$hpdl" train "$fx/tiny.toml" "${run[@]}" --set run.name=failed \
  --set data.train_file=\"$fx/huge.h5\" > /dev/null 2>&1
set -e
grep -q '"status": "failed"' "$out/failed/manifest.json" || { echo "FAIL: the diverging run did not fail"; exit 1; }
"$hpdl" report "$out/failed" > /dev/null
open_page "$out/failed/report.html" --text "status: failed: training diverged"
# A running one: its lock held (as a live run holds it), its manifest not yet complete.
cp -r "$out/plain" "$out/running"
sed -i 's/"status": "complete"/"status": "running"/' "$out/running/manifest.json"
exec 9>>"$out/running/.lock"
flock -x 9
"$hpdl" report "$out/running" > /dev/null
exec 9>&-
open_page "$out/running/report.html" --text "status: running"
"$hpdl" report "$out/running" > /dev/null  # the lock is free now: it ended without finishing
open_page "$out/running/report.html" --text "ended without finishing"
# Not a run directory: one line, exit 1.
$expect "hpdl: error: $out/sweep is not an hpdl run directory: it has no manifest.json" "$hpdl" report "$out/sweep"
$expect "holds no sweep tasks" "$hpdl" report --study "$out/a"
$expect "is not a directory" "$hpdl" report "$out/nothing_here"
$expect "report --study takes a sweep directory alone" "$hpdl" report --study "$out/sweep" "$out/a"
$expect "report takes one run directory, two, or --study DIR" "$hpdl" report
# A page that cannot be written: one line naming where.
$expect "cannot write /nonexistent/x.html" "$hpdl" report "$out/a" --out /nonexistent/x.html
if [ $browser = 0 ]; then
  echo "SKIP: the pages were written and checked as files; no browser to open them (apt install chromium chromium-driver python3-selenium)"
  exit 77
fi
echo "PASS: run, parameter server, comparison and study pages open and draw; missing and unusual runs said"
