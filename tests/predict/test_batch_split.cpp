// A rank's share of the batch from two profiles (predict/batch_split.hpp): each part's cost
// per call and per sample, by hand; the step predicted with them; the refusals.
#include <gtest/gtest.h>

#include "hpdl/core/error.hpp"
#include "hpdl/predict/batch_split.hpp"
#include "hpdl/predict/predictor.hpp"

using namespace hpdl;

namespace {
// One layer at batch b: forward 2 + b/4, backward 4 + b/2 (us), data b/8 (no per-call
// part), loss 1 (all per call); update 10 and other 1 whatever the batch.
StepProfile at(int64_t b) {
  StepProfile p;
  p.name = "batch" + std::to_string(b);
  p.global_batch = p.local_batch = b;
  p.layers = {"dense"};
  p.forward_s = {(2 + b / 4.0) * 1e-6};
  p.backward_s = {(4 + b / 2.0) * 1e-6};
  p.data_s = b / 8.0 * 1e-6;
  p.loss_s = 1e-6;
  p.update_s = 10e-6, p.other_s = 1e-6;
  return p;
}
}  // namespace

TEST(BatchSplit, PerCallAndPerSamplePartsByHand) {
  StepProfile p = at(32);
  split_per_call(p, at(8), "small");
  EXPECT_NEAR(p.forward_call_s[0], 2e-6, 1e-12);
  EXPECT_NEAR(p.backward_call_s[0], 4e-6, 1e-12);
  EXPECT_NEAR(p.data_call_s, 0, 1e-12);
  EXPECT_NEAR(p.loss_call_s, 1e-6, 1e-12);
  // At batch 4 every part is the line's: forward 3, backward 6, data 0.5, loss 1 us.
  const StepProfile q = at_batch(p, 4);
  EXPECT_EQ(q.local_batch, 4);
  EXPECT_NEAR(q.forward_s[0], 3e-6, 1e-12);
  EXPECT_NEAR(q.backward_s[0], 6e-6, 1e-12);
  EXPECT_NEAR(q.data_s, 0.5e-6, 1e-12);
  EXPECT_NEAR(q.loss_s, 1e-6, 1e-12);
  // Without the second profile every part scales with the batch: forward 10 -> 1.25 us.
  EXPECT_NEAR(at_batch(at(32), 4).forward_s[0], 1.25e-6, 1e-12);
  // A smaller batch that took longer: the whole time is per call (never below 0 or above t).
  StepProfile slow = at(32);
  StepProfile small = at(8);
  small.forward_s[0] = 20e-6;
  split_per_call(slow, small, "small");
  EXPECT_NEAR(slow.forward_call_s[0], slow.forward_s[0], 1e-12);
}

TEST(BatchSplit, StepAtEightRanksCostsTheRanksShare) {
  StepProfile p = at(32);
  p.compute_s = {1, 1};  // no stragglers
  const NetworkModel net;
  const double linear = predict_step(p, net, 8, {}).compute_s;
  split_per_call(p, at(8), "small");
  const double split = predict_step(p, net, 8, {}).compute_s;
  // Batch 4: forward 3 + backward 6 + data 0.5 + loss 1 + update 10 + other 1 = 21.5 us;
  // in proportion (an eighth of batch 32's): 1.25 + 2.5 + 0.5 + 0.125 + 11 = 15.375 us.
  EXPECT_NEAR(split, 21.5e-6, 1e-9);
  EXPECT_NEAR(linear, 15.375e-6, 1e-9);
  // At the profile's own batch the split changes nothing.
  EXPECT_NEAR(predict_step(p, net, 1, {}).compute_s, predict_step(at(32), net, 1, {}).compute_s,
              1e-12);
}

TEST(BatchSplit, RefusesAnotherModelTheSameBatchAnotherCpu) {
  StepProfile p = at(32);
  StepProfile other = at(8);
  other.layers = {"dense", "dense2"};
  other.forward_s.push_back(0), other.backward_s.push_back(0);
  EXPECT_THROW(
      {
        try {
          split_per_call(p, other, "runs/b8");
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(),
                       "--batch-profile runs/b8: its model has 2 layers, not the 1 of batch32's "
                       "(profile the same model)");
          throw;
        }
      },
      Error);
  EXPECT_THROW(split_per_call(p, at(32), "same"), Error);
  StepProfile budgeted = at(8);
  p.cores_per_rank = 1, budgeted.cores_per_rank = 0.25;
  EXPECT_THROW(split_per_call(p, budgeted, "quarter"), Error);
  StepProfile ps = at(8);
  ps.mode = DistMode::kDownpour;
  EXPECT_THROW(split_per_call(p, ps, "ps"), Error);
}
