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
#include "hpdl/nn/plan_hooks.hpp"
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
  // true, written by the layers whose PlanHooks::writes_param_grads(), and zeroed by the chain just
  // before the others' backward (Model::backward_fresh).
  bool write_param_grads = false;
};

// The life cycle only; what the chain's planning asks of a layer is its PlanHooks (plan()).
class Layer {
 public:
  Layer() = default;
  Layer(const Layer&) = delete;  // plan() may point into the layer itself
  Layer& operator=(const Layer&) = delete;
  virtual ~Layer() = default;
  virtual std::string kind() const = 0;

  // Fixes shapes from the input [N, ...]; returns the output shape. Called once.
  virtual Shape setup(const Shape& in) = 0;
  virtual std::vector<ParamSpec> param_specs() const { return {}; }
  // params/grads: one span per param_specs() entry, in order. Builds kernels, allocates
  // workspaces (Buffer(n, kernels.device())).
  virtual void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                    KernelFactory& kernels) = 0;
  virtual void forward(const float* x, float* y, const Pass& pass) = 0;
  virtual void backward(const float* x, const float* y, const float* dy, float* dx,
                        const Pass& pass) = 0;
  // FLOPs and bytes of forward and backward at the set-up batch (profile/work.hpp); with
  // input_grad false, backward computes no input gradient (the model's first layer).
  virtual LayerWork work(bool input_grad) const = 0;
  // What the layer's kernels chose at set-up among their implementations, and why
  // (kernels.hpp's KernelChoice), for the execution plan; empty when there was no choice.
  virtual KernelChoice kernel_choice() const { return {}; }

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // What the chain's planning reads and tells (plan_hooks.hpp): the defaults unless the
  // layer handed its own in its constructor.
  PlanHooks& plan() { return *plan_; }
  const PlanHooks& plan() const { return *plan_; }

 protected:
  void set_plan_hooks(PlanHooks& hooks) { plan_ = &hooks; }

 private:
  static PlanHooks& no_plan_hooks() {
    static PlanHooks none;
    return none;
  }
  std::string name_;
  PlanHooks* plan_ = &no_plan_hooks();
};

}  // namespace hpdl
