// Batch normalisation (Ioffe & Szegedy): per channel, the batch's mean and variance in
// training, running statistics in inference, then a learned scale and shift per channel.
// Input [N, C] (after a dense layer) or [N, C, H, W] (after a convolution).
// Parameters: scale [C] (init 1), shift [C] (init 0), and the running mean [C] and running
// variance [C], which live in the parameter buffer so that model files, checkpoints and
// resumes carry them, but are never trained (their gradient stays zero, so SGD and Adam
// leave them alone). Each rank moves its running statistics with its own batch, as
// PyTorch's BatchNorm under DDP does; the parameter server does not carry them (refused).
#pragma once
#include "hpdl/core/buffer.hpp"
#include "hpdl/nn/layer.hpp"

namespace hpdl {

class BatchNorm final : public Layer {
 public:
  BatchNorm(float eps, float momentum) : eps_(eps), momentum_(momentum) {}
  std::string kind() const override { return "batch_norm"; }
  LayerWork work(bool input_grad) const override;
  Shape setup(const Shape& in) override;
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
            KernelFactory& k) override;
  void forward(const float* x, float* y, const Pass& pass) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;

 private:
  float eps_, momentum_;
  int64_t batch_ = 0, channels_ = 0, spatial_ = 0;
  std::span<float> scale_, shift_, running_mean_, running_var_, dscale_, dshift_;
  std::unique_ptr<BatchNormKernel> kernel_;
  Buffer mean_, var_;  // [C]: the last training forward's batch statistics
};

}  // namespace hpdl
