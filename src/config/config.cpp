// Loading and validating configs. The TOML tree is parsed once, overrides are applied to
// the tree (so the resolved copy in the run directory shows them), then each section is
// read through a strict TableReader into the typed structs.
#include "hpdl/config/config.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/input_file.hpp"
#include "key_depth.hpp"
#include "read_kernel_choices.hpp"

namespace hpdl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

std::string read_text(const std::string& path, const std::string& where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "a.b.c=value": sets t[a][b][c], creating tables as needed; a number indexes an
// existing array ("model.layers.1.hidden=64" sets the second layer's hidden size).
void apply_override(toml::table& root, const std::string& item, const std::string& where) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(where + ": --set '" + item + "' must look like key=value");
  }
  const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
  std::vector<std::string> path;
  std::istringstream parts(key);
  for (std::string part; std::getline(parts, part, '.');) {
    // hpdl's keys are at most a few levels deep; a huge depth would only build a tree
    // that later recursion (printing, destruction) cannot walk.
    constexpr size_t kMaxDepth = 16;
    if (path.size() == kMaxDepth)
      throw Error(where + ": --set key '" + key.substr(0, 80) + (key.size() > 80 ? "..." : "") +
                  "' has more than " + std::to_string(kMaxDepth) + " parts");
    if (part.empty()) throw Error(where + ": --set key '" + key + "' has an empty part");
    path.push_back(part);
  }
  toml::table* table = &root;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    toml::node* n = table->get(path[i]);
    if (!n) {
      table->insert(path[i], toml::table{});
      n = table->get(path[i]);
    }
    if (n->is_array()) {
      char* end = nullptr;
      const long index = std::strtol(path[i + 1].c_str(), &end, 10);
      toml::array* arr = n->as_array();
      if (*end || index < 0 || static_cast<size_t>(index) >= arr->size() || i + 2 >= path.size())
        throw Error(where + ": --set " + key + ": '" + path[i + 1] + "' is not an entry of " +
                    path[i]);
      n = arr->get(static_cast<size_t>(index));
      ++i;
    }
    if (!n->is_table())
      throw Error(where + ": --set " + key + ": '" + path[i] + "' is not a table");
    table = n->as_table();
  }
  // The value is parsed as TOML ("0.1", "true", "[1, 28, 28]", "\"adam\""); a bare word
  // that is not valid TOML (adam) is taken as a string.
  check_key_depth(text, where + ": --set " + key);
  try {
    toml::table parsed = toml::parse("v = " + text);
    table->insert_or_assign(path.back(), std::move(*parsed.get("v")));
  } catch (const toml::parse_error&) {
    table->insert_or_assign(path.back(), text);
  }
}

}  // namespace

std::string to_toml(const toml::table& t) {
  std::ostringstream os;
  os << t << "\n";
  return os.str();
}

namespace {
// Reads every section of c.resolved into c's typed settings; `where` prefixes errors.
void read_sections(Config& c, const std::string& where, const std::string& path);
}  // namespace

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config c;
  c.source = path;
  const std::string where = "config " + path;
  if (!std::filesystem::exists(path)) throw Error(where + ": file not found");
  require_input_file(path, "config");
  const std::string text = read_text(path, where);
  check_key_depth(text, where);
  try {
    c.resolved = toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    throw Error(where + ":" + std::to_string(err.source().begin.line) +
                ": malformed TOML: " + std::string(err.description()));
  }
  for (const auto& o : overrides) apply_override(c.resolved, o, where);
  read_sections(c, where, path);
  return c;
}

Config config_from_text(const std::string& text, const std::string& where) {
  Config c;
  c.source = where;
  check_key_depth(text, where);
  try {
    c.resolved = toml::parse(text);
  } catch (const toml::parse_error& err) {
    throw Error(where + ":" + std::to_string(err.source().begin.line) +
                ": malformed TOML: " + std::string(err.description()));
  }
  read_sections(c, where, where);
  return c;
}

namespace {
// Every default is the settings struct's own (c starts default-constructed): a key that is
// absent keeps it.
void read_sections(Config& c, const std::string& where, const std::string& path) {
  TableReader root(&c.resolved, where);
  {
    TableReader r(root.get_table("run"), where + ": run");
    c.run.name = r.get_string("name", c.run.name);
    c.run.output_dir = r.get_string("output_dir", c.run.output_dir);
    c.run.overwrite = r.get_bool("overwrite", c.run.overwrite);
    // run.device picks the default backend; the two must agree where both are given.
    const std::string device = r.get_string("device", "", {"cpu", "gpu"});
    c.run.backend = r.get_string("backend", device == "gpu" ? "cuda" : c.run.backend,
                                 {"onednn", "reference", "cuda"});
    const std::string runs_on = c.run.on_gpu() ? "gpu" : "cpu";
    if (!device.empty() && device != runs_on)
      throw Error(where + ": run.device = \"" + device + "\" but run.backend = \"" + c.run.backend +
                  "\" runs on the " + runs_on + " (set one of them)");
    // Every wait for another rank is bounded by it: 0 would mean no bound at all.
    c.run.watchdog_s = r.get_double_above("watchdog_s", c.run.watchdog_s, 0.0, kInf);
    c.run.precision = r.get_string("precision", c.run.precision, {"f32", "bf16"});
    c.run.kernels =
        read_kernel_choices(r.get_table("kernels"), where + ": run.kernels", c.run.backend);
    r.finish();
  }
  {
    TableReader r(root.get_table("data"), where + ": data");
    c.data.train_file =
        r.get_string("train_file", c.data.train_file);  // "" only for hpdl time --synthetic
    c.data.train_group = r.get_string("train_group", c.data.train_group);
    c.data.test_file = r.get_string("test_file", c.data.test_file);
    c.data.test_group = r.get_string("test_group", c.data.test_group);
    c.data.normalize = r.get_bool("normalize", c.data.normalize);
    c.data.validation_fraction =
        r.get_double("validation_fraction", c.data.validation_fraction, 0.0, 0.9);
    c.data.validation_file = r.get_string("validation_file", c.data.validation_file);
    c.data.validation_group = r.get_string("validation_group", c.data.validation_group);
    r.finish();
    if (c.data.validation_fraction > 0 && !c.data.validation_file.empty())
      throw Error(where + ": set data.validation_fraction or data.validation_file, not both");
  }
  {
    const toml::table* m = root.get_table("model");
    if (!m) throw Error(where + ": missing [model] table");
    TableReader r(m, where + ": model");
    c.model.input = r.get_int_list("input", std::nullopt, 1);
    if (c.model.input.empty()) throw Error(where + ": model.input must not be empty");
    c.model.classes = r.get_int("classes", std::nullopt, 2, 1 << 20);
    const auto layers = r.get_table_array("layers");
    if (layers.empty()) throw Error(where + ": model.layers is empty (add [[model.layers]])");
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string lw = where + ": model.layers[" + std::to_string(i) + "]";
      const toml::node* type = layers[i]->get("type");
      if (!type || !type->is_string()) throw Error(lw + ".type is missing or not a string");
      c.model.layers.push_back({type->as_string()->get(), layers[i], lw});
    }
    r.finish();
  }
  {
    TableReader r(root.get_table("optimizer"), where + ": optimizer");
    auto& o = c.optimizer;
    o.name = r.get_string("name", o.name, {"sgd", "adam"});
    o.lr = r.get_double_above("lr", o.lr, 0.0, kInf);
    o.momentum = r.get_double("momentum", o.momentum, 0.0, 0.999999);
    o.beta1 = r.get_double("beta1", o.beta1, 0.0, 0.999999);
    o.beta2 = r.get_double("beta2", o.beta2, 0.0, 0.999999999);
    o.eps = r.get_double_above("eps", o.eps, 0.0, 1.0);  // Adam divides by sqrt(v) + eps
    o.l2 = r.get_double("l2", o.l2, 0.0, kInf);
    o.clip_norm = r.get_double("clip_norm", o.clip_norm, 0.0, kInf);
    o.schedule =
        r.get_string("schedule", o.schedule, {"constant", "step", "exponential", "cosine"});
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
  {
    TableReader r(root.get_table("train"), where + ": train");
    c.train.batch = r.get_int("batch", c.train.batch, 1, 1 << 24);
    c.train.epochs = r.get_int("epochs", c.train.epochs, 1, 1 << 20);
    c.train.max_steps = r.get_int("max_steps", c.train.max_steps, 0, kMaxInt);
    c.train.seed =
        static_cast<uint64_t>(r.get_int("seed", static_cast<int64_t>(c.train.seed), 0, kMaxInt));
    c.train.progress = r.get_bool("progress", c.train.progress);
    c.train.nonfinite = r.get_string("nonfinite", c.train.nonfinite, {"stop", "skip"});
    c.train.keep = r.get_string("keep", c.train.keep, {"last", "best"});
    c.train.keep_metric =
        r.get_string("keep_metric", c.train.keep_metric, {"val_loss", "val_accuracy", "val_f1"});
    c.train.patience = r.get_int("patience", c.train.patience, 0, 1 << 20);
    r.finish();
  }
  {
    TableReader r(root.get_table("distributed"), where + ": distributed");
    auto& d = c.distributed;
    d.mode = r.get_string("mode", d.mode, {"sync", "downpour", "dcasgd"});
    d.bucket_mb = r.get_double("bucket_mb", d.bucket_mb, 1e-6, 2048.0);
    d.shared_memory = r.get_bool("shared_memory", d.shared_memory);
    d.compression = r.get_string("compression", d.compression, {"none", "bf16", "fp16"});
    d.sync_every = r.get_int("sync_every", d.sync_every, 1, kMaxInt);
    d.local_warmup_steps = r.get_int("local_warmup_steps", d.local_warmup_steps, 0, kMaxInt);
    d.outer = r.get_string("outer", d.outer, {"average", "nesterov"});
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
    r.finish();
  }
  {
    TableReader r(root.get_table("profile"), where + ": profile");
    auto& p = c.profile;
    p.enabled = r.get_bool("enabled", p.enabled);
    p.skip = r.get_int("skip", p.skip, 0, kMaxInt);
    p.warmup = r.get_int("warmup", p.warmup, 0, kMaxInt);
    p.active = r.get_int("active", p.active, 1, kMaxInt);
    p.repeat = r.get_int("repeat", p.repeat, 0, kMaxInt);
    p.ceilings = r.get_bool("ceilings", p.ceilings);
    r.finish();
  }
  {
    TableReader r(root.get_table("checkpoint"), where + ": checkpoint");
    auto& k = c.checkpoint;
    k.every_steps = r.get_int("every_steps", k.every_steps, 0, kMaxInt);
    k.every_s = r.get_double("every_s", k.every_s, 0.0, kInf);
    k.on_signal = r.get_bool("on_signal", k.on_signal);
    r.finish();
  }
  root.finish();
  if (c.distributed.async() && (c.optimizer.name != "sgd" || c.optimizer.momentum != 0)) {
    throw Error(where + ": distributed.mode = \"" + c.distributed.mode +
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
  // Settings that would change nothing are refused rather than silently ignored.
  if (c.distributed.mode == "sync" && c.distributed.sync_every == 1 &&
      (c.distributed.outer != defaults.outer ||
       c.distributed.local_warmup_steps != defaults.local_warmup_steps)) {
    throw Error(where + ": distributed." +
                (c.distributed.outer != defaults.outer ? "outer" : "local_warmup_steps") +
                " applies to local SGD: set distributed.sync_every to the steps between "
                "averages (> 1)");
  }
  if (c.distributed.outer == "average" &&
      (c.distributed.outer_lr != defaults.outer_lr ||
       c.distributed.outer_momentum != defaults.outer_momentum)) {
    throw Error(where + ": distributed." +
                (c.distributed.outer_lr != defaults.outer_lr ? "outer_lr" : "outer_momentum") +
                " is the Nesterov outer step's: set distributed.outer = \"nesterov\"");
  }
  if (c.distributed.mode == "dcasgd" && c.distributed.outer != defaults.outer) {
    throw Error(where +
                ": distributed.outer = \"nesterov\" on a parameter server is asynchronous "
                "DiLoCo with distributed.mode = \"downpour\" (DC-ASGD has its own rule)");
  }
  if (!c.data.has_validation() && (c.train.keep == "best" || c.train.patience > 0)) {
    throw Error(where + (c.train.keep == "best" ? ": train.keep = \"best\"" : ": train.patience") +
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
  if (c.run.name.empty()) c.run.name = std::filesystem::path(path).stem().string();
  check_run_name(c.run.name, where + ": run.name");
}
}  // namespace

// The run directory is output_dir/name: a name must not lead out of output_dir.
void check_run_name(const std::string& name, const std::string& source) {
  const bool control = std::any_of(name.begin(), name.end(),
                                   [](char ch) { return static_cast<unsigned char>(ch) < 0x20; });
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      control || name.size() > 255) {
    throw Error(source + " = \"" + name +
                "\" must be a plain directory name (no '/' or control characters, not '.' or "
                "'..', at most 255 bytes)");
  }
}

}  // namespace hpdl
