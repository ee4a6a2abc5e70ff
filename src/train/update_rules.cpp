// Downpour and DC-ASGD (see the header). The arithmetic is the backend's vector operations,
// built without floating-point contraction, so a server's w + (-lr*g) equals a local
// w - lr*g bit for bit (the 1 server + 1 worker = SGD tests rely on it).
#include "hpdl/train/update_rules.hpp"

#include <algorithm>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

class Downpour final : public UpdateRule {
 public:
  Downpour(int64_t n, VectorOps& ops) : update_(n), ops_(ops) {}
  void pulled(std::span<const float>) override {}
  void push(ParamShards& shards, std::span<const float> g, float lr, std::span<int64_t> prev,
            RmaStats& st) override {
    ops_.scaled_copy(update_.size(), -lr, g.data(), update_.data());  // -lr*g == -(lr*g)
    shards.push_sum(update_.span(), prev, st);
  }
  std::vector<State> state() override { return {}; }

 private:
  Buffer update_;  // -lr * g, host memory
  VectorOps& ops_;
};

class DcAsgd final : public UpdateRule {
 public:
  DcAsgd(const DistributedConfig& d, int64_t n, VectorOps& ops)
      : w_bak_(n),
        mean_square_(d.dc_adaptive ? n : 0),
        ms_decay_(static_cast<float>(d.dc_ms_decay)),
        ops_(ops) {
    step_.lambda = static_cast<float>(d.dc_lambda);
    step_.lambda0 = static_cast<float>(d.dc_lambda0);
    step_.eps = static_cast<float>(d.dc_eps);
    step_.adaptive = d.dc_adaptive;
  }
  void pulled(std::span<const float> params) override {
    std::copy(params.begin(), params.end(), w_bak_.data());
  }
  void push(ParamShards& shards, std::span<const float> g, float lr, std::span<int64_t> prev,
            RmaStats& st) override {
    DcAsgdStep step = step_;
    step.lr = lr;
    const int64_t n = w_bak_.size();
    float* ms = mean_square_.data();
    if (step.adaptive) ops_.mean_square(n, ms_decay_, g.data(), ms);
    const float* bak = w_bak_.data();
    shards.push_rmw(
        [&](float* w, int64_t first, int64_t count) {
          ops_.dcasgd(count, step, g.data() + first, bak + first,
                      step.adaptive ? ms + first : nullptr, w);
        },
        prev, st);
  }
  std::vector<State> state() override {
    std::vector<State> out = {{"w_bak", w_bak_.span()}};
    if (mean_square_.size()) out.push_back({"mean_square", mean_square_.span()});
    return out;
  }

 private:
  Buffer w_bak_;        // the parameters of the last pull, host memory
  Buffer mean_square_;  // adaptive: MS_t per element
  float ms_decay_;
  DcAsgdStep step_{};
  VectorOps& ops_;
};

}  // namespace

std::unique_ptr<UpdateRule> make_update_rule(const DistributedConfig& dist, int64_t n,
                                             VectorOps& ops) {
  if (dist.mode == "dcasgd") return std::make_unique<DcAsgd>(dist, n, ops);
  HPDL_REQUIRE(dist.mode == "downpour", "no update rule for distributed.mode '" + dist.mode + "'");
  return std::make_unique<Downpour>(n, ops);
}

}  // namespace hpdl
