// Multi-rank test, run under mpirun -np 1, 2 and 4: synchronous training on N ranks with
// per-rank batch B/N must end with the same parameters as 1 rank on batch B (each rank
// also trains the 1-rank reference on MPI_COMM_SELF and compares). Covers conv, pool,
// dense, dropout, Adam, L2 and clipping, with an even (12) and an uneven (10) batch.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "hpdl/config/config.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/dist/comm.hpp"
#include "hpdl/dist/watchdog.hpp"
#include "hpdl/nn/builder.hpp"
#include "hpdl/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "tiny_models.hpp"

using namespace hpdl;
namespace fs = std::filesystem;

namespace {

const std::string kConfig = std::string("[data]\ntrain_file = \"%DATA%\"\n") + kTinyConvModel + R"(
[optimizer]
name = "adam"
lr = 0.01
l2 = 0.001
clip_norm = 0.5
[train]
seed = 3
epochs = 2
)";

// The shared tiny HAR 2x2 model (tiny_models.hpp) with Adam, L2 and clipping.
const std::string kHarConfig = std::string("[data]\ntrain_file = \"%DATA%\"\n") + kTinyHarModel +
                               R"(
[optimizer]
name = "adam"
lr = 0.01
l2 = 0.005
clip_norm = 15.0
[train]
seed = 3
epochs = 2
)";

std::string prepare(const Comm& world) { return prepare(world, "conv", kConfig, {1, 8, 8}); }

std::vector<float> train(const Config& cfg, const Comm& comm) {
  H5Split data(cfg.data.train_file, "/");
  const int64_t local =
      BatchPlan(data.size(), cfg.train.batch, comm.rank(), comm.size()).local_batch();
  auto model = build_model(cfg.model, local, cfg.run.backend);
  model->init_params(cfg.train.seed);
  Watchdog watchdog(60, comm.rank());
  SyncTrainer trainer(cfg, comm, *model, data, nullptr, watchdog);
  trainer.run({});
  EXPECT_EQ(trainer.global_step(), 2 * (data.size() / cfg.train.batch));
  return {model->params().begin(), model->params().end()};
}

// max |N-rank params - 1-rank params| after training cfg on world and on self.
double distance_to_single_rank(const Config& cfg) {
  Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
  const std::vector<float> distributed = train(cfg, world);
  const std::vector<float> single = train(cfg, self);
  double max_diff = 0;
  for (size_t i = 0; i < single.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(distributed[i] - single[i])));
  return max_diff;
}

TEST(HarEquivalence, NRanksMatchOneRank) {
  Comm world(MPI_COMM_WORLD);
  for (const std::string backend : {"onednn", "reference"}) {
    const std::string path = prepare(world, "har", kHarConfig, {6, 3});
    const Config cfg = load_config(path, {"train.batch=10", "run.backend=\"" + backend + "\""});
    EXPECT_LT(distance_to_single_rank(cfg), 2e-5) << backend << " rank " << world.rank();
  }
}

// (global batch, backend, gradient bucket MiB: 0.0005 gives one bucket per layer or so,
// 64 one bucket for the whole model)
class Equivalence : public ::testing::TestWithParam<std::tuple<int, std::string, double>> {};

TEST_P(Equivalence, NRanksMatchOneRank) {
  const auto [batch, backend, bucket_mb] = GetParam();
  Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
  const std::string path = prepare(world);
  const Config cfg =
      load_config(path, {"train.batch=" + std::to_string(batch), "run.backend=\"" + backend + "\"",
                         "distributed.bucket_mb=" + std::to_string(bucket_mb)});
  const std::vector<float> distributed = train(cfg, world);
  const std::vector<float> single = train(cfg, self);
  ASSERT_EQ(distributed.size(), single.size());
  double max_diff = 0;
  for (size_t i = 0; i < single.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(distributed[i] - single[i])));
  EXPECT_LT(max_diff, 2e-5) << "rank " << world.rank() << " of " << world.size();
  // All ranks hold identical parameters (bitwise: the same reduced gradients and update).
  std::vector<float> r0 = distributed;
  MPI_Bcast(r0.data(), static_cast<int>(r0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(r0, distributed);
  // Training moved the parameters away from their initial values.
  auto fresh = build_model(cfg.model, 1, cfg.run.backend);
  fresh->init_params(cfg.train.seed);
  double moved = 0;
  for (size_t i = 0; i < single.size(); ++i)
    moved = std::max(moved, double(std::abs(single[i] - fresh->params()[i])));
  EXPECT_GT(moved, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Batches, Equivalence,
                         ::testing::Combine(::testing::Values(12, 10),
                                            ::testing::Values("onednn", "reference"),
                                            ::testing::Values(0.0005, 64.0)));

TEST(GradientReducer, BucketsAreLayerAligned) {
  Comm world(MPI_COMM_WORLD);
  const Config cfg = load_config(prepare(world), {});
  auto model = build_model(cfg.model, 2, "reference");
  Watchdog watchdog(60, world.rank());
  EXPECT_EQ(GradientReducer(world, *model, 1, watchdog).num_buckets(), 3);  // conv, dense, dense
  EXPECT_EQ(GradientReducer(world, *model, int64_t{1} << 30, watchdog).num_buckets(), 1);
  // the last dense layer (68 floats) is below 100, so it shares a bucket with the one before
  EXPECT_EQ(GradientReducer(world, *model, 100, watchdog).num_buckets(), 2);
}

}  // namespace

int main(int argc, char** argv) { return mpi_test_main(argc, argv); }
