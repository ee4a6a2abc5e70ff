// What the train command needs of either trainer (SyncTrainer, AsyncTrainer): run the
// epochs, say whether a stop signal ended them at a checkpoint, and hand over the kept model
// with its test result and the steps it counted (sync: global steps; parameter server:
// updates applied by the servers).
#pragma once
#include <cstdint>
#include <vector>

#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/epoch_stats.hpp"
#include "hpdl/train/metrics.hpp"
#include "hpdl/train/model_selection.hpp"

namespace hpdl {

struct TrainHooks;

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Collective. Trains, leaving the kept model in the model on every rank; with `from`,
  // continues that checkpoint; ckpt (may be null) decides when to write checkpoints.
  virtual std::vector<EpochStats> run(const TrainHooks& hooks, Checkpointer* ckpt = nullptr,
                                      const Checkpoint* from = nullptr) = 0;
  // The signal that ended training at a checkpoint (run() then returned early), or 0.
  virtual int stopped_by() const = 0;
  virtual const FinalModel& final_model() const = 0;
  virtual const ConfusionMatrix& last_confusion() const = 0;
  virtual int64_t steps() const = 0;
};

}  // namespace hpdl
