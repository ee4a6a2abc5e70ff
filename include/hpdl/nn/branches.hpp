// Layers that are not a single step of a chain: Branches runs several chains of layers on
// the same input and joins their outputs, by concatenation along the last axis (the two
// directions of a bidirectional LSTM) or by element-wise sum (the K groups of a HAR
// residual layer); ScalarNorm is the HAR thesis's normalisation after such a sum.
// On a CPU backend with more than one OpenMP thread the branches run at once, one thread
// each (their small per-step products gain nothing from being split further), and are
// joined in branch order afterwards, so the result equals the branches run one by one.
// Branches inside such a branch run as OpenMP tasks, so a thread that finishes its own
// branches early takes over part of another's.
// A concatenated branch whose last layer can write its rows into the joined output (an
// LSTM on a CPU backend: PlanHooks::write_rows_apart) does so, and reads its slice of the
// output gradient in place: no copy either way.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/nn/chain.hpp"

namespace hpdl {

class Branches final : public Layer, PlanHooks {
 public:
  enum class Combine { kConcat, kSum };
  // Each branch has a name; its parameters are named "<branch>.<layer>.<param>".
  Branches(std::vector<std::pair<std::string, Chain>> branches, Combine combine);
  std::string kind() const override { return combine_ == Combine::kSum ? "sum" : "concat"; }
  LayerWork work(bool input_grad) const override;
  // sum: every branch must output the same shape; concat: the same but for the last axis.
  Shape setup(const Shape& in) override;
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
            KernelFactory& k) override;
  void forward(const float* x, float* y, const Pass& pass) override;
  void backward(const float* x, const float* y, const float* dy, float* dx,
                const Pass& pass) override;
  // Each branch's chain zeroes or writes its own layers' gradients (Chain::backward).
  bool writes_param_grads() const override { return true; }
  // Passed on to the branches' layers at bind (a branch inside a branch runs on its thread).
  void run_on_own_thread() override { own_thread_ = true; }
  // For the execution plan: each branch's name and chain.
  const std::vector<std::pair<std::string, Chain>>& branches() const { return branches_; }
  std::vector<std::pair<std::string, Chain>>& branches() { return branches_; }

 private:
  std::vector<std::pair<std::string, Chain>> branches_;
  Combine combine_;
  int64_t rows_ = 0;             // product of all output dims but the last
  int64_t in_numel_ = 0;         // of the input (dx_scratch_'s size, allocated in bind)
  std::vector<int64_t> widths_;  // last-axis width of each branch's output
  std::vector<int64_t> cols_;    // concat: where each branch's columns start
  std::vector<bool> in_place_;   // concat: the branch writes into the joined output itself
  int64_t width_ = 0;            // of the joined output
  // Runs f(k) for every branch k: at once on a CPU backend with threads to spare (one thread
  // each; as tasks of the enclosing team inside another Branches' branch), else in order.
  // An exception from any branch is rethrown once all have finished.
  void each_branch(const std::function<void(size_t)>& f);

  std::vector<Buffer> branch_dy_;   // concat, not in place: the branch's slice of dy
  std::vector<Buffer> dx_scratch_;  // input gradient of each branch after the first
  VectorOps* ops_ = nullptr;
  bool concurrent_ = false;  // the kernels run on the host (CPU backends)
  bool own_thread_ = false;  // this layer runs on a branch's own thread
};

// Per-sample normalisation over all of a sample's elements (time and features), with a
// learnable scalar scale (initialised to 0.5) and shift (0): y = scale * (x - mean) /
// sqrt(var + eps) + shift. Statistics are per sample, so results do not depend on the
// batch's composition or on how it is split across ranks.
class ScalarNorm final : public Layer {
 public:
  explicit ScalarNorm(float scale_init = 0.5f, float eps = 1e-5f)
      : scale_init_(scale_init), eps_(eps) {}
  std::string kind() const override { return "norm"; }
  LayerWork work(bool input_grad) const override;
  Shape setup(const Shape& in) override;
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
            KernelFactory& k) override;
  void forward(const float* x, float* y, const Pass& pass) override;
  void backward(const float* x, const float* y, const float* dy, float* dx,
                const Pass& pass) override;

 private:
  float scale_init_, eps_;
  int64_t batch_ = 0, per_sample_ = 0;
  std::span<float> scale_, shift_, dscale_, dshift_;
  Buffer xhat_;     // [N, M] normalised input
  Buffer inv_std_;  // [N]
  std::unique_ptr<ScalarNormKernel> kernel_;
};

}  // namespace hpdl
