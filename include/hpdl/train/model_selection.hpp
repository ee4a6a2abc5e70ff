// Which parameters a run ends with and when it stops early, decided on the validation
// split: train.keep = "last" | "best" (best by train.keep_metric; a tie keeps the earlier
// epoch) and train.patience (stop after that many epochs without a better value). Both are
// functions of the history, so a resumed run decides as an uninterrupted one; with "best"
// the best epoch's parameters travel in the checkpoint (buffer "keep.best_params").
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "hpdl/config/settings.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/epoch_stats.hpp"
#include "hpdl/train/passes.hpp"

namespace hpdl {

// The model a run ends with, and its one evaluation on the test split.
struct FinalModel {
  int64_t epoch = 0;           // the epoch after which these parameters were taken
  bool stopped_early = false;  // train.patience ended training
  bool tested = false;
  double test_loss = 0, test_accuracy = 0, test_f1 = 0;
};

class ModelSelector {
 public:
  ModelSelector(const TrainConfig& cfg, int64_t num_params);

  // After a validated epoch: keeps a host copy of the model's parameters if it is the best
  // so far. Returns true when train.patience is exhausted (training should stop).
  bool observe(const EpochStats& st, const Model& model);
  // The best epoch of a history (0 if none was validated).
  int64_t best_epoch(const std::vector<EpochStats>& history) const;
  // Checkpoints: saves / restores the best parameters with keep = "best".
  void save(Checkpoint& c) const;
  void restore(const Checkpoint& c);
  // keep = "best": puts the best epoch's parameters into the model. Returns the epoch the
  // model's parameters come from.
  int64_t choose(Model& model, int64_t last_epoch) const;
  // Collective, at the end of training: puts the chosen parameters into the model and
  // evaluates the test split on them once (with no validation split, the last epoch's
  // test evaluation is the final one and nothing is evaluated again).
  FinalModel finish(Model& model, Evaluator& evaluator, const Splits& splits,
                    const std::vector<EpochStats>& history, int64_t step, bool stopped_early) const;

 private:
  bool better(const EpochStats& a, const EpochStats& b) const;  // a strictly better than b
  double metric(const EpochStats& st) const;

  const TrainConfig& cfg_;
  std::vector<float> best_params_;  // host memory
  EpochStats best_;                 // best_.epoch == 0: none yet
};

}  // namespace hpdl
