// Model construction (shapes, flat buffers, activation storage) and the layer loops.
#include "hpdl/nn/model.hpp"

#include <cmath>

#include "hpdl/core/rng.hpp"

namespace hpdl {

Model::Model(std::vector<std::unique_ptr<Layer>> layers, const Shape& input,
             std::unique_ptr<KernelFactory> kernels)
    : kernels_(std::move(kernels)), layers_(std::move(layers)) {
  shapes_.push_back(input);
  int64_t total = 0;
  std::vector<std::vector<ParamSpec>> specs;
  for (auto& l : layers_) {
    shapes_.push_back(l->setup(shapes_.back()));
    specs.push_back(l->param_specs());
    layer_params_.push_back({total, 0});
    for (const auto& s : specs.back()) layer_params_.back().size += s.size;
    for (const auto& s : specs.back()) {
      segments_.push_back(
          {l->name() + "." + s.name, total, s.size, s.decay, s.init, s.fan_in, s.fan_out, s.value});
      total += s.size;
    }
  }
  params_ = Buffer(total);
  grads_ = Buffer(total);

  // Activation i is the input of layer i; a view layer's output shares its input's storage.
  act_store_.resize(shapes_.size());
  dact_store_.resize(shapes_.size());
  act_.resize(shapes_.size());
  dact_.resize(shapes_.size());
  for (size_t i = 0; i < shapes_.size(); ++i) {
    if (i > 0 && layers_[i - 1]->is_view()) {
      act_[i] = act_[i - 1];
      dact_[i] = dact_[i - 1];
      continue;
    }
    act_store_[i] = Buffer(shapes_[i].numel());
    act_[i] = act_store_[i].data();
    if (i > 0) {  // no gradient is needed for the model input
      dact_store_[i] = Buffer(shapes_[i].numel());
      dact_[i] = dact_store_[i].data();
    }
  }

  size_t seg = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::vector<std::span<float>> p, g;
    for (size_t k = 0; k < specs[i].size(); ++k, ++seg) {
      p.push_back(params_.span().subspan(segments_[seg].offset, segments_[seg].size));
      g.push_back(grads_.span().subspan(segments_[seg].offset, segments_[seg].size));
    }
    layers_[i]->bind(std::move(p), std::move(g), *kernels_);
  }
}

void Model::init_params(uint64_t seed) {
  for (size_t s = 0; s < segments_.size(); ++s) {
    const ParamSegment& seg = segments_[s];
    Rng rng(seed, 0x1217 + s);
    float bound = 0;
    if (seg.init == Init::kGlorotUniform) bound = std::sqrt(6.0f / float(seg.fan_in + seg.fan_out));
    if (seg.init == Init::kHeUniform) bound = std::sqrt(6.0f / float(seg.fan_in));
    float* p = params_.data() + seg.offset;
    if (seg.init == Init::kLstmBias) {
      const int64_t h = seg.size / 4;
      for (int64_t i = 0; i < seg.size; ++i) p[i] = (i >= h && i < 2 * h) ? seg.value : 0.0f;
      continue;
    }
    for (int64_t i = 0; i < seg.size; ++i)
      p[i] = bound == 0 ? 0.0f : (2 * rng.uniform() - 1) * bound;
  }
}

void Model::forward(const Pass& pass) {
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->forward(act_[i], act_[i + 1], pass);
}

void Model::backward(const Pass& pass, const std::function<void(size_t)>& on_layer_done) {
  for (size_t i = layers_.size(); i-- > 0;) {
    layers_[i]->backward(act_[i], act_[i + 1], dact_[i + 1], dact_[i], pass);
    if (on_layer_done) on_layer_done(i);
  }
}

}  // namespace hpdl
