// Optimizer updates and gradient transforms: the arithmetic is the backend's (VectorOps);
// here are the constants of each step and the optimizers' state.
#include "hpdl/optim/optimizer.hpp"

#include <cmath>

namespace hpdl {

double add_l2_sum_squares(VectorOps& ops, const std::vector<Range>& decayed,
                          std::span<const float> params, std::span<float> grads, float l2) {
  if (l2 == 0) return sum_of_squares(ops, grads);
  return ops.axpy_sum_squares(decayed, l2, params.data(), static_cast<int64_t>(grads.size()),
                              grads.data());
}

double sum_of_squares(VectorOps& ops, std::span<const float> x) {
  return ops.sum_squares(static_cast<int64_t>(x.size()), x.data());
}

void clip_to_norm(VectorOps& ops, std::span<float> grads, double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return;
  ops.scale(static_cast<int64_t>(grads.size()), static_cast<float>(max_norm / norm), grads.data());
}

double clip_by_global_norm(VectorOps& ops, std::span<float> grads, double max_norm) {
  if (max_norm <= 0) return 0;
  const double norm = std::sqrt(sum_of_squares(ops, grads));
  clip_to_norm(ops, grads, norm, max_norm);
  return norm;
}

Sgd::Sgd(VectorOps& ops, Device& device, int64_t n, float lr, float momentum)
    : Optimizer(lr), ops_(ops), momentum_(momentum), velocity_(momentum > 0 ? n : 0, device) {}

void Sgd::update(std::span<float> params, std::span<const float> grads) {
  ops_.sgd(static_cast<int64_t>(params.size()), lr_, momentum_, grads.data(),
           velocity_.size() ? velocity_.data() : nullptr, params.data());
}

OptimizerState Sgd::state() {
  OptimizerState s;
  s.device = &velocity_.device();
  if (velocity_.size()) s.buffers.push_back({"velocity", velocity_.span()});
  return s;
}

Adam::Adam(VectorOps& ops, Device& device, int64_t n, float lr, float beta1, float beta2, float eps)
    : Optimizer(lr),
      ops_(ops),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      m_(n, device),
      v_(n, device) {}

void Adam::update(std::span<float> params, std::span<const float> grads) {
  ++t_;
  const float c1 = 1.0f - static_cast<float>(std::pow(beta1_, t_));
  const float c2 = 1.0f - static_cast<float>(std::pow(beta2_, t_));
  const AdamStep step{beta1_, beta2_, eps_, lr_ / c1, 1.0f / std::sqrt(c2)};
  ops_.adam(static_cast<int64_t>(params.size()), step, grads.data(), m_.data(), v_.data(),
            params.data());
}

OptimizerState Adam::state() { return {&m_.device(), {{"m", m_.span()}, {"v", v_.span()}}, &t_}; }

std::unique_ptr<Optimizer> make_optimizer(VectorOps& ops, Device& device,
                                          const OptimizerConfig& cfg, int64_t num_params) {
  if (cfg.name == OptimizerKind::kAdam) {
    return std::make_unique<Adam>(ops, device, num_params, float(cfg.lr), float(cfg.beta1),
                                  float(cfg.beta2), float(cfg.eps));
  }
  return std::make_unique<Sgd>(ops, device, num_params, float(cfg.lr), float(cfg.momentum));
}

}  // namespace hpdl
