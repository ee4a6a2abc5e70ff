// Launch helpers shared by the CUDA backend's kernels: a grid for n elements with
// grid-stride loops, and a block-wide sum in double. Private to the CUDA backend.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace hpdl::cuda {

constexpr int kThreads = 256;  // per block; block_sum2 assumes exactly this

// Blocks for n elements at one per thread, capped: the loops stride over the rest.
inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 8192));
}

// for (i in [0, n)) spread over the grid.
#define HPDL_GRID_STRIDE(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

// The same with indices of type I (int32_t where n < 2^30: i + the grid's stride stays in range).
#define HPDL_GRID_STRIDE_AS(I, i, n)                                         \
  for (I i = static_cast<I>(blockIdx.x * blockDim.x + threadIdx.x); i < (n); \
       i += static_cast<I>(blockDim.x * gridDim.x))

// Sums a and b over the block (kThreads threads); every thread gets the totals. Summation
// order is fixed by the thread layout, so results repeat run to run.
__device__ inline void block_sum2(double& a, double& b) {
  __shared__ double sa[kThreads], sb[kThreads];
  sa[threadIdx.x] = a, sb[threadIdx.x] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      sa[threadIdx.x] += sa[threadIdx.x + half], sb[threadIdx.x] += sb[threadIdx.x + half];
    __syncthreads();
  }
  a = sa[0], b = sb[0];
  __syncthreads();  // the next call may overwrite sa, sb
}

}  // namespace hpdl::cuda
