// Batch normalisation (see the header): shapes and buffers; the math is the backend's
// BatchNormKernel. N batch, C channels, S positions per channel.
#include "hpdl/nn/batch_norm.hpp"

#include "hpdl/core/error.hpp"

namespace hpdl {

Shape BatchNorm::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 2 || in.rank() == 4,
               "batch_norm layer '" + name() + "' needs [N, C] or [N, C, H, W], got " + in.str());
  batch_ = in[0], channels_ = in[1];
  spatial_ = in.rank() == 4 ? in[2] * in[3] : 1;
  return in;
}

std::vector<ParamSpec> BatchNorm::param_specs() const {
  const int64_t C = channels_;
  return {{"scale", C, false, Init::kConstant, C, C, 1.0f},
          {"shift", C, false, Init::kZeros, C, C, 0.0f},
          {"running_mean", C, false, Init::kZeros, C, C, 0.0f},
          {"running_var", C, false, Init::kConstant, C, C, 1.0f}};
}

void BatchNorm::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                     KernelFactory& k) {
  scale_ = p[0], shift_ = p[1], running_mean_ = p[2], running_var_ = p[3];
  dscale_ = g[0], dshift_ = g[1];  // g[2], g[3]: the running statistics are not trained
  kernel_ = k.batch_norm({batch_, channels_, spatial_, eps_, momentum_});
  mean_ = Buffer(channels_, k.device());
  var_ = Buffer(channels_, k.device());
}

void BatchNorm::forward(const float* x, float* y, const Pass& pass) {
  if (pass.training) {
    kernel_->forward_training(x, scale_.data(), shift_.data(), mean_.data(), var_.data(),
                              running_mean_.data(), running_var_.data(), y);
  } else {
    kernel_->forward_inference(x, scale_.data(), shift_.data(), running_mean_.data(),
                               running_var_.data(), y);
  }
}

void BatchNorm::backward(const float* x, const float*, const float* dy, float* dx, const Pass&) {
  kernel_->backward(x, dy, scale_.data(), mean_.data(), var_.data(), dx, dscale_.data(),
                    dshift_.data());
}

}  // namespace hpdl
