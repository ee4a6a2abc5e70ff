// Model construction: the layer chain, the flat parameter/gradient buffers and their
// segments, deterministic initialisation.
#include "hpdl/nn/model.hpp"

#include <cmath>

#include "hpdl/core/error.hpp"
#include "hpdl/core/rng.hpp"

namespace hpdl {

Model::Model(std::vector<std::unique_ptr<Layer>> layers, const Shape& input,
             std::unique_ptr<KernelFactory> kernels, const ChainPlanner* planner)
    : kernels_(std::move(kernels)), chain_(std::move(layers)) {
  const Shape out = chain_.setup(input, planner);
  Device& dev = kernels_->device();
  input_ = Buffer(input.numel(), dev);
  input_host_ = HostMirror(dev, input_.span());
  output_grad_ = Buffer(out.numel(), dev);
  const std::vector<ParamSpec> specs = chain_.param_specs();
  int64_t total = 0;
  for (const auto& s : specs) {
    segments_.push_back({s.name, total, s.size, s.decay, s.init, s.fan_in, s.fan_out, s.value});
    total += s.size;
  }
  params_ = Buffer(total, dev);
  grads_ = Buffer(total, dev);
  std::vector<std::span<float>> p, g;
  for (const auto& seg : segments_) {
    p.push_back(params_.span().subspan(seg.offset, seg.size));
    g.push_back(grads_.span().subspan(seg.offset, seg.size));
  }
  size_t first = 0;
  for (size_t i = 0; i < chain_.size(); ++i) {
    Range r{first < segments_.size() ? segments_[first].offset : total, 0};
    for (size_t k = 0; k < chain_.spec_count(i); ++k) r.size += segments_[first + k].size;
    layer_params_.push_back(r);
    first += chain_.spec_count(i);
  }
  if (step_flop() < kOneThreadBelowFlop) one_thread_ = kernels_->use_one_thread();
  chain_.bind(p, g, *kernels_);
}

double Model::step_flop() const {
  double flop = 0;
  for (size_t i = 0; i < chain_.size(); ++i) {
    const LayerWork w = layer_work(i);
    flop += w.forward.flops + w.backward.flops;
  }
  return flop;
}

// Drawn on the host (the same stream of numbers on every backend), then copied over.
void Model::init_params(uint64_t seed) {
  std::vector<float> host(static_cast<size_t>(num_params()));
  for (size_t s = 0; s < segments_.size(); ++s) {
    const ParamSegment& seg = segments_[s];
    Rng rng(seed, 0x1217 + s);
    float bound = 0;
    if (seg.init == Init::kGlorotUniform) bound = std::sqrt(6.0f / float(seg.fan_in + seg.fan_out));
    if (seg.init == Init::kHeUniform) bound = std::sqrt(6.0f / float(seg.fan_in));
    float* p = host.data() + seg.offset;
    if (seg.init == Init::kConstant) {
      for (int64_t i = 0; i < seg.size; ++i) p[i] = seg.value;
      continue;
    }
    if (seg.init == Init::kLstmBias) {
      const int64_t h = seg.size / 4;
      for (int64_t i = 0; i < seg.size; ++i) p[i] = (i >= h && i < 2 * h) ? seg.value : 0.0f;
      continue;
    }
    for (int64_t i = 0; i < seg.size; ++i)
      p[i] = bound == 0 ? 0.0f : (2 * rng.uniform() - 1) * bound;
  }
  params_from_host(host);
}

// Every host view holds the whole flat vector (a wrong size is a bug, not bad input).
void Model::require_host_size(size_t n, const char* what) const {
  HPDL_REQUIRE(static_cast<int64_t>(n) == num_params(),
               std::string("a host copy of the ") + what + " has " + std::to_string(n) +
                   " values for a model of " + std::to_string(num_params()));
}

void Model::params_to_host(std::span<float> dst) const {
  require_host_size(dst.size(), "parameters");
  kernels_->device().copy_to_host(dst.data(), params_.data(), dst.size_bytes());
}

std::vector<float> Model::params_to_host() const {
  std::vector<float> out(static_cast<size_t>(num_params()));
  params_to_host(out);
  return out;
}

void Model::params_from_host(std::span<const float> src) {
  require_host_size(src.size(), "parameters");
  kernels_->device().copy_from_host(params_.data(), src.data(), src.size_bytes());
}

void Model::grads_to_host(std::span<float> dst) const {
  require_host_size(dst.size(), "gradients");
  kernels_->device().copy_to_host(dst.data(), grads_.data(), dst.size_bytes());
}

std::vector<Range> Model::decayed_ranges() const {
  std::vector<Range> out;
  for (const ParamSegment& s : segments_)
    if (s.decay) out.push_back({s.offset, s.size});
  return out;
}

void Model::forward(const Pass& pass) { chain_.forward(input_.data(), pass); }

void Model::backward_fresh(const Pass& pass, const std::function<void(size_t)>& on_layer_done) {
  Pass writing = pass;
  writing.write_param_grads = true;
  backward(writing, on_layer_done);
}

void Model::backward(const Pass& pass, const std::function<void(size_t)>& on_layer_done) {
  // The model input needs no gradient.
  chain_.backward(input_.data(), output_grad_.data(), nullptr, pass, on_layer_done);
}

}  // namespace hpdl
