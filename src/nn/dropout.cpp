// Inverted dropout with counter-based masks (see layers.hpp): one OpenMP loop each way.
#include "hpdl/core/rng.hpp"
#include "hpdl/nn/layers.hpp"

namespace hpdl {

namespace {
constexpr uint64_t kDropoutStream = 0xd50;  // separates dropout draws from other random uses
}

Shape Dropout::setup(const Shape& in) {
  batch_ = in[0];
  per_sample_ = in.per_sample();
  mask_.assign(in.numel(), 1.0f);
  return in;
}

void Dropout::forward(const float* x, float* y, const Pass& pass) {
  const int64_t n = batch_ * per_sample_;
  if (!pass.training) {
#pragma omp parallel for simd if (parallel : n > 65536)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    return;
  }
  const float scale = 1.0f / keep_;
  // Key: seed and layer name; stream: step; counter: (global sample id, element).
  const uint64_t stream = kDropoutStream ^ (static_cast<uint64_t>(pass.step) << 20);
  const uint64_t layer_key = std::hash<std::string>{}(name());
#pragma omp parallel for if (n > 65536)
  for (int64_t s = 0; s < batch_; ++s) {
    const uint64_t sample = static_cast<uint64_t>(pass.sample_ids[s]);
    for (int64_t i = 0; i < per_sample_; ++i) {
      const uint64_t counter = (sample << 24) ^ static_cast<uint64_t>(i);
      const float u = random_uniform(pass.seed ^ layer_key, stream, counter);
      const float m = u < keep_ ? scale : 0.0f;
      mask_[s * per_sample_ + i] = m;
      y[s * per_sample_ + i] = x[s * per_sample_ + i] * m;
    }
  }
}

void Dropout::backward(const float*, const float*, const float* dy, float* dx, const Pass&) {
  if (!dx) return;
  const int64_t n = batch_ * per_sample_;
#pragma omp parallel for simd if (parallel : n > 65536)
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * mask_[i];
}

}  // namespace hpdl
