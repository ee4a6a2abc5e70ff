// Dense and activation layers: shape bookkeeping and delegation to backend kernels.
#include "hpdl/nn/layers.hpp"

#include "hpdl/core/error.hpp"

namespace hpdl {

Shape Dense::setup(const Shape& in) {
  if (per_step_) {
    HPDL_REQUIRE(in.rank() == 3, "dense layer '" + name() +
                                     "' with per_step needs a sequence [N, T, C], got " + in.str());
    rows_ = in[0] * in[1];
    in_ = in[2];
    return Shape{{in[0], in[1], units_}};
  }
  rows_ = in[0];
  in_ = in.per_sample();
  return Shape{{rows_, units_}};
}

std::vector<ParamSpec> Dense::param_specs() const {
  return {{"w", units_ * in_, true, init_, in_, units_},
          {"b", units_, false, Init::kZeros, in_, units_}};
}

void Dense::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                 KernelFactory& k) {
  w_ = p[0], b_ = p[1], dw_ = g[0], db_ = g[1];
  kernel_ = k.dense({rows_, in_, units_, k.precision(), relu_});
  if (!relu_) return;
  relu_k_ = k.activation(Activation::kRelu, rows_ * units_);
  relu_grad_ = Buffer(rows_ * units_, k.device());
}

void Dense::forward(const float* x, float* y, const Pass&) {
  kernel_->forward(x, w_.data(), b_.data(), y);
  if (relu_ && !kernel_->applies_relu()) relu_k_->forward(y, y);
}

void Dense::backward(const float* x, const float* y, const float* dy, float* dx, const Pass& pass) {
  if (relu_) {  // y > 0 exactly where the product was: the ReLU passes dy there
    relu_k_->backward(y, y, dy, relu_grad_.data());
    dy = relu_grad_.data();
  }
  if (pass.write_param_grads && writes_param_grads()) {
    kernel_->backward_writing(x, w_.data(), dy, dx, dw_.data(), db_.data());
  } else {
    kernel_->backward(x, w_.data(), dy, dx, dw_.data(), db_.data());
  }
}

std::string ActivationLayer::kind() const {
  switch (act_) {
    case Activation::kRelu:
      return "relu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      return "sigmoid";
  }
  return "activation";
}

Shape ActivationLayer::setup(const Shape& in) {
  n_ = in.numel();
  return in;
}

void ActivationLayer::bind(std::vector<std::span<float>>, std::vector<std::span<float>>,
                           KernelFactory& k) {
  if (fused_into_.empty()) kernel_ = k.activation(act_, n_);
}

KernelChoice ActivationLayer::kernel_choice() const {
  if (fused_into_.empty()) return {};
  return {"fused into " + fused_into_ + " (applied to its output)", ""};
}

void ActivationLayer::forward(const float* x, float* y, const Pass&) {
  if (kernel_) kernel_->forward(x, y);
}

void ActivationLayer::backward(const float* x, const float* y, const float* dy, float* dx,
                               const Pass&) {
  if (kernel_ && dx) kernel_->backward(x, y, dy, dx);
}

}  // namespace hpdl
