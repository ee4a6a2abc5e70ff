// Branches (concat / sum of chains on one input) and ScalarNorm; the copies, sums and the
// normalisation are the backend's. R rows (all output dims but the last), W widths along
// the last axis, N batch, M elements per sample.
#include "hpdl/nn/branches.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>

#include "hpdl/core/error.hpp"

namespace hpdl {

Branches::Branches(std::vector<std::pair<std::string, Chain>> branches, Combine combine)
    : branches_(std::move(branches)), combine_(combine) {
  set_plan_hooks(*this);
}

Shape Branches::setup(const Shape& in) {
  HPDL_REQUIRE(!branches_.empty(), "layer '" + name() + "' has no branches");
  Shape out;
  for (size_t k = 0; k < branches_.size(); ++k) {
    const Shape o = branches_[k].second.setup(in);
    cols_.push_back(k == 0 ? 0 : cols_.back() + widths_.back());
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
  in_numel_ = in.numel();
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
  ops_ = &k.ops();
  for (size_t b = 1; b < branches_.size(); ++b) dx_scratch_.emplace_back(in_numel_, k.device());
  concurrent_ = k.device().host_accessible();
  // Branches that run at once run one thread each (each_branch): their kernels are made for it.
  if (own_thread_ || (concurrent_ && branches_.size() > 1))
    for (auto& [bname, chain] : branches_)
      for (size_t i = 0; i < chain.size(); ++i) chain.layer(i).plan().run_on_own_thread();
  size_t first = 0;
  for (auto& [bname, chain] : branches_) {
    size_t n = 0;
    for (size_t i = 0; i < chain.size(); ++i) n += chain.spec_count(i);
    chain.bind({p.begin() + first, p.begin() + first + n},
               {g.begin() + first, g.begin() + first + n}, k);
    first += n;
  }
  in_place_.assign(branches_.size(), false);
  branch_dy_.clear();
  branch_dy_.resize(branches_.size());
  if (combine_ != Combine::kConcat) return;
  for (size_t b = 0; b < branches_.size(); ++b) {
    in_place_[b] = branches_[b].second.write_output_rows_apart(width_, k);
    if (!in_place_[b]) branch_dy_[b] = Buffer(rows_ * widths_[b], k.device());
  }
}

void Branches::each_branch(const std::function<void(size_t)>& f) {
  const int n = static_cast<int>(branches_.size());
  std::exception_ptr error;
  const auto run = [&](int k) {
    try {
      f(size_t(k));
    } catch (...) {
#pragma omp critical(hpdl_branch_error)
      if (!error) error = std::current_exception();
    }
  };
  if (concurrent_ && n > 1 && omp_in_parallel() && omp_get_num_threads() > 1) {
    // Inside a branch of an outer Branches: the branches become tasks, which a thread that
    // has finished its own outer branches takes over (HAR 3x3's three groups on two threads:
    // the third group's two directions run one on each).
#pragma omp taskgroup
    {
      for (int k = 0; k < n; ++k) {
#pragma omp task firstprivate(k) shared(run)
        run(k);
      }
    }
  } else if (const int threads = std::min(n, omp_get_max_threads());
             concurrent_ && threads > 1 && !omp_in_parallel()) {
#pragma omp parallel for schedule(static, 1) num_threads(threads)
    for (int k = 0; k < n; ++k) run(k);
  } else {
    for (int k = 0; k < n; ++k) run(k);
  }
  if (error) std::rethrow_exception(error);
}

void Branches::forward(const float* x, float* y, const Pass& pass) {
  each_branch([&](size_t k) {
    branches_[k].second.forward(x, pass, in_place_[k] ? y + cols_[k] : nullptr);
  });
  for (size_t k = 0; k < branches_.size(); ++k) {
    const float* o = branches_[k].second.output();
    const int64_t w = widths_[k], n = rows_ * width_;
    if (combine_ == Combine::kSum) {
      if (k == 0)
        ops_->copy_rows(1, n, o, n, y, n);
      else
        ops_->axpy(n, 1.0f, o, y);
    } else if (!in_place_[k]) {
      ops_->copy_rows(rows_, w, o, w, y + cols_[k], width_);
    }
  }
}

void Branches::backward(const float* x, const float*, const float* dy, float* dx,
                        const Pass& pass) {
  if (combine_ == Combine::kConcat)  // each branch's slice of dy, where not read in place
    for (size_t k = 0; k < branches_.size(); ++k)
      if (!in_place_[k])
        ops_->copy_rows(rows_, widths_[k], dy + cols_[k], width_, branch_dy_[k].data(), widths_[k]);
  each_branch([&](size_t k) {
    // sum: every branch receives the whole gradient
    const float* dy_k = combine_ == Combine::kSum ? dy
                        : in_place_[k]            ? dy + cols_[k]
                                                  : branch_dy_[k].data();
    float* target = (!dx || k == 0) ? dx : dx_scratch_[k - 1].data();
    branches_[k].second.backward(x, dy_k, target, pass);
  });
  // The first branch wrote the input gradient; the later ones' are added in order.
  if (dx)
    for (size_t k = 1; k < branches_.size(); ++k)
      ops_->axpy(dx_scratch_[k - 1].size(), 1.0f, dx_scratch_[k - 1].data(), dx);
}

Shape ScalarNorm::setup(const Shape& in) {
  batch_ = in[0];
  per_sample_ = in.per_sample();
  return in;
}

std::vector<ParamSpec> ScalarNorm::param_specs() const {
  return {{"scale", 1, false, Init::kConstant, 1, 1, scale_init_},
          {"shift", 1, false, Init::kZeros, 1, 1, 0.0f}};
}

void ScalarNorm::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                      KernelFactory& k) {
  scale_ = p[0], shift_ = p[1], dscale_ = g[0], dshift_ = g[1];
  kernel_ = k.scalar_norm({batch_, per_sample_, eps_});
  xhat_ = Buffer(batch_ * per_sample_, k.device());
  inv_std_ = Buffer(batch_, k.device());
}

// gamma, beta and their gradients stay in the parameter buffers: the kernel reads and
// adds to them there (on a GPU, without a trip to the host).
void ScalarNorm::forward(const float* x, float* y, const Pass&) {
  kernel_->forward(x, scale_.data(), shift_.data(), xhat_.data(), inv_std_.data(), y);
}

void ScalarNorm::backward(const float*, const float*, const float* dy, float* dx, const Pass&) {
  kernel_->backward(dy, xhat_.data(), inv_std_.data(), scale_.data(), dx, dscale_.data(),
                    dshift_.data());
}

}  // namespace hpdl
