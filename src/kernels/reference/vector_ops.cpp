// The reference backend's vector operations: one plain loop each, in index order: the
// ground truth the other backends are tested against.
#include "hpdl/kernels/vector_ops.hpp"

#include <cmath>
#include <memory>

#include "../element_math.hpp"

namespace hpdl {
namespace {

class RefVectorOps final : public VectorOps {
 public:
  void axpy(int64_t n, float a, const float* x, float* y) override {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
  void scaled_copy(int64_t n, float a, const float* x, float* y) override {
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
  }
  void scale(int64_t n, float a, float* x) override {
    for (int64_t i = 0; i < n; ++i) x[i] *= a;
  }
  void fill(int64_t n, float value, float* x) override {
    for (int64_t i = 0; i < n; ++i) x[i] = value;
  }
  void copy_rows(int64_t rows, int64_t width, const float* src, int64_t ld_src, float* dst,
                 int64_t ld_dst) override {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j) dst[r * ld_dst + j] = src[r * ld_src + j];
  }
  double sum_squares(int64_t n, const float* x) override {
    double sq = 0;
    for (int64_t i = 0; i < n; ++i) sq += double(x[i]) * x[i];
    return sq;
  }
  double axpy_sum_squares(std::span<const Range> ranges, float a, const float* x, int64_t n,
                          float* y) override {
    for (const Range& r : ranges) axpy(r.size, a, x + r.offset, y + r.offset);
    return sum_squares(n, y);
  }
  void sgd(int64_t n, float lr, float mu, const float* g, float* v, float* w) override {
    if (mu == 0) {
      for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
      return;
    }
    for (int64_t i = 0; i < n; ++i) math::sgd_momentum(lr, mu, g[i], v[i], w[i]);
  }
  void adam(int64_t n, const AdamStep& s, const float* g, float* m, float* v, float* w) override {
    for (int64_t i = 0; i < n; ++i) math::adam(s, g[i], m[i], v[i], w[i]);
  }
  void mean_square(int64_t n, float decay, const float* g, float* ms) override {
    for (int64_t i = 0; i < n; ++i) ms[i] = math::mean_square(decay, g[i], ms[i]);
  }
  void dcasgd(int64_t n, const DcAsgdStep& s, const float* g, const float* bak, const float* ms,
              float* w) override {
    for (int64_t i = 0; i < n; ++i) w[i] = math::dcasgd(s, g[i], bak[i], ms ? ms[i] : 0.0f, w[i]);
  }
};

}  // namespace

std::unique_ptr<VectorOps> make_reference_vector_ops() { return std::make_unique<RefVectorOps>(); }

}  // namespace hpdl
