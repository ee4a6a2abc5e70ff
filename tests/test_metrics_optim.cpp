// Metrics (accuracy, weighted F1) and the optimizer math on the flat buffers.
#include <gtest/gtest.h>

#include <cmath>

#include "hpdl/core/fast_math.hpp"
#include "hpdl/optim/optimizer.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/train/metrics.hpp"

using namespace hpdl;

TEST(Metrics, AccuracyAndWeightedF1) {
  // y_true = [0,0,0,1,1,2], y_pred = [0,0,1,1,2,2]; scikit-learn: f1_score(average="weighted")
  // = (3*0.8 + 2*0.5 + 1*(2/3)) / 6 = 0.6777...
  ConfusionMatrix m(3);
  const int t[6] = {0, 0, 0, 1, 1, 2}, p[6] = {0, 0, 1, 1, 2, 2};
  for (int i = 0; i < 6; ++i) m.add(t[i], p[i]);
  EXPECT_NEAR(m.accuracy(), 4.0 / 6, 1e-12);
  EXPECT_NEAR(m.weighted_f1(), (3 * 0.8 + 2 * 0.5 + 2.0 / 3) / 6, 1e-12);
  EXPECT_NE(m.table({"a", "b", "c"}).find("c 2"), std::string::npos);
  EXPECT_EQ(m.csv({}).substr(0, 20), "true\\predicted,0,1,2");
}

TEST(Optim, SgdMomentum) {
  std::vector<float> w = {1.0f, 2.0f}, g = {0.5f, -1.0f};
  auto ops = make_cpu_vector_ops();
  Sgd sgd(*ops, 2, 0.1f, 0.9f);
  sgd.update(w, g);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.05f);
  sgd.update(w, g);  // v = 0.9*0.5 + 0.5 = 0.95
  EXPECT_FLOAT_EQ(w[0], 0.95f - 0.095f);
}

TEST(Optim, AdamFirstStepIsLrTimesSign) {
  std::vector<float> w = {1.0f, 1.0f}, g = {0.3f, -2.0f};
  auto ops = make_cpu_vector_ops();
  Adam adam(*ops, 2, 0.01f, 0.9f, 0.999f, 1e-8f);
  adam.update(w, g);
  EXPECT_NEAR(w[0], 0.99f, 1e-6);
  EXPECT_NEAR(w[1], 1.01f, 1e-6);
}

TEST(Optim, L2OnlyOnDecayedRangesAndClipByGlobalNorm) {
  const std::vector<Range> decayed = {{0, 2}};  // l.w decays; l.b at offset 2 does not
  std::vector<float> w = {1, 2, 3}, g = {0, 0, 0};
  auto ops = make_cpu_vector_ops();
  add_l2(*ops, decayed, w, g, 0.5f);
  EXPECT_EQ(g, (std::vector<float>{0.5f, 1.0f, 0.0f}));
  std::vector<float> big = {3, 4};
  EXPECT_NEAR(clip_by_global_norm(*ops, big, 1.0), 5.0, 1e-9);
  EXPECT_NEAR(std::hypot(big[0], big[1]), 1.0, 1e-6);
  std::vector<float> small = {0.3f, 0.4f};
  clip_by_global_norm(*ops, small, 1.0);
  EXPECT_FLOAT_EQ(small[0], 0.3f);
}

TEST(FastMath, ExpSigmoidTanhMatchLibm) {
  double exp_err = 0, sig_err = 0, tanh_err = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.00731f) {
    exp_err = std::max(exp_err, std::abs(double(fast_exp(x)) / std::exp(double(x)) - 1));
    sig_err = std::max(sig_err, std::abs(double(fast_sigmoid(x)) - 1 / (1 + std::exp(-double(x)))));
    tanh_err = std::max(tanh_err, std::abs(double(fast_tanh(x)) - std::tanh(double(x))));
  }
  EXPECT_LT(exp_err, 5e-7);
  EXPECT_LT(sig_err, 2e-7);
  EXPECT_LT(tanh_err, 5e-7);
  EXPECT_LT(fast_sigmoid(-1000.0f), 1e-30f);  // clamped: tiny, finite, not NaN
  EXPECT_FLOAT_EQ(fast_sigmoid(1000.0f), 1.0f);
  EXPECT_FLOAT_EQ(fast_tanh(1000.0f), 1.0f);
}

namespace hpdl {
namespace {

// A timeline like a GPU's: marks are opaque (a counter) until resolve(), which the
// profiler must call once per step for all the step's layer marks, and not before.
class CountingTimeline final : public Timeline {
 public:
  int64_t mark() override { return next_++; }
  void resolve(int64_t* marks, int64_t n) override {
    ++resolves_;
    for (int64_t i = 0; i < n; ++i) marks[i] = 1000 * marks[i] + 7;
  }
  int64_t next_ = 0;
  int resolves_ = 0;
};

TEST(Profiler, LayerMarksResolvedOncePerStep) {
  ProfileConfig cfg;
  cfg.enabled = true, cfg.warmup = 0, cfg.active = 10;
  Profiler prof(cfg, 4, 16);
  CountingTimeline timeline;
  prof.set_timeline(&timeline);
  const int32_t layer = prof.name("dense1", "forward"), host = prof.name("data", "data");
  prof.begin_step(0);
  { DeviceScope timed(&prof, layer); }  // marks 0, 1
  { ProfileScope timed(&prof, host); }  // host clock
  { DeviceScope timed(&prof, layer); }  // marks 2, 3
  EXPECT_EQ(timeline.resolves_, 0);     // nothing resolved inside the step
  prof.end_step();
  EXPECT_EQ(timeline.resolves_, 1);
  const auto& ev = prof.events();
  ASSERT_EQ(ev.size(), 4u);  // 2 layers, the host interval, the step
  EXPECT_EQ(ev[0].t0_ns, 7);
  EXPECT_EQ(ev[0].t1_ns, 1007);
  EXPECT_EQ(ev[2].t0_ns, 2007);
  EXPECT_EQ(ev[2].t1_ns, 3007);
  EXPECT_GT(ev[1].t0_ns, 1'000'000);  // a steady-clock time, untouched
  // A step without layer intervals resolves nothing.
  prof.begin_step(1);
  prof.end_step();
  EXPECT_EQ(timeline.resolves_, 1);
}

}  // namespace
}  // namespace hpdl
