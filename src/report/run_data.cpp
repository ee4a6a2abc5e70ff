// One run directory as the report's JSON: what the manifest, the CSVs and the traces hold.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "hpdl/core/error.hpp"
#include "hpdl/profile/trace_csv.hpp"
#include "hpdl/report/report_data.hpp"
#include "toml_keys.hpp"

namespace hpdl {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool exists(const std::string& p) { return fs::exists(p); }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * double(v.size() - 1);
  const size_t lo = size_t(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

// Whether another process holds the run's lock (RunDir holds it while the run lives).
bool lock_held(const std::string& dir) {
  const int fd = ::open((dir + "/.lock").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

json status_of(const json& m, const std::string& dir) {
  const std::string s = m.value("status", "unknown");
  std::string text = s;
  if (s == "running")
    text = lock_held(dir) ? "running: the figures below are what it has written so far"
                          : "ended without finishing (killed, or its host failed): the manifest "
                            "was never completed";
  else if (s == "failed")
    text = "failed: " + m.value("error", std::string("(no error recorded)"));
  else if (s == "interrupted")
    text = "stopped by " + m.value("stopped_by", std::string("a signal")) + " after step " +
           std::to_string(m.value("stopped_at_step", int64_t{0})) +
           ": continue it with the same command and --resume";
  return {{"state", s}, {"text", text}};
}

json header_of(const json& m, const std::map<std::string, std::string>& cfg,
               const std::string& dir) {
  auto get = [&](const char* k) { return m.contains(k) ? m[k] : json(); };
  auto key = [&](const std::string& k) {
    const auto it = cfg.find(k);
    std::string v = it == cfg.end() ? "" : it->second;
    if (v.size() >= 2 && (v[0] == '\'' || v[0] == '"')) v = v.substr(1, v.size() - 2);
    return v;
  };
  json ops = json::array();
  if (m.contains("plan") && m["plan"].contains("operations")) ops = m["plan"]["operations"];
  std::string layers;
  for (const json& op : ops) layers += (layers.empty() ? "" : ", ") + op.value("kind", "?");
  json h = {{"run", fs::path(dir).lexically_normal().filename().string()},
            {"dir", dir},
            {"kind", m.value("kind", std::string("train"))},
            {"command", get("command")},
            {"config", get("config")},
            {"model", std::to_string(ops.size()) + " layers (" + layers + ")"},
            {"parameters", get("parameters")},
            {"data", key("data.train_file")},
            {"train_samples", get("train_samples")},
            {"ranks", m.value("ranks", 1)},
            {"threads_per_rank", get("threads_per_rank")},
            {"hosts", get("hosts")},
            {"mode", get("mode")},
            {"backend", get("backend")},
            {"gemm", get("gemm")},
            {"precision", get("precision")},
            {"batch", key("train.batch")},
            {"optimizer", key("optimizer.name")},
            {"plan", ops},
            {"hpdl_version", get("hpdl_version")},
            {"git_hash", get("git_hash")},
            {"onednn_version", get("onednn_version")},
            {"mpi_library", get("mpi_library")},
            {"machine", get("machine")},
            {"devices", get("devices")},
            {"started", get("started")},
            {"finished", get("finished")}};
  return h;
}

json steps_of(const CsvTable& t, double global_batch) {
  std::vector<double> wall;
  std::map<std::string, double> parts;
  std::map<int, std::vector<double>> by_rank_wall;
  std::map<int, std::map<std::string, double>> by_rank;
  std::map<int, int> n_rank;
  for (size_t r = 0; r < t.rows(); ++r) {
    const int rank = int(t.number(r, "rank"));
    const double w = t.number(r, "wall_us") / 1e3;
    wall.push_back(w);
    by_rank_wall[rank].push_back(w);
    ++n_rank[rank];
    for (const std::string& p : kStepParts) {
      const double v = t.number(r, p + "_us") / 1e3;
      parts[p] += v, by_rank[rank][p] += v;
    }
    const double u = t.number(r, "unattributed_us") / 1e3;
    parts["unattributed"] += u, by_rank[rank]["unattributed"] += u;
  }
  const double n = std::max<double>(double(t.rows()), 1);
  json mean_parts;
  for (auto& [k, v] : parts) mean_parts[k] = v / n;
  json ranks = json::array();
  for (auto& [rank, p] : by_rank) {
    json row = {{"rank", rank}, {"wall_ms", quantile(by_rank_wall[rank], 0.5)}};
    for (auto& [k, v] : p) row[k] = v / n_rank[rank];
    ranks.push_back(row);
  }
  const double p50 = quantile(wall, 0.5);
  return {{"count", t.rows()},
          {"median_ms", p50},
          {"p10_ms", quantile(wall, 0.1)},
          {"p90_ms", quantile(wall, 0.9)},
          {"samples_per_s", p50 > 0 && global_batch > 0 ? global_batch / (p50 / 1e3) : 0.0},
          {"parts", mean_parts},
          {"ranks", ranks}};
}

// The slowest rank and the part of its step that makes the difference against the median
// of the other ranks.
json slowest_rank(const json& ranks) {
  if (ranks.size() < 2) return nullptr;
  size_t slow = 0;
  for (size_t k = 1; k < ranks.size(); ++k)
    if (ranks[k]["wall_ms"].get<double>() > ranks[slow]["wall_ms"].get<double>()) slow = k;
  std::string why;
  double most = -1e300;
  for (const std::string p : {"forward", "backward", "data", "loss", "update", "comm"}) {
    std::vector<double> others;
    for (size_t k = 0; k < ranks.size(); ++k)
      if (k != slow) others.push_back(ranks[k].value(p, 0.0));
    const double extra = ranks[slow].value(p, 0.0) - quantile(others, 0.5);
    if (extra > most) most = extra, why = p;
  }
  const std::string kind = why == "comm"   ? "waits (communication not hidden)"
                           : why == "data" ? "reading data"
                                           : "compute (" + why + ")";
  return {{"rank", ranks[slow]["rank"]}, {"part", why}, {"why", kind}, {"extra_ms", most}};
}

json layers_of(const CsvTable& t, const std::string& efficiency_csv) {
  std::map<std::string, json> eff;  // "layer/pass" -> its efficiency row
  json roof = nullptr;
  if (exists(efficiency_csv)) {
    const CsvTable e(efficiency_csv);
    for (size_t r = 0; r < e.rows(); ++r) {
      eff[e.text(r, "layer") + "/" + e.text(r, "pass")] = {
          {"gflops_per_s", e.number(r, "gflops_per_s")},
          {"peak_share", e.number(r, "peak_share")},
          {"intensity", e.number(r, "intensity")},
          {"bound", e.text(r, "bound")},
          {"roofline_share", e.number(r, "roofline_share")},
          {"lost_ms", 1e3 * e.number(r, "lost_s")}};
      if (roof.is_null())
        roof = {{"peak_gflops", e.number(r, "gemm_flops_per_s") / 1e9},
                {"memory_gbs", e.number(r, "memory_Bps") / 1e9}};
    }
  }
  json rows = json::array();
  for (size_t r = 0; r < t.rows(); ++r) {
    json row = {{"layer", t.text(r, "layer")}};
    for (const std::string pass : {"forward", "backward"}) {
      json p = {{"mean_ms", t.number(r, pass + "_mean_us") / 1e3},
                {"p50_ms", t.number(r, pass + "_p50_us") / 1e3},
                {"p95_ms", t.number(r, pass + "_p95_us") / 1e3}};
      if (t.has(pass + "_gflop")) p["gflop"] = t.number(r, pass + "_gflop");
      const auto it = eff.find(row["layer"].get<std::string>() + "/" + pass);
      if (it != eff.end()) p.update(it->second);
      row[pass] = p;
    }
    rows.push_back(row);
  }
  return {{"rows", rows}, {"roofline", roof}};
}

json curves_of(const CsvTable& t) {
  json c;
  for (const std::string col : {"epoch", "train_loss", "test_loss", "val_loss", "test_accuracy",
                                "val_accuracy", "lr", "samples_per_s", "epoch_s"}) {
    if (!t.has(col)) continue;
    json v = json::array();
    bool any = false;
    for (size_t r = 0; r < t.rows(); ++r) {
      const std::string& cell = t.text(r, col);
      if (cell.empty()) {
        v.push_back(nullptr);
      } else {
        v.push_back(t.number(r, col));
        any = true;
      }
    }
    if (any) c[col] = v;
  }
  return c;
}

json parameter_server_of(const std::string& dir) {
  const CsvTable w(dir + "/ps_workers.csv");
  json workers = json::array();
  for (size_t r = 0; r < w.rows(); ++r)
    workers.push_back({{"rank", w.number(r, "rank")},
                       {"steps", w.number(r, "steps")},
                       {"pushes", w.number(r, "pushes")},
                       {"pulls", w.number(r, "pulls")},
                       {"push_s", w.number(r, "push_s")},
                       {"pull_s", w.number(r, "pull_s")},
                       {"wait_s", w.number(r, "server_wait_s")},
                       {"work_s", w.number(r, "work_s")},
                       {"staleness_mean", w.number(r, "staleness_mean")},
                       {"staleness_p95", w.number(r, "staleness_p95")}});
  std::map<int64_t, double> hist;
  if (exists(dir + "/staleness.csv")) {
    const CsvTable s(dir + "/staleness.csv");
    for (size_t r = 0; r < s.rows(); ++r)
      hist[int64_t(s.number(r, "staleness"))] += s.number(r, "pushes");
  }
  json h = json::array();
  for (auto& [k, v] : hist) h.push_back({k, v});
  return {{"workers", workers}, {"staleness", h}};
}

}  // namespace

nlohmann::json run_data(const std::string& dir) {
  const std::string manifest = dir + "/manifest.json";
  if (!fs::is_directory(dir)) throw Error(dir + " is not a directory (a run directory expected)");
  if (!exists(manifest))
    throw Error(dir + " is not an hpdl run directory: it has no manifest.json");
  json m = json::parse(file_text(manifest), nullptr, false);
  if (m.is_discarded() || !m.is_object())
    throw Error(manifest + " is not a JSON object: not an hpdl run directory, or damaged");
  const std::string cfg_text = file_text(dir + "/config.toml");
  const auto cfg = toml_keys(cfg_text);
  json out = {{"header", header_of(m, cfg, dir)}, {"status", status_of(m, dir)}};
  json missing = json::array();
  if (cfg_text.empty()) missing.push_back("config.toml: the configuration is not shown");
  const double batch = std::strtod(out["header"]["batch"].get<std::string>().c_str(), nullptr);
  if (exists(dir + "/steps.csv")) {
    out["steps"] = steps_of(CsvTable(dir + "/steps.csv"), batch);
    out["steps"]["slowest"] = slowest_rank(out["steps"]["ranks"]);
  } else {
    missing.push_back(
        "step times (steps.csv): the run was not profiled (set profile.enabled = true)");
  }
  if (exists(dir + "/layers.csv")) {
    out["layers"] = layers_of(CsvTable(dir + "/layers.csv"), dir + "/efficiency.csv");
    if (out["layers"]["roofline"].is_null())
      missing.push_back(
          "efficiency and roofline (efficiency.csv): the ceilings were not measured "
          "(profile.ceilings = false, or the run ended first)");
  } else {
    missing.push_back(
        "per-layer times (layers.csv): the run was not profiled (set profile.enabled = true)");
  }
  out["timeline"] = timeline_data(dir);
  if (!out["timeline"].contains("ranks"))
    missing.push_back("timeline (trace/rank*.json): no traces were written");
  if (exists(dir + "/metrics.csv")) {
    out["curves"] = curves_of(CsvTable(dir + "/metrics.csv"));
  } else if (out["header"]["kind"] == "train") {
    missing.push_back("training curves (metrics.csv): no epoch was recorded");
  }
  if (exists(dir + "/ps_workers.csv")) out["parameter_server"] = parameter_server_of(dir);
  out["config"] = cfg;
  out["missing"] = missing;
  return out;
}

nlohmann::json config_differences(const std::string& a_toml, const std::string& b_toml) {
  const auto a = toml_keys(a_toml), b = toml_keys(b_toml);
  json out = json::array();
  std::map<std::string, std::pair<std::string, std::string>> keys;
  for (auto& [k, v] : a) keys[k].first = v;
  for (auto& [k, v] : b) keys[k].second = v;
  for (auto& [k, v] : keys)
    if (v.first != v.second) out.push_back({k, v.first, v.second});
  return out;
}

}  // namespace hpdl
