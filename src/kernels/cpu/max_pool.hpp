// Internal to the CPU backend: max pooling for non-overlapping windows (kernel == stride)
// on plain NCHW, as one OpenMP loop over planes (and on a convolution's channel blocks,
// block_max_pool.cpp). Measured 4-5x faster than oneDNN 2.6's pooling on plain layouts
// (profiling/bench_kernels, BM_MaxPool), which dominates LeNet's non-convolution time; overlapping
// windows (AlexNet's 3x3/2) stay on oneDNN.
#pragma once
#include <memory>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

// Whether d is a pooling these kernels take: windows equal to their stride.
bool cpu_max_pool_fits(const PoolDims& d);
// For d that fits: with channel blocks (PoolDims::in_block, out_block) other than plain, the
// block_max_pool.cpp kernel, else the plain one.
std::unique_ptr<MaxPoolKernel> make_cpu_max_pool(const PoolDims& d);
// The same pooling on activations in channel blocks (kernels.hpp), per sample, converting
// from the input's blocks to the output's on the way. Throws Error for blocks that do not
// divide the channels.
std::unique_ptr<MaxPoolKernel> make_block_max_pool(const PoolDims& d);

}  // namespace hpdl
