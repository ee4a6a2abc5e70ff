// Internal to the CPU backend: max pooling for non-overlapping windows (kernel == stride)
// on plain NCHW, as one OpenMP loop over planes. Measured 4-5x faster than oneDNN 2.6's
// pooling on plain layouts (profiling/bench_kernels, BM_MaxPool), which dominates LeNet's
// non-convolution time; overlapping windows (AlexNet's 3x3/2) stay on oneDNN.
#pragma once
#include <memory>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

// Returns null when d is not a non-overlapping pooling.
std::unique_ptr<MaxPoolKernel> make_tiled_max_pool(const PoolDims& d);

}  // namespace hpdl
