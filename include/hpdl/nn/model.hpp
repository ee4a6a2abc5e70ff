// A model: a chain of layers over one contiguous parameter buffer and one contiguous
// gradient buffer (llm.c style). Zeroing gradients is one memset, MPI_Allreduce works in
// place on grads(), and each layer holds spans into both. Activations and their gradients
// are allocated once at construction (in the Chain) for the fixed per-rank batch. Every
// buffer lives on the backend's device: code above the backend passes params()/grads() to
// backend operations and reads or writes values only through the host views below.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/core/buffer.hpp"
#include "hpdl/core/host_mirror.hpp"
#include "hpdl/core/range.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/nn/chain.hpp"
#include "hpdl/nn/layer.hpp"

namespace hpdl {

// Where one parameter tensor lives in the flat buffers.
struct ParamSegment {
  std::string name;  // "conv1.w"
  int64_t offset, size;
  bool decay;  // L2 applies
  Init init;
  int64_t fan_in, fan_out;
  float value;  // for Init::kLstmBias and kConstant
};

class Model {
 public:
  // input: [N, ...] with N the per-rank batch. Sets up and binds every layer, with the
  // choices across layers that `planner` makes (chain_planner.hpp; none: every layer as
  // written, every activation plain; a model built from a config has the execution planner).
  Model(std::vector<std::unique_ptr<Layer>> layers, const Shape& input,
        std::unique_ptr<KernelFactory> kernels, const ChainPlanner* planner = nullptr);

  // A step of less work than this (forward and backward of every layer, in floating-point
  // operations) runs its kernels on one of the rank's threads. Split over two threads, each
  // pass of such a step first reads what the other core wrote: measured (Xeon family 6
  // model 167, 1 rank x 2 threads), the MLP 784-64-64-10's step of 11 MFLOP (batch 32) took
  // 135 us on two threads and 95 on one; at batch 128 (44 MFLOP) the two were level, at 512
  // (176 MFLOP) two threads were 1.36x faster. Every other preset's step is 0.6 GFLOP or more.
  static constexpr double kOneThreadBelowFlop = 32e6;
  // Whether the kernels run on one thread (above; false where the backend ignores it).
  bool one_thread() const { return one_thread_; }
  double step_flop() const;  // forward and backward of every layer

  // Deterministic initialisation from the seed (same on every rank).
  void init_params(uint64_t seed);

  // Device memory (see above).
  std::span<float> params() { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> params() const { return params_.span(); }
  std::span<const float> grads() const { return grads_.span(); }
  const std::vector<ParamSegment>& segments() const { return segments_; }
  int64_t num_params() const { return params_.size(); }

  // Host views: dst/src hold num_params() values. to_host waits for the device's work.
  void params_to_host(std::span<float> dst) const;
  std::vector<float> params_to_host() const;
  void params_from_host(std::span<const float> src);
  void grads_to_host(std::span<float> dst) const;

  // The batch: the data reader writes [N, ...] into input_host(), upload_input() makes it
  // the model's input (on the CPU backends they are one buffer and the upload is free).
  float* input_host() { return input_host_.data(); }
  void upload_input() { input_host_.upload(); }
  const float* output() const { return chain_.output(); }  // logits [N, K], device memory
  float* output_grad() { return output_grad_.data(); }     // the loss writes dlogits here
  const Shape& input_shape() const { return chain_.input_shape(); }
  const Shape& output_shape() const { return chain_.output_shape(); }
  int64_t batch() const { return input_shape()[0]; }

  void forward(const Pass& pass);
  void zero_grads() { grads_.zero(); }
  // Backpropagates output_grad() into grads() (accumulating), last layer first. After
  // each layer, on_layer_done(i) is told that layer i's parameter gradients are final
  // (the gradient reducer starts communication from there).
  void backward(const Pass& pass, const std::function<void(size_t)>& on_layer_done = {});
  // One batch's gradient into grads(), with no zero_grads() before (pass.write_param_grads):
  // the layers that can write their parameter gradients do (dense layers on oneDNN), the
  // others' are zeroed just before their backward and added to. What a training step takes:
  // a dense layer's weight gradient (LeNet's dense1: 4.9 MB) is then neither zeroed nor read
  // back by its product.
  void backward_fresh(const Pass& pass, const std::function<void(size_t)>& on_layer_done = {});

  size_t num_layers() const { return chain_.size(); }
  // Activations, parameters, gradients and optimizer state in bytes (checked at set-up
  // against the machine's memory).
  uint64_t estimated_bytes() const { return chain_.estimated_bytes(); }
  const Layer& layer(size_t i) const { return chain_.layer(i); }
  const Chain& chain() const { return chain_; }
  // Layer i's FLOPs and bytes per pass at this batch (no dx where only views come before).
  LayerWork layer_work(size_t i) const { return chain_.layer_work(i, false); }
  // Every layer's work by layer name (what the trace writer puts in layers.csv).
  std::map<std::string, LayerWork> work_by_layer() const {
    std::map<std::string, LayerWork> w;
    for (size_t i = 0; i < num_layers(); ++i) w[layer(i).name()] = layer_work(i);
    return w;
  }
  // The contiguous range of layer i's parameters in the flat buffers (size 0: none).
  const Range& layer_params(size_t i) const { return layer_params_[i]; }
  const std::vector<Range>& layer_ranges() const { return layer_params_; }
  // The parameter tensors that L2 applies to (weights; not biases).
  std::vector<Range> decayed_ranges() const;
  std::string kernels_name() const { return kernels_->name(); }
  // The backend: its vector operations serve the optimizer and the update rules, its
  // kernels the loss.
  VectorOps& ops() { return kernels_->ops(); }
  KernelFactory& kernels() { return *kernels_; }
  Device& device() { return kernels_->device(); }
  // Times each layer's forward and backward (null: off).
  void set_profiler(Profiler* p) {
    if (p) p->set_timeline(&kernels_->device().timeline());
    chain_.set_profiler(p);
  }

 private:
  void require_host_size(size_t n, const char* what) const;

  std::unique_ptr<KernelFactory> kernels_;  // outlives the kernels the layers hold
  Chain chain_;
  bool one_thread_ = false;
  Buffer input_, output_grad_;
  HostMirror input_host_;
  Buffer params_, grads_;
  std::vector<ParamSegment> segments_;
  std::vector<Range> layer_params_;
};

}  // namespace hpdl
