// The layer contract (after Caffe): setup() fixes shapes once and declares parameters;
// bind() receives spans into the model's flat parameter and gradient buffers, builds
// kernels and allocates workspaces on the kernels' device; forward()/backward() then never
// allocate. Every pointer a layer sees is memory of that device: layers call kernels and
// ops, never read or write the values themselves. backward() ADDS into the parameter
// gradients and OVERWRITES the input gradient dx (dx is null for the first layer).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/core/tensor.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/profile/work.hpp"

namespace hpdl {

// kLstmBias: zeros except the forget-gate quarter [H, 2H) of a [4H] bias, set to `value`;
// kConstant: every element `value`.
enum class Init { kZeros, kGlorotUniform, kHeUniform, kLstmBias, kConstant };

// One parameter tensor a layer needs; the model places it in the flat buffer.
struct ParamSpec {
  std::string name;  // "w" or "b"; the model prefixes the layer name
  int64_t size;
  bool decay;  // L2 applies (weights yes, biases no)
  Init init;
  int64_t fan_in, fan_out;
  float value = 0;  // for kLstmBias and kConstant
};

// What a pass needs to know besides the data: training or inference, the global step and
// the seed (dropout masks), and the global row index of each sample of the local batch,
// so random masks are identical whatever the number of ranks.
struct Pass {
  bool training = false;
  uint64_t seed = 0;
  int64_t step = 0;
  const int64_t* sample_ids = nullptr;
  // Called by a layer between the kernels of a long backward (a convolution's input and
  // weight gradients): the trainer's chance to move on the communication that earlier
  // layers started (GradientReducer::progress). Empty: nothing to move.
  std::function<void()> progress;
  // Parameter gradients in backward: false, added to (the caller zeroed them for one batch's);
  // true, written by the layers that writes_param_grads(), and zeroed by the chain just before
  // the others' backward (Model::backward_fresh).
  bool write_param_grads = false;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string kind() const = 0;

  // Fixes shapes from the input [N, ...]; returns the output shape. Called once.
  virtual Shape setup(const Shape& in) = 0;
  virtual std::vector<ParamSpec> param_specs() const { return {}; }
  // params/grads: one span per param_specs() entry, in order. Builds kernels, allocates
  // workspaces (Buffer(n, kernels.device())).
  virtual void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                    KernelFactory& kernels) = 0;
  // True when the output is the input viewed with another shape (no copy, no work).
  virtual bool is_view() const { return false; }

  // ReLU fusion, decided by Chain::setup before bind: a ReLU followed by a layer that can
  // apply it to its own output exactly (max pooling: max over a window and ReLU commute, and
  // the gradient reaches the same inputs) becomes a view of its input, and that layer
  // applies the ReLU to its output instead, a quarter of the elements after a 2x2 pool.
  // Failing that, a layer before the ReLU may take it on (a dense layer: a post-op of its
  // product, no pass of its own over the output).
  virtual bool is_relu() const { return false; }
  // Asked of the layer after a ReLU: true = it now applies the ReLU to its output.
  virtual bool absorb_relu() { return false; }
  // Asked of the layer before a ReLU the next layer did not take: true = it now applies the
  // ReLU to its own output, and its backward takes the ReLU's gradient too.
  virtual bool absorb_following_relu() { return false; }
  // Told to the ReLU whose work the layer `next` took over.
  virtual void fuse_into(const std::string& next) { (void)next; }

  // Activation layouts (kernels.hpp: channel blocks), agreed by Chain::bind once every layer
  // is bound: the block the layer's kernels read x and dx in (write y and dy in) with no
  // conversion; 1 = plain NCHW (every layer but a convolution and a max pool), kAnyBlock =
  // whichever its neighbour wants (a max pool converts on the way).
  virtual int64_t native_in_block() const { return 1; }
  virtual int64_t native_out_block() const { return 1; }
  // Told the agreed blocks of x/dx and y/dy; called only when one of them is not 1, and only
  // with blocks the layer offered (or any, where it offered kAnyBlock). May rebuild kernels.
  virtual void use_blocks(int64_t in_block, int64_t out_block, KernelFactory& k) {
    (void)in_block, (void)out_block, (void)k;
  }
  // True for a layer that works element by element alike in any layout and hands its input's
  // layout on (an activation, fused or not); false for one that needs plain (flatten reads
  // [N, C, H, W] as [N, C H W]; dropout's masks and batch-norm's channels follow the index).
  virtual bool keeps_layout() const { return false; }

  // Asked once bound, by a concatenation of the branch chains this layer ends: whether it can
  // write its output's rows (the last axis) `stride` floats apart, straight into the joined
  // output, and read its output gradient's rows from the same places. May rebuild kernels.
  virtual bool write_rows_apart(int64_t stride, KernelFactory& k) {
    (void)stride, (void)k;
    return false;
  }

  virtual void forward(const float* x, float* y, const Pass& pass) = 0;
  virtual void backward(const float* x, const float* y, const float* dy, float* dx,
                        const Pass& pass) = 0;
  // Whether backward gives one batch's parameter gradients without being zeroed first (it
  // writes them, or, a layer with branches, its inner chains zero or write them), when
  // pass.write_param_grads (after bind); if false, the chain zeroes them before its backward.
  virtual bool writes_param_grads() const { return false; }

  // FLOPs and bytes of forward and backward at the set-up batch (profile/work.hpp); with
  // input_grad false, backward computes no input gradient (the model's first layer).
  virtual LayerWork work(bool input_grad) const = 0;
  // What the layer's kernels chose at set-up among their implementations (ConvKernel::choice),
  // for `hpdl time`; "" when there was no choice.
  virtual std::string kernel_choice() const { return ""; }

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

 private:
  std::string name_;
};

}  // namespace hpdl
