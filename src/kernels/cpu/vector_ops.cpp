// The CPU backend's vector operations: one OpenMP SIMD loop each, threads only above 64 Ki
// elements (below, a parallel region costs more than it saves); sums of squares over 32
// running sums in double, in chunks over threads. Arguments are copied to locals and
// pointers marked __restrict, so GCC vectorises the outlined bodies.
#include "hpdl/kernels/vector_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "../element_math.hpp"

namespace hpdl {
namespace {

constexpr int64_t kParallelFrom = int64_t{1} << 16;

// The sum of y[i]^2 in double over kLanes running sums (a single running sum would wait out
// the add's latency at every vector); when Y is float (not const), after y[i] += a * x[i].
template <typename Y>
double sum_squares_in_lanes(int64_t n, float a, const float* __restrict x, Y* __restrict y) {
  constexpr bool kAxpy = !std::is_const_v<Y>;
  constexpr int64_t kLanes = 32;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if constexpr (kAxpy) {
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) y[i + l] += a * x[i + l];
    }
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) lane[l] += double(y[i + l]) * y[i + l];
  }
  double sq = 0;
  for (; i < n; ++i) {
    if constexpr (kAxpy) y[i] += a * x[i];
    sq += double(y[i]) * y[i];
  }
  for (double part : lane) sq += part;
  return sq;
}

// The same over the rank's threads in chunks of kParallelFrom, above that size.
template <typename Y>
double sum_squares_chunked(int64_t n, float a, const float* x, Y* y) {
  if (n <= kParallelFrom) return sum_squares_in_lanes(n, a, x, y);
  const int64_t chunks = (n + kParallelFrom - 1) / kParallelFrom;
  double sq = 0;
#pragma omp parallel for reduction(+ : sq)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t at = c * kParallelFrom;
    sq += sum_squares_in_lanes(std::min(n - at, kParallelFrom), a, x ? x + at : nullptr, y + at);
  }
  return sq;
}

class CpuVectorOps final : public VectorOps {
 public:
  void axpy(int64_t n, float a, const float* x_, float* y_) override {
    const float* __restrict x = x_;
    float* __restrict y = y_;
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
  void scaled_copy(int64_t n, float a, const float* x_, float* y_) override {
    const float* __restrict x = x_;
    float* __restrict y = y_;
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
  }
  void scale(int64_t n, float a, float* x_) override {
    float* __restrict x = x_;
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) x[i] *= a;
  }
  void fill(int64_t n, float value, float* x_) override {
    float* __restrict x = x_;
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) x[i] = value;
  }
  void copy_rows(int64_t rows, int64_t width, const float* src, int64_t ld_src, float* dst,
                 int64_t ld_dst) override {
#pragma omp parallel for if (rows * width > kParallelFrom)
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * ld_dst, src + r * ld_src, width * sizeof(float));
  }
  double sum_squares(int64_t n, const float* x) override {
    return sum_squares_chunked(n, 0.0f, nullptr, x);
  }
  double axpy_sum_squares(std::span<const Range> ranges, float a, const float* x, int64_t n,
                          float* y) override {
    double sq = 0;
    int64_t at = 0;  // y[at..] not summed yet
    for (const Range& r : ranges) {
      sq += sum_squares_chunked(r.offset - at, 0.0f, nullptr, static_cast<const float*>(y + at));
      sq += sum_squares_chunked(r.size, a, x + r.offset, y + r.offset);
      at = r.offset + r.size;
    }
    return sq + sum_squares_chunked(n - at, 0.0f, nullptr, static_cast<const float*>(y + at));
  }
  void sgd(int64_t n, float lr, float mu, const float* g_, float* v_, float* w_) override {
    const float* __restrict g = g_;
    float* __restrict w = w_;
    if (mu == 0) {
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
      for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
      return;
    }
    float* __restrict v = v_;
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) math::sgd_momentum(lr, mu, g[i], v[i], w[i]);
  }
  void adam(int64_t n, const AdamStep& s, const float* g_, float* m_, float* v_,
            float* w_) override {
    const float* __restrict g = g_;
    float* __restrict m = m_;
    float* __restrict v = v_;
    float* __restrict w = w_;
    const AdamStep step = s;  // a local copy: the loop body may not reload it
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) math::adam(step, g[i], m[i], v[i], w[i]);
  }
  void mean_square(int64_t n, float decay, const float* g_, float* ms_) override {
    const float* __restrict g = g_;
    float* __restrict ms = ms_;
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) ms[i] = math::mean_square(decay, g[i], ms[i]);
  }
  void dcasgd(int64_t n, const DcAsgdStep& s, const float* g_, const float* bak_, const float* ms_,
              float* w_) override {
    const float* __restrict g = g_;
    const float* __restrict bak = bak_;
    const float* __restrict ms = ms_;
    float* __restrict w = w_;
    const DcAsgdStep step = s;
    if (!step.adaptive) {
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
      for (int64_t i = 0; i < n; ++i) w[i] = math::dcasgd(step, g[i], bak[i], 0.0f, w[i]);
      return;
    }
#pragma omp parallel for simd if (parallel : n > kParallelFrom)
    for (int64_t i = 0; i < n; ++i) w[i] = math::dcasgd(step, g[i], bak[i], ms[i], w[i]);
  }
};

}  // namespace

std::unique_ptr<VectorOps> make_cpu_vector_ops() { return std::make_unique<CpuVectorOps>(); }

}  // namespace hpdl
