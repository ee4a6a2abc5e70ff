// Convolution and max-pooling layers ([N, C, H, W]; plain, or between the two in the
// convolution's layout, as planned: plan/planner.hpp): shape checks and delegation to kernels.
#include "hpdl/core/error.hpp"
#include "hpdl/nn/layers.hpp"

namespace hpdl {

Shape Conv2d::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 4,
               "conv2d layer '" + name() + "' needs input [N, C, H, W], got " + in.str());
  dims_ = {in[0], in[1], in[2], in[3], filters_, kernel_size_, stride_, pad_};
  HPDL_REQUIRE(dims_.out_h() > 0 && dims_.out_w() > 0, "conv2d layer '" + name() + "': kernel " +
                                                           std::to_string(kernel_size_) +
                                                           " does not fit input " + in.str());
  return Shape{{in[0], filters_, dims_.out_h(), dims_.out_w()}};
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const int64_t fan_in = dims_.in_c * kernel_size_ * kernel_size_;
  const int64_t fan_out = filters_ * kernel_size_ * kernel_size_;
  return {{"w", filters_ * fan_in, true, Init::kHeUniform, fan_in, fan_out},
          {"b", filters_, false, Init::kZeros, fan_in, fan_out}};
}

void Conv2d::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                  KernelFactory& k) {
  w_ = p[0], b_ = p[1], dw_ = g[0], db_ = g[1];
  dims_.precision = k.precision();
  kernel_ = k.conv(dims_);
}

KernelChoice Conv2d::kernel_choice() const { return kernel_ ? kernel_->choice() : KernelChoice{}; }

void Conv2d::forward(const float* x, float* y, const Pass&) {
  kernel_->forward(x, w_.data(), b_.data(), y);
}

void Conv2d::backward(const float* x, const float*, const float* dy, float* dx, const Pass& pass) {
  kernel_->backward_between(x, w_.data(), dy, dx, dw_.data(), db_.data(), pass.progress);
}

Shape MaxPool2d::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 4,
               "maxpool layer '" + name() + "' needs input [N, C, H, W], got " + in.str());
  dims_ = {in[0], in[1], in[2], in[3], kernel_size_, stride_};
  HPDL_REQUIRE(dims_.out_h() > 0 && dims_.out_w() > 0, "maxpool layer '" + name() + "': window " +
                                                           std::to_string(kernel_size_) +
                                                           " does not fit input " + in.str());
  return Shape{{in[0], in[1], dims_.out_h(), dims_.out_w()}};
}

void MaxPool2d::bind(std::vector<std::span<float>>, std::vector<std::span<float>>,
                     KernelFactory& k) {
  dims_.relu = relu_;
  dims_.in_block = dims_.out_block = 1;  // plain unless the plan says otherwise (use_blocks)
  kernel_ = k.max_pool(dims_);
  if (!relu_ || kernel_->takes().relu) return;
  const int64_t out = dims_.batch * dims_.channels * dims_.out_h() * dims_.out_w();
  relu_k_ = k.activation(Activation::kRelu, out);
  relu_grad_ = Buffer(out, k.device());
}

void MaxPool2d::use_blocks(int64_t in_block, int64_t out_block, KernelFactory& k) {
  dims_.in_block = in_block, dims_.out_block = out_block;
  kernel_ = k.max_pool(dims_);
}

KernelChoice MaxPool2d::kernel_choice() const {
  KernelChoice c = kernel_ ? kernel_->choice() : KernelChoice{};
  if (dims_.in_block == 1 && dims_.out_block == 1) return c;
  const std::string blocks = "reads " + block_name(dims_.in_block, dims_.channels) + ", writes " +
                             block_name(dims_.out_block, dims_.channels);
  c.kernel = c.kernel.empty() ? blocks : c.kernel + ", " + blocks;
  return c;
}

void MaxPool2d::forward(const float* x, float* y, const Pass&) {
  kernel_->forward(x, y);
  if (relu_k_) relu_k_->forward(y, y);
}

void MaxPool2d::backward(const float*, const float* y, const float* dy, float* dx, const Pass&) {
  if (!dx) return;
  if (relu_k_) {
    // y > 0 exactly where the window's maximum was: the ReLU passes dy there, else 0 (the
    // separate ReLU's mask is 0 at every input of a window whose maximum is <= 0).
    relu_k_->backward(y, y, dy, relu_grad_.data());
    dy = relu_grad_.data();
  }
  kernel_->backward(dy, dx);
}

}  // namespace hpdl
