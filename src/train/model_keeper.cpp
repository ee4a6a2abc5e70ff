// Judging epochs and keeping the run's model (see the header).
#include "hpdl/train/model_keeper.hpp"

namespace hpdl {

ModelKeeper::ModelKeeper(const TrainerConfig& cfg, const Comm& comm, Model& model,
                         const Splits& splits, Watchdog& watchdog)
    : model_(model),
      splits_(splits),
      evaluator_(comm, model, cfg.classes, watchdog),
      selector_(cfg.train, model.num_params()) {}

void ModelKeeper::evaluate(int64_t step, EpochStats& st) {
  evaluate_epoch(evaluator_, splits_, step, st);
}

void ModelKeeper::finish(const std::vector<EpochStats>& history, int64_t step, bool stopped_early) {
  final_ = selector_.finish(model_, evaluator_, splits_, history, step, stopped_early);
}

}  // namespace hpdl
