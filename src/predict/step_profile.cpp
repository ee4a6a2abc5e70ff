// Reading a profiled run for `hpdl predict` (see the header).
#include "hpdl/predict/step_profile.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/sample_stats.hpp"
#include "hpdl/dist/grad_reducer.hpp"
#include "hpdl/profile/trace_csv.hpp"

namespace hpdl {
namespace {

using sample_stats::median;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
}

// A parameter-server run: the workers' (ranks >= servers) steps from steps.csv, the
// parameter count from the model the config builds.
StepProfile read_ps_profile(const std::string& dir, const Config& cfg, const nlohmann::json& m,
                            StepProfile p) {
  p.mode = cfg.distributed.mode;
  p.ranks = m.at("ranks").get<int>();
  p.threads = m.value("threads_per_rank", 1);
  p.servers = static_cast<int>(cfg.distributed.servers);
  p.n_fetch = static_cast<int>(cfg.distributed.n_fetch);
  p.n_push = static_cast<int>(cfg.distributed.n_push);
  p.global_batch = p.local_batch = cfg.train.batch;  // every worker's own batch
  if (p.ranks <= p.servers)
    throw Error(dir + ": " + std::to_string(p.ranks) + " ranks and " + std::to_string(p.servers) +
                " servers: no worker was profiled");
  const CsvTable steps(dir + "/steps.csv", kNotProfiledHint);
  std::vector<double> compute, rma;
  for (size_t r = 0; r < steps.rows(); ++r) {
    if (steps.number(r, "rank") < p.servers) continue;
    const double wall = steps.number(r, "wall_us"), comm = steps.number(r, "comm_us");
    p.compute_s.push_back((wall - comm) * 1e-6);
    compute.push_back((wall - comm) * 1e-6), rma.push_back(comm * 1e-6);
  }
  if (compute.empty()) throw Error(steps.path() + ": no recorded worker step");
  p.worker_compute_s = median(compute), p.worker_rma_s = median(rma);
  p.param_bytes = build_model(cfg.model, p.local_batch, Backend::kReference)->num_params() *
                  int64_t(sizeof(float));
  return p;
}

}  // namespace

StepProfile read_profile(const std::string& dir) {
  StepProfile p;
  const nlohmann::json m = read_json(dir + "/manifest.json");
  const Config cfg = load_config(dir + "/config.toml", {});
  p.name = cfg.run.name;
  p.train_samples = m.value("train_samples", int64_t{0});
  p.config_file = m.value("config", dir + "/config.toml");
  p.optimizer = cfg.optimizer.name;
  p.outer = cfg.distributed.outer;
  if (m.contains("cpu") && m["cpu"].is_object())
    p.cores_per_rank = m["cpu"].value("cores_per_rank", 0.0);
  if (cfg.distributed.async()) return read_ps_profile(dir, cfg, m, p);
  p.wire_bytes = cfg.distributed.compression == Compression::kNone ? 4 : 2;
  p.sync_every = cfg.distributed.sync_every;
  p.shared_memory = cfg.distributed.shared_memory;
  p.ranks = m.at("ranks").get<int>();
  p.threads = m.value("threads_per_rank", 1);
  p.global_batch = cfg.train.batch;
  p.local_batch = (cfg.train.batch + p.ranks - 1) / p.ranks;  // rank 0's, the largest
  const CsvTable layers(dir + "/layers.csv", kNotProfiledHint);
  const CsvTable steps(dir + "/steps.csv", kNotProfiledHint);
  for (size_t r = 0; r < layers.rows(); ++r) {
    p.layers.push_back(layers.text(r, "layer"));
    // Medians: a step predicted is a typical step; the spread enters as stragglers.
    p.forward_s.push_back(layers.number(r, "forward_p50_us") * 1e-6);
    p.backward_s.push_back(layers.number(r, "backward_p50_us") * 1e-6);
  }
  std::vector<double> data, loss, update, other;
  for (size_t r = 0; r < steps.rows(); ++r) {
    const double wall = steps.number(r, "wall_us"), comm = steps.number(r, "comm_us");
    p.compute_s.push_back((wall - comm) * 1e-6);
    other.push_back(steps.number(r, "unattributed_us") * 1e-6);
    data.push_back(steps.number(r, "data_us") * 1e-6);
    loss.push_back(steps.number(r, "loss_us") * 1e-6);
    update.push_back(steps.number(r, "update_us") * 1e-6);
  }
  if (p.compute_s.empty()) throw Error(steps.path() + ": no recorded step");
  p.data_s = median(data), p.loss_s = median(loss), p.update_s = median(update);
  p.other_s = median(other);
  // The trainer's own bucket layout, from the model the config builds.
  const auto model = build_model(cfg.model, p.local_batch, Backend::kReference);
  const std::vector<Range> ranges = model->layer_ranges();
  if (ranges.size() != p.layers.size())
    throw Error(layers.path() + ": " + std::to_string(p.layers.size()) +
                " layers, but the run's model has " + std::to_string(ranges.size()));
  const BucketLayout b = bucket_layout(
      ranges, static_cast<int64_t>(cfg.distributed.bucket_mb * (1 << 20) / sizeof(float)));
  p.param_bytes = model->num_params() * int64_t(sizeof(float));
  for (size_t k = 0; k < b.buckets.size(); ++k) {
    p.bucket_bytes.push_back(b.buckets[k].size * int64_t(sizeof(float)));
    int first = static_cast<int>(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i)
      if (b.bucket_of_layer[i] == static_cast<int>(k)) first = std::min(first, static_cast<int>(i));
    p.bucket_last_layer.push_back(first);
  }
  return p;
}

}  // namespace hpdl
