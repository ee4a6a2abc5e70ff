// Model selection: keep the best or the last model, early stopping's patience.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/train/epoch_stats.hpp"
#include "hpdl/train/model_selection.hpp"

using namespace hpdl;

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
  t.keep = Keep::kBest, t.patience = 2;
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
  t.keep = Keep::kBest, t.keep_metric = KeepMetric::kValAccuracy;
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
