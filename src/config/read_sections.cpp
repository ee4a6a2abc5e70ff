// Each section of a config read into its typed settings (settings.hpp) through a strict
// TableReader: an unknown key, a value of the wrong type or out of range is refused in one
// line naming it; then the settings of different sections are checked against each other.
#include "read_sections.hpp"

#include <filesystem>
#include <limits>
#include <sstream>

#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/error.hpp"
#include "read_kernel_choices.hpp"

namespace hpdl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// One reader a section. Every default is the settings struct's own (the struct starts
// default-constructed): a key that is absent keeps it.

void read_run(TableReader& root, const std::string& where, RunConfig& run) {
  TableReader r(root.get_table("run"), where + ": run");
  run.name = r.get_string("name", run.name);
  run.output_dir = r.get_string("output_dir", run.output_dir);
  run.overwrite = r.get_bool("overwrite", run.overwrite);
  // run.device picks the default backend; the two must agree where both are given.
  const std::string device = r.get_string("device", "", {"cpu", "gpu"});
  run.backend = r.get_choice("backend", device == "gpu" ? Backend::kCuda : run.backend);
  const std::string runs_on = run.on_gpu() ? "gpu" : "cpu";
  if (!device.empty() && device != runs_on)
    throw Error(where + ": run.device = \"" + device + "\" but run.backend = \"" +
                word(run.backend) + "\" runs on the " + runs_on + " (set one of them)");
  // Every wait for another rank is bounded by it: 0 would mean no bound at all.
  run.watchdog_s = r.get_double_above("watchdog_s", run.watchdog_s, 0.0, kInf);
  run.precision = r.get_choice("precision", run.precision);
  run.wait = r.get_choice("wait", run.wait);
  run.kernels = read_kernel_choices(r.get_table("kernels"), where + ": run.kernels", run.backend);
  r.finish();
}

void read_data(TableReader& root, const std::string& where, DataConfig& data) {
  TableReader r(root.get_table("data"), where + ": data");
  data.train_file = r.get_string("train_file", data.train_file);  // "" only for time --synthetic
  data.train_group = r.get_string("train_group", data.train_group);
  data.test_file = r.get_string("test_file", data.test_file);
  data.test_group = r.get_string("test_group", data.test_group);
  data.normalize = r.get_bool("normalize", data.normalize);
  data.validation_fraction =
      r.get_double("validation_fraction", data.validation_fraction, 0.0, 0.9);
  data.validation_file = r.get_string("validation_file", data.validation_file);
  data.validation_group = r.get_string("validation_group", data.validation_group);
  r.finish();
  if (data.validation_fraction > 0 && !data.validation_file.empty())
    throw Error(where + ": set data.validation_fraction or data.validation_file, not both");
}

void read_model(TableReader& root, const std::string& where, ModelConfig& model) {
  const toml::table* m = root.get_table("model");
  if (!m) throw Error(where + ": missing [model] table");
  TableReader r(m, where + ": model");
  model.input = r.get_int_list("input", std::nullopt, 1);
  if (model.input.empty()) throw Error(where + ": model.input must not be empty");
  model.classes = r.get_int("classes", std::nullopt, 2, 1 << 20);
  const auto layers = r.get_table_array("layers");
  if (layers.empty()) throw Error(where + ": model.layers is empty (add [[model.layers]])");
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string lw = where + ": model.layers[" + std::to_string(i) + "]";
    const toml::node* type = layers[i]->get("type");
    if (!type || !type->is_string()) throw Error(lw + ".type is missing or not a string");
    model.layers.push_back({type->as_string()->get(), layers[i], lw});
  }
  r.finish();
}

void read_optimizer(TableReader& root, const std::string& where, OptimizerConfig& o) {
  TableReader r(root.get_table("optimizer"), where + ": optimizer");
  o.name = r.get_choice("name", o.name);
  o.lr = r.get_double_above("lr", o.lr, 0.0, kInf);
  o.momentum = r.get_double("momentum", o.momentum, 0.0, 0.999999);
  o.beta1 = r.get_double("beta1", o.beta1, 0.0, 0.999999);
  o.beta2 = r.get_double("beta2", o.beta2, 0.0, 0.999999999);
  o.eps = r.get_double_above("eps", o.eps, 0.0, 1.0);  // Adam divides by sqrt(v) + eps
  o.l2 = r.get_double("l2", o.l2, 0.0, kInf);
  o.clip_norm = r.get_double("clip_norm", o.clip_norm, 0.0, kInf);
  o.schedule = r.get_choice("schedule", o.schedule);
  o.decay_epochs = r.get_int("decay_epochs", o.decay_epochs, 1, 1 << 20);
  o.decay_factor = r.get_double_above("decay_factor", o.decay_factor, 0.0, 1.0);
  o.min_lr = r.get_double("min_lr", o.min_lr, 0.0, kInf);
  o.warmup_steps = r.get_int("warmup_steps", o.warmup_steps, 0, kMaxInt);
  r.finish();
  if (o.min_lr > o.lr) {
    std::ostringstream msg;
    msg << where << ": optimizer.min_lr = " << o.min_lr << " is above optimizer.lr = " << o.lr;
    throw Error(msg.str());
  }
}

void read_train(TableReader& root, const std::string& where, TrainConfig& t) {
  TableReader r(root.get_table("train"), where + ": train");
  t.batch = r.get_int("batch", t.batch, 1, 1 << 24);
  t.epochs = r.get_int("epochs", t.epochs, 1, 1 << 20);
  t.max_steps = r.get_int("max_steps", t.max_steps, 0, kMaxInt);
  t.seed = static_cast<uint64_t>(r.get_int("seed", static_cast<int64_t>(t.seed), 0, kMaxInt));
  t.progress = r.get_bool("progress", t.progress);
  t.nonfinite = r.get_choice("nonfinite", t.nonfinite);
  t.keep = r.get_choice("keep", t.keep);
  t.keep_metric = r.get_choice("keep_metric", t.keep_metric);
  t.patience = r.get_int("patience", t.patience, 0, 1 << 20);
  r.finish();
}

void read_distributed(TableReader& root, const std::string& where, DistributedConfig& d) {
  TableReader r(root.get_table("distributed"), where + ": distributed");
  d.mode = r.get_choice("mode", d.mode);
  d.bucket_mb = r.get_double("bucket_mb", d.bucket_mb, 1e-6, 2048.0);
  d.shared_memory = r.get_bool("shared_memory", d.shared_memory);
  d.compression = r.get_choice("compression", d.compression);
  d.sync_every = r.get_int("sync_every", d.sync_every, 1, kMaxInt);
  d.local_warmup_steps = r.get_int("local_warmup_steps", d.local_warmup_steps, 0, kMaxInt);
  d.outer = r.get_choice("outer", d.outer);
  d.outer_lr = r.get_double_above("outer_lr", d.outer_lr, 0.0, 1e3);
  d.outer_momentum = r.get_double("outer_momentum", d.outer_momentum, 0.0, 0.999999);
  d.servers = r.get_int("servers", d.servers, 1, 1 << 20);
  d.n_fetch = r.get_int("n_fetch", d.n_fetch, 1, kMaxInt);
  d.n_push = r.get_int("n_push", d.n_push, 1, kMaxInt);
  d.dc_lambda = r.get_double("dc_lambda", d.dc_lambda, 0.0, kInf);
  d.dc_adaptive = r.get_bool("dc_adaptive", d.dc_adaptive);
  d.dc_lambda0 = r.get_double("dc_lambda0", d.dc_lambda0, 0.0, kInf);
  d.dc_ms_decay = r.get_double("dc_ms_decay", d.dc_ms_decay, 0.0, 1.0);
  d.dc_eps = r.get_double("dc_eps", d.dc_eps, 1e-30, 1.0);
  d.poll_us = r.get_double("poll_us", d.poll_us, 0.0, 1e6);
  d.min_workers = r.get_int("min_workers", d.min_workers, 1, 1 << 20);
  d.virtual_shards = r.get_int("virtual_shards", d.virtual_shards, 0, 1 << 16);
  r.finish();
}

void read_profile(TableReader& root, const std::string& where, ProfileConfig& p) {
  TableReader r(root.get_table("profile"), where + ": profile");
  p.enabled = r.get_bool("enabled", p.enabled);
  p.skip = r.get_int("skip", p.skip, 0, kMaxInt);
  p.warmup = r.get_int("warmup", p.warmup, 0, kMaxInt);
  p.active = r.get_int("active", p.active, 1, kMaxInt);
  p.repeat = r.get_int("repeat", p.repeat, 0, kMaxInt);
  p.ceilings = r.get_bool("ceilings", p.ceilings);
  r.finish();
}

void read_checkpoint(TableReader& root, const std::string& where, CheckpointConfig& k) {
  TableReader r(root.get_table("checkpoint"), where + ": checkpoint");
  k.every_steps = r.get_int("every_steps", k.every_steps, 0, kMaxInt);
  k.every_s = r.get_double("every_s", k.every_s, 0.0, kInf);
  k.on_signal = r.get_bool("on_signal", k.on_signal);
  r.finish();
}

// Settings of different sections that contradict each other, or that would change nothing,
// are refused rather than silently ignored.
void check_across_sections(const Config& c, const std::string& where) {
  if (c.distributed.async() &&
      (c.optimizer.name != OptimizerKind::kSgd || c.optimizer.momentum != 0)) {
    throw Error(where + ": distributed.mode = \"" + word(c.distributed.mode) +
                "\" applies plain SGD on the servers: set optimizer.name = \"sgd\" and "
                "optimizer.momentum = 0");
  }
  const DistributedConfig defaults;
  if (c.distributed.async()) {
    const DistributedConfig& d = c.distributed;
    const char* key = d.sync_every != defaults.sync_every                   ? "sync_every"
                      : d.compression != defaults.compression               ? "compression"
                      : d.local_warmup_steps != defaults.local_warmup_steps ? "local_warmup_steps"
                                                                            : nullptr;
    if (key) {
      throw Error(where + ": distributed." + key +
                  " is for distributed.mode = \"sync\" (the parameter server sends f32 "
                  "gradients every n_push steps)");
    }
  }
  if (const int64_t k = c.distributed.virtual_shards; k > 0) {
    const std::string head = where + ": distributed.virtual_shards = " + std::to_string(k);
    const DistributedConfig& d = c.distributed;
    if (d.async() || d.sync_every > 1 || d.compression != defaults.compression)
      throw Error(head + " is for synchronous SGD with f32 gradients (distributed.mode = " +
                  "\"sync\", sync_every = 1, compression = \"none\")");
    if (c.train.batch % k != 0)
      throw Error(head + " does not divide train.batch = " + std::to_string(c.train.batch));
    if (c.run.backend == Backend::kCuda)
      throw Error(head + " runs on the CPU backends only (run.backend = \"cuda\")");
    if (c.profile.enabled)
      throw Error(head +
                  " cannot be profiled yet: its K/N passes a step would each record "
                  "every layer (set profile.enabled = false)");
  }
  if (c.distributed.mode == DistMode::kSync && c.distributed.sync_every == 1 &&
      (c.distributed.outer != defaults.outer ||
       c.distributed.local_warmup_steps != defaults.local_warmup_steps)) {
    throw Error(where + ": distributed." +
                (c.distributed.outer != defaults.outer ? "outer" : "local_warmup_steps") +
                " applies to local SGD: set distributed.sync_every to the steps between "
                "averages (> 1)");
  }
  if (c.distributed.outer == OuterStep::kAverage &&
      (c.distributed.outer_lr != defaults.outer_lr ||
       c.distributed.outer_momentum != defaults.outer_momentum)) {
    throw Error(where + ": distributed." +
                (c.distributed.outer_lr != defaults.outer_lr ? "outer_lr" : "outer_momentum") +
                " is the Nesterov outer step's: set distributed.outer = \"nesterov\"");
  }
  if (c.distributed.mode == DistMode::kDcAsgd && c.distributed.outer != defaults.outer) {
    throw Error(where +
                ": distributed.outer = \"nesterov\" on a parameter server is asynchronous "
                "DiLoCo with distributed.mode = \"downpour\" (DC-ASGD has its own rule)");
  }
  if (!c.data.has_validation() && (c.train.keep == Keep::kBest || c.train.patience > 0)) {
    throw Error(where +
                (c.train.keep == Keep::kBest ? ": train.keep = \"best\"" : ": train.patience") +
                " needs a validation split: set data.validation_fraction or data.validation_file");
  }
  for (const LayerConfig& lc : c.model.layers) {
    if (c.distributed.async() && lc.type == "batch_norm") {
      throw Error(lc.where +
                  ": batch_norm keeps running statistics on each worker, which the "
                  "parameter server does not carry: use distributed.mode = \"sync\"");
    }
  }
  if (c.distributed.async() && c.train.patience > 0) {
    throw Error(where +
                ": train.patience (early stopping) is for distributed.mode = \"sync\" "
                "(parameter-server runs choose among their epoch snapshots with train.keep)");
  }
}

}  // namespace

void read_sections(Config& c, const std::string& where, const std::string& path) {
  TableReader root(&c.resolved, where);
  read_run(root, where, c.run);
  read_data(root, where, c.data);
  read_model(root, where, c.model);
  read_optimizer(root, where, c.optimizer);
  read_train(root, where, c.train);
  read_distributed(root, where, c.distributed);
  read_profile(root, where, c.profile);
  read_checkpoint(root, where, c.checkpoint);
  root.finish();
  check_across_sections(c, where);
  if (c.run.name.empty()) c.run.name = std::filesystem::path(path).stem().string();
  check_run_name(c.run.name, where + ": run.name");
}

}  // namespace hpdl
