// Inverted dropout with counter-based masks (see layers.hpp); the loops are the backend's.
#include <functional>

#include "hpdl/nn/layers.hpp"

namespace hpdl {

namespace {
constexpr uint64_t kDropoutStream = 0xd50;  // separates dropout draws from other random uses
}

Shape Dropout::setup(const Shape& in) {
  batch_ = in[0];
  per_sample_ = in.per_sample();
  return in;
}

void Dropout::bind(std::vector<std::span<float>>, std::vector<std::span<float>>, KernelFactory& k) {
  kernel_ = k.dropout({batch_, per_sample_, keep_});
  mask_ = Buffer(batch_ * per_sample_, k.device());
  ops_ = &k.ops();
}

void Dropout::forward(const float* x, float* y, const Pass& pass) {
  if (!pass.training) {
    ops_->scaled_copy(batch_ * per_sample_, 1.0f, x, y);
    return;
  }
  // Key: seed and layer name; stream: step; counter: (global sample id, element).
  const uint64_t stream = kDropoutStream ^ (static_cast<uint64_t>(pass.step) << 20);
  const uint64_t layer_key = std::hash<std::string>{}(name());
  kernel_->forward(x, pass.sample_ids, pass.seed ^ layer_key, stream, mask_.data(), y);
}

void Dropout::backward(const float*, const float*, const float* dy, float* dx, const Pass&) {
  if (dx) kernel_->backward(dy, mask_.data(), dx);
}

}  // namespace hpdl
