#!/usr/bin/env bash
# A full disk: the run directory on a 256 KiB tmpfs, (1) a model whose model.h5 (~1 MiB)
# cannot fit, (2) a disk that another program fills while the run trains. The run ends
# non-zero with one line naming the file and the system's reason; partial files are
# removed; the manifest says "failed" with that error; every rank exits 1 by itself. Needs
# root (mount).
# Usage: disk_full.sh MPIRUN HPDL FIXTURES
source "$(dirname "$0")/prologue.sh"
set +e  # each failing command is checked below
source "$(dirname "$0")/../support/skip.sh"
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
# Every rank ends by itself with exit 1, none killed by the launcher: the other rank, done
# with training, must not sit in a wait that does not poll (a window's MPI_Win_free) while
# rank 0 fails.
rm -rf "${disk:?}"/*
exits=$($mpirun -np 2 sh -c "$hpdl train $fx/tiny.toml --set run.output_dir='\"$disk\"' --set run.name=big \
  --set model.layers.1.units=4096 --set train.epochs=1 >/dev/null 2>&1; echo rank \$OMPI_COMM_WORLD_RANK exit \$?" 2>/dev/null |
  grep '^rank' | sort | tr '\n' ' ')
[ "$exits" = "rank 0 exit 1 rank 1 exit 1 " ] || { echo "FAIL: not every rank exited 1 itself: $exits"; exit 1; }
echo "every rank exited 1 itself: $exits"

# The disk fills up under a running, profiled run (another program takes the last byte): the
# next checkpoint cannot be written; the error line and the "failed" manifest still fit (the
# run directory's .reserve is given back first) and no temporary file is left.
rm -rf "${disk:?}"/*
(for _ in $(seq 600); do [ "$({ wc -l <"$disk/filling/metrics.csv"; } 2>/dev/null || echo 0)" -ge 3 ] && break; sleep 0.05; done
 dd if=/dev/zero of="$disk/filler" bs=4k 2>/dev/null || true) &
bash "$(dirname "$0")/expect_error.sh" "cannot write .*full_disk/filling/checkpoint.h5: .*No space left on device" \
  $mpirun -np 2 "$hpdl" train "$fx/tiny.toml" --set run.output_dir=\"$disk\" --set run.name=filling \
  --set train.epochs=100000 --set checkpoint.every_steps=200 --set profile.enabled=true \
  --set profile.ceilings=false || exit 1
wait
grep -q '"status": "failed"' "$disk/filling/manifest.json" ||
  { echo "FAIL: manifest not failed on a full disk"; cat "$disk/filling/manifest.json"; exit 1; }
grep -q "^error: .*checkpoint.h5" "$disk/filling/log.txt" || { echo "FAIL: no error line in log.txt; it ends:"; tail -c 400 "$disk/filling/log.txt"; exit 1; }
left=$(find "$disk/filling" -name '*.tmp' -o -name .reserve)
[ -z "$left" ] || { echo "FAIL: left behind: $left"; exit 1; }
echo "disk filled under the run: $(grep '^error:' "$disk/filling/log.txt")"
echo "PASS"
