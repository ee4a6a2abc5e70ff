// The parameter-server checkpoint protocol (see the header).
#include "hpdl/train/ps_checkpoint.hpp"

#include <algorithm>
#include <cstdio>

#include "hpdl/core/error.hpp"
#include "hpdl/data/sampler.hpp"

namespace hpdl {
namespace {
// Point-to-point tags of the protocol: a worker's header (state and buffer names), then
// each buffer in the header's order.
constexpr int kTagHeader = 21;
constexpr int kTagBuffer = 22;
// A server's header (version and slice names), then each slice in the header's order.
constexpr int kTagShardHeader = 23;
constexpr int kTagShard = 24;

// Where a named slice of a full-length vector lives in c (created with n zeros).
std::vector<float>& full_vector(Checkpoint& c, const std::string& name, int64_t n) {
  if (name == "params") {
    c.params.resize(static_cast<size_t>(n));
    return c.params;
  }
  for (auto& [key, values] : c.buffers)
    if (key == name) return values;
  c.buffers.emplace_back(name, std::vector<float>(static_cast<size_t>(n)));
  return c.buffers.back().second;
}
}  // namespace

void to_json(nlohmann::json& j, const WorkerState& w) {
  j = {{"epoch", w.epoch},
       {"step_in_epoch", w.step_in_epoch},
       {"step", w.step},
       {"pushes_since_pull", w.pushes_since_pull},
       {"pending_steps", w.pending_steps},
       {"pulled_versions", w.pulled_versions},
       {"epoch_loss", w.epoch_loss},
       {"epoch_samples", w.epoch_samples},
       {"epoch_steps", w.epoch_steps}};
}

void from_json(const nlohmann::json& j, WorkerState& w) {
  j.at("epoch").get_to(w.epoch);
  j.at("step_in_epoch").get_to(w.step_in_epoch);
  j.at("step").get_to(w.step);
  j.at("pushes_since_pull").get_to(w.pushes_since_pull);
  w.pending_steps = j.value("pending_steps", int64_t{0});
  j.at("pulled_versions").get_to(w.pulled_versions);
  j.at("epoch_loss").get_to(w.epoch_loss);
  j.at("epoch_samples").get_to(w.epoch_samples);
  j.at("epoch_steps").get_to(w.epoch_steps);
}

std::string worker_key(int k) { return "worker" + std::to_string(k); }

void send_worker(const Comm& comm, const WorkerState& w, const std::vector<NamedValues>& buffers) {
  nlohmann::json names = nlohmann::json::array();
  for (const NamedValues& b : buffers) names.push_back(b.name);
  comm.send(nlohmann::json{{"state", w}, {"buffers", names}}.dump(), 0, kTagHeader);
  for (const NamedValues& b : buffers)
    comm.send(b.values.data(), static_cast<int64_t>(b.values.size()), 0, kTagBuffer);
}

std::vector<WorkerState> gather_workers(const Comm& comm, int first_worker, int64_t n,
                                        Checkpoint& c) {
  std::vector<WorkerState> out;
  for (int r = first_worker; r < comm.size(); ++r) {
    const nlohmann::json header = nlohmann::json::parse(comm.recv_string(r, kTagHeader));
    for (const auto& name : header.at("buffers")) {
      std::vector<float> v(static_cast<size_t>(n));
      comm.recv(v.data(), n, r, kTagBuffer);
      c.buffers.push_back(
          {worker_key(r - first_worker) + "." + name.get<std::string>(), std::move(v)});
    }
    out.push_back(header.at("state").get<WorkerState>());
    c.extra["workers"].push_back(header.at("state"));
  }
  return out;
}

namespace {
WorkerState worker_state(const Checkpoint& c, int k) {
  if (!c.extra.contains("workers") || static_cast<int>(c.extra["workers"].size()) <= k)
    throw AgreedError("checkpoint holds no state for parameter-server " + worker_key(k));
  try {
    return c.extra["workers"][k].get<WorkerState>();
  } catch (const nlohmann::json::exception& e) {
    throw AgreedError("checkpoint's state of " + worker_key(k) + " is malformed: " + e.what());
  }
}
}  // namespace

std::vector<WorkerState> worker_states(const Checkpoint& c) {
  std::vector<WorkerState> out;
  const int n = c.extra.contains("workers") ? static_cast<int>(c.extra["workers"].size()) : 0;
  for (int k = 0; k < n; ++k) out.push_back(worker_state(c, k));
  return out;
}

WorkerState restore_worker(const Checkpoint& c, int k, const std::vector<NamedValues>& buffers) {
  const std::string key = worker_key(k);
  WorkerState w = worker_state(c, k);
  for (const NamedValues& b : buffers) {
    const std::vector<float>* v = c.buffer(key + "." + b.name);
    if (!v || v->size() != b.values.size())
      throw AgreedError("checkpoint lacks " + key + "." + b.name + " of " +
                        std::to_string(b.values.size()) + " values");
    std::copy(v->begin(), v->end(), b.values.begin());
  }
  return w;
}

void send_shard(const Comm& comm, int64_t version, const std::vector<NamedValues>& slices) {
  nlohmann::json names = nlohmann::json::array();
  for (const NamedValues& b : slices) names.push_back(b.name);
  comm.send(nlohmann::json{{"version", version}, {"slices", names}}.dump(), 0, kTagShardHeader);
  for (const NamedValues& b : slices)
    comm.send(b.values.data(), static_cast<int64_t>(b.values.size()), 0, kTagShard);
}

std::vector<int64_t> gather_shards(const Comm& comm, std::span<const int64_t> begin, int64_t n,
                                   int64_t own_version, const std::vector<NamedValues>& own,
                                   Checkpoint& c) {
  const int servers = static_cast<int>(begin.size()) - 1;
  std::vector<int64_t> versions = {own_version};
  for (const NamedValues& b : own)
    std::copy(b.values.begin(), b.values.end(), full_vector(c, b.name, n).begin() + begin[0]);
  for (int s = 1; s < servers; ++s) {
    const nlohmann::json header = nlohmann::json::parse(comm.recv_string(s, kTagShardHeader));
    versions.push_back(header.at("version").get<int64_t>());
    for (const auto& name : header.at("slices")) {
      std::vector<float>& full = full_vector(c, name.get<std::string>(), n);
      comm.recv(full.data() + begin[s], begin[s + 1] - begin[s], s, kTagShard);
    }
  }
  return versions;
}

void restore_shard(const Checkpoint& c, int64_t first, const std::vector<NamedValues>& slices) {
  for (const NamedValues& b : slices) {
    const std::vector<float>* v = b.name == "params" ? &c.params : c.buffer(b.name);
    if (!v || static_cast<int64_t>(v->size()) < first + static_cast<int64_t>(b.values.size()))
      throw AgreedError("checkpoint lacks the parameter server's " + b.name + " (" +
                        std::to_string(first + b.values.size()) + " values or more)");
    std::copy_n(v->begin() + first, b.values.size(), b.values.begin());
  }
}

int checkpoint_workers(const Checkpoint& c) {
  return c.extra.contains("workers") ? static_cast<int>(c.extra["workers"].size()) : 0;
}

bool positions_carry_over(const Checkpoint& c, int ranks) {
  return c.ranks == ranks && checkpoint_workers(c) == c.ranks - c.servers;
}

WorkerRedistribution redistribution(const Checkpoint& c, int workers, int64_t rows, int64_t batch) {
  const std::vector<WorkerState> old = worker_states(c);
  if (old.empty()) throw AgreedError("checkpoint holds no parameter-server worker");
  WorkerRedistribution r;
  r.from_workers = static_cast<int>(old.size()), r.to_workers = workers;
  for (int j = 0; j < r.from_workers; ++j) {
    const WorkerState& w = old[j];
    const int64_t steps = ShardPlan(rows, batch, j, r.from_workers).steps_per_epoch();
    const double f = std::min(1.0, double(w.step_in_epoch) / double(std::max<int64_t>(steps, 1)));
    if (j == 0 || w.epoch < r.epoch || (w.epoch == r.epoch && f < r.fraction))
      r.epoch = w.epoch, r.fraction = f;
    r.dropped_steps += w.pending_steps;
  }
  return r;
}

WorkerState redistributed_worker(const Checkpoint& c, const WorkerRedistribution& r, int k,
                                 int64_t rows, int64_t batch, int64_t epochs) {
  const std::vector<WorkerState> old = worker_states(c);
  const int64_t steps = ShardPlan(rows, batch, k, r.to_workers).steps_per_epoch();
  WorkerState w;
  w.epoch = r.epoch;
  w.step_in_epoch = std::min(steps, static_cast<int64_t>(r.fraction * double(steps)));
  w.step = (r.epoch - 1) * steps + w.step_in_epoch;
  for (auto* v : {&w.epoch_loss, &w.epoch_samples, &w.epoch_steps}) v->assign(epochs, 0.0);
  for (int j = k; j < r.from_workers; j += r.to_workers) {
    const WorkerState& o = old[j];
    for (int64_t e = 0; e < epochs; ++e) {
      const auto at = static_cast<size_t>(e);
      if (at < o.epoch_loss.size()) w.epoch_loss[at] += o.epoch_loss[at];
      if (at < o.epoch_samples.size()) w.epoch_samples[at] += o.epoch_samples[at];
      if (at < o.epoch_steps.size()) w.epoch_steps[at] += o.epoch_steps[at];
    }
  }
  return w;
}

std::string describe(const WorkerRedistribution& r) {
  char share[16];
  std::snprintf(share, sizeof share, "%.0f%%", 100 * r.fraction);
  const std::string on = r.to_workers == 1 ? "1 worker" : std::to_string(r.to_workers) + " workers";
  return "resuming " + std::to_string(r.from_workers) + " workers' checkpoint on " + on +
         ": every worker starts in epoch " + std::to_string(r.epoch) + ", " + share +
         " into its slice (where the slowest stood), from the servers' parameters; " +
         std::to_string(r.dropped_steps) +
         " local steps summed but not pushed were dropped, and snapshots from epoch " +
         std::to_string(r.epoch) + " on are taken again";
}

}  // namespace hpdl
