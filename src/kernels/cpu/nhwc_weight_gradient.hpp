// The weight and bias gradients of a convolution over several input channels, from NHWC
// inputs and output gradients (LeNet's conv2 on an AVX2 machine). For a window row kh, the
// window under output (oh, ow) is K C contiguous floats of the zero-padded input row, so
// dw[kh, :, :] (K C x O) is a sum over the output positions of outer products: each tile of
// 6 window floats x 2 vectors of output channels summed in registers, over a few output rows
// at a time (what fits in L1), and the output channels left over after whole vectors the
// other way round (a channel's gradient broadcast, vectors of the window). oneDNN's AVX2
// kernel pads the channels to blocks of 8 (50 -> 56) and ran LeNet's conv2 weight gradient
// at ~76 % of the GEMM peak. Private to kernels/.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

class NhwcWeightGradient {
 public:
  // Whether this kernel takes d: f32, more than one input channel (one: the one-channel
  // kernel), a non-empty output.
  static bool fits(const ConvDims& d);
  // threads: 0 all of OpenMP's (as when made), else that many; each thread's buffers are
  // made here, not per call.
  NhwcWeightGradient(const ConvDims& d, int threads);
  ~NhwcWeightGradient();
  // x [N, H, W, C], dy [N, OH, OW, O] (NHWC); dw [O, C, K, K] += the gradient, db [O] +=
  // it. The samples are split over the threads; each thread's sums go into double totals
  // every few samples, added in thread order (the same bits for a thread count).
  void accumulate(const float* x, const float* dy, float* dw, float* db);

 private:
  // The shape's numbers, worked out once: K C window floats a window row, the padded image's
  // width, whole vectors of channels (one more where padding costs less than window tiles),
  // the channels left over for window tiles, vectors a window row, floats a gradient row.
  struct Layout {
    int64_t KC, PW, vectors, left, window_vectors, row;
  };
  struct Scratch;
  static Layout layout_of(const ConvDims& d);
  void add_group(Scratch& s) const;
  ConvDims d_;
  Layout l_;
  int64_t chunk_rows_;  // output rows summed in one pass over a tile (what fits in L1)
  std::vector<std::unique_ptr<Scratch>> scratch_;  // one per thread
};

}  // namespace hpdl
