// checkpoint.h5: attributes for identity and position, datasets for the history and the
// state. Written through h5_write_atomically; read back with every size checked.
#include "hpdl/train/checkpoint.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hpdl/config/table_diff.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/plan/execution_plan.hpp"

namespace hpdl {
namespace {

// Format 3 names the history's columns (attribute history_columns: EpochStats' field
// table) and is read back by name; formats 2 (16 positional columns: the learning rate and
// validation added) and 1 (10) are still read.
constexpr const char* kFormat = "hpdl-checkpoint-3";
constexpr const char* kFormat2 = "hpdl-checkpoint-2";
constexpr const char* kFormat1 = "hpdl-checkpoint-1";
constexpr int kHistoryCols2 = 16, kHistoryCols1 = 10;

// Identity and position as one JSON attribute (CheckpointHeader's type mapping), with the
// small structured state beside them ("extra", absent from older files).
nlohmann::json header_of(const Checkpoint& c) {
  nlohmann::json h = static_cast<const CheckpointHeader&>(c);
  h["extra"] = c.extra;
  return h;
}

void set_header(Checkpoint& c, const nlohmann::json& h) {
  static_cast<CheckpointHeader&>(c) = h.get<CheckpointHeader>();
  c.extra = h.value("extra", nlohmann::json());
}

// The history of a format 1 or 2 checkpoint: positional columns.
std::vector<EpochStats> legacy_history(const std::vector<double>& rows, size_t cols) {
  std::vector<EpochStats> h;
  for (size_t i = 0; i + cols <= rows.size(); i += cols) {
    const double* r = rows.data() + i;
    EpochStats s;
    s.epoch = static_cast<int64_t>(r[0]), s.steps = static_cast<int64_t>(r[1]);
    s.train_loss = r[2], s.test_loss = r[3], s.test_accuracy = r[4], s.test_f1 = r[5];
    s.epoch_s = r[6], s.samples_per_s = r[7], s.train_s = r[8], s.elapsed_s = r[9];
    s.tested = true;  // format 1: the test split, if any, was evaluated every epoch
    if (cols == kHistoryCols2) {
      s.lr = r[10], s.tested = r[11] != 0, s.validated = r[12] != 0;
      s.val_loss = r[13], s.val_accuracy = r[14], s.val_f1 = r[15];
    }
    h.push_back(s);
  }
  return h;
}

}  // namespace

const std::vector<float>* Checkpoint::buffer(const std::string& name) const {
  for (const auto& [n, b] : buffers)
    if (n == name) return &b;
  return nullptr;
}

const std::vector<int64_t>* Checkpoint::counter(const std::string& name) const {
  for (const auto& [n, v] : counters)
    if (n == name) return &v;
  return nullptr;
}

int64_t virtual_shards(const Checkpoint& c) {
  return c.extra.is_object() ? c.extra.value("virtual_shards", int64_t{0}) : 0;
}

Checkpoint checkpoint_identity(const Config& cfg, const Model& model, int ranks) {
  Checkpoint c;
  for (const auto& s : model.segments())
    c.model += (c.model.empty() ? "" : ";") + s.name + ":" + std::to_string(s.size);
  c.mode = word(cfg.distributed.mode);
  c.optimizer = word(cfg.optimizer.name);
  c.ranks = ranks;
  c.servers = cfg.distributed.async() ? cfg.distributed.servers : 0;
  c.batch = cfg.train.batch;
  c.seed = cfg.train.seed;
  c.config = to_toml(cfg.resolved);
  c.plan = plan_of(model, cfg.run).serialise();
  // Identity that older files lack (absent = off), kept beside the state.
  if (cfg.distributed.virtual_shards > 0)
    c.extra["virtual_shards"] = cfg.distributed.virtual_shards;
  return c;
}

void check_compatible(const Checkpoint& found, const Checkpoint& expected,
                      const std::string& path) {
  const std::string head = "checkpoint " + path + " is from a different ";
  if (found.model != expected.model) {
    throw Error(head + "model (its parameters: " + found.model.substr(0, 120) +
                (found.model.size() > 120 ? "..." : "") + ")");
  }
  // Same tensors are not the same model (other activations, a dropout layer removed): the
  // whole [model] table must match, where the checkpoint keeps its config.
  if (!found.config.empty() && !expected.config.empty()) {
    std::string diff;
    try {
      diff = first_difference(found.config, expected.config, "model");
    } catch (const Error& e) {
      throw Error("checkpoint " + path + " is damaged: " + e.what());
    }
    if (!diff.empty()) throw Error(head + "model (" + diff + ")");
  }
  // A synchronous run continues on another rank count: every rank holds the same state, and
  // the global batch and sample order do not depend on the ranks (data/sampler.hpp). State
  // that differs from rank to rank (rank_state.hpp) has no owner on another count.
  const bool other_ranks = found.ranks != expected.ranks;
  const int64_t shards = virtual_shards(found);
  if (shards != virtual_shards(expected))
    throw Error(head + "gradient sum (distributed.virtual_shards): it has " +
                std::to_string(shards) + ", this run " + std::to_string(virtual_shards(expected)));
  if (other_ranks && found.mode == "sync" && expected.mode == "sync") {
    for (const auto& [name, values] : found.buffers)
      if (name.rfind("rank0.", 0) == 0)
        throw Error("checkpoint " + path + " holds state of each of its " +
                    std::to_string(found.ranks) + " ranks (" + name.substr(6) +
                    ": compression's error feedback or local SGD's replicas): it resumes only on " +
                    std::to_string(found.ranks) + " ranks, this run has " +
                    std::to_string(expected.ranks));
  }
  // The same model computed another way (another CPU's kernels, another run.kernels) would
  // not continue the same sums: resumed = uninterrupted holds only for the same plan. On
  // another rank count the sums are grouped otherwise anyway (and a plan's choices may
  // follow the local batch), so the plan is not compared there, unless the batch is virtual
  // shards (the same passes on every rank count).
  if ((!other_ranks || shards > 0) && !found.plan.empty() && !expected.plan.empty()) {
    std::string diff;
    try {
      diff = ExecutionPlan::parse(found.plan).first_difference(ExecutionPlan::parse(expected.plan));
    } catch (const Error& e) {
      throw Error("checkpoint " + path + " is damaged: " + e.what());
    }
    if (!diff.empty()) throw Error(head + "execution plan (" + diff + ")");
  }
  auto differ = [&](const std::string& what, const std::string& was, const std::string& now) {
    if (was != now) throw Error(head + what + ": it has " + was + ", this run " + now);
  };
  differ("rank layout (distributed.mode)", found.mode, expected.mode);
  // A parameter server's workers may change in number (their positions are redistributed:
  // ps_checkpoint.hpp); its shards follow the server count, which may not.
  differ("rank layout (distributed.servers)", std::to_string(found.servers),
         std::to_string(expected.servers));
  differ("optimizer (optimizer.name)", found.optimizer, expected.optimizer);
  differ("batch (train.batch)", std::to_string(found.batch), std::to_string(expected.batch));
  differ("data order (train.seed)", std::to_string(found.seed), std::to_string(expected.seed));

  // Position and state: every field in range before training trusts it.
  const std::string bad = "checkpoint " + path + " is damaged: ";
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(bad + what);
  };
  constexpr int64_t kMaxCount = int64_t{1} << 48;
  require(found.epoch >= 1 && found.epoch <= kMaxCount, "epoch = " + std::to_string(found.epoch));
  require(found.epoch_step >= 0 && found.epoch_step <= kMaxCount,
          "epoch step = " + std::to_string(found.epoch_step));
  require(found.global_step >= 0 && found.global_step <= kMaxCount,
          "global step = " + std::to_string(found.global_step));
  require(static_cast<int64_t>(found.history.size()) < found.epoch,
          std::to_string(found.history.size()) + " history rows before epoch " +
              std::to_string(found.epoch));
  require(std::isfinite(found.epoch_loss_sum) && std::isfinite(found.epoch_s) &&
              std::isfinite(found.elapsed_s) && found.epoch_s >= 0 && found.elapsed_s >= 0,
          "non-finite or negative loss sum or times");
  int64_t params = 0;  // the model string is "name:size;name:size..."
  for (size_t at = found.model.find(':'); at != std::string::npos;
       at = found.model.find(':', at + 1))
    params += std::strtoll(found.model.c_str() + at + 1, nullptr, 10);
  // Parameter-server checkpoints hold the parameters in their shards' order: same count.
  require(
      static_cast<int64_t>(found.params.size()) == params,
      std::to_string(found.params.size()) + " parameters for a model of " + std::to_string(params));
  for (float v : found.params) require(std::isfinite(v), "non-finite parameters");
  for (const auto& [name, values] : found.buffers)
    for (float v : values) require(std::isfinite(v), "non-finite values in " + name);
}

std::string previous_checkpoint(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".prev" + p.extension().string())).string();
}

uint64_t write_checkpoint(const std::string& path, const Checkpoint& c) {
  // Keep the checkpoint being replaced, but only once its successor is complete and synced:
  // a write that fails (full disk, a kill) leaves both checkpoints as they were. A hard link
  // survives the rename, so at every moment a complete checkpoint exists under a known
  // name. Only a regular file is kept; a damaged one was moved aside when the run resumed.
  const std::string prev = previous_checkpoint(path);
  const auto keep_previous = [&] {
    if (!std::filesystem::is_regular_file(path)) return;
    try {
      std::filesystem::remove(prev);
      if (::link(path.c_str(), prev.c_str()) != 0) std::filesystem::copy_file(path, prev);
    } catch (const std::filesystem::filesystem_error& e) {
      throw Error("cannot keep " + path + " as " + prev + ": " + e.code().message());
    }
  };
  h5_write_atomically(
      path,
      [&](hid_t f) {
        h5_write_attr(f, "format", kFormat);
        h5_write_attr(f, "header", header_of(c).dump());
        if (!c.config.empty()) h5_write_attr(f, "config", c.config);
        if (!c.plan.empty()) h5_write_attr(f, "plan", c.plan);
        const std::vector<double> rows = epoch_values(c.history);
        h5_write(f, "history", rows.data(),
                 {hsize_t(c.history.size()), hsize_t(epoch_fields().size())});
        h5_write_attr(f, "history_columns", epoch_field_names());
        h5_write(f, "params", c.params.data(), {hsize_t(c.params.size())});
        H5Id b = h5_create_group(f, "buffers");
        for (const auto& [name, v] : c.buffers)
          h5_write(b.get(), name, v.data(), {hsize_t(v.size())});
        H5Id k = h5_create_group(f, "counters");
        for (const auto& [name, v] : c.counters)
          h5_write(k.get(), name, v.data(), {hsize_t(v.size())});
      },
      keep_previous);
  return std::filesystem::file_size(path);
}

Checkpoint read_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error("checkpoint " + path + " not found");
  Checkpoint c;
  try {
    H5Id f = h5_open_file(path);
    const std::string format = h5_read_string_attr(f.get(), "format");
    if (format != kFormat && format != kFormat2 && format != kFormat1)
      throw Error("it is not an hpdl checkpoint (no format attribute '" + std::string(kFormat) +
                  "')");
    set_header(c, nlohmann::json::parse(h5_read_string_attr(f.get(), "header")));
    c.config = h5_read_string_attr(f.get(), "config");  // "" in checkpoints before it was kept
    c.plan = h5_read_string_attr(f.get(), "plan");      // the same
    const std::vector<double> history = h5_read_doubles(f.get(), "history");
    c.history = format == kFormat
                    ? epochs_from(h5_read_string_list_attr(f.get(), "history_columns"), history)
                    : legacy_history(history, format == kFormat2 ? kHistoryCols2 : kHistoryCols1);
    c.params = h5_read_floats(f.get(), "params");
    for (const char* group : {"buffers", "counters"}) {
      H5Id g(H5Gopen2(f.get(), group, H5P_DEFAULT), H5Gclose);
      if (!g.valid()) throw Error(std::string("has no group ") + group);
      hsize_t n = 0;
      HPDL_CHECK_H5(H5Gget_num_objs(g.get(), &n));
      for (hsize_t i = 0; i < n; ++i) {
        char name[256] = {};
        H5Gget_objname_by_idx(g.get(), i, name, sizeof name);
        if (group[0] == 'b')
          c.buffers.push_back({name, h5_read_floats(g.get(), name)});
        else
          c.counters.push_back({name, h5_read_int64s(g.get(), name)});
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error("checkpoint " + path + " has a bad header: " + e.what());
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("HDF5 file", 0) == 0)
      throw Error("checkpoint " + path + " cannot be read (truncated or not HDF5): " +
                  what.substr(what.find(": ") == std::string::npos ? 0 : what.find(": ") + 2));
    throw Error("checkpoint " + path + ": " + what);
  }
  return c;
}

void broadcast_checkpoint(const Comm& comm, Checkpoint& c) {
  // Everything but the float and counter payloads travels as one JSON text.
  std::string text;
  if (comm.rank() == 0) {
    nlohmann::json j = header_of(c);
    j["history"] = epoch_values(c.history);
    j["params"] = c.params.size();
    for (const auto& [name, v] : c.buffers) j["buffers"].push_back({name, v.size()});
    for (const auto& [name, v] : c.counters) j["counters"][name] = v;
    text = j.dump();
  }
  comm.broadcast(text, 0);
  auto bcast_floats = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    comm.broadcast(v.data(), static_cast<int64_t>(n), 0);
  };
  if (comm.rank() != 0) {
    const auto j = nlohmann::json::parse(text);
    set_header(c, j);
    c.history = epochs_from(epoch_field_names(), j["history"].get<std::vector<double>>());
    c.buffers.clear();
    if (j.contains("buffers"))
      for (const auto& b : j["buffers"]) c.buffers.push_back({b[0], {}});
    c.counters.clear();
    if (j.contains("counters"))
      for (const auto& [name, v] : j["counters"].items())
        c.counters.push_back({name, v.get<std::vector<int64_t>>()});
    bcast_floats(c.params, j["params"].get<size_t>());
    for (size_t i = 0; i < c.buffers.size(); ++i)
      bcast_floats(c.buffers[i].second, j["buffers"][i][1].get<size_t>());
  } else {
    bcast_floats(c.params, c.params.size());
    for (auto& [name, v] : c.buffers) bcast_floats(v, v.size());
  }
}

}  // namespace hpdl
