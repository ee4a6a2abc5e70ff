// Keeping the best model and early stopping (see the header).
#include "hpdl/train/model_selection.hpp"

#include <algorithm>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
constexpr const char* kBestParams = "keep.best_params";
}

ModelSelector::ModelSelector(const TrainConfig& cfg, int64_t num_params)
    : cfg_(cfg), best_params_(cfg.keep == Keep::kBest ? static_cast<size_t>(num_params) : 0) {}

double ModelSelector::metric(const EpochStats& st) const {
  if (cfg_.keep_metric == KeepMetric::kValAccuracy) return st.val_accuracy;
  if (cfg_.keep_metric == KeepMetric::kValF1) return st.val_f1;
  return -st.val_loss;  // lower is better
}

bool ModelSelector::better(const EpochStats& a, const EpochStats& b) const {
  return a.validated && (b.epoch == 0 || metric(a) > metric(b));
}

bool ModelSelector::observe(const EpochStats& st, const Model& model) {
  if (better(st, best_)) {
    best_ = st;
    if (best_params_.size()) model.params_to_host(best_params_);
  }
  return cfg_.patience > 0 && best_.epoch > 0 && st.epoch - best_.epoch >= cfg_.patience;
}

int64_t ModelSelector::best_epoch(const std::vector<EpochStats>& history) const {
  EpochStats best;
  for (const EpochStats& st : history)
    if (better(st, best)) best = st;
  return best.epoch;
}

void ModelSelector::save(Checkpoint& c) const {
  if (best_params_.size() && best_.epoch > 0) c.buffers.push_back({kBestParams, best_params_});
}

void ModelSelector::restore(const Checkpoint& c) {
  best_ = EpochStats{};
  for (const EpochStats& st : c.history)
    if (better(st, best_)) best_ = st;
  if (!best_params_.size() || best_.epoch == 0) return;
  const std::vector<float>* saved = c.buffer(kBestParams);
  if (!saved || saved->size() != best_params_.size())
    throw AgreedError("checkpoint has no '" + std::string(kBestParams) +
                      "' of the model's size (was it written without train.keep = \"best\"?)");
  best_params_ = *saved;
}

int64_t ModelSelector::choose(Model& model, int64_t last_epoch) const {
  if (!best_params_.size() || best_.epoch == 0) return last_epoch;
  model.params_from_host(best_params_);
  return best_.epoch;
}

FinalModel ModelSelector::finish(Model& model, Evaluator& evaluator, const Splits& splits,
                                 const std::vector<EpochStats>& history, int64_t step,
                                 bool stopped_early) const {
  FinalModel f;
  f.stopped_early = stopped_early;
  if (history.empty()) return f;
  f.epoch = choose(model, history.back().epoch);
  if (!splits.validation) {
    const EpochStats& last = history.back();
    f.tested = last.tested;
    f.test_loss = last.test_loss, f.test_accuracy = last.test_accuracy, f.test_f1 = last.test_f1;
    return f;
  }
  if (splits.test) {
    f.test_loss = evaluator.run(*splits.test, step);
    f.test_accuracy = evaluator.confusion().accuracy();
    f.test_f1 = evaluator.confusion().weighted_f1();
    f.tested = true;
  }
  return f;
}

}  // namespace hpdl
