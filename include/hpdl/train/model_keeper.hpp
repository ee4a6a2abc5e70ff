// The end of every epoch and of the run, the part both trainers share: evaluate the epoch's
// parameters (the validation split, else the test split), let train.keep / train.patience
// decide (model_selection.hpp), and at the end put the kept parameters into the model and
// test them once. Sync training judges each epoch as it ends; the parameter server judges
// server 0's snapshots after training.
#pragma once
#include <cstdint>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/epoch_stats.hpp"
#include "hpdl/train/metrics.hpp"
#include "hpdl/train/model_selection.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/trainer_config.hpp"

namespace hpdl {

class ModelKeeper {
 public:
  ModelKeeper(const TrainerConfig& cfg, const Comm& comm, Model& model, const Splits& splits,
              Watchdog& watchdog);

  // Collective: evaluates the model's current parameters as epoch st.epoch at `step` and
  // fills st's evaluation columns.
  void evaluate(int64_t step, EpochStats& st);
  // After the epoch's row is complete: keeps these parameters if they are the best so far.
  // True when train.patience is exhausted (training should stop).
  bool observe(const EpochStats& st) { return selector_.observe(st, model_); }
  // Collective, once training ends: the kept model into the model, tested once.
  void finish(const std::vector<EpochStats>& history, int64_t step, bool stopped_early);

  // Checkpoints: the best parameters so far (train.keep = "best").
  void save(Checkpoint& c) const { selector_.save(c); }
  void restore(const Checkpoint& c) { selector_.restore(c); }

  const FinalModel& final_model() const { return final_; }
  const ConfusionMatrix& confusion() const { return evaluator_.confusion(); }

 private:
  Model& model_;
  const Splits splits_;  // pointers to the caller's splits
  Evaluator evaluator_;
  ModelSelector selector_;
  FinalModel final_;
};

}  // namespace hpdl
