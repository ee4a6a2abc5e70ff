// Metrics (accuracy, weighted F1) and the optimizer math on the flat buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hpdl/core/error.hpp"
#include "hpdl/core/fast_math.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/optim/lr_schedule.hpp"
#include "hpdl/optim/optimizer.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/metrics.hpp"
#include "hpdl/train/model_selection.hpp"
#include "hpdl/train/ps_checkpoint.hpp"
#include "staged_device.hpp"

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
  Sgd sgd(*ops, host_device(), 2, 0.1f, 0.9f);
  sgd.update(w, g);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.05f);
  sgd.update(w, g);  // v = 0.9*0.5 + 0.5 = 0.95
  EXPECT_FLOAT_EQ(w[0], 0.95f - 0.095f);
}

TEST(Optim, AdamFirstStepIsLrTimesSign) {
  std::vector<float> w = {1.0f, 1.0f}, g = {0.3f, -2.0f};
  auto ops = make_cpu_vector_ops();
  Adam adam(*ops, host_device(), 2, 0.01f, 0.9f, 0.999f, 1e-8f);
  adam.update(w, g);
  EXPECT_NEAR(w[0], 0.99f, 1e-6);
  EXPECT_NEAR(w[1], 1.01f, 1e-6);
}

// The state lives where the backend's operations run (a GPU's memory on the cuda
// backend), and checkpoints reach it through that device's host copies.
TEST(Optim, StateLivesOnTheBackendsDevice) {
  auto ops = make_reference_vector_ops();
  StagedDevice device(0);
  OptimizerConfig cfg;
  cfg.name = "adam";
  auto adam = make_optimizer(*ops, device, cfg, 10);
  EXPECT_EQ(device.allocated, 2 * 10 * sizeof(float));  // m and v
  const OptimizerState s = adam->state();
  EXPECT_EQ(s.device, &device);
  ASSERT_EQ(s.buffers.size(), 2u);
  cfg.name = "sgd", cfg.momentum = 0.9;
  EXPECT_EQ(make_optimizer(*ops, device, cfg, 10)->state().device, &device);
  EXPECT_EQ(device.allocated, 3 * 10 * sizeof(float));  // + the velocity
}

TEST(Optim, L2OnlyOnDecayedRangesAndClipByGlobalNorm) {
  const std::vector<Range> decayed = {{0, 2}};  // l.w decays; l.b at offset 2 does not
  std::vector<float> w = {1, 2, 3}, g = {0, 0, 0};
  auto ops = make_cpu_vector_ops();
  add_l2_sum_squares(*ops, decayed, w, g, 0.5f);
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
  // The clamp is a bitwise select: infinities clamp like large values, a NaN stays NaN.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_FLOAT_EQ(fast_sigmoid(inf), 1.0f);
  EXPECT_LT(fast_sigmoid(-inf), 1e-30f);
  EXPECT_FLOAT_EQ(fast_tanh(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(fast_sigmoid(std::numeric_limits<float>::quiet_NaN())));
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

// The CPU backends' recording keeps the work: nothing runs when it is recorded, all of it
// on each run (a GPU's, a CUDA graph, is checked in test_cuda_backend.cpp).
TEST(Device, RecordingRunsItsWorkOnEachRunOnly) {
  int calls = 0;
  auto recording = host_device().record([&calls] { ++calls; });
  EXPECT_EQ(calls, 0);
  recording->run();
  recording->run();
  EXPECT_EQ(calls, 2);
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

// ---- learning-rate schedules, per-class scores, model selection, validation rows ----

namespace {
OptimizerConfig schedule(const std::string& name, double lr = 1.0) {
  OptimizerConfig o;
  o.schedule = name;
  o.lr = lr;
  return o;
}
TrainConfig epochs(int64_t n) {
  TrainConfig t;
  t.epochs = n;
  return t;
}
}  // namespace

TEST(LrSchedule, ConstantIsTheConfiguredRate) {
  const LrSchedule s(schedule("constant", 0.01), epochs(3), 10);
  for (int64_t t : {0, 9, 10, 29}) EXPECT_EQ(s.at(t), 0.01);
}

TEST(LrSchedule, StepDecaysEveryNEpochs) {
  OptimizerConfig o = schedule("step");
  o.decay_epochs = 2, o.decay_factor = 0.5;
  const LrSchedule s(o, epochs(10), 10);  // 10 steps an epoch
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(19), 1.0);  // last step of epoch 2
  EXPECT_DOUBLE_EQ(s.at(20), 0.5);  // first of epoch 3
  EXPECT_DOUBLE_EQ(s.at(39), 0.5);
  EXPECT_DOUBLE_EQ(s.at(40), 0.25);
}

TEST(LrSchedule, ExponentialDecaysEveryEpoch) {
  OptimizerConfig o = schedule("exponential");
  o.decay_factor = 0.9;
  const LrSchedule s(o, epochs(10), 10);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 0.9);
  EXPECT_DOUBLE_EQ(s.at(25), 0.9 * 0.9);
}

TEST(LrSchedule, CosineFromLrToTheFloorOverTraining) {
  OptimizerConfig o = schedule("cosine");
  o.min_lr = 0.1;
  const LrSchedule s(o, epochs(10), 10);  // 100 steps
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_NEAR(s.at(50), 0.55, 1e-12);
  EXPECT_NEAR(s.at(99), 0.1 + 0.45 * (1 + std::cos(M_PI * 0.99)), 1e-12);
  EXPECT_GT(s.at(99), 0.1);
  // train.max_steps ends training (and the cosine) earlier.
  TrainConfig t = epochs(10);
  t.max_steps = 20;
  EXPECT_NEAR(LrSchedule(o, t, 10).at(10), 0.55, 1e-12);
}

TEST(LrSchedule, LinearWarmUpInFrontOfAnySchedule) {
  OptimizerConfig o = schedule("constant", 0.2);
  o.warmup_steps = 4;
  const LrSchedule c(o, epochs(2), 10);
  EXPECT_DOUBLE_EQ(c.at(0), 0.05);
  EXPECT_DOUBLE_EQ(c.at(2), 0.15);
  EXPECT_DOUBLE_EQ(c.at(3), 0.2);
  EXPECT_DOUBLE_EQ(c.at(4), 0.2);
  o.schedule = "cosine";  // the cosine starts where warm-up ends
  const LrSchedule w(o, epochs(2), 10);
  EXPECT_DOUBLE_EQ(w.at(3), 0.2);
  EXPECT_DOUBLE_EQ(w.at(4), 0.2);
  EXPECT_LT(w.at(5), 0.2);
}

TEST(Metrics, PerClassPrecisionRecallF1) {
  // The example above: class 0 p=1 r=2/3; class 1 p=r=1/2; class 2 p=1/2 r=1.
  ConfusionMatrix m(3);
  const int t[6] = {0, 0, 0, 1, 1, 2}, p[6] = {0, 0, 1, 1, 2, 2};
  for (int i = 0; i < 6; ++i) m.add(t[i], p[i]);
  const auto s = m.per_class();
  EXPECT_DOUBLE_EQ(s[0].precision, 1.0);
  EXPECT_DOUBLE_EQ(s[0].recall, 2.0 / 3);
  EXPECT_DOUBLE_EQ(s[0].f1, 0.8);
  EXPECT_EQ(s[0].support, 3);
  EXPECT_DOUBLE_EQ(s[1].f1, 0.5);
  EXPECT_DOUBLE_EQ(s[2].precision, 0.5);
  EXPECT_DOUBLE_EQ(s[2].recall, 1.0);
  EXPECT_EQ(m.scores_csv({"a", "b", "c"}).substr(0, 44),
            "class,precision,recall,f1,support\na,1.000000");
  EXPECT_NE(m.scores_table({}).find("weighted avg"), std::string::npos);
}

namespace {
EpochStats validated(int64_t epoch, double loss, double acc) {
  EpochStats st;
  st.epoch = epoch, st.validated = true, st.val_loss = loss, st.val_accuracy = acc;
  return st;
}
}  // namespace

// A model with two parameters (dense 1 -> 1), both set to `value`.
std::unique_ptr<Model> two_param_model() {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Dense>(1, Init::kZeros));
  layers.back()->set_name("d");
  return std::make_unique<Model>(std::move(layers), Shape{{1, 1}}, make_reference_kernels());
}
void set_params(Model& m, float value) {
  const std::vector<float> v(static_cast<size_t>(m.num_params()), value);
  m.params_from_host(v);
}

TEST(ModelSelection, KeepBestPicksTheBestEpochAndPatienceStops) {
  TrainConfig t;
  t.keep = "best", t.patience = 2;
  auto m = two_param_model();
  ModelSelector sel(t, m->num_params());
  const double losses[] = {1.0, 0.5, 0.7, 0.5, 0.4};
  bool stop = false;
  int64_t e = 0;
  for (; e < 5 && !stop; ++e) {
    set_params(*m, float(e + 1));
    stop = sel.observe(validated(e + 1, losses[e], 0), *m);
  }
  EXPECT_TRUE(stop);
  EXPECT_EQ(e, 4);  // epochs 3 and 4 did not beat epoch 2 (a tie keeps the earlier epoch)
  EXPECT_EQ(sel.choose(*m, 4), 2);
  EXPECT_EQ(m->params_to_host(), std::vector<float>(2, 2.0f));  // epoch 2's parameters
}

TEST(ModelSelection, AccuracyIsMaximisedAndLastKeepsTheLastModel) {
  TrainConfig t;
  t.keep = "best", t.keep_metric = "val_accuracy";
  auto m = two_param_model();
  ModelSelector best(t, m->num_params());
  const std::vector<EpochStats> h = {validated(1, 0.3, 0.8), validated(2, 0.2, 0.9),
                                     validated(3, 0.1, 0.85)};
  for (const auto& st : h) set_params(*m, float(st.epoch)), best.observe(st, *m);
  EXPECT_EQ(best.best_epoch(h), 2);
  EXPECT_EQ(best.choose(*m, 3), 2);
  EXPECT_EQ(m->params_to_host(), std::vector<float>(2, 2.0f));
  TrainConfig last;
  ModelSelector keep_last(last, m->num_params());
  for (const auto& st : h) set_params(*m, float(st.epoch)), keep_last.observe(st, *m);
  EXPECT_EQ(keep_last.choose(*m, 3), 3);
  EXPECT_EQ(m->params_to_host(), std::vector<float>(2, 3.0f));
}

TEST(ValidationRows, DisjointCompleteAndChosenBySeed) {
  std::vector<int64_t> v, t, v2, t2, v3, t3;
  validation_rows(100, 0.2, 7, &v, &t);
  EXPECT_EQ(v.size(), 20u);
  EXPECT_EQ(t.size(), 80u);
  std::vector<int64_t> all = v;
  all.insert(all.end(), t.begin(), t.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(all[i], i);  // disjoint and complete
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  validation_rows(100, 0.2, 7, &v2, &t2);
  EXPECT_EQ(v, v2);
  validation_rows(100, 0.2, 8, &v3, &t3);
  EXPECT_NE(v, v3);
  EXPECT_THROW(validation_rows(100, 0.001, 7, &v, &t), Error);  // no validation row
  EXPECT_THROW(validation_rows(1, 0.9, 7, &v, &t), Error);      // no training row
}

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

// EpochStats has one field table: metrics.csv's header and row, and the checkpoint's
// history, written with its column names and read back by name (a format-2 checkpoint's
// positional history is still read).
TEST(EpochStatsTable, CsvAndCheckpointHistoryFollowTheFieldTable) {
  EpochStats s;
  s.epoch = 3, s.steps = 40, s.train_loss = 0.5, s.lr = 0.01, s.validated = true;
  s.val_loss = 0.25, s.val_accuracy = 0.75, s.val_f1 = 0.5, s.samples_per_s = 100;
  EXPECT_EQ(epoch_csv_header(),
            "epoch,steps,train_loss,test_loss,test_accuracy,test_f1,samples_per_s,epoch_s,"
            "train_s,elapsed_s,lr,val_loss,val_accuracy,val_f1");
  EXPECT_EQ(epoch_csv_row(s), "3,40,0.5,,,,100,0,0,0,0.01,0.25,0.75,0.5");

  const std::string path = ::testing::TempDir() + "/hpdl_history_checkpoint.h5";
  Checkpoint c;
  c.model = "w:1", c.mode = "sync", c.optimizer = "sgd", c.params = {1.0f};
  c.history = {s, s};
  c.history[1].epoch = 4, c.history[1].tested = true, c.history[1].test_f1 = 0.125;
  write_checkpoint(path, c);
  const Checkpoint back = read_checkpoint(path);
  ASSERT_EQ(back.history.size(), 2u);
  EXPECT_EQ(epoch_values(back.history), epoch_values(c.history));
  {  // the same history as a format-2 file: 16 positional columns
    H5Id f = h5_create_file(path);
    h5_write_attr(f.get(), "format", std::string("hpdl-checkpoint-2"));
    h5_write_attr(f.get(), "header",
                  std::string(R"({"model":"w:1","mode":"sync","optimizer":"sgd",)"
                              R"("ranks":1,"servers":0,"batch":1,"seed":1,"epoch":5,)"
                              R"("epoch_step":0,"global_step":80,"epoch_loss_sum":0,)"
                              R"("epoch_s":0,"elapsed_s":0})"));
    const std::vector<double> row = {3, 40, 0.5,  0, 0, 0,    0,    100,
                                     0, 0,  0.01, 0, 1, 0.25, 0.75, 0.5};
    h5_write(f.get(), "history", row.data(), {1, 16});
    const float p = 1.0f;
    h5_write(f.get(), "params", &p, {1});
    h5_create_group(f.get(), "buffers");
    h5_create_group(f.get(), "counters");
  }
  const Checkpoint v2 = read_checkpoint(path);
  ASSERT_EQ(v2.history.size(), 1u);
  EXPECT_EQ(epoch_values(v2.history), epoch_values({s}));
  std::remove(path.c_str());
}
