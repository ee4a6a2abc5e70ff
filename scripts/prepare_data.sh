#!/usr/bin/env bash
# Converts Fashion-MNIST (Debian's dataset-fashion-mnist) and, when ../shared has it, the UCI
# HAR subset to HDF5 under data/, with build/hpdl (or $HPDL); files already there are kept.
# Called by scripts/setup.sh, scripts/arm64_test.sh, and scripts/gpu_bundle.sh on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
hpdl=${HPDL:-build/hpdl}
FM=/usr/share/datasets/fashion-mnist
CLASSES="T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot"
mkdir -p data
if [ ! -f data/fashion-mnist-train.h5 ]; then
  "$hpdl" convert mnist $FM/train-images-idx3-ubyte.gz $FM/train-labels-idx1-ubyte.gz \
    data/fashion-mnist-train.h5 --classes "$CLASSES"
fi
# The real UCI HAR subset from ../shared, when it is there (the HAR configs train on it).
HAR=../shared/data/uci-har-subset/uci-har-subset.tar.xz
if [ -f "$HAR" ] && [ ! -f data/uci-har-subset.h5 ]; then
  tmp=$(mktemp -d)
  tar -xJf "$HAR" -C "$tmp"
  "$hpdl" convert uci-har "$tmp/UCI HAR Dataset" data/uci-har-subset.h5
  rm -rf "$tmp"
fi
if [ ! -f data/fashion-mnist-test.h5 ]; then
  "$hpdl" convert mnist $FM/t10k-images-idx3-ubyte.gz $FM/t10k-labels-idx1-ubyte.gz \
    data/fashion-mnist-test.h5 --classes "$CLASSES"
fi
