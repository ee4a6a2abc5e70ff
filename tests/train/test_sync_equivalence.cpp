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
#include <map>
#include <set>
#include <sstream>

#include "hpdl/builder/builder.hpp"
#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/profile/trace_csv.hpp"
#include "hpdl/profile/trace_writer.hpp"
#include "hpdl/run/device_choice.hpp"
#include "hpdl/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "staged_device.hpp"
#include "sync_training.hpp"
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
  const SyncTrained t = train_sync(cfg, comm);
  EXPECT_EQ(t.steps, 2 * (H5Split(cfg.data.train_file, "/").size() / cfg.train.batch));
  return t.params;
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
// 64 one bucket for the whole model; sums through shared memory, else MPI's allreduce)
class Equivalence : public ::testing::TestWithParam<std::tuple<int, std::string, double, bool>> {};

TEST_P(Equivalence, NRanksMatchOneRank) {
  const auto [batch, backend, bucket_mb, shared_memory] = GetParam();
  Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
  const std::string path = prepare(world);
  const Config cfg = load_config(
      path, {"train.batch=" + std::to_string(batch), "run.backend=\"" + backend + "\"",
             "distributed.bucket_mb=" + std::to_string(bucket_mb),
             std::string("distributed.shared_memory=") + (shared_memory ? "true" : "false")});
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
                                            ::testing::Values(0.0005, 64.0),
                                            ::testing::Values(true)));
INSTANTIATE_TEST_SUITE_P(ThroughMpi, Equivalence,
                         ::testing::Combine(::testing::Values(12, 10), ::testing::Values("onednn"),
                                            ::testing::Values(0.0005, 64.0),
                                            ::testing::Values(false)));

// Profiling changes no parameter, records exactly the scheduled steps (skip 1, then twice
// warm-up 1 + active 2: steps 2, 3, 5, 6), every layer's forward and backward in each, and
// writes traces whose per-step accounting adds up.
TEST(Profiling, SameParametersScheduledStepsAndTraceFiles) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  const Config cfg =
      load_config(path, {"train.batch=10", "profile.enabled=true", "profile.skip=1",
                         "profile.warmup=1", "profile.active=2", "profile.repeat=2"});
  const std::vector<float> plain = train(cfg, world);
  H5Split data(cfg.data.train_file, "/");
  const int64_t local = BatchPlan(data.size(), 10, world.rank(), world.size()).local_batch();
  auto model = build_model(cfg.model, local, cfg.run.backend);
  model->init_params(cfg.train.seed);
  Watchdog watchdog(60, world.rank());
  Profiler prof(cfg.profile, 8, 64);
  SyncTrainer trainer(cfg, world, *model, Splits{&data}, watchdog, &prof);
  trainer.run({});
  EXPECT_EQ(plain, std::vector<float>(model->params().begin(), model->params().end()));

  std::set<int64_t> steps;
  std::map<int64_t, int> fwd, bwd, buckets;
  for (const TraceEvent& e : prof.events()) {
    const std::string& cat = prof.categories()[e.name];
    if (e.name == prof.step_name()) steps.insert(e.step);
    if (cat == "forward") ++fwd[e.step];
    if (cat == "backward") ++bwd[e.step];
    if (cat == "allreduce") ++buckets[e.step];
    EXPECT_LE(e.t0_ns, e.t1_ns);
  }
  EXPECT_EQ(steps, (std::set<int64_t>{2, 3, 5, 6}));
  for (int64_t s : steps) {
    EXPECT_EQ(fwd[s], static_cast<int>(model->num_layers())) << "step " << s;
    EXPECT_EQ(bwd[s], static_cast<int>(model->num_layers())) << "step " << s;
    if (world.size() > 1) EXPECT_GE(buckets[s], 1) << "step " << s;
  }

  const std::string dir = mpi_test_dir(world) + "/profile";
  const GatheredTraces gathered = gather_traces(world, prof);
  if (world.rank() != 0) return;
  const TraceSummary t =
      write_traces(gathered, dir, nlohmann::json{{"test", true}}, model->work_by_layer());
  EXPECT_EQ(t.steps, 4 * world.size());
  EXPECT_EQ(t.dropped, 0);
  EXPECT_GT(t.attributed_mean, 0.0);
  EXPECT_LE(t.attributed_mean, 1.0);
  for (int r = 0; r < world.size(); ++r)
    EXPECT_TRUE(fs::exists(dir + "/trace/rank" + std::to_string(r) + ".json"));
  const auto merged = nlohmann::json::parse(std::ifstream(dir + "/trace/merged.json"));
  EXPECT_EQ(merged["otherData"]["test"], true);
  std::set<int> pids;
  for (const auto& e : merged["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(static_cast<int>(pids.size()), world.size());
  // layers.csv: a header and one row per layer, in model order.
  std::ifstream layers(dir + "/layers.csv");
  std::vector<std::string> rows;
  for (std::string line; std::getline(layers, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), model->num_layers() + 1);
  for (size_t i = 0; i < model->num_layers(); ++i)
    EXPECT_EQ(rows[i + 1].substr(0, rows[i + 1].find(',')), model->layer(i).name());
  // ... with each pass's work as the model counts it (GFLOP, read back by column name).
  const CsvTable table(dir + "/layers.csv");
  for (size_t i = 0; i < model->num_layers(); ++i) {
    EXPECT_NEAR(table.number(i, "forward_gflop") * 1e9, model->layer_work(i).forward.flops,
                1e-6 * model->layer_work(i).forward.flops + 1e-3);
    EXPECT_NEAR(table.number(i, "backward_mb") * 1e6, model->layer_work(i).backward.bytes,
                1e-6 * model->layer_work(i).backward.bytes + 1e-3);
  }
  // steps.csv: attributed + unattributed = wall; the parts add up to attributed.
  std::ifstream steps_csv(dir + "/steps.csv");
  std::string line;
  std::getline(steps_csv, line);
  int n = 0;
  for (; std::getline(steps_csv, line); ++n) {
    std::vector<double> v;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) v.push_back(std::stod(cell));
    ASSERT_EQ(v.size(), 11u);
    EXPECT_NEAR(v[3] + v[4], v[2], 1e-3 * v[2]);
    EXPECT_NEAR(v[5] + v[6] + v[7] + v[8] + v[9] + v[10], v[3], 1e-3 * v[2]);
  }
  EXPECT_EQ(n, 4 * world.size());
}

// Training on a device the host may not touch (the reference kernels on a StagedDevice:
// every host view a copy, every event late) ends with the plain reference backend's
// parameters bit for bit: the batch, the labels, initialisation, the reducer's buckets and
// the optimizer state all reach the model's memory through the device's copies, which is
// what the cuda backend relies on. (A forgotten upload trains on stale input and differs.)
TEST(StagedDevice, TrainingThroughHostViewsMatchesHostMemory) {
  Comm world(MPI_COMM_WORLD);
  for (const auto& [name, text, shape] :
       {std::tuple{std::string("conv"), kConfig, std::vector<hsize_t>{1, 8, 8}},
        std::tuple{std::string("har"), kHarConfig, std::vector<hsize_t>{6, 3}}}) {
    const Config cfg = load_config(prepare(world, name, text, shape),
                                   {"train.batch=10", "run.backend=\"reference\""});
    const std::vector<float> plain = train(cfg, world);
    H5Split data(cfg.data.train_file, "/");
    const int64_t local =
        BatchPlan(data.size(), cfg.train.batch, world.rank(), world.size()).local_batch();
    StagedDevice* device = nullptr;
    auto model = build_model(cfg.model, local, [&] {
      auto k = std::make_unique<StagedKernels>(2);
      device = &k->staged();
      return k;
    });
    model->init_params(cfg.train.seed);
    Watchdog watchdog(60, world.rank());
    SyncTrainer trainer(cfg, world, *model, Splits{&data}, watchdog);
    trainer.run({});
    EXPECT_GT(device->uploads, 0) << name;
    EXPECT_EQ(model->params_to_host(), plain) << name << " rank " << world.rank();
  }
}

// train and eval ask node_device_rank: on a GPU config the ranks of a node (all ranks of
// this job) take their GPUs in turn; on a CPU config every rank says 0 without asking.
TEST(DeviceChoice, EachRankOfANodeTakesItsOwnGpu) {
  Comm world(MPI_COMM_WORLD);
  Watchdog watchdog(60, world.rank());
  RunConfig gpu;
  gpu.backend = Backend::kCuda;
  const int r = node_device_rank(gpu, world, watchdog);
  EXPECT_EQ(r, world.rank());
  std::set<std::string> taken;
  for (const auto& d : world.allgather(std::to_string(choose_device(r, world.size()))))
    taken.insert(d);
  EXPECT_EQ(static_cast<int>(taken.size()), world.size());  // one GPU each when there are enough
  EXPECT_EQ(choose_device(r, 2), world.rank() % 2);         // in turn when there are fewer
  EXPECT_EQ(node_device_rank(RunConfig{}, world, watchdog), 0);
}

TEST(GradientReducer, BucketsAreLayerAligned) {
  Comm world(MPI_COMM_WORLD);
  const Config cfg = load_config(prepare(world), {});
  auto model = build_model(cfg.model, 2, Backend::kReference);
  Watchdog watchdog(60, world.rank());
  EXPECT_EQ(
      GradientReducer(world, model->device(), model->grads(), model->layer_ranges(), 1, watchdog)
          .num_buckets(),
      3);  // conv, dense, dense
  EXPECT_EQ(GradientReducer(world, model->device(), model->grads(), model->layer_ranges(),
                            int64_t{1} << 30, watchdog)
                .num_buckets(),
            1);
  // the last dense layer (68 floats) is below 100, so it shares a bucket with the one before
  EXPECT_EQ(
      GradientReducer(world, model->device(), model->grads(), model->layer_ranges(), 100, watchdog)
          .num_buckets(),
      2);
}

// On a device the host cannot read, the reducer records an event per bucket, enqueues just
// that bucket's download behind it, starts MPI on the bucket only once the download has
// landed (the staged device delivers it late: starting earlier would sum stale zeros),
// keeps layout order, and puts the sums back on the device (MPI's allreduce: the shared-
// memory sum is test_node_sum.cpp's).
TEST(GradientReducer, StagesBucketsThroughTheHostAfterTheirEvents) {
  Comm world(MPI_COMM_WORLD);
  StagedDevice device(/*lag=*/3);
  Watchdog watchdog(60, world.rank());
  const std::vector<Range> layers = {{0, 4}, {4, 0}, {4, 4}, {8, 4}};  // layer 1: no params
  Buffer grads(12, device);
  std::vector<float> host(12);
  for (int i = 0; i < 12; ++i) host[i] = float(world.rank() + 1 + i);
  device.copy_from_host(grads.data(), host.data(), sizeof(float) * 12);
  GradientReducer reducer(world, device, grads.span(), layers, 1, watchdog, std::nullopt,
                          /*shared_memory=*/false);
  ASSERT_EQ(reducer.num_buckets(), 3);
  for (int step = 0; step < 2; ++step) {
    device.downloads = device.uploads = device.waits = device.records = 0;
    reducer.layer_done(3);  // bucket 0's download is enqueued but has not landed yet
    if (world.size() > 1) {
      EXPECT_EQ(device.records, 2);  // ready, then copied
      EXPECT_EQ(device.downloads, 1);
      EXPECT_EQ(reducer.buckets_started(), 0);  // so MPI has not touched it
    }
    reducer.layer_done(2);
    reducer.layer_done(1);
    reducer.layer_done(0);
    reducer.finish(step);
    if (world.size() == 1) {
      EXPECT_EQ(device.downloads + device.uploads + device.records, 0);  // nothing to reduce
      continue;
    }
    EXPECT_EQ(device.records, 6);
    EXPECT_EQ(device.downloads, 3);  // one per bucket, never the whole buffer
    EXPECT_EQ(device.uploads, 1);
    EXPECT_GE(device.waits, 1);  // finish() waited for the events still running
    std::vector<float> sum(12);
    device.copy_to_host(sum.data(), grads.data(), sizeof(float) * 12);
    const int n = world.size();
    for (int i = 0; i < 12; ++i) {
      // step 0 sums the ranks' values; step 1 sums n copies of that sum
      const double once = n * (n + 1) / 2.0 + double(n) * i;
      EXPECT_DOUBLE_EQ(sum[i], step == 0 ? once : n * once) << i;
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return mpi_test_main(argc, argv); }

// A learning-rate schedule (cosine after a warm-up) is the same on every rank: N ranks
// still follow 1 rank.
TEST(Schedule, NRanksMatchOneRankUnderCosineWithWarmUp) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  const Config cfg = load_config(path, {"train.batch=12", "optimizer.schedule=\"cosine\"",
                                        "optimizer.warmup_steps=3", "optimizer.min_lr=0.001"});
  EXPECT_LT(distance_to_single_rank(cfg), 2e-5) << "rank " << world.rank();
}

// A validation split held out of the training file: every rank holds the same validation
// rows, and no row any rank trains on in any epoch is one of them.
TEST(Validation, HeldOutRowsAreNeverTrainedOnByAnyRank) {
  Comm world(MPI_COMM_WORLD);
  const std::string path = prepare(world);
  const Config cfg = load_config(path, {"train.batch=12", "data.validation_fraction=0.25"});
  H5Split train(cfg.data.train_file, "/"), validation(cfg.data.train_file, "/");
  std::vector<int64_t> v, t;
  validation_rows(train.size(), cfg.data.validation_fraction, cfg.train.seed, &v, &t);
  const int64_t rows = train.size();
  validation.keep_rows(v);
  train.keep_rows(t);
  std::set<int64_t> held_out;
  for (int64_t i = 0; i < validation.size(); ++i) held_out.insert(validation.file_row(i));
  ASSERT_EQ(static_cast<int64_t>(held_out.size() + train.size()), rows);
  // The same rows on every rank.
  std::string mine;
  for (int64_t r : held_out) mine += std::to_string(r) + ",";
  for (const std::string& other : world.allgather(mine)) EXPECT_EQ(other, mine);
  BatchPlan plan(train.size(), cfg.train.batch, world.rank(), world.size());
  int64_t seen = 0;
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    plan.begin_epoch(cfg.train.seed, epoch);
    for (int64_t s = 0; s < plan.steps_per_epoch(); ++s)
      for (int64_t row : plan.local_rows(s)) {
        EXPECT_EQ(held_out.count(train.file_row(row)), 0u) << "epoch " << epoch;
        ++seen;
      }
  }
  EXPECT_GT(seen, 0);
  // Reading through the views gives the file's rows.
  std::vector<float> x_view(train.per_sample()), x_file(train.per_sample());
  int32_t y_view = 0, y_file = 0;
  H5Split whole(cfg.data.train_file, "/");
  const int64_t one = 5, file_row = train.file_row(one);
  train.read_rows(std::span<const int64_t>(&one, 1), x_view.data(), &y_view);
  whole.read_rows(std::span<const int64_t>(&file_row, 1), x_file.data(), &y_file);
  EXPECT_EQ(x_view, x_file);
  EXPECT_EQ(y_view, y_file);
}
