// Downpour, DC-ASGD and asynchronous DiLoCo on a server's shard (see the header). The arithmetic is
// the backend's vector operations, built without floating-point contraction, so a server's w - lr*g
// equals a single process's SGD step bit for bit (the 1 server + 1 worker tests rely on it).
#include "hpdl/train/update_rules.hpp"

#include <algorithm>

#include "hpdl/core/buffer.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

class Downpour final : public UpdateRule {
 public:
  explicit Downpour(VectorOps& ops) : ops_(ops) {}
  void apply(int, const float* g, float lr, float* w, const float*, int64_t n, int64_t) override {
    ops_.sgd(n, lr, 0.0f, g, nullptr, w);
  }
  bool uses_backup() const override { return false; }
  std::vector<State> state(int) override { return {}; }

 private:
  VectorOps& ops_;
};

class DcAsgd final : public UpdateRule {
 public:
  DcAsgd(const DistributedConfig& d, int workers, int64_t n, VectorOps& ops)
      : ms_decay_(static_cast<float>(d.dc_ms_decay)), ops_(ops) {
    step_.lambda = static_cast<float>(d.dc_lambda);
    step_.lambda0 = static_cast<float>(d.dc_lambda0);
    step_.eps = static_cast<float>(d.dc_eps);
    step_.adaptive = d.dc_adaptive;
    if (step_.adaptive)
      for (int k = 0; k < workers; ++k) mean_square_.emplace_back(n);
  }
  void apply(int worker, const float* g, float lr, float* w, const float* bak, int64_t n,
             int64_t) override {
    DcAsgdStep step = step_;
    step.lr = lr;
    float* ms = nullptr;
    if (step.adaptive) {
      ms = mean_square_[worker].data();
      ops_.mean_square(n, ms_decay_, g, ms);
    }
    ops_.dcasgd(n, step, g, bak, ms, w);
  }
  bool uses_backup() const override { return true; }
  std::vector<State> state(int worker) override {
    if (!step_.adaptive) return {};
    return {{"mean_square", mean_square_[worker].span()}};
  }

 private:
  std::vector<Buffer> mean_square_;  // adaptive: MS_t per element, per worker
  float ms_decay_;
  DcAsgdStep step_{};
  VectorOps& ops_;
};

class OuterNesterov final : public UpdateRule {
 public:
  OuterNesterov(const DistributedConfig& d, int workers, int64_t n)
      : lr_(static_cast<float>(d.outer_lr)),
        mu_(static_cast<float>(d.outer_momentum)),
        workers_(workers),
        momentum_(n),
        round_(n) {
    HPDL_REQUIRE(workers >= 1, "asynchronous DiLoCo needs a worker");
    std::fill(momentum_.span().begin(), momentum_.span().end(), 0.0f);
    std::fill(round_.span().begin(), round_.span().end(), 0.0f);
  }
  void apply(int, const float* g, float lr, float* w, const float*, int64_t n,
             int64_t applied) override {
    const float share = 1.0f / static_cast<float>(workers_);  // 1 exactly for one worker
    float* m = momentum_.data();
    float* b = round_.data();
    if ((applied + 1) % workers_ != 0) {
      for (int64_t i = 0; i < n; ++i) {
        const float d = lr * g[i];
        b[i] += d;
        w[i] -= lr_ * (d * share);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const float d = lr * g[i];
      m[i] = mu_ * m[i] + (b[i] + d) * share;
      b[i] = 0.0f;
      w[i] -= lr_ * (d * share + mu_ * m[i]);
    }
  }
  bool uses_backup() const override { return false; }
  std::vector<State> state(int) override { return {}; }
  std::vector<State> shared_state() override {
    return {{"momentum", momentum_.span()}, {"round", round_.span()}};
  }

 private:
  float lr_, mu_;
  int workers_;
  Buffer momentum_;
  Buffer round_;  // the changes of this round's pushes so far
};

}  // namespace

std::unique_ptr<UpdateRule> make_update_rule(const DistributedConfig& dist, int workers, int64_t n,
                                             VectorOps& ops) {
  if (dist.mode == DistMode::kDcAsgd) return std::make_unique<DcAsgd>(dist, workers, n, ops);
  HPDL_REQUIRE(dist.mode == DistMode::kDownpour,
               std::string("no update rule for distributed.mode '") + word(dist.mode) + "'");
  if (dist.outer == OuterStep::kNesterov) return std::make_unique<OuterNesterov>(dist, workers, n);
  return std::make_unique<Downpour>(ops);
}

}  // namespace hpdl
