// A model: a chain of layers over one contiguous parameter buffer and one contiguous
// gradient buffer (llm.c style). Zeroing gradients is one memset, MPI_Allreduce works in
// place on grads(), and each layer holds spans into both. Activations and their gradients
// are allocated once at construction for the fixed per-rank batch.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/core/buffer.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/nn/layer.hpp"

namespace hpdl {

// Where one parameter tensor lives in the flat buffers.
struct ParamSegment {
  std::string name;  // "conv1.w"
  int64_t offset, size;
  bool decay;  // L2 applies
  Init init;
  int64_t fan_in, fan_out;
  float value;  // for Init::kLstmBias
};

class Model {
 public:
  // input: [N, ...] with N the per-rank batch. Sets up and binds every layer.
  Model(std::vector<std::unique_ptr<Layer>> layers, const Shape& input,
        std::unique_ptr<KernelFactory> kernels);

  // Deterministic initialisation from the seed (same on every rank).
  void init_params(uint64_t seed);

  std::span<float> params() { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  const std::vector<ParamSegment>& segments() const { return segments_; }
  int64_t num_params() const { return params_.size(); }

  float* input() { return act_[0]; }                   // the batch is copied here
  const float* output() const { return act_.back(); }  // logits [N, K]
  float* output_grad() { return dact_.back(); }        // the loss writes dlogits here
  const Shape& input_shape() const { return shapes_.front(); }
  const Shape& output_shape() const { return shapes_.back(); }
  int64_t batch() const { return shapes_.front()[0]; }

  void forward(const Pass& pass);
  void zero_grads() { grads_.zero(); }
  // Backpropagates output_grad() into grads() (accumulating), last layer first. After
  // each layer, on_layer_done(i) is told that layer i's parameter gradients are final
  // (the gradient reducer starts communication from there).
  void backward(const Pass& pass, const std::function<void(size_t)>& on_layer_done = {});

  size_t num_layers() const { return layers_.size(); }
  const Layer& layer(size_t i) const { return *layers_[i]; }
  const Shape& layer_output_shape(size_t i) const { return shapes_[i + 1]; }
  // The contiguous range of layer i's parameters in the flat buffers (size 0: none).
  struct Range {
    int64_t offset, size;
  };
  const Range& layer_params(size_t i) const { return layer_params_[i]; }
  std::string kernels_name() const { return kernels_->name(); }

 private:
  std::unique_ptr<KernelFactory> kernels_;  // outlives the kernels the layers hold
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;  // shapes_[i]: input of layer i; back(): output
  Buffer params_, grads_;
  std::vector<ParamSegment> segments_;
  std::vector<Range> layer_params_;
  std::vector<Buffer> act_store_, dact_store_;
  std::vector<float*> act_, dact_;  // act_[i]: input of layer i (views share storage)
};

}  // namespace hpdl
