#!/usr/bin/env bash
# Ranks that do not run the same job are refused before any collective that depends on it,
# naming the rank and the first difference: one mpirun starting two configs (MPMD), and one
# config whose relative data path means different files in different working directories.
# Usage: same_job.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
expect="bash $(dirname "$0")/expect_error.sh"
tiny=$fx/tiny.toml

$expect "ranks do not run the same job: rank 1's config differs from rank 0's at optimizer.lr: 0.02 vs 0.01" \
  $mpirun -np 1 "$hpdl" train "$tiny" --set run.name=mpmd : -np 1 "$hpdl" train "$tiny" --set run.name=mpmd --set optimizer.lr=0.02
$expect "ranks do not run the same job: rank 1's config differs from rank 0's at distributed.mode: 'downpour' vs \\(not set\\)" \
  $mpirun -np 1 "$hpdl" train "$tiny" --set run.name=mpmd2 --set optimizer.name=sgd : \
  -np 1 "$hpdl" train "$tiny" --set run.name=mpmd2 --set optimizer.name=sgd --set distributed.mode=downpour
$expect "rank 1's config differs from rank 0's at model.layers.1.units: 8 vs 16" \
  $mpirun -np 1 "$hpdl" train "$tiny" --set run.name=mpmd3 : -np 1 "$hpdl" train "$tiny" --set run.name=mpmd3 --set model.layers.1.units=8

work=$fx/same_job
rm -rf "$work" && mkdir -p "$work/a" "$work/b"
cp "$fx/train.h5" "$work/a/data.h5"
cp "$fx/test.h5" "$work/b/data.h5"
$expect "rank 1's data and model layout differs from rank 0's at layout.train_rows: 64 vs 256" \
  $mpirun -np 1 -wdir "$work/a" "$hpdl" train "$tiny" --set run.name=layout --set data.train_file=\"data.h5\" : \
  -np 1 -wdir "$work/b" "$hpdl" train "$tiny" --set run.name=layout --set data.train_file=\"data.h5\"
echo "PASS"
