// Branches (concat / sum of chains on one input) and ScalarNorm. R rows (all output
// dims but the last), W widths along the last axis, N batch, M elements per sample.
#include "hpdl/nn/branches.hpp"

#include <cmath>
#include <cstring>

#include "hpdl/core/error.hpp"

namespace hpdl {

Branches::Branches(std::vector<std::pair<std::string, Chain>> branches, Combine combine)
    : branches_(std::move(branches)), combine_(combine) {}

Shape Branches::setup(const Shape& in) {
  HPDL_REQUIRE(!branches_.empty(), "layer '" + name() + "' has no branches");
  Shape out;
  for (size_t k = 0; k < branches_.size(); ++k) {
    const Shape o = branches_[k].second.setup(in);
    widths_.push_back(o.dims.back());
    if (k == 0) {
      out = o;
      continue;
    }
    Shape a = out, b = o;
    if (combine_ == Combine::kConcat) a.dims.pop_back(), b.dims.pop_back();
    HPDL_REQUIRE(a == b, "layer '" + name() + "': branch '" + branches_[k].first + "' outputs " +
                             o.str() + ", branch '" + branches_[0].first + "' " + out.str());
    if (combine_ == Combine::kConcat) out.dims.back() += o.dims.back();
  }
  width_ = out.dims.back();
  rows_ = out.numel() / width_;
  if (combine_ == Combine::kConcat)
    for (int64_t w : widths_) branch_dy_.emplace_back(rows_ * w);
  dx_scratch_ = Buffer(in.numel());
  return out;
}

std::vector<ParamSpec> Branches::param_specs() const {
  std::vector<ParamSpec> out;
  for (const auto& [bname, chain] : branches_)
    for (ParamSpec s : chain.param_specs()) {
      s.name = bname + "." + s.name;
      out.push_back(s);
    }
  return out;
}

void Branches::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                    KernelFactory& k) {
  size_t first = 0;
  for (auto& [bname, chain] : branches_) {
    size_t n = 0;
    for (size_t i = 0; i < chain.size(); ++i) n += chain.spec_count(i);
    chain.bind({p.begin() + first, p.begin() + first + n},
               {g.begin() + first, g.begin() + first + n}, k);
    first += n;
  }
}

void Branches::forward(const float* x, float* y, const Pass& pass) {
  int64_t col = 0;
  for (size_t k = 0; k < branches_.size(); ++k) {
    Chain& chain = branches_[k].second;
    chain.forward(x, pass);
    const float* o = chain.output();
    const int64_t w = widths_[k], n = rows_ * width_;
    if (combine_ == Combine::kSum) {
      if (k == 0) {
        std::memcpy(y, o, n * sizeof(float));
      } else {
#pragma omp parallel for simd if (parallel : n > 65536)
        for (int64_t i = 0; i < n; ++i) y[i] += o[i];
      }
    } else {
#pragma omp parallel for if (rows_ * w > 65536)
      for (int64_t r = 0; r < rows_; ++r)
        std::memcpy(y + r * width_ + col, o + r * w, w * sizeof(float));
      col += w;
    }
  }
}

void Branches::backward(const float* x, const float*, const float* dy, float* dx,
                        const Pass& pass) {
  int64_t col = 0;
  for (size_t k = 0; k < branches_.size(); ++k) {
    const float* dy_k = dy;  // sum: every branch receives the whole gradient
    if (combine_ == Combine::kConcat) {
      const int64_t w = widths_[k];
      float* slice = branch_dy_[k].data();
#pragma omp parallel for if (rows_ * w > 65536)
      for (int64_t r = 0; r < rows_; ++r)
        std::memcpy(slice + r * w, dy + r * width_ + col, w * sizeof(float));
      col += w;
      dy_k = slice;
    }
    // The first branch writes the input gradient, later ones add theirs to it.
    float* target = (!dx || k == 0) ? dx : dx_scratch_.data();
    branches_[k].second.backward(x, dy_k, target, pass);
    if (dx && k > 0) {
      const int64_t n = dx_scratch_.size();
      const float* s = dx_scratch_.data();
#pragma omp parallel for simd if (parallel : n > 65536)
      for (int64_t i = 0; i < n; ++i) dx[i] += s[i];
    }
  }
}

Shape ScalarNorm::setup(const Shape& in) {
  batch_ = in[0];
  per_sample_ = in.per_sample();
  xhat_ = Buffer(in.numel());
  inv_std_ = Buffer(batch_);
  return in;
}

std::vector<ParamSpec> ScalarNorm::param_specs() const {
  return {{"scale", 1, false, Init::kConstant, 1, 1, scale_init_},
          {"shift", 1, false, Init::kZeros, 1, 1, 0.0f}};
}

void ScalarNorm::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                      KernelFactory&) {
  scale_ = p[0], shift_ = p[1], dscale_ = g[0], dshift_ = g[1];
}

void ScalarNorm::forward(const float* x, float* y, const Pass&) {
  const int64_t M = per_sample_;
  const float gamma = scale_[0], beta = shift_[0];
#pragma omp parallel for if (batch_ * M > 65536)
  for (int64_t n = 0; n < batch_; ++n) {
    const float* xn = x + n * M;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < M; ++i) sum += xn[i], sq += double(xn[i]) * xn[i];
    const double mean = sum / M, var = std::max(0.0, sq / M - mean * mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps_));
    inv_std_.data()[n] = inv;
    float* xh = xhat_.data() + n * M;
    for (int64_t i = 0; i < M; ++i) {
      xh[i] = (xn[i] - static_cast<float>(mean)) * inv;
      y[n * M + i] = gamma * xh[i] + beta;
    }
  }
}

void ScalarNorm::backward(const float*, const float*, const float* dy, float* dx, const Pass&) {
  const int64_t M = per_sample_;
  const float gamma = scale_[0];
  double dgamma = 0, dbeta = 0;
#pragma omp parallel for reduction(+ : dgamma, dbeta) if (batch_ * M > 65536)
  for (int64_t n = 0; n < batch_; ++n) {
    const float* d = dy + n * M;
    const float* xh = xhat_.data() + n * M;
    double s = 0, sx = 0;  // sums of dy and dy * xhat over the sample
    for (int64_t i = 0; i < M; ++i) s += d[i], sx += double(d[i]) * xh[i];
    dbeta += s, dgamma += sx;
    if (!dx) continue;
    // dx = gamma/std * (dy - mean(dy) - xhat * mean(dy * xhat))
    const float k = gamma * inv_std_.data()[n], mean_d = static_cast<float>(s / M),
                mean_dx = static_cast<float>(sx / M);
    for (int64_t i = 0; i < M; ++i) dx[n * M + i] = k * (d[i] - mean_d - xh[i] * mean_dx);
  }
  dscale_[0] += static_cast<float>(dgamma);
  dshift_[0] += static_cast<float>(dbeta);
}

}  // namespace hpdl
