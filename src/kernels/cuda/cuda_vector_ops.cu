// The CUDA backend's vector operations: one grid-stride kernel each over element_math.hpp's
// per-element arithmetic (the CPU backends' too), 2-D copies with cudaMemcpy2DAsync, and
// sum_squares as fixed per-block partial sums in double added on the host in block order
// (the value the caller waits for).
#include <vector>

#include "../element_math.hpp"
#include "cuda_check.hpp"
#include "cuda_launch.cuh"
#include "cuda_vector_ops.hpp"

namespace hpdl::cuda {
namespace {

constexpr int kSumBlocks = 256;

__global__ void axpy_kernel(int64_t n, float a, const float* x, float* y) {
  HPDL_GRID_STRIDE(i, n) y[i] += a * x[i];
}
__global__ void scaled_copy_kernel(int64_t n, float a, const float* x, float* y) {
  HPDL_GRID_STRIDE(i, n) y[i] = a * x[i];
}
__global__ void scale_kernel(int64_t n, float a, float* x) { HPDL_GRID_STRIDE(i, n) x[i] *= a; }
__global__ void fill_kernel(int64_t n, float value, float* x) {
  HPDL_GRID_STRIDE(i, n) x[i] = value;
}
__global__ void sum_squares_kernel(int64_t n, const float* x, double* partial) {
  double sq = 0, unused = 0;
  HPDL_GRID_STRIDE(i, n) sq += double(x[i]) * x[i];
  block_sum2(sq, unused);
  if (threadIdx.x == 0) partial[blockIdx.x] = sq;
}
__global__ void sgd_kernel(int64_t n, float lr, const float* g, float* w) {
  HPDL_GRID_STRIDE(i, n) w[i] -= lr * g[i];
}
__global__ void sgd_momentum_kernel(int64_t n, float lr, float mu, const float* g, float* v,
                                    float* w) {
  HPDL_GRID_STRIDE(i, n) math::sgd_momentum(lr, mu, g[i], v[i], w[i]);
}
__global__ void adam_kernel(int64_t n, AdamStep s, const float* g, float* m, float* v, float* w) {
  HPDL_GRID_STRIDE(i, n) math::adam(s, g[i], m[i], v[i], w[i]);
}
__global__ void mean_square_kernel(int64_t n, float decay, const float* g, float* ms) {
  HPDL_GRID_STRIDE(i, n) ms[i] = math::mean_square(decay, g[i], ms[i]);
}
__global__ void dcasgd_kernel(int64_t n, DcAsgdStep s, const float* g, const float* bak,
                              const float* ms, float* w) {
  HPDL_GRID_STRIDE(i, n) w[i] = math::dcasgd(s, g[i], bak[i], s.adaptive ? ms[i] : 0.0f, w[i]);
}

class CudaVectorOps final : public VectorOps {
 public:
  explicit CudaVectorOps(CudaDevice& device)
      : stream_(device.stream()),
        partial_(device, kSumBlocks),
        host_partial_(device, kSumBlocks, Memory::kHost) {}

  void axpy(int64_t n, float a, const float* x, float* y) override {
    if (n <= 0) return;
    axpy_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, a, x, y);
    HPDL_CUDA_LAUNCHED();
  }
  void scaled_copy(int64_t n, float a, const float* x, float* y) override {
    if (n <= 0) return;
    scaled_copy_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, a, x, y);
    HPDL_CUDA_LAUNCHED();
  }
  void scale(int64_t n, float a, float* x) override {
    if (n <= 0) return;
    scale_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, a, x);
    HPDL_CUDA_LAUNCHED();
  }
  void fill(int64_t n, float value, float* x) override {
    if (n <= 0) return;
    fill_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, value, x);
    HPDL_CUDA_LAUNCHED();
  }
  void copy_rows(int64_t rows, int64_t width, const float* src, int64_t ld_src, float* dst,
                 int64_t ld_dst) override {
    if (rows <= 0 || width <= 0) return;
    HPDL_CUDA_CHECK(cudaMemcpy2DAsync(dst, ld_dst * sizeof(float), src, ld_src * sizeof(float),
                                      width * sizeof(float), rows, cudaMemcpyDeviceToDevice,
                                      stream_));
  }
  double sum_squares(int64_t n, const float* x) override {
    if (n <= 0) return 0;
    sum_squares_kernel<<<kSumBlocks, kThreads, 0, stream_>>>(n, x, partial_.get());
    HPDL_CUDA_LAUNCHED();
    HPDL_CUDA_CHECK(cudaMemcpyAsync(host_partial_.get(), partial_.get(),
                                    kSumBlocks * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    HPDL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    double sum = 0;
    for (int b = 0; b < kSumBlocks; ++b) sum += host_partial_.get()[b];
    return sum;
  }
  double axpy_sum_squares(std::span<const Range> ranges, float a, const float* x, int64_t n,
                          float* y) override {
    // Kernels in stream order; the sum waits for them all.
    for (const Range& r : ranges) axpy(r.size, a, x + r.offset, y + r.offset);
    return sum_squares(n, y);
  }
  void sgd(int64_t n, float lr, float mu, const float* g, float* v, float* w) override {
    if (n <= 0) return;
    if (mu == 0)
      sgd_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, lr, g, w);
    else
      sgd_momentum_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, lr, mu, g, v, w);
    HPDL_CUDA_LAUNCHED();
  }
  void adam(int64_t n, const AdamStep& s, const float* g, float* m, float* v, float* w) override {
    if (n <= 0) return;
    adam_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, s, g, m, v, w);
    HPDL_CUDA_LAUNCHED();
  }
  void mean_square(int64_t n, float decay, const float* g, float* ms) override {
    if (n <= 0) return;
    mean_square_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, decay, g, ms);
    HPDL_CUDA_LAUNCHED();
  }
  void dcasgd(int64_t n, const DcAsgdStep& s, const float* g, const float* bak, const float* ms,
              float* w) override {
    if (n <= 0) return;
    dcasgd_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, s, g, bak, ms, w);
    HPDL_CUDA_LAUNCHED();
  }

 private:
  cudaStream_t stream_;
  Array<double> partial_;       // [kSumBlocks] on the device
  Array<double> host_partial_;  // [kSumBlocks] page-locked
};

}  // namespace

std::unique_ptr<VectorOps> make_vector_ops(CudaDevice& device) {
  return std::make_unique<CudaVectorOps>(device);
}

}  // namespace hpdl::cuda
