// Multi-rank test of the parameter-server modes, run under mpirun -np 2, 3 and 4.
// With one worker (np - 1 servers) the schedule is deterministic:
//  - Downpour with n_fetch = n_push = 1 ends with exactly the parameters of plain SGD on
//    one process (same data order), bit for bit, on both backends, for a conv model and
//    for the residual-LSTM HAR model, however many shards the parameters are split into;
//  - DC-ASGD with lambda = 0 equals Downpour under the same schedule (n_fetch 3, n_push 2),
//    and lambda > 0 (constant or adaptive) does not;
//  - DC-ASGD (constant and adaptive lambda) equals a sequential DC-ASGD written out in one
//    process, bit for bit, however many servers apply it;
//  - asynchronous DiLoCo (the server's outer Nesterov step) equals one rank's DiLoCo;
//  - a worker's own pushes never count as staleness.
// With several workers (np 4: 1 server + 3 workers, 2 + 2) on uneven data slices, every
// worker finishes, every push reaches the servers, and all ranks end with one model.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "hpdl/builder/builder.hpp"
#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/optim/lr_schedule.hpp"
#include "hpdl/optim/optimizer.hpp"
#include "hpdl/train/async_trainer.hpp"
#include "hpdl/train/trainer.hpp"
#include "mpi_test_util.hpp"
#include "tiny_models.hpp"

using namespace hpdl;

namespace {

const std::string kConvConfig =
    std::string("[data]\ntrain_file = \"%DATA%\"\n") + kTinyConvModel + R"(
[optimizer]
name = "sgd"
lr = 0.1
l2 = 0.001
clip_norm = 0.5
[train]
seed = 3
epochs = 2
batch = 10
)";

const std::string kHarConfig = std::string("[data]\ntrain_file = \"%DATA%\"\n") + kTinyHarModel +
                               R"(
[optimizer]
name = "sgd"
lr = 0.1
clip_norm = 15.0
[train]
seed = 3
epochs = 2
batch = 10
)";

struct AsyncResult {
  std::vector<float> params;
  std::vector<EpochStats> history;
  WorkerReport report;  // this rank's worker report (empty on servers)
  int64_t pushes = 0;
};

AsyncResult train_async(const Config& cfg, Comm& world) {
  H5Split data(cfg.data.train_file, "/");
  auto model = build_model(cfg.model, cfg.train.batch, cfg.run.backend);
  model->init_params(cfg.train.seed);
  Watchdog watchdog(60, world.rank());
  AsyncTrainer trainer(cfg, world, *model, Splits{&data}, watchdog);
  AsyncResult r;
  r.history = trainer.run({});
  r.params.assign(model->params().begin(), model->params().end());
  r.report = trainer.worker_report();
  r.pushes = trainer.total_pushes();
  return r;
}

std::vector<float> train_single(const Config& cfg) {
  Comm self(MPI_COMM_SELF);
  H5Split data(cfg.data.train_file, "/");
  auto model = build_model(cfg.model, cfg.train.batch, cfg.run.backend);
  model->init_params(cfg.train.seed);
  Watchdog watchdog(60, 0);
  SyncTrainer trainer(cfg, self, *model, Splits{&data}, watchdog);
  trainer.run({});
  return {model->params().begin(), model->params().end()};
}

// DC-ASGD with one worker, written out in one process: the worker pulls every n_fetch
// steps (w_bak = what it pulled), takes local SGD steps, and every n_push steps (and at each
// epoch's end) the server's copy takes the delay-compensated step with the summed gradient.
std::vector<float> sequential_dcasgd(const Config& cfg) {
  H5Split data(cfg.data.train_file, "/");
  auto model = build_model(cfg.model, cfg.train.batch, cfg.run.backend);
  model->init_params(cfg.train.seed);
  const int64_t n = model->num_params();
  const auto& d = cfg.distributed;
  VectorOps& ops = model->ops();
  SoftmaxCrossEntropy loss(model->kernels(), cfg.train.batch, cfg.model.classes);
  std::vector<int32_t> labels(cfg.train.batch);
  ShardPlan plan(data.size(), cfg.train.batch, 0, 1);
  LrSchedule schedule(cfg.optimizer, cfg.train, plan.steps_per_epoch());
  const std::vector<Range> decayed = model->decayed_ranges();
  std::vector<float> server(model->params().begin(), model->params().end());
  std::vector<float> bak(n), pending(n, 0.0f), ms(n, 0.0f);
  DcAsgdStep rule{0, float(d.dc_lambda), float(d.dc_lambda0), float(d.dc_eps), d.dc_adaptive};
  int64_t step = 0, pending_steps = 0;
  float lr = 0;
  auto push = [&] {
    rule.lr = lr;
    if (rule.adaptive) ops.mean_square(n, float(d.dc_ms_decay), pending.data(), ms.data());
    ops.dcasgd(n, rule, pending.data(), bak.data(), ms.data(), server.data());
    std::fill(pending.begin(), pending.end(), 0.0f);
    pending_steps = 0;
  };
  for (int64_t epoch = 1; epoch <= cfg.train.epochs; ++epoch) {
    plan.begin_epoch(cfg.train.seed, epoch);
    for (int64_t s = 0; s < plan.steps_per_epoch(); ++s, ++step) {
      if (step % d.n_fetch == 0) {
        model->params_from_host(server);
        bak = server;
      }
      lr = static_cast<float>(schedule.at(step));
      const auto rows = plan.rows(s);
      compute_gradients(*model, loss, data, rows, labels.data(),
                        Pass{true, cfg.train.seed, step, rows.data()},
                        1.0f / static_cast<float>(cfg.train.batch));
      const double grad_sq = add_l2_sum_squares(ops, decayed, model->params(), model->grads(),
                                                float(cfg.optimizer.l2));
      clip_to_norm(ops, model->grads(), std::sqrt(grad_sq), cfg.optimizer.clip_norm);
      ops.axpy(n, 1.0f, model->grads().data(), pending.data());
      ops.sgd(n, lr, 0.0f, model->grads().data(), nullptr, model->params().data());
      if (++pending_steps == d.n_push) push();
    }
    if (pending_steps > 0) push();
  }
  return server;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}

// Every rank but the last serves a shard; the last is the only worker.
std::vector<std::string> one_worker(const Comm& world, const std::string& mode) {
  return {"distributed.mode=\"" + mode + "\"",
          "distributed.servers=" + std::to_string(world.size() - 1)};
}

class OneWorker : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(OneWorker, DownpourEqualsSingleProcessSgd) {
  const auto [model, backend] = GetParam();
  Comm world(MPI_COMM_WORLD);
  if (world.size() < 2) GTEST_SKIP() << "needs a server and a worker";
  const std::string path = model == "conv" ? prepare(world, "conv", kConvConfig, {1, 8, 8})
                                           : prepare(world, "har", kHarConfig, {6, 3});
  auto sets = one_worker(world, "downpour");
  sets.push_back("run.backend=\"" + backend + "\"");
  const Config cfg = load_config(path, sets);
  const AsyncResult async = train_async(cfg, world);
  const std::vector<float> single = train_single(cfg);
  ASSERT_EQ(async.params.size(), single.size());
  EXPECT_EQ(async.params, single) << "max |diff| " << max_diff(async.params, single) << " on rank "
                                  << world.rank();
  EXPECT_EQ(async.pushes, 8);  // 2 epochs x 40 rows / batch 10, one push per step
  ASSERT_EQ(async.history.size(), 2u);
  EXPECT_EQ(async.history[1].epoch, 2);
  // Training moved the parameters.
  auto fresh = build_model(cfg.model, 1, cfg.run.backend);
  fresh->init_params(cfg.train.seed);
  EXPECT_GT(max_diff(single, {fresh->params().begin(), fresh->params().end()}), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Models, OneWorker,
                         ::testing::Combine(::testing::Values("conv", "har"),
                                            ::testing::Values("onednn", "reference")));

// The workers' reports reach rank 0 as bytes, whole: totals and histograms of any length,
// in rank order, servers' empty places left out.
TEST(WorkerReports, GatherToRankZeroInRankOrder) {
  Comm world(MPI_COMM_WORLD);
  WorkerReport mine;
  if (world.rank() % 2 == 1) {  // the odd ranks play workers
    mine.totals.rank = world.rank();
    mine.totals.pushes = 10 + world.rank();
    mine.totals.staleness_mean = 0.5 * world.rank();
    mine.staleness_histogram.assign(static_cast<size_t>(world.rank()), world.rank());
  }
  const std::vector<WorkerReport> all = gather_worker_reports(world, mine);
  if (world.rank() != 0) {
    EXPECT_TRUE(all.empty());
    return;
  }
  ASSERT_EQ(static_cast<int>(all.size()), world.size() / 2);
  for (size_t k = 0; k < all.size(); ++k) {
    const int r = static_cast<int>(2 * k + 1);
    EXPECT_EQ(all[k].totals.rank, r);
    EXPECT_EQ(all[k].totals.pushes, 10 + r);
    EXPECT_DOUBLE_EQ(all[k].totals.staleness_mean, 0.5 * r);
    EXPECT_EQ(all[k].staleness_histogram, std::vector<int64_t>(static_cast<size_t>(r), r));
  }
}

TEST(OneWorkerSchedule, DcAsgdWithZeroLambdaEqualsDownpour) {
  Comm world(MPI_COMM_WORLD);
  if (world.size() < 2) GTEST_SKIP() << "needs a server and a worker";
  const std::string path = prepare(world, "conv", kConvConfig, {1, 8, 8});
  auto run = [&](const std::string& mode, std::vector<std::string> extra) {
    auto sets = one_worker(world, mode);
    sets.push_back("distributed.n_fetch=3");
    sets.push_back("distributed.n_push=2");
    sets.insert(sets.end(), extra.begin(), extra.end());
    return train_async(load_config(path, sets), world);
  };
  const AsyncResult downpour = run("downpour", {});
  const AsyncResult dc0 = run("dcasgd", {"distributed.dc_lambda=0.0"});
  const AsyncResult dc = run("dcasgd", {"distributed.dc_lambda=0.5"});
  const AsyncResult adaptive = run("dcasgd", {"distributed.dc_adaptive=true"});
  EXPECT_EQ(dc0.params, downpour.params) << "max |diff| " << max_diff(dc0.params, downpour.params);
  // The compensation acts on the second push after each pull (w_now - w_bak != 0 then).
  EXPECT_GT(max_diff(dc.params, downpour.params), 1e-7);
  EXPECT_GT(max_diff(adaptive.params, downpour.params), 1e-7);
  for (float v : adaptive.params) ASSERT_TRUE(std::isfinite(v));
  if (downpour.report.is_worker()) {
    // 2 epochs x 4 steps, a pull every 3 steps (steps 0, 3, 6 and again at 8? no: 0,3,6),
    // a push every 2 steps and at each epoch's end.
    EXPECT_EQ(downpour.report.totals.pulls, 3);
    EXPECT_EQ(downpour.report.totals.pushes, 4);
    // One worker: its own pushes between a pull and a push are not staleness.
    const std::vector<int64_t>& hist = downpour.report.staleness_histogram;
    ASSERT_EQ(hist.size(), 1u);
    EXPECT_EQ(hist[0], 4);
  }
}

// Asynchronous DiLoCo with one worker: pulling and pushing every 2 steps, the server's outer
// Nesterov step on the pushed change is the synchronous DiLoCo of one rank averaging every 2
// steps (the same changes; equal up to rounding: lr * sum(g) against anchor - params), and
// outer_lr 1 with momentum 0 is Downpour bit for bit.
TEST(OneWorkerSchedule, AsynchronousDilocoEqualsOneRankDiloco) {
  Comm world(MPI_COMM_WORLD);
  if (world.size() < 2) GTEST_SKIP() << "needs a server and a worker";
  const std::string path = prepare(world, "conv", kConvConfig, {1, 8, 8});
  auto sets = one_worker(world, "downpour");
  for (const char* s : {"distributed.n_fetch=2", "distributed.n_push=2",
                        "distributed.outer=\"nesterov\"", "distributed.outer_lr=0.5"})
    sets.push_back(s);
  const AsyncResult async = train_async(load_config(path, sets), world);
  const std::vector<float> local =
      train_single(load_config(path, {"distributed.sync_every=2", "distributed.outer=\"nesterov\"",
                                      "distributed.outer_lr=0.5"}));
  EXPECT_LT(max_diff(async.params, local), 1e-5) << "rank " << world.rank();
  auto fresh = build_model(load_config(path, {}).model, 1, Backend::kOneDnn);
  fresh->init_params(3);
  EXPECT_GT(max_diff(local, {fresh->params().begin(), fresh->params().end()}), 1e-3);

  sets = one_worker(world, "downpour");
  sets.insert(sets.end(), {"distributed.n_fetch=2", "distributed.n_push=2"});
  const AsyncResult downpour = train_async(load_config(path, sets), world);
  sets.insert(sets.end(), {"distributed.outer=\"nesterov\"", "distributed.outer_lr=1.0",
                           "distributed.outer_momentum=0.0"});
  EXPECT_EQ(train_async(load_config(path, sets), world).params, downpour.params);
}

TEST(OneWorkerSchedule, DcAsgdEqualsSequentialDcAsgd) {
  Comm world(MPI_COMM_WORLD);
  if (world.size() < 2) GTEST_SKIP() << "needs a server and a worker";
  const std::string path = prepare(world, "conv", kConvConfig, {1, 8, 8});
  for (const std::string adaptive : {"false", "true"}) {
    auto sets = one_worker(world, "dcasgd");
    sets.insert(sets.end(), {"distributed.n_fetch=3", "distributed.n_push=2",
                             "distributed.dc_lambda=0.5", "distributed.dc_adaptive=" + adaptive});
    const Config cfg = load_config(path, sets);
    const AsyncResult r = train_async(cfg, world);
    const std::vector<float> expect = sequential_dcasgd(cfg);
    EXPECT_EQ(r.params, expect) << "adaptive " << adaptive << ", " << world.size() - 1
                                << " server(s): max |diff| " << max_diff(r.params, expect);
  }
}

TEST(SeveralWorkers, UnevenSlicesAllFinish) {
  Comm world(MPI_COMM_WORLD);
  if (world.size() < 4) GTEST_SKIP() << "needs 4 ranks";
  const std::string path = prepare(world, "conv", kConvConfig, {1, 8, 8});
  for (const std::string servers : {"1", "2"}) {
    for (const std::string mode : {"downpour", "dcasgd"}) {
      // 40 rows over 3 workers: slices of 14, 13, 13 rows; batch 7 gives 2, 1, 1 steps per
      // epoch. Over 2 workers: 20, 20 rows, 2 steps each.
      const Config cfg = load_config(path, {"distributed.mode=\"" + mode + "\"",
                                            "distributed.servers=" + servers, "train.batch=7"});
      const AsyncResult r = train_async(cfg, world);
      const int64_t expect = servers == "1" ? 2 * (2 + 1 + 1) : 2 * (2 + 2);
      EXPECT_EQ(r.pushes, expect) << mode << " servers " << servers;
      std::vector<float> r0 = r.params;
      MPI_Bcast(r0.data(), static_cast<int>(r0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
      EXPECT_EQ(r0, r.params) << "rank " << world.rank() << " holds other parameters";
      if (r.report.is_worker()) EXPECT_EQ(r.report.totals.pushes, r.report.totals.steps);
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return mpi_test_main(argc, argv); }
