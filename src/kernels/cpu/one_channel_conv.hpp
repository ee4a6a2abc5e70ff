// The weight and bias gradients of a convolution over one input channel (LeNet's conv1 on a
// grey image), from NHWC output gradients: each output position's O channel gradients, in
// vector registers, times the K x K input values under its window, summed in registers. A
// layer with one input channel is a poor fit for oneDNN's direct kernels, which block over
// input channels (LeNet's conv1 weight gradient at 22 % of the GEMM peak). Private to kernels/.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

class OneChannelWeightGradient {
 public:
  // Whether this kernel takes d: one input channel, f32.
  static bool fits(const ConvDims& d);
  // threads: 0 all of OpenMP's (as when made), else that many; each thread's buffers are
  // made here, not per call.
  OneChannelWeightGradient(const ConvDims& d, int threads);
  ~OneChannelWeightGradient();
  // x [N, H, W], dy [N, OH, OW, O] (NHWC); dw [O, K, K] += the gradient, db [O] += it. Inside
  // a parallel region, on the calling thread alone.
  void accumulate(const float* x, const float* dy, float* dw, float* db);

 private:
  struct Scratch;
  ConvDims d_;
  std::vector<std::unique_ptr<Scratch>> scratch_;  // one per thread
};

}  // namespace hpdl
