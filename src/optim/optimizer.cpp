// Optimizer updates and gradient transforms, each a single OpenMP loop over flat buffers.
// Members are copied to locals before each loop: inside the outlined OpenMP body the
// compiler cannot prove that a store through w[] leaves this->lr_ unchanged, and would
// reload it every iteration instead of vectorising.
#include "hpdl/optim/optimizer.hpp"

#include <cmath>

namespace hpdl {

void add_l2(const std::vector<ParamSegment>& segments, std::span<const float> params,
            std::span<float> grads, float l2) {
  if (l2 == 0) return;
  for (const auto& s : segments) {
    if (!s.decay) continue;
    const float* __restrict w = params.data() + s.offset;
    float* __restrict g = grads.data() + s.offset;
    const int64_t n = s.size;
#pragma omp parallel for simd if (parallel : n > 65536)
    for (int64_t i = 0; i < n; ++i) g[i] += l2 * w[i];
  }
}

double sum_of_squares(std::span<const float> x) {
  const int64_t n = static_cast<int64_t>(x.size());
  const float* __restrict v = x.data();
  double sq = 0;
#pragma omp parallel for simd reduction(+ : sq) if (parallel : n > 65536)
  for (int64_t i = 0; i < n; ++i) sq += double(v[i]) * v[i];
  return sq;
}

void clip_to_norm(std::span<float> grads, double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return;
  const int64_t n = static_cast<int64_t>(grads.size());
  float* __restrict g = grads.data();
  const float scale = static_cast<float>(max_norm / norm);
#pragma omp parallel for simd if (parallel : n > 65536)
  for (int64_t i = 0; i < n; ++i) g[i] *= scale;
}

double clip_by_global_norm(std::span<float> grads, double max_norm) {
  if (max_norm <= 0) return 0;
  const double norm = std::sqrt(sum_of_squares(grads));
  clip_to_norm(grads, norm, max_norm);
  return norm;
}

Sgd::Sgd(int64_t n, float lr, float momentum)
    : lr_(lr), momentum_(momentum), velocity_(momentum > 0 ? n : 0) {}

void Sgd::update(std::span<float> params, std::span<const float> grads) {
  const int64_t n = static_cast<int64_t>(params.size());
  float* __restrict w = params.data();
  const float* __restrict g = grads.data();
  const float lr = lr_, mu = momentum_;
  if (mu == 0) {
#pragma omp parallel for simd if (parallel : n > 65536)
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
    return;
  }
  float* __restrict v = velocity_.data();
#pragma omp parallel for simd if (parallel : n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] + g[i];
    w[i] -= lr * v[i];
  }
}

OptimizerState Sgd::state() {
  OptimizerState s;
  if (velocity_.size()) s.buffers.push_back({"velocity", velocity_.span()});
  return s;
}

Adam::Adam(int64_t n, float lr, float beta1, float beta2, float eps)
    : lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps), m_(n), v_(n) {}

void Adam::update(std::span<float> params, std::span<const float> grads) {
  ++t_;
  const float c1 = 1.0f - static_cast<float>(std::pow(beta1_, t_));
  const float c2 = 1.0f - static_cast<float>(std::pow(beta2_, t_));
  const float step = lr_ / c1, inv_sqrt_c2 = 1.0f / std::sqrt(c2);
  const float b1 = beta1_, b2 = beta2_, eps = eps_;
  const int64_t n = static_cast<int64_t>(params.size());
  float* __restrict w = params.data();
  float* __restrict m = m_.data();
  float* __restrict v = v_.data();
  const float* __restrict g = grads.data();
#pragma omp parallel for simd if (parallel : n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    w[i] -= step * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + eps);
  }
}

OptimizerState Adam::state() { return {{{"m", m_.span()}, {"v", v_.span()}}, &t_}; }

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg, int64_t num_params) {
  if (cfg.name == "adam") {
    return std::make_unique<Adam>(num_params, float(cfg.lr), float(cfg.beta1), float(cfg.beta2),
                                  float(cfg.eps));
  }
  return std::make_unique<Sgd>(num_params, float(cfg.lr), float(cfg.momentum));
}

}  // namespace hpdl
