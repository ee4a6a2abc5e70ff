#!/usr/bin/env bash
# A full disk: the run directory on a 256 KiB tmpfs, a model whose model.h5 (~1 MiB) cannot
# fit. The run ends non-zero with one line naming the file and the system's reason; the
# partial file is removed; the manifest says "failed" with that error. Needs root (mount).
# Usage: disk_full.sh MPIRUN HPDL FIXTURES
set -u
mpirun="$1 --oversubscribe --bind-to none" hpdl=$2 fx=$3
source "$(dirname "$0")/../skip.sh"
disk=$fx/full_disk
mkdir -p "$disk"
mountpoint -q "$disk" && umount "$disk"
mount -t tmpfs -o size=256k tmpfs "$disk" 2>/dev/null || skip "cannot mount a small tmpfs at $disk (not root?)"
trap 'umount "$disk" 2>/dev/null' EXIT
bash "$(dirname "$0")/expect_error.sh" "cannot write .*full_disk/big/model.h5: .*No space left on device \\(errno 28\\)" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.output_dir=\"$disk\" --set run.name=big \
  --set model.layers.1.units=4096 --set train.epochs=1 || exit 1
[ ! -e "$disk/big/model.h5.tmp" ] || { echo "FAIL: the partial model.h5.tmp was left"; exit 1; }
grep -q '"status": "failed"' "$disk/big/manifest.json" || { echo "FAIL: manifest not failed"; cat "$disk/big/manifest.json"; exit 1; }
grep -q '"error": "rank 0: cannot write .*model.h5: .*No space left on device' "$disk/big/manifest.json" ||
  { echo "FAIL: manifest error does not name model.h5 and the reason"; exit 1; }
echo "full disk: $(grep '^error:' "$disk/big/log.txt")"
echo "PASS"
