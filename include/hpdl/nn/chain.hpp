// A sequence of layers with its own activation storage: the body of a Model, and of each
// branch of a Branches layer. The input (and its gradient) are pointers the caller
// passes per call; every later activation and activation gradient lives in buffers of the
// backend's device, allocated once in bind(). A view layer (flatten) shares its input's
// storage; it may not be the last layer of a chain. Activations are plain [N, C, H, W],
// except one between a layer that writes another layout natively and the next (past layers
// that keep layouts: activations) that reads it (PlanHooks::native_out_block): a convolution's
// own layout into and out of a max pool, or between two convolutions joined by an
// activation. Which ReLUs fold into a neighbour and which activations keep a block are the
// planner's choices (chain_planner.hpp); the chain executes them. The chain's input and
// output stay plain.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/core/buffer.hpp"
#include "hpdl/nn/chain_planner.hpp"
#include "hpdl/nn/layer.hpp"
#include "hpdl/profile/profiler.hpp"

namespace hpdl {

class Chain {
 public:
  explicit Chain(std::vector<std::unique_ptr<Layer>> layers);

  // Sets up every layer for input `in` (shapes), lets `planner` fold ReLUs (none: every
  // layer runs as written, every activation plain), checks the memory; returns the output
  // shape.
  Shape setup(const Shape& in, const ChainPlanner* planner = nullptr);
  // For a chain inside a layer, set up by that layer without one: the planner of the chain
  // around it folds this chain's ReLUs now and chooses its layouts at bind.
  void set_planner(const ChainPlanner* planner);
  // All layers' parameters in order, named "<layer>.<param>".
  std::vector<ParamSpec> param_specs() const;
  // p, g: one span per param_specs() entry. Allocates activations on the kernels' device;
  // keeps each in the block the planner chose (PlanHooks::use_blocks).
  void bind(const std::vector<std::span<float>>& p, const std::vector<std::span<float>>& g,
            KernelFactory& kernels);

  // After bind, for a concatenation of chains: the last layer writes its output into the
  // caller's buffer, rows `stride` floats apart (PlanHooks::write_rows_apart), instead of the
  // chain's own; false where that layer cannot. Then forward takes that buffer as `out`,
  // output() points into it, and backward's dy has the same row stride.
  bool write_output_rows_apart(int64_t stride, KernelFactory& kernels);
  void forward(const float* x, const Pass& pass, float* out = nullptr);
  // dy: gradient of output() (read only); dx: gradient of the input (overwritten; null
  // when not needed). Parameter gradients accumulate. on_layer_done(i) follows layer i.
  void backward(const float* x, const float* dy, float* dx, const Pass& pass,
                const std::function<void(size_t)>& on_layer_done = {});

  // The channel block (kernels.hpp) activation i is kept in: 0 the input, size() the
  // output (both 1, plain).
  int64_t activation_block(size_t i) const { return blocks_.at(i); }
  // Activation i's shape (0 the input, size() the output).
  const Shape& activation_shape(size_t i) const { return shapes_.at(i); }

  const float* output() const { return act_.back(); }
  const Shape& input_shape() const { return shapes_.front(); }
  const Shape& output_shape() const { return shapes_.back(); }
  // Bytes of activations, their gradients, parameters, gradients and optimizer state, as
  // estimated (and checked against the machine's memory by setup()) for the planned chain.
  uint64_t estimated_bytes() const;
  size_t size() const { return layers_.size(); }
  // Every layer's work summed (profile/work.hpp); input_grad: the first layer's dx is wanted.
  LayerWork work(bool input_grad) const;
  // Whether backward gives layer i an input gradient to write (dx non-null): the chain's own
  // dx is wanted (input_grad) or a layer before i has parameters, whose gradients need it.
  // A layer without parameters and without an input gradient to write is not run backward.
  bool layer_writes_input_grad(size_t i, bool input_grad) const;
  // Layer i's work (Layer::work with layer_writes_input_grad).
  LayerWork layer_work(size_t i, bool input_grad) const;
  const Layer& layer(size_t i) const { return *layers_[i]; }
  Layer& layer(size_t i) { return *layers_[i]; }
  // Number of param_specs() entries that belong to layer i.
  size_t spec_count(size_t i) const { return spec_counts_[i]; }
  // Times every layer's forward and backward from now on (null: stop timing).
  void set_profiler(Profiler* p);

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;  // shapes_[i]: input of layer i; back(): output
  std::vector<size_t> spec_counts_;
  // Per layer: its parameter gradients where it adds to them (zeroed before its backward in a
  // pass that writes them); empty for the others (bind).
  std::vector<std::span<float>> zeroed_grads_;
  std::vector<bool> params_before_;  // [i]: a layer before layer i has parameters (setup)
  std::vector<Buffer> act_store_, dact_store_;
  bool output_outside_ = false;  // the output lives in the caller's buffer
  const ChainPlanner* planner_ = nullptr;
  std::vector<float*> act_, dact_;  // act_[i]: input of layer i, resolved per call
  std::vector<int64_t> blocks_;     // blocks_[i]: activation i's channel block
  void use_planned_layouts(KernelFactory& kernels);
  Profiler* profiler_ = nullptr;
  std::vector<int32_t> fwd_ids_, bwd_ids_;
  Device* device_ = &host_device();                   // the kernels' (set in bind)
  std::vector<std::string> fwd_ranges_, bwd_ranges_;  // "<layer> forward", per layer
};

}  // namespace hpdl
