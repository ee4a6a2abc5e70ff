// The layers of the feed-forward models (MLP, LeNet, AlexNet, VGG): shapes and parameter
// bookkeeping here; the math is in the backend kernels. Shape comments: N batch.
#pragma once
#include "hpdl/core/buffer.hpp"
#include "hpdl/nn/layer.hpp"

namespace hpdl {

// [N, I] -> [N, O]; inputs of higher rank are read as [N, prod(rest)]. With per_step,
// a sequence [N, T, C] is projected at every time step: [N, T, C] -> [N, T, O].
class Dense final : public Layer, PlanHooks {
 public:
  Dense(int64_t units, Init init, bool per_step = false)
      : units_(units), init_(init), per_step_(per_step) {
    set_plan_hooks(*this);
  }
  std::string kind() const override { return "dense"; }
  LayerWork work(bool input_grad) const override;
  KernelChoice kernel_choice() const override {
    return kernel_ ? kernel_->choice() : KernelChoice{};
  }
  Shape setup(const Shape& in) override;
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
            KernelFactory& k) override;
  // A ReLU after it is applied to its output (the kernel's post-op, or a pass of its own
  // where the kernel has none); backward first takes the gradient through it.
  bool absorb_following_relu() override { return relu_ = true; }
  void forward(const float* x, float* y, const Pass&) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;
  // Where its kernel can (DenseKernel::writes_gradients).
  bool writes_param_grads() const override { return kernel_ && kernel_->writes_gradients(); }

 private:
  int64_t units_, in_ = 0, rows_ = 0;
  Init init_;
  bool per_step_;
  std::span<float> w_, b_, dw_, db_;
  std::unique_ptr<DenseKernel> kernel_;
  bool relu_ = false;                         // applies the ReLU after it
  std::unique_ptr<ActivationKernel> relu_k_;  // its gradient (and forward, where needed)
  Buffer relu_grad_;                          // dy through that ReLU
};

// Element-wise ReLU / tanh / sigmoid, any shape. A ReLU fused into the next layer (see
// PlanHooks::absorb_relu) is a view: no work, no storage of its own.
class ActivationLayer final : public Layer, PlanHooks {
 public:
  explicit ActivationLayer(Activation a) : act_(a) { set_plan_hooks(*this); }
  std::string kind() const override;
  LayerWork work(bool input_grad) const override;
  KernelChoice kernel_choice() const override;
  Shape setup(const Shape& in) override;
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>,
            KernelFactory& k) override;
  bool is_view() const override { return !fused_into_.empty(); }
  bool keeps_layout() const override { return true; }
  bool is_relu() const override { return act_ == Activation::kRelu; }
  void fuse_into(const std::string& next) override { fused_into_ = next; }
  void forward(const float* x, float* y, const Pass&) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;

 private:
  Activation act_;
  int64_t n_ = 0;
  std::string fused_into_;  // the layer that applies this ReLU ("": none)
  std::unique_ptr<ActivationKernel> kernel_;
};

// [N, ...] -> [N, prod(...)]: a view, no data moves.
class Flatten final : public Layer, PlanHooks {
 public:
  Flatten() { set_plan_hooks(*this); }
  std::string kind() const override { return "flatten"; }
  LayerWork work(bool input_grad) const override;
  Shape setup(const Shape& in) override { return Shape{{in[0], in.per_sample()}}; }
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>, KernelFactory&) override {
  }
  bool is_view() const override { return true; }
  void forward(const float*, float*, const Pass&) override {}
  void backward(const float*, const float*, const float*, float*, const Pass&) override {}
};

// [N, C, H, W] -> [N, O, OH, OW]
class Conv2d final : public Layer, PlanHooks {
 public:
  Conv2d(int64_t filters, int64_t kernel, int64_t stride, int64_t pad)
      : filters_(filters), kernel_size_(kernel), stride_(stride), pad_(pad) {
    set_plan_hooks(*this);
  }
  std::string kind() const override { return "conv2d"; }
  LayerWork work(bool input_grad) const override;
  KernelChoice kernel_choice() const override;
  Shape setup(const Shape& in) override;
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
            KernelFactory& k) override;
  int64_t native_in_block() const override { return kernel_->native_blocks().in; }
  int64_t native_out_block() const override { return kernel_->native_blocks().out; }
  void use_blocks(int64_t in_block, int64_t out_block, KernelFactory&) override {
    kernel_->use_native(in_block != 1, out_block != 1);
  }
  void forward(const float* x, float* y, const Pass&) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;

 private:
  int64_t filters_, kernel_size_, stride_, pad_;
  ConvDims dims_{};
  std::span<float> w_, b_, dw_, db_;
  std::unique_ptr<ConvKernel> kernel_;
};

// [N, C, H, W] -> [N, C, OH, OW], max over K x K windows.
class MaxPool2d final : public Layer, PlanHooks {
 public:
  MaxPool2d(int64_t kernel, int64_t stride) : kernel_size_(kernel), stride_(stride) {
    set_plan_hooks(*this);
  }
  std::string kind() const override { return "maxpool"; }
  LayerWork work(bool input_grad) const override;
  Shape setup(const Shape& in) override;
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>,
            KernelFactory& k) override;
  KernelChoice kernel_choice() const override;
  // A ReLU before it is applied to its output instead: max(0, max x) = max(max(0, x)).
  bool absorb_relu() override { return relu_ = true; }
  int64_t native_in_block() const override { return takes_blocks() ? kAnyBlock : 1; }
  int64_t native_out_block() const override { return takes_blocks() ? kAnyBlock : 1; }
  void use_blocks(int64_t in_block, int64_t out_block, KernelFactory& k) override;
  void forward(const float* x, float* y, const Pass&) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;

 private:
  int64_t kernel_size_, stride_;
  PoolDims dims_{};
  std::unique_ptr<MaxPoolKernel> kernel_;
  bool takes_blocks() const { return kernel_->takes().blocks && !relu_k_; }
  bool relu_ = false;                         // applies the ReLU it absorbed
  std::unique_ptr<ActivationKernel> relu_k_;  // the ReLU where the kernel does not apply it
  Buffer relu_grad_;                          // dy through that ReLU
};

// Inverted dropout: in training keeps each element with probability `keep` and scales it
// by 1/keep; identity in inference. The mask is a pure function of (seed, step, sample id,
// element), so N ranks on B/N samples drop exactly what 1 rank on B samples drops.
class Dropout final : public Layer {
 public:
  explicit Dropout(float keep) : keep_(keep) {}
  std::string kind() const override { return "dropout"; }
  LayerWork work(bool input_grad) const override;
  Shape setup(const Shape& in) override;
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>,
            KernelFactory& k) override;
  void forward(const float* x, float* y, const Pass& pass) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;

 private:
  float keep_;
  int64_t batch_ = 0, per_sample_ = 0;
  Buffer mask_;  // scale per element of the last training forward (0 or 1/keep)
  std::unique_ptr<DropoutKernel> kernel_;
  VectorOps* ops_ = nullptr;  // the copy at inference
};

}  // namespace hpdl
