// Layer chains: shape propagation, activation storage, and the forward/backward loops.
#include "hpdl/nn/chain.hpp"

#include "hpdl/core/error.hpp"
#include "hpdl/core/memory_check.hpp"

namespace hpdl {
Chain::Chain(std::vector<std::unique_ptr<Layer>> layers) : layers_(std::move(layers)) {}

Shape Chain::setup(const Shape& in, const ChainPlanner* planner) {
  HPDL_REQUIRE(!layers_.empty(), "a chain of layers is empty");
  HPDL_REQUIRE(!layers_.back()->plan().is_view(), "layer '" + layers_.back()->name() + "' (" +
                                                      layers_.back()->kind() +
                                                      ") cannot be the last layer of a chain");
  shapes_ = {in};
  for (auto& l : layers_) {
    shapes_.push_back(l->setup(shapes_.back()));
    spec_counts_.push_back(l->param_specs().size());
  }
  const size_t n = layers_.size();
  params_before_.assign(n + 1, false);
  for (size_t i = 1; i <= n; ++i) params_before_[i] = params_before_[i - 1] || spec_counts_[i - 1];
  if (planner) set_planner(planner);
  // What the model will hold, checked before any of it is allocated.
  require_memory(estimated_bytes(), "the model at batch " + std::to_string(in[0]));
  return shapes_.back();
}

void Chain::set_planner(const ChainPlanner* planner) {
  planner_ = planner;
  if (planner_) planner_->fuse(*this);
}

// Activations and their gradients here (none for a view); parameters, gradients and up to
// two optimizer buffers in the model.
uint64_t Chain::estimated_bytes() const {
  uint64_t values = 0;
  for (size_t i = 1; i < shapes_.size(); ++i)
    if (!layers_[i - 1]->plan().is_view()) values += 2 * static_cast<uint64_t>(shapes_[i].numel());
  for (const auto& spec : param_specs()) values += 4 * static_cast<uint64_t>(spec.size);
  return values * sizeof(float);
}

std::vector<ParamSpec> Chain::param_specs() const {
  std::vector<ParamSpec> out;
  for (const auto& l : layers_)
    for (ParamSpec s : l->param_specs()) {
      s.name = l->name() + "." + s.name;
      out.push_back(s);
    }
  return out;
}

void Chain::bind(const std::vector<std::span<float>>& p, const std::vector<std::span<float>>& g,
                 KernelFactory& kernels) {
  const size_t n = layers_.size();
  device_ = &kernels.device();
  fwd_ranges_.clear(), bwd_ranges_.clear();
  for (const auto& l : layers_)
    fwd_ranges_.push_back(l->name() + " forward"), bwd_ranges_.push_back(l->name() + " backward");
  act_store_.resize(n + 1);
  dact_store_.resize(n + 1);
  act_.assign(n + 1, nullptr);
  dact_.assign(n + 1, nullptr);
  // Activation i (1..n) is owned unless layer i-1 is a view of its input.
  for (size_t i = 1; i <= n; ++i) {
    if (layers_[i - 1]->plan().is_view()) continue;
    act_store_[i] = Buffer(shapes_[i].numel(), kernels.device());
    if (i < n)
      dact_store_[i] = Buffer(shapes_[i].numel(), kernels.device());  // dact_[n]: the caller's dy
  }
  size_t k = 0;
  zeroed_grads_.assign(n, {});
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::vector<std::span<float>> lp(p.begin() + k, p.begin() + k + spec_counts_[i]);
    std::vector<std::span<float>> lg(g.begin() + k, g.begin() + k + spec_counts_[i]);
    k += spec_counts_[i];
    std::span<float> all;
    if (!lg.empty()) {  // a layer's gradients lie one after another (Model)
      float* first = lg.front().data();
      all = {first, size_t(lg.back().data() + lg.back().size() - first)};
    }
    layers_[i]->bind(std::move(lp), std::move(lg), kernels);
    if (!layers_[i]->plan().writes_param_grads()) zeroed_grads_[i] = all;
  }
  use_planned_layouts(kernels);
}

LayerWork Chain::layer_work(size_t i, bool input_grad) const {
  return layers_[i]->work(layer_writes_input_grad(i, input_grad));
}

// Tells each layer that reads or writes an activation in a block the planner chose. A layer
// that keeps layouts (an activation) or is a view takes its neighbours' and is told nothing.
void Chain::use_planned_layouts(KernelFactory& kernels) {
  const size_t n = layers_.size();
  blocks_ = planner_ ? planner_->layouts(*this) : std::vector<int64_t>(n + 1, 1);
  HPDL_REQUIRE(blocks_.size() == n + 1 && blocks_.front() == 1 && blocks_.back() == 1,
               "a chain's plan must keep its input and output plain");
  for (size_t i = 0; i < n; ++i) {
    const PlanHooks& h = layers_[i]->plan();
    if (h.is_view() || h.keeps_layout()) continue;
    if (blocks_[i] != 1 || blocks_[i + 1] != 1)
      layers_[i]->plan().use_blocks(blocks_[i], blocks_[i + 1], kernels);
  }
}

void Chain::set_profiler(Profiler* p) {
  profiler_ = p;
  fwd_ids_.clear(), bwd_ids_.clear();
  if (!p) return;
  for (const auto& l : layers_) {
    fwd_ids_.push_back(p->name(l->name(), "forward"));
    bwd_ids_.push_back(p->name(l->name(), "backward"));
  }
}

bool Chain::write_output_rows_apart(int64_t stride, KernelFactory& kernels) {
  if (!layers_.back()->plan().write_rows_apart(stride, kernels)) return false;
  output_outside_ = true;
  act_store_.back() = Buffer();
  return true;
}

void Chain::forward(const float* x, const Pass& pass, float* out) {
  HPDL_REQUIRE(output_outside_ == (out != nullptr),
               "a chain's output buffer is given exactly when its output lives outside it");
  act_[0] = const_cast<float*>(x);  // layers only read their input
  const size_t n = layers_.size();
  for (size_t i = 0; i < n; ++i) {
    act_[i + 1] = layers_[i]->plan().is_view() ? act_[i]
                  : i + 1 == n && out          ? out
                                               : act_store_[i + 1].data();
    DeviceScope timed(profiler_, profiler_ ? fwd_ids_[i] : 0);
    DeviceRange named(*device_, fwd_ranges_[i].c_str());
    layers_[i]->forward(act_[i], act_[i + 1], pass);
  }
}

bool Chain::layer_writes_input_grad(size_t i, bool input_grad) const {
  return input_grad || params_before_.at(i);
}

// dact_[i] is layer i's dx: a buffer of its own, or layer i - 1's dx when that layer is a
// view (which computes nothing), so a layer with only views before it gets the chain's dx;
// null where no layer before i has parameters and the chain's dx is not wanted (HAR's first
// LSTM group after an input dropout: no input gradient, the dropout's backward skipped).
void Chain::backward(const float* x, const float* dy, float* dx, const Pass& pass,
                     const std::function<void(size_t)>& on_layer_done) {
  const size_t n = layers_.size();
  act_[0] = const_cast<float*>(x);
  dact_[0] = dx;
  for (size_t i = 1; i < n; ++i)
    dact_[i] = !layer_writes_input_grad(i, dx != nullptr) ? nullptr
               : layers_[i - 1]->plan().is_view()         ? dact_[i - 1]
                                                          : dact_store_[i].data();
  dact_[n] = const_cast<float*>(dy);  // the last layer only reads it
  for (size_t i = n; i-- > 0;) {
    if (dact_[i] || spec_counts_[i] > 0) {  // else: nothing to write
      DeviceScope timed(profiler_, profiler_ ? bwd_ids_[i] : 0);
      DeviceRange named(*device_, bwd_ranges_[i].c_str());
      if (pass.write_param_grads && !zeroed_grads_[i].empty())
        device_->zero(zeroed_grads_[i].data(), zeroed_grads_[i].size_bytes());
      layers_[i]->backward(act_[i], act_[i + 1], dact_[i + 1], dact_[i], pass);
    }
    if (on_layer_done) on_layer_done(i);
  }
}

}  // namespace hpdl
