// The step-time model of `hpdl predict` (see the header).
#include "hpdl/predict/predictor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/dist/grad_reducer.hpp"

namespace hpdl {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
}

// CSV rows as column -> value maps (hpdl's own CSVs: no quoting).
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read (was the run profiled? profile.enabled = true)");
  std::string line;
  std::vector<std::string> head;
  std::vector<std::map<std::string, std::string>> rows;
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string cell; std::getline(ss, cell, ',');) out.push_back(cell);
    return out;
  };
  if (std::getline(in, line)) head = split(line);
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (cells.size() != head.size())
      throw Error(path + ": a row has " + std::to_string(cells.size()) + " cells, the header " +
                  std::to_string(head.size()));
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < head.size(); ++i) row[head[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

double number(const std::map<std::string, std::string>& row, const std::string& key,
              const std::string& path) {
  const auto it = row.find(key);
  if (it == row.end()) throw Error(path + ": no column " + key);
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    throw Error(path + ": " + key + " = '" + it->second + "' is not a number");
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

}  // namespace

NetworkModel read_network(const std::string& path) {
  const nlohmann::json j = read_json(path);
  if (j.value("format", "") != "hpdl-network-1")
    throw Error(path + ": not a network.json of hpdl calibrate (format hpdl-network-1)");
  NetworkModel n;
  std::vector<double> lat_inter, bw_inter, lat_intra, bw_intra;
  for (const auto& p : j.at("point_to_point")) {
    const double bw = p.at("bandwidth_Bps").get<double>(), lat = p.at("latency_s").get<double>();
    if (bw <= 0) continue;
    (p.at("same_host").get<bool>() ? lat_intra : lat_inter).push_back(lat);
    (p.at("same_host").get<bool>() ? bw_intra : bw_inter).push_back(bw);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  n.inter_latency_s = median(lat_inter), n.inter_bandwidth_Bps = median(bw_inter);
  n.intra_latency_s = median(lat_intra), n.intra_bandwidth_Bps = median(bw_intra);
  n.reduce_Bps = median(j.at("reduce_Bps_per_core").get<std::vector<double>>());
  n.cores_per_host = median(j.value("cores_per_host", std::vector<double>{}));
  // The trainer's buckets are MPI_Iallreduce polled with MPI_Test: their curve when
  // calibrated (hpdl calibrate measures it), else the blocking default's.
  bool nonblocking = false;
  for (const auto& a : j.at("allreduce")) nonblocking |= a.at("algorithm") == "iallreduce";
  for (const auto& a : j.at("allreduce")) {
    if (a.at("algorithm") != (nonblocking ? "iallreduce" : "default")) continue;
    NetworkModel::Curve c;
    c.ranks = a.at("ranks");
    for (const auto& s : a.at("samples")) c.samples.push_back({s.at("bytes"), s.at("seconds")});
    if (!c.samples.empty()) n.measured.push_back(std::move(c));
  }
  if (n.inter_bandwidth_Bps <= 0 && n.intra_bandwidth_Bps <= 0)
    throw Error(path + ": no point-to-point bandwidth (calibrate on at least 2 ranks)");
  if (n.inter_bandwidth_Bps <= 0)
    n.inter_latency_s = n.intra_latency_s, n.inter_bandwidth_Bps = n.intra_bandwidth_Bps;
  if (n.intra_bandwidth_Bps <= 0)
    n.intra_latency_s = n.inter_latency_s, n.intra_bandwidth_Bps = n.inter_bandwidth_Bps;
  if (n.reduce_Bps <= 0) throw Error(path + ": no reduction rate (reduce_Bps_per_core)");
  std::map<int64_t, std::vector<double>> get_at, acc_at;  // bytes -> seconds over pairs
  for (const auto& r : j.value("rma", nlohmann::json::array()))
    for (const auto& smp : r.at("samples"))
      (r.at("op") == "get" ? get_at : acc_at)[smp.at("bytes").get<int64_t>()].push_back(
          smp.at("seconds"));
  for (auto& [bytes, secs] : get_at) n.get_samples.push_back({bytes, median(secs)});
  for (auto& [bytes, secs] : acc_at) n.acc_samples.push_back({bytes, median(secs)});
  return n;
}

namespace {

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
  const std::string spath = dir + "/steps.csv";
  std::vector<double> compute, rma;
  for (const auto& row : read_csv(spath)) {
    if (number(row, "rank", spath) < p.servers) continue;
    const double wall = number(row, "wall_us", spath), comm = number(row, "comm_us", spath);
    p.compute_s.push_back((wall - comm) * 1e-6);
    compute.push_back((wall - comm) * 1e-6), rma.push_back(comm * 1e-6);
  }
  if (compute.empty()) throw Error(spath + ": no recorded worker step");
  p.worker_compute_s = median(compute), p.worker_rma_s = median(rma);
  p.param_bytes =
      build_model(cfg.model, p.local_batch, "reference")->num_params() * int64_t(sizeof(float));
  return p;
}

}  // namespace

StepProfile read_profile(const std::string& dir) {
  StepProfile p;
  const nlohmann::json m = read_json(dir + "/manifest.json");
  const Config cfg = load_config(dir + "/config.toml", {});
  p.name = cfg.run.name;
  if (cfg.distributed.async()) return read_ps_profile(dir, cfg, m, p);
  p.ranks = m.at("ranks").get<int>();
  p.threads = m.value("threads_per_rank", 1);
  p.global_batch = cfg.train.batch;
  p.local_batch = (cfg.train.batch + p.ranks - 1) / p.ranks;  // rank 0's, the largest
  const std::string lpath = dir + "/layers.csv", spath = dir + "/steps.csv";
  for (const auto& row : read_csv(lpath)) {
    p.layers.push_back(row.at("layer"));
    // Medians: a step predicted is a typical step; the spread enters as stragglers.
    p.forward_s.push_back(number(row, "forward_p50_us", lpath) * 1e-6);
    p.backward_s.push_back(number(row, "backward_p50_us", lpath) * 1e-6);
  }
  std::vector<double> data, loss, update, other;
  for (const auto& row : read_csv(spath)) {
    const double wall = number(row, "wall_us", spath), comm = number(row, "comm_us", spath);
    p.compute_s.push_back((wall - comm) * 1e-6);
    other.push_back(number(row, "unattributed_us", spath) * 1e-6);
    data.push_back(number(row, "data_us", spath) * 1e-6);
    loss.push_back(number(row, "loss_us", spath) * 1e-6);
    update.push_back(number(row, "update_us", spath) * 1e-6);
  }
  if (p.compute_s.empty()) throw Error(spath + ": no recorded step");
  p.data_s = median(data), p.loss_s = median(loss), p.update_s = median(update);
  p.other_s = median(other);
  // The trainer's own bucket layout, from the model the config builds.
  const auto model = build_model(cfg.model, p.local_batch, "reference");
  const std::vector<Range> ranges = model->layer_ranges();
  if (ranges.size() != p.layers.size())
    throw Error(lpath + ": " + std::to_string(p.layers.size()) +
                " layers, but the run's model has " + std::to_string(ranges.size()));
  const BucketLayout b = bucket_layout(
      ranges, static_cast<int64_t>(cfg.distributed.bucket_mb * (1 << 20) / sizeof(float)));
  for (size_t k = 0; k < b.buckets.size(); ++k) {
    p.bucket_bytes.push_back(b.buckets[k].size * int64_t(sizeof(float)));
    int first = static_cast<int>(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i)
      if (b.bucket_of_layer[i] == static_cast<int>(k)) first = std::min(first, static_cast<int>(i));
    p.bucket_last_layer.push_back(first);
  }
  return p;
}

AllreduceCost allreduce_cost(const NetworkModel& net, int64_t bytes, int ranks,
                             int ranks_per_host) {
  AllreduceCost c;
  if (ranks <= 1 || bytes <= 0) return {0, 0, "none"};
  for (const auto& curve : net.measured) {
    if (curve.ranks != ranks) continue;
    const auto& s = curve.samples;
    if (bytes < s.front().first) break;
    if (bytes > s.back().first && s.size() >= 2) {
      // Beyond the largest size calibrated (skipped for time): the last measured segment's
      // rate, which holds the algorithm's real bytes per rank and link efficiency.
      const auto& [b0, t0] = s[s.size() - 2];
      const auto& [b1, t1] = s.back();
      const double per_byte = std::max((t1 - t0) / double(b1 - b0), 0.0);
      return {t1 + per_byte * double(bytes - b1), 2 * (ranks - 1), "measured, extrapolated"};
    }
    if (bytes > s.back().first) break;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (bytes > s[i + 1].first) continue;
      // log-log interpolation between the two measured sizes around `bytes`
      const double x0 = std::log(double(s[i].first)), x1 = std::log(double(s[i + 1].first));
      const double y0 = std::log(s[i].second), y1 = std::log(s[i + 1].second);
      const double t = x1 > x0 ? (std::log(double(bytes)) - x0) / (x1 - x0) : 0;
      c.seconds = std::exp(y0 + t * (y1 - y0));
      c.rounds = 2 * (ranks - 1);
      c.how = "measured";
      return c;
    }
  }
  const bool one_host = ranks <= ranks_per_host;
  const double a = one_host ? net.intra_latency_s : net.inter_latency_s;
  const double b = 1.0 / (one_host ? net.intra_bandwidth_Bps : net.inter_bandwidth_Bps);
  const double g = 1.0 / net.reduce_Bps, S = double(bytes), p = ranks;
  const double lg = std::ceil(std::log2(p)), part = (p - 1) / p;
  const struct {
    const char* name;
    double t;
    int rounds;
  } options[] = {
      {"recursive doubling", lg * (a + S * b + S * g), static_cast<int>(lg)},
      {"ring", 2 * (p - 1) * a + 2 * part * S * b + part * S * g, 2 * (ranks - 1)},
      {"rabenseifner", 2 * lg * a + 2 * part * S * b + part * S * g, static_cast<int>(2 * lg)}};
  c.seconds = 1e300;
  for (const auto& o : options)
    if (o.t < c.seconds) c = {o.t, o.rounds, o.name};
  return c;
}

double expected_max_factor(std::vector<double> x, int n) {
  if (x.empty() || n <= 1) return 1;
  std::sort(x.begin(), x.end());
  const double m = mean(x), k = double(x.size());
  double e = 0;  // E[max of n draws with replacement] over the sorted empirical distribution
  for (size_t i = 0; i < x.size(); ++i) e += x[i] * (std::pow((i + 1) / k, n) - std::pow(i / k, n));
  return m > 0 ? e / m : 1;
}

namespace {

// One RMA operation of `bytes`: log-log interpolation in the calibrated sizes (beyond the
// largest, its last segment's time per byte), else the point-to-point fit.
double rma_op_s(const std::vector<std::pair<int64_t, double>>& s, const NetworkModel& net,
                double bytes) {
  if (s.empty()) return net.inter_latency_s + bytes / net.inter_bandwidth_Bps;
  if (bytes <= double(s.front().first)) return s.front().second;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (bytes > double(s[i + 1].first)) continue;
    const double x0 = std::log(double(s[i].first)), x1 = std::log(double(s[i + 1].first));
    const double t = (std::log(bytes) - x0) / (x1 - x0);
    return std::exp(std::log(s[i].second) +
                    t * (std::log(s[i + 1].second) - std::log(s[i].second)));
  }
  if (s.size() < 2) return s.back().second * bytes / double(s.back().first);
  const auto& [b0, t0] = s[s.size() - 2];
  const auto& [b1, t1] = s.back();
  return t1 + std::max((t1 - t0) / double(b1 - b0), 0.0) * (bytes - double(b1));
}

Prediction predict_ps_step(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o) {
  Prediction r;
  r.ranks = ranks;
  r.hosts = (ranks + o.ranks_per_host - 1) / o.ranks_per_host;
  r.workers = std::max(ranks - p.servers, 0);
  if (r.workers == 0) {
    r.bottleneck =
        "no worker: " + std::to_string(ranks) + " ranks, " + std::to_string(p.servers) + " servers";
    return r;
  }
  r.compute_s = p.worker_compute_s;
  const int on_host = std::min(ranks, o.ranks_per_host);
  if (o.cores_per_host > 0 && on_host * p.threads > o.cores_per_host) {
    r.oversubscribed = true;
    r.compute_s *= double(on_host * p.threads) / o.cores_per_host;
  }
  const double S = p.servers, W = r.workers, shard = double(p.param_bytes) / S;
  // A worker's own pulls and pushes: one RMA epoch per shard, per step amortised.
  const double per_shard = rma_op_s(net.get_samples, net, shard) / p.n_fetch +
                           rma_op_s(net.acc_samples, net, shard) / p.n_push;
  r.comm_s = S * per_shard;
  const double alone = r.compute_s + r.comm_s;
  // What the W workers ask of one server per worker step: its progress engine (one RMA
  // operation at a time), its link (each direction), its core.
  const double serve_s = W * per_shard;
  const double link_bw = r.hosts > 1 ? net.inter_bandwidth_Bps : net.intra_bandwidth_Bps;
  const double link_s = W * shard * std::max(1.0 / p.n_fetch, 1.0 / p.n_push) / link_bw;
  const double apply_s = W * shard / p.n_push / net.reduce_Bps;
  r.step_s = std::max({alone, serve_s, link_s, apply_s});
  r.exposed_s = r.step_s - r.compute_s;
  r.samples_per_s = W * p.global_batch / r.step_s;
  r.staleness = (W - 1) * (p.n_fetch + 1) / (2.0 * p.n_push);
  char words[256];
  if (r.step_s == serve_s && serve_s > alone)
    std::snprintf(words, sizeof words,
                  "server: %d workers' pulls and pushes served one at a time by each of %d servers",
                  r.workers, p.servers);
  else if (r.step_s == link_s && link_s > alone)
    std::snprintf(words, sizeof words,
                  "server link: %d workers move %.1f MiB per step through each of %d servers",
                  r.workers, W * shard * std::max(1.0 / p.n_fetch, 1.0 / p.n_push) / 1048576.0,
                  p.servers);
  else if (r.step_s == apply_s && apply_s > alone)
    std::snprintf(words, sizeof words, "server updates: %d workers' accumulates on %d server cores",
                  r.workers, p.servers);
  else if (r.comm_s > 0.5 * r.compute_s)
    std::snprintf(words, sizeof words, "pulls and pushes (%.0f%% of a worker's step)",
                  100 * r.comm_s / r.step_s);
  else
    std::snprintf(words, sizeof words, "worker compute (%.0f%% of the step)",
                  100 * r.compute_s / r.step_s);
  r.bottleneck = words;
  return r;
}

}  // namespace

Prediction predict_step(const StepProfile& p, const NetworkModel& net, int ranks,
                        const PredictOptions& o) {
  if (p.async()) return predict_ps_step(p, net, ranks, o);
  Prediction r;
  r.ranks = ranks;
  r.hosts = (ranks + o.ranks_per_host - 1) / o.ranks_per_host;
  const double local = double(p.global_batch) / ranks;
  const double scale = local / double(p.local_batch);
  double forward = 0, backward = 0;
  for (size_t i = 0; i < p.layers.size(); ++i)
    forward += p.forward_s[i], backward += p.backward_s[i];
  r.compute_s = (p.data_s + forward + p.loss_s + backward) * scale + p.update_s + p.other_s;
  const int on_host = std::min(ranks, o.ranks_per_host);
  if (o.cores_per_host > 0 && on_host * p.threads > o.cores_per_host) {
    r.oversubscribed = true;
    r.compute_s *= double(on_host * p.threads) / o.cores_per_host;
  }
  r.straggler_factor = expected_max_factor(p.compute_s, ranks);
  r.compute_s *= r.straggler_factor;
  // Buckets start as backward completes them (last layers first) and advance one round per
  // MPI test the trainer makes after each later layer; the rest waits for the step's end.
  const double bwd = backward * scale;
  for (size_t k = 0; k < p.bucket_bytes.size(); ++k) {
    const AllreduceCost c = allreduce_cost(net, p.bucket_bytes[k], ranks, o.ranks_per_host);
    r.buckets.push_back(c);
    r.comm_s += c.seconds;
    if (c.seconds <= 0) continue;
    double after = 0;  // backward time left once this bucket is complete
    for (int i = 0; i < p.bucket_last_layer[k]; ++i) after += p.backward_s[i] * scale;
    const int tests = p.bucket_last_layer[k];
    r.hidden_s += std::min(after, std::min(tests, c.rounds) * c.seconds / std::max(c.rounds, 1));
  }
  r.hidden_s = std::min(r.hidden_s, bwd);
  r.exposed_s = std::max(0.0, r.comm_s - r.hidden_s);
  r.step_s = r.compute_s + r.exposed_s;
  r.samples_per_s = r.step_s > 0 ? p.global_batch / r.step_s : 0;
  char words[256];
  if (r.exposed_s > 0.5 * r.compute_s) {
    int64_t bytes = 0;
    for (int64_t b : p.bucket_bytes) bytes += b;
    const AllreduceCost whole = allreduce_cost(net, bytes, ranks, o.ranks_per_host);
    const double wire = 2.0 * (ranks - 1) / ranks * bytes /
                        (r.hosts > 1 ? net.inter_bandwidth_Bps : net.intra_bandwidth_Bps);
    std::snprintf(words, sizeof words,
                  "allreduce (%.1f MiB in %zu buckets, %s): %.0f%% of the step, %s-bound",
                  bytes / 1048576.0, p.bucket_bytes.size(), whole.how.c_str(),
                  100 * r.exposed_s / r.step_s,
                  wire > 0.5 * whole.seconds ? "bandwidth" : "latency");
  } else if (r.straggler_factor > 1.15) {
    std::snprintf(words, sizeof words,
                  "stragglers: the slowest of %d ranks takes %.2fx the mean step", ranks,
                  r.straggler_factor);
  } else if (r.oversubscribed) {
    std::snprintf(words, sizeof words, "shared cores: %d ranks x %d threads on %.2g cores", on_host,
                  p.threads, o.cores_per_host);
  } else {
    std::snprintf(words, sizeof words, "compute (%.0f%% of the step)",
                  100 * r.compute_s / r.step_s);
  }
  r.bottleneck = words;
  return r;
}

std::string prediction_table(const StepProfile& p, const std::vector<Prediction>& rows) {
  char line[512];
  if (p.async()) {
    std::string out = "predicted from " + p.name + " (" + p.mode + ", " + std::to_string(p.ranks) +
                      " rank(s), " + std::to_string(p.servers) + " server(s), batch " +
                      std::to_string(p.global_batch) + " per worker, n_fetch " +
                      std::to_string(p.n_fetch) + ", n_push " + std::to_string(p.n_push) + ")\n";
    if (p.mode == "dcasgd")
      out +=
          "note: DC-ASGD takes Downpour's path (the server applies the rule) and is costed "
          "alike; validated for Downpour only\n";
    out +=
        " ranks workers  step ms   samples/s   effic.  compute ms  pull+push ms  staleness  "
        "bottleneck\n";
    for (const auto& r : rows) {
      std::snprintf(line, sizeof line, "%6d %7d %8.3f %11.1f %7.1f%% %11.3f %13.3f %10.1f  %s%s\n",
                    r.ranks, r.workers, r.step_s * 1e3, r.samples_per_s, 100 * r.efficiency,
                    r.compute_s * 1e3, r.exposed_s * 1e3, r.staleness, r.bottleneck.c_str(),
                    r.oversubscribed ? " (cores shared)" : "");
      out += line;
    }
    return out;
  }
  std::string out = "predicted from " + p.name + " (" + std::to_string(p.ranks) +
                    " rank(s), batch " + std::to_string(p.global_batch) +
                    " global, strong scaling)\n";
  out +=
      " ranks  hosts   step ms   samples/s   effic.  compute ms  comm ms  exposed ms  bottleneck\n";
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%6d %6d %9.3f %11.1f %7.1f%% %11.3f %8.3f %11.3f  %s%s\n",
                  r.ranks, r.hosts, r.step_s * 1e3, r.samples_per_s, 100 * r.efficiency,
                  r.compute_s * 1e3, r.comm_s * 1e3, r.exposed_s * 1e3, r.bottleneck.c_str(),
                  r.oversubscribed ? " (cores shared)" : "");
    out += line;
  }
  return out;
}

std::string prediction_csv(const std::vector<Prediction>& rows) {
  std::ostringstream os;
  os << "ranks,hosts,step_s,samples_per_s,efficiency,compute_s,straggler_factor,comm_s,hidden_s,"
        "exposed_s,"
        "oversubscribed,workers,staleness,bottleneck\n";
  for (const auto& r : rows)
    os << r.ranks << "," << r.hosts << "," << r.step_s << "," << r.samples_per_s << ","
       << r.efficiency << "," << r.compute_s << "," << r.straggler_factor << "," << r.comm_s << ","
       << r.hidden_s << "," << r.exposed_s << "," << r.oversubscribed << "," << r.workers << ","
       << r.staleness << ",\"" << r.bottleneck << "\"\n";
  return os.str();
}

std::string prediction_svg(const std::vector<Prediction>& rows) {
  // samples/s (left axis) and efficiency (right axis) against log2(ranks).
  const double W = 640, H = 400, L = 70, R = 70, T = 30, B = 50;
  double max_sps = 1, max_x = 1;
  for (const auto& r : rows)
    max_sps = std::max(max_sps, r.samples_per_s),
    max_x = std::max(max_x, std::log2(double(r.ranks)));
  auto X = [&](int ranks) { return L + (W - L - R) * std::log2(double(ranks)) / max_x; };
  auto Ys = [&](double s) { return H - B - (H - B - T) * s / max_sps; };
  auto Ye = [&](double e) { return H - B - (H - B - T) * std::min(e, 1.2) / 1.2; };
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
     << "' font-family='sans-serif' font-size='12'>\n";
  os << "<rect width='100%' height='100%' fill='white'/>\n";
  os << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B
     << "' stroke='black'/>\n";
  os << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B
     << "' stroke='black'/>\n";
  os << "<line x1='" << W - R << "' y1='" << T << "' x2='" << W - R << "' y2='" << H - B
     << "' stroke='black'/>\n";
  std::string sps, eff;
  for (const auto& r : rows) {
    sps += std::to_string(X(r.ranks)) + "," + std::to_string(Ys(r.samples_per_s)) + " ";
    eff += std::to_string(X(r.ranks)) + "," + std::to_string(Ye(r.efficiency)) + " ";
    os << "<text x='" << X(r.ranks) << "' y='" << H - B + 16 << "' text-anchor='middle'>" << r.ranks
       << "</text>\n";
  }
  os << "<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='" << sps << "'/>\n";
  os << "<polyline fill='none' stroke='#d62728' stroke-width='2' stroke-dasharray='6,3' points='"
     << eff << "'/>\n";
  os << "<text x='" << W / 2 << "' y='" << H - 12 << "' text-anchor='middle'>ranks</text>\n";
  os << "<text x='12' y='" << T - 10 << "' fill='#1f77b4'>samples/s (max "
     << static_cast<int64_t>(max_sps) << ")</text>\n";
  os << "<text x='" << W - R - 120 << "' y='" << T - 10
     << "' fill='#d62728'>efficiency (0..1.2)</text>\n";
  os << "</svg>\n";
  return os.str();
}

nlohmann::json predicted_trace(const StepProfile& p, const Prediction& at) {
  const double scale = double(p.global_batch) / at.ranks / double(p.local_batch);
  nlohmann::json ev = nlohmann::json::array();
  double t = 0;
  auto add = [&](const std::string& name, const char* cat, double start_s, double dur_s, int tid) {
    ev.push_back({{"name", name},
                  {"cat", cat},
                  {"ph", "X"},
                  {"pid", 0},
                  {"tid", tid},
                  {"ts", start_s * 1e6},
                  {"dur", dur_s * 1e6}});
  };
  if (p.async()) {  // one worker's step: its compute, then its pulls and pushes (and waits)
    add("worker compute", "compute", 0, at.compute_s, 0);
    add("pull + push", "comm", at.compute_s, at.step_s - at.compute_s, 1);
    return {{"traceEvents", ev},
            {"displayTimeUnit", "ms"},
            {"metadata",
             {{"predicted_ranks", at.ranks}, {"workers", at.workers}, {"step_s", at.step_s}}}};
  }
  add("data", "data", t, p.data_s * scale, 0), t += p.data_s * scale;
  for (size_t i = 0; i < p.layers.size(); ++i)
    add(p.layers[i], "forward", t, p.forward_s[i] * scale, 0), t += p.forward_s[i] * scale;
  add("loss", "loss", t, p.loss_s * scale, 0), t += p.loss_s * scale;
  std::vector<double> done(p.layers.size(), t);
  for (size_t i = p.layers.size(); i-- > 0;) {
    add(p.layers[i], "backward", t, p.backward_s[i] * scale, 0);
    t += p.backward_s[i] * scale;
    done[i] = t;
  }
  // Buckets one after another on the communication track, each from when it is complete.
  double comm = 0;
  for (size_t k = 0; k < at.buckets.size(); ++k) {
    const int last = p.bucket_last_layer[k];
    const double ready = last < static_cast<int>(done.size()) ? done[last] : t;
    const double start = std::max(ready, comm), dur = at.buckets[k].seconds;
    add("allreduce bucket " + std::to_string(k), "allreduce", start, dur, 1);
    comm = start + dur;
  }
  const double end = std::max(t, t + at.exposed_s);
  add("update", "update", end, p.update_s, 0);
  return {{"traceEvents", ev},
          {"displayTimeUnit", "ms"},
          {"metadata", {{"predicted_ranks", at.ranks}, {"step_s", at.step_s}}}};
}

}  // namespace hpdl
