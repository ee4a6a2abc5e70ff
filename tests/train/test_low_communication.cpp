// Multi-rank tests of the low-communication sync variants, run under mpirun -np 1, 2 and 4:
// the 16-bit allreduce and its hand-computed sums, compressed gradients (replicas stay
// identical, training stays near f32 training), local SGD and DiLoCo's outer step (one
// averager step by hand, a whole interval of training by hand, identical replicas, the
// number of averages), and sync_every = 1 as plain synchronous SGD bit for bit.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "hpdl/builder/builder.hpp"
#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/dist/param_averager.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "sync_training.hpp"
#include "tiny_models.hpp"

using namespace hpdl;

namespace {

const std::string kConfig = std::string("[data]\ntrain_file = \"%DATA%\"\n") + kTinyConvModel + R"(
[optimizer]
name = "adam"
lr = 0.01
[train]
seed = 3
epochs = 2
batch = 8
)";

std::string prepare(const Comm& world) { return prepare(world, "conv", kConfig, {1, 8, 8}); }

using Trained = SyncTrained;
Trained train(const Config& cfg, const Comm& comm) { return train_sync(cfg, comm); }

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}

// Every rank holds rank 0's values, bit for bit.
void expect_identical_on_every_rank(const std::vector<float>& v) {
  std::vector<float> r0 = v;
  MPI_Bcast(r0.data(), static_cast<int>(r0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  EXPECT_EQ(r0, v) << "rank " << rank;
}

}  // namespace

// Values every partial sum of which both formats hold exactly: the sums are exact.
TEST(HalfAllreduce, SumsAsByHandOnEveryRank) {
  Comm world(MPI_COMM_WORLD);
  const int n = world.size();
  for (HalfFormat f : {HalfFormat::kBf16, HalfFormat::kFp16}) {
    std::vector<uint16_t> v(12);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = to_half(f, 0.25f * float(i + 1) * float(world.rank() + 1) * (i % 2 ? -1.0f : 1.0f));
    MPI_Request r;
    world.start_allreduce_sum(v.data(), int64_t(v.size()), f, &r);
    world.wait_all(1, &r);
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_EQ(from_half(f, v[i]),
                0.25f * float(i + 1) * float(n * (n + 1) / 2) * (i % 2 ? -1.0f : 1.0f))
          << i;
  }
}

// Each rank moves the parameters by its own hand-made change; the averager applies the mean
// change (average) or DiLoCo's Nesterov step, twice, as computed here by hand.
TEST(ParamAverager, OuterStepsAsByHand) {
  Comm world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  for (const bool nesterov : {false, true}) {
    std::vector<float> p = {1.0f, -2.0f, 0.5f};
    LocalSgdSettings s;
    s.every = 4, s.nesterov = nesterov, s.outer_lr = 0.5, s.outer_momentum = 0.75;
    Watchdog watchdog(60, r);
    ParamAverager avg(world, host_device(), p, s, watchdog);
    std::vector<double> want = {1.0, -2.0, 0.5}, m(3, 0.0);
    for (int round = 0; round < 2; ++round) {
      const int64_t first = 4 * round;
      avg.before_step(first, 0);  // the interval starts: anchor = p
      for (size_t i = 0; i < p.size(); ++i) p[i] -= 0.125f * float((r + 1) * (i + 1 + round));
      ASSERT_FALSE(avg.ends_interval(first + 2, 0, false));
      ASSERT_TRUE(avg.ends_interval(first + 3, 0, false));  // its 4th step: average
      avg.average(first + 3);
      for (size_t i = 0; i < p.size(); ++i) {
        const double d = 0.125 * (i + 1 + round) * (n + 1) / 2.0;  // mean over ranks
        if (nesterov) {
          m[i] = 0.75 * m[i] + d;
          want[i] -= 0.5 * (d + 0.75 * m[i]);
        } else {
          want[i] -= d;
        }
        EXPECT_NEAR(p[i], want[i], 1e-6) << "nesterov " << nesterov << " round " << round;
      }
      EXPECT_EQ(avg.averages(), round + 1);
    }
  }
}

// One local SGD interval (plain SGD, H = 3 steps of an epoch of 5) computed by hand: each rank
// steps on its own rows with its own mean gradient, then the changes are averaged.
TEST(LocalSgd, AnIntervalOfTrainingAsByHand) {
  Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
  const std::string path = prepare(world);
  const Config cfg =
      load_config(path, {"optimizer.name=\"sgd\"", "optimizer.lr=0.1", "distributed.sync_every=3",
                         "train.max_steps=3", "train.epochs=1"});
  const Trained trained = train(cfg, world);
  EXPECT_EQ(trained.averages, 1);

  H5Split data(cfg.data.train_file, "/");
  BatchPlan plan(data.size(), cfg.train.batch, world.rank(), world.size());
  auto model = build_model(cfg.model, plan.local_batch(), cfg.run.backend);
  model->init_params(cfg.train.seed);
  const std::vector<float> start(model->params().begin(), model->params().end());
  SoftmaxCrossEntropy loss(model->kernels(), model->batch(), cfg.model.classes);
  std::vector<int32_t> labels(model->batch());
  plan.begin_epoch(cfg.train.seed, 1);
  for (int64_t s = 0; s < 3; ++s) {
    const auto rows = plan.local_rows(s);
    compute_gradients(*model, loss, data, rows, labels.data(),
                      Pass{true, cfg.train.seed, s, rows.data()},
                      1.0f / static_cast<float>(plan.local_batch()));
    for (int64_t i = 0; i < model->num_params(); ++i)
      model->params()[i] -= 0.1f * model->grads()[i];
  }
  std::vector<float> change(start.size());
  for (size_t i = 0; i < start.size(); ++i) change[i] = start[i] - model->params()[i];
  world.allreduce_sum(change.data(), int64_t(change.size()));
  std::vector<float> want(start.size());
  for (size_t i = 0; i < start.size(); ++i) want[i] = start[i] - change[i] / float(world.size());
  EXPECT_LT(max_diff(trained.params, want), 1e-6) << "rank " << world.rank();
  expect_identical_on_every_rank(trained.params);
}

// Intervals end after H local steps and at every epoch's end: 5 steps an epoch, H = 3,
// 2 warm-up steps of sync SGD: epoch 1 averages after steps 4 (2, 3, 4), epoch 2 after 7
// and 9 (5..7, 8..9): 3 averages. Replicas end identical for both outer steps.
TEST(LocalSgd, AveragesAtIntervalAndEpochEndsIdenticalReplicas) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  for (const std::string outer : {"average", "nesterov"}) {
    const Config cfg =
        load_config(path, {"distributed.sync_every=3", "distributed.outer=\"" + outer + "\"",
                           "distributed.local_warmup_steps=2"});
    const Trained t = train(cfg, world);
    EXPECT_EQ(t.averages, 3) << outer;
    expect_identical_on_every_rank(t.params);
  }
}

// The inner optimizer's state stays on each rank (DiLoCo's rule): after a local SGD run with
// Adam the ranks hold identical parameters (the run ended with an average) but their own
// moments, and a checkpoint carries every rank's moments and parameters and the shared
// anchor and outer momentum, each rank's own given back on restore.
TEST(LocalSgd, InnerOptimizerStateStaysOnEachRankAndInCheckpoints) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  const Config cfg =
      load_config(path, {"distributed.sync_every=3", "distributed.outer=\"nesterov\""});
  H5Split data(cfg.data.train_file, "/");
  const int64_t local =
      BatchPlan(data.size(), cfg.train.batch, world.rank(), world.size()).local_batch();
  auto model = build_model(cfg.model, local, cfg.run.backend);
  model->init_params(cfg.train.seed);
  Watchdog watchdog(60, world.rank());
  SyncTrainer trainer(cfg, world, *model, Splits{&data}, watchdog);
  trainer.run({});
  Checkpoint c = trainer.state(3, 0, 0, 0, 0, {});
  broadcast_checkpoint(world, c);
  for (const char* name : {"outer.anchor", "outer.momentum"}) EXPECT_NE(c.buffer(name), nullptr);
  const int n = world.size();
  for (int r = 0; r < n; ++r) {
    ASSERT_NE(c.buffer("rank" + std::to_string(r) + ".optimizer.m"), nullptr) << r;
    EXPECT_EQ(*c.buffer("rank" + std::to_string(r) + ".params"), c.params) << r;
  }
  if (n > 1) EXPECT_NE(*c.buffer("rank0.optimizer.m"), *c.buffer("rank1.optimizer.m"));
  // Restored into a fresh trainer, each rank's own moments are back: its own checkpoint copy
  // of them, taken again, is unchanged.
  auto fresh = build_model(cfg.model, local, cfg.run.backend);
  SyncTrainer again(cfg, world, *fresh, Splits{&data}, watchdog);
  again.restore(c);
  Checkpoint c2 = again.state(3, 0, 0, 0, 0, {});
  broadcast_checkpoint(world, c2);
  for (int r = 0; r < n; ++r) {
    const std::string m = "rank" + std::to_string(r) + ".optimizer.m";
    EXPECT_EQ(*c2.buffer(m), *c.buffer(m)) << r;
  }
  EXPECT_EQ(std::vector<float>(fresh->params().begin(), fresh->params().end()), c.params);
}

// distributed.sync_every = 1 is synchronous SGD: the same parameters bit for bit.
TEST(LocalSgd, SyncEveryOneIsPlainSync) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  const Trained plain = train(load_config(path, {}), world);
  const Trained h1 = train(load_config(path, {"distributed.sync_every=1"}), world);
  EXPECT_EQ(plain.params, h1.params);
  EXPECT_EQ(h1.averages, 0);
}

// Compressed gradients: replicas stay identical (every rank decodes the same sums), the
// parameters stay near f32 training, and with one rank nothing is rounded.
TEST(Compression, IdenticalReplicasNearUncompressedTraining) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  const Trained plain = train(load_config(path, {}), world);
  for (const std::string wire : {"bf16", "fp16"}) {
    for (const std::string h : {"1", "3"}) {
      const Trained c = train(load_config(path, {"distributed.compression=\"" + wire + "\"",
                                                 "distributed.sync_every=" + h}),
                              world);
      expect_identical_on_every_rank(c.params);
      if (h == "1") {
        if (world.size() == 1) EXPECT_EQ(c.params, plain.params) << wire;
        EXPECT_LT(max_diff(c.params, plain.params), 0.02) << wire;
        EXPECT_GT(max_diff(c.params, plain.params), world.size() > 1 ? 0.0 : -1.0) << wire;
      }
    }
  }
}

int main(int argc, char** argv) { return mpi_test_main(argc, argv); }
