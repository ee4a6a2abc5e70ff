// The run configuration: a TOML file plus `--set key=value` overrides, checked strictly
// (unknown keys, wrong types and out-of-range values are errors naming the key) and kept
// as typed structs. The resolved TOML (file + overrides) is written into the run directory.
#pragma once
#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hpdl/config/settings.hpp"

namespace hpdl {

struct LayerConfig {
  std::string type;
  const toml::table* params = nullptr;  // the layer's own keys, read by the model builder
  std::string where;                    // "config F: model.layers[3]"
};

struct ModelConfig {
  std::vector<int64_t> input;  // per-sample input shape, e.g. [1, 28, 28]
  int64_t classes = 0;
  std::vector<LayerConfig> layers;
};

struct Config {
  std::string source;  // path of the TOML file
  toml::table resolved;
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  TrainConfig train;
  DistributedConfig distributed;
  ProfileConfig profile;
  CheckpointConfig checkpoint;
};

// Reads, overrides ("optimizer.lr=0.1"; the value is TOML, or a bare string) and checks
// a config. Throws Error naming the file and key on any problem.
Config load_config(const std::string& path, const std::vector<std::string>& overrides);
// The same from TOML text (a config saved with a model); `where` names it in errors.
Config config_from_text(const std::string& text, const std::string& where);

// The one rule for a run's directory name, from run.name, a config file's stem or Slurm's
// job and array task ids: a plain name inside output_dir (not empty, '.' or '..'; no '/' or
// control characters; at most 255 bytes). Throws Error "SOURCE = "NAME" ..." otherwise.
void check_run_name(const std::string& name, const std::string& source);

// The resolved config as TOML text.
std::string to_toml(const toml::table& t);

}  // namespace hpdl
