// The profiler's marks: resolved once a step, every step waiting for its work.
#include <gtest/gtest.h>

#include "hpdl/profile/profiler.hpp"

using namespace hpdl;

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
  void finish() override { ++finishes_; }
  int64_t next_ = 0;
  int resolves_ = 0, finishes_ = 0;
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

TEST(Profiler, EveryStepWaitsForItsWorkRecordedOrNot) {
  ProfileConfig cfg;
  cfg.enabled = true, cfg.warmup = 1, cfg.active = 1, cfg.repeat = 2;  // off, on, off, on
  Profiler prof(cfg, 4, 16);
  CountingTimeline timeline;
  prof.set_timeline(&timeline);
  const int32_t layer = prof.name("dense1", "forward");
  for (int64_t s = 0; s < 4; ++s) {
    prof.begin_step(s);
    { DeviceScope timed(&prof, layer); }
    prof.end_step();
    EXPECT_EQ(timeline.finishes_, s + 1) << "step " << s;
  }
  EXPECT_EQ(timeline.resolves_, 2);  // the two recorded steps
}

}  // namespace
}  // namespace hpdl
