// The config sections a trainer reads: training, optimizer and distribution settings and
// the model's class count, and nothing else (no run directory, data paths, profiling or
// checkpoint policy, no TOML tree). A trainer keeps its own copy.
#pragma once
#include <cstdint>

#include "hpdl/config/config.hpp"

namespace hpdl {

struct TrainerConfig {
  TrainConfig train;
  OptimizerConfig optimizer;
  DistributedConfig distributed;
  int64_t classes = 0;  // model.classes: the loss's and the evaluations'

  TrainerConfig() = default;
  // From a whole config (implicit: a trainer is built from the config at hand).
  TrainerConfig(const Config& c)  // NOLINT(google-explicit-constructor)
      : train(c.train),
        optimizer(c.optimizer),
        distributed(c.distributed),
        classes(c.model.classes) {}
};

}  // namespace hpdl
