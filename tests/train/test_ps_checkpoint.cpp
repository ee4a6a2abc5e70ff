// The parameter server's checkpoint: servers' slices and workers' state.
#include <gtest/gtest.h>

#include "hpdl/core/error.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/ps_checkpoint.hpp"

using namespace hpdl;

// A server's slices come back from a checkpoint's full-length vectors at the shard's
// offset; a slice the checkpoint lacks is named: an asynchronous DiLoCo checkpoint written
// before the server's rounds has outer.momentum but no outer.round.
TEST(PsCheckpoint, ShardSlicesRestoreAndAMissingOneIsNamed) {
  Checkpoint c;
  c.params = {1, 2, 3, 4};
  c.buffers.push_back({"outer.momentum", {5, 6, 7, 8}});
  std::vector<float> params(2), momentum(2), round(2);
  restore_shard(
      c, 2, {{"params", std::span<float>(params)}, {"outer.momentum", std::span<float>(momentum)}});
  EXPECT_EQ(params, (std::vector<float>{3, 4}));
  EXPECT_EQ(momentum, (std::vector<float>{7, 8}));
  try {
    restore_shard(
        c, 2,
        {{"outer.momentum", std::span<float>(momentum)}, {"outer.round", std::span<float>(round)}});
    ADD_FAILURE() << "a missing outer.round was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("lacks the parameter server's outer.round"),
              std::string::npos)
        << e.what();
  }
}

// A parameter-server worker's state has one encoding: what restore_worker reads back from a
// checkpoint is what the worker was, buffers included; anything missing is named.
TEST(PsCheckpoint, WorkerStateRoundTripsAndMissingPartsAreNamed) {
  WorkerState w;
  w.epoch = 3, w.step_in_epoch = 5, w.step = 41, w.pushes_since_pull = 2, w.pending_steps = 3;
  w.pulled_versions = {7, 9};
  w.epoch_loss = {1.5, 0.25, 0}, w.epoch_samples = {64, 64, 0}, w.epoch_steps = {2, 2, 1};
  Checkpoint c;
  c.extra["workers"].push_back(nlohmann::json(w));
  c.buffers.push_back({"worker0.params", {1, 2, 3}});
  c.buffers.push_back({"worker0.w_bak", {4, 5, 6}});
  std::vector<float> params(3), bak(3), wrong(2);
  const WorkerState back = restore_worker(
      c, 0, {{"params", std::span<float>(params)}, {"w_bak", std::span<float>(bak)}});
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(w));
  EXPECT_EQ(back.pending_steps, 3);
  // A checkpoint written before pending_steps was kept: nothing pending.
  nlohmann::json older = nlohmann::json(w);
  older.erase("pending_steps");
  EXPECT_EQ(older.get<WorkerState>().pending_steps, 0);
  older.erase("step");  // every other key is required
  EXPECT_THROW(older.get<WorkerState>(), nlohmann::json::exception);
  EXPECT_EQ(params, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(bak, (std::vector<float>{4, 5, 6}));
  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(
      message([&] { restore_worker(c, 1, {}); }).find("no state for parameter-server worker1"),
      std::string::npos);
  EXPECT_NE(message([&] {
              restore_worker(c, 0, {{"mean_square", std::span<float>(params)}});
            }).find("lacks worker0.mean_square"),
            std::string::npos);
  EXPECT_NE(message([&] {
              restore_worker(c, 0, {{"params", std::span<float>(wrong)}});
            }).find("lacks worker0.params of 2 values"),
            std::string::npos);
  c.extra["workers"][0].erase("step");
  EXPECT_NE(message([&] { restore_worker(c, 0, {}); }).find("state of worker0 is malformed"),
            std::string::npos);
}

// A checkpoint of 3 workers resumed on 2 (and on 4): every new worker starts in the slowest
// old worker's epoch, as far into its new slice as the slowest was into its old one; the
// per-epoch sums are kept in total (old worker j's go to new worker j mod W'); what was
// summed but not pushed is counted as dropped.
TEST(PsCheckpoint, AnotherWorkerCountStartsWhereTheSlowestStood) {
  // 96 rows, batch 8: 3 workers have 4 steps an epoch each, 2 workers 6, 4 workers 3.
  auto state = [](int64_t epoch, int64_t step_in_epoch, int64_t pending, double loss) {
    WorkerState w;
    w.epoch = epoch, w.step_in_epoch = step_in_epoch, w.pending_steps = pending;
    w.step = (epoch - 1) * 4 + step_in_epoch, w.pulled_versions = {11};
    w.epoch_loss = {loss, loss, 0}, w.epoch_samples = {32, 32, 0}, w.epoch_steps = {4, 4, 0};
    return w;
  };
  Checkpoint c;
  for (const WorkerState& w : {state(3, 1, 1, 1.0), state(2, 3, 0, 2.0), state(2, 2, 2, 4.0)})
    c.extra["workers"].push_back(nlohmann::json(w));
  const WorkerRedistribution r = redistribution(c, 2, 96, 8);
  EXPECT_EQ(r.from_workers, 3);
  EXPECT_EQ(r.to_workers, 2);
  EXPECT_EQ(r.epoch, 2);  // worker 2: epoch 2, 2 of 4 steps
  EXPECT_DOUBLE_EQ(r.fraction, 0.5);
  EXPECT_EQ(r.dropped_steps, 3);
  const WorkerState w0 = redistributed_worker(c, r, 0, 96, 8, 3);
  const WorkerState w1 = redistributed_worker(c, r, 1, 96, 8, 3);
  EXPECT_EQ(w0.epoch, 2);
  EXPECT_EQ(w0.step_in_epoch, 3);  // half of 6
  EXPECT_EQ(w0.step, 9);           // one epoch of 6, then 3
  EXPECT_EQ(w0.pending_steps, 0);
  EXPECT_EQ(w0.epoch_loss, (std::vector<double>{5.0, 5.0, 0}));  // old workers 0 and 2
  EXPECT_EQ(w1.epoch_loss, (std::vector<double>{2.0, 2.0, 0}));  // old worker 1
  EXPECT_EQ(w0.epoch_samples[0] + w1.epoch_samples[0], 96);      // nothing lost in total
  const WorkerState w3 = redistributed_worker(c, redistribution(c, 4, 96, 8), 3, 96, 8, 3);
  EXPECT_EQ(w3.step_in_epoch, 1);                            // half of 3, rounded down
  EXPECT_EQ(w3.epoch_loss, (std::vector<double>{0, 0, 0}));  // a worker new to the run
  EXPECT_NE(describe(r).find("resuming 3 workers' checkpoint on 2 workers: every worker starts "
                             "in epoch 2, 50% into its slice"),
            std::string::npos)
      << describe(r);
  EXPECT_THROW(redistribution(Checkpoint{}, 2, 96, 8), AgreedError);
}
