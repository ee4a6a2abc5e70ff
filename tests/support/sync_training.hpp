// The multi-rank tests' synchronous training run: the config's model, initialised from its
// seed, trained by SyncTrainer on comm with this rank's share of the batch.
#pragma once
#include <vector>

#include "hpdl/builder/builder.hpp"
#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/train/trainer.hpp"

namespace hpdl {

struct SyncTrained {
  std::vector<float> params;
  int64_t steps = 0, averages = 0;  // global steps taken; local SGD parameter averages
};

inline SyncTrained train_sync(const Config& cfg, const Comm& comm) {
  H5Split data(cfg.data.train_file, "/");
  const int64_t local =
      BatchPlan(data.size(), cfg.train.batch, comm.rank(), comm.size()).local_batch();
  auto model = build_model(cfg.model, local, cfg.run.backend);
  model->init_params(cfg.train.seed);
  Watchdog watchdog(60, comm.rank());
  SyncTrainer trainer(cfg, comm, *model, Splits{&data}, watchdog);
  trainer.run({});
  return {{model->params().begin(), model->params().end()},
          trainer.global_step(),
          trainer.averager().averages()};
}

}  // namespace hpdl
