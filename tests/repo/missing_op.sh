#!/usr/bin/env bash
# A backend that misses an operation must not build, and the compiler must name the
# operation: a factory deriving from KernelFactory without `scalar_norm`, and vector
# operations without `dcasgd`, are compiled here and must fail with those names.
# Usage: missing_op.sh CXX INCLUDE_DIR
set -u
cxx=$1 inc=$2 tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/backend.cpp" <<'CPP'
#include "hpdl/kernels/kernels.hpp"
using namespace hpdl;
// Every operation but one: the new backend forgot scalar_norm.
struct NewBackend final : KernelFactory {
  std::string name() const override { return "new"; }
  std::unique_ptr<DenseKernel> dense(const DenseDims&) override { return nullptr; }
  std::unique_ptr<ConvKernel> conv(const ConvDims&) override { return nullptr; }
  std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims&) override { return nullptr; }
  std::unique_ptr<ActivationKernel> activation(Activation, int64_t) override { return nullptr; }
  std::unique_ptr<SoftmaxXentKernel> softmax_xent(int64_t, int64_t) override { return nullptr; }
  std::unique_ptr<DropoutKernel> dropout(const DropoutDims&) override { return nullptr; }
  std::unique_ptr<LstmCellKernel> lstm_cell(const LstmCellDims&) override { return nullptr; }
  VectorOps& ops() override { throw 0; }
  Device& device() override { throw 0; }
};
// Vector operations without dcasgd.
struct NewOps final : VectorOps {
  void axpy(int64_t, float, const float*, float*) override {}
  void scaled_copy(int64_t, float, const float*, float*) override {}
  void scale(int64_t, float, float*) override {}
  void fill(int64_t, float, float*) override {}
  void copy_rows(int64_t, int64_t, const float*, int64_t, float*, int64_t) override {}
  double sum_squares(int64_t, const float*) override { return 0; }
  double axpy_sum_squares(std::span<const Range>, float, const float*, int64_t, float*) override {
    return 0;
  }
  void sgd(int64_t, float, float, const float*, float*, float*) override {}
  void adam(int64_t, const AdamStep&, const float*, float*, float*, float*) override {}
  void mean_square(int64_t, float, const float*, float*) override {}
};
std::unique_ptr<KernelFactory> make_new() { return std::make_unique<NewBackend>(); }
std::unique_ptr<VectorOps> make_new_ops() { return std::make_unique<NewOps>(); }
CPP
if out=$("$cxx" -std=c++20 -fsyntax-only -I"$inc" "$tmp/backend.cpp" 2>&1); then
  echo "FAIL: a backend missing scalar_norm and dcasgd compiled"; exit 1
fi
for op in scalar_norm dcasgd; do
  grep -q "virtual.*$op" <<<"$out" || { echo "FAIL: the error does not name $op"; printf '%s\n' "$out" | head -30; exit 1; }
done
printf '%s\n' "$out" | grep -E "pure|virtual.*(scalar_norm|dcasgd)" | head -4
echo "PASS: the build refuses a backend missing an operation and names it"
