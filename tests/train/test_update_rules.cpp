// The parameter server's asynchronous DiLoCo rule on a hand-made shard (update_rules.hpp):
// pushes in rounds of W, a round moving w as one synchronous DiLoCo step over W ranks, the
// momentum moving once a round; one worker is the plain Nesterov outer step, and lr_o = W
// with mu = 0 is Downpour. Every value is a binary fraction, so the comparisons are exact.
#include <gtest/gtest.h>

#include <vector>

#include "hpdl/train/update_rules.hpp"

using namespace hpdl;

namespace {

DistributedConfig diloco(double outer_lr, double momentum) {
  DistributedConfig d;
  d.mode = DistMode::kDownpour;
  d.outer = OuterStep::kNesterov;
  d.outer_lr = outer_lr;
  d.outer_momentum = momentum;
  return d;
}

std::vector<float> shared(UpdateRule& rule, const std::string& name) {
  for (const UpdateRule::State& st : rule.shared_state())
    if (st.name == name) return {st.values.begin(), st.values.end()};
  ADD_FAILURE() << "no shared state " << name;
  return {};
}

}  // namespace

TEST(UpdateRules, AsynchronousDilocoMovesInRoundsOfTheWorkers) {
  auto ops = make_cpu_vector_ops();
  auto rule = make_update_rule(diloco(0.5, 0.5), 2, 2, *ops);
  std::vector<float> w = {1, 2};
  const std::vector<float> g1 = {1, 2}, g2 = {2, -2}, g3 = {4, 0};
  // Push 1 (D1 = 0.25 g1 = {0.25, 0.5}) opens the round: w - 0.5 D1 / 2, no momentum yet.
  rule->apply(0, g1.data(), 0.25f, w.data(), nullptr, 2, 0);
  EXPECT_EQ(w, (std::vector<float>{0.9375f, 1.875f}));
  EXPECT_EQ(shared(*rule, "round"), (std::vector<float>{0.25f, 0.5f}));
  EXPECT_EQ(shared(*rule, "momentum"), (std::vector<float>{0, 0}));
  // Push 2 (D2 = {0.5, -0.5}) ends it: m = (D1 + D2) / 2 = {0.375, 0},
  // w - 0.5 (D2 / 2 + 0.5 m): exactly synchronous DiLoCo's step from {1, 2} over both changes.
  rule->apply(1, g2.data(), 0.25f, w.data(), nullptr, 2, 1);
  EXPECT_EQ(w, (std::vector<float>{0.71875f, 2.0f}));
  EXPECT_EQ(shared(*rule, "momentum"), (std::vector<float>{0.375f, 0}));
  EXPECT_EQ(shared(*rule, "round"), (std::vector<float>{0, 0}));
  // Push 3 (the same worker again: a round counts pushes, not workers) opens the next.
  rule->apply(0, g3.data(), 0.25f, w.data(), nullptr, 2, 2);
  EXPECT_EQ(w, (std::vector<float>{0.46875f, 2.0f}));
  EXPECT_EQ(shared(*rule, "round"), (std::vector<float>{1, 0}));
  EXPECT_EQ(shared(*rule, "momentum"), (std::vector<float>{0.375f, 0}));
}

TEST(UpdateRules, OneWorkerIsThePlainNesterovOuterStep) {
  auto ops = make_cpu_vector_ops();
  auto rule = make_update_rule(diloco(0.5, 0.5), 1, 1, *ops);
  std::vector<float> w = {1};
  const std::vector<float> g = {2};
  float m = 0, expect = 1;
  for (int64_t k = 0; k < 3; ++k) {
    rule->apply(0, g.data(), 0.125f, w.data(), nullptr, 1, k);
    const float d = 0.125f * 2;
    m = 0.5f * m + d;
    expect -= 0.5f * (d + 0.5f * m);
    EXPECT_EQ(w[0], expect) << "push " << k;
  }
  EXPECT_EQ(shared(*rule, "momentum")[0], m);
}

TEST(UpdateRules, OuterRateOfTheWorkersWithoutMomentumIsDownpour) {
  auto ops = make_cpu_vector_ops();
  DistributedConfig plain;
  plain.mode = DistMode::kDownpour;
  auto diloco_rule = make_update_rule(diloco(2.0, 0.0), 2, 3, *ops);
  auto downpour = make_update_rule(plain, 2, 3, *ops);
  std::vector<float> a = {1, -2, 3}, b = a;
  const std::vector<float> g = {0.5f, 1.5f, -3};
  for (int64_t k = 0; k < 4; ++k) {
    diloco_rule->apply(k % 2, g.data(), 0.25f, a.data(), nullptr, 3, k);
    downpour->apply(k % 2, g.data(), 0.25f, b.data(), nullptr, 3, k);
    EXPECT_EQ(a, b) << "push " << k;
  }
}
