// Several runs on one page: two runs compared (`hpdl report A B`), or a sweep's tasks
// (`hpdl report --study DIR`).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "hpdl/core/error.hpp"
#include "hpdl/report/report_data.hpp"
#include "toml_keys.hpp"

namespace hpdl {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The header entries that describe where and how a run ran, compared between two runs.
const char* const kSetting[] = {
    "ranks",       "threads_per_rank", "hosts",        "mode",     "backend",
    "gemm",        "precision",        "hpdl_version", "git_hash", "onednn_version",
    "mpi_library", "machine",          "devices"};

json change_json(const json& a, const json& b) {
  const double ta = a.value("p50_ms", 0.0), tb = b.value("p50_ms", 0.0);
  const PassChange c = pass_change(ta, a.value("p95_ms", 0.0), tb, b.value("p95_ms", 0.0));
  return {{"a_ms", ta}, {"b_ms", tb}, {"ratio", c.ratio}, {"noise", c.noise}, {"change", c.change}};
}

json layer_changes(const json& a, const json& b) {
  json rows = json::array();
  if (!a.contains("layers") || !b.contains("layers")) return rows;
  std::map<std::string, json> in_b;
  for (const json& r : b["layers"]["rows"]) in_b[r["layer"]] = r;
  for (const json& r : a["layers"]["rows"]) {
    const auto it = in_b.find(r["layer"]);
    if (it == in_b.end()) {
      rows.push_back({{"layer", r["layer"]}, {"only_in", "A"}});
      continue;
    }
    rows.push_back({{"layer", r["layer"]},
                    {"forward", change_json(r["forward"], it->second["forward"])},
                    {"backward", change_json(r["backward"], it->second["backward"])}});
    in_b.erase(it);
  }
  for (auto& [layer, r] : in_b) rows.push_back({{"layer", layer}, {"only_in", "B"}});
  return rows;
}

// Sweep tasks: task0, task1, ... in numeric order.
std::vector<std::pair<int, std::string>> tasks_in(const std::string& dir) {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("task", 0) != 0 || name.size() == 4) continue;
    if (!std::all_of(name.begin() + 4, name.end(), ::isdigit)) continue;
    if (fs::exists(e.path() / "manifest.json"))
      out.push_back({std::stoi(name.substr(4)), e.path().string()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

PassChange pass_change(double a_p50, double a_p95, double b_p50, double b_p95) {
  auto spread = [](double p50, double p95) { return p50 > 0 ? (p95 - p50) / p50 : 0.0; };
  PassChange c;
  c.ratio = a_p50 > 0 ? b_p50 / a_p50 : 0;
  c.noise = std::hypot(spread(a_p50, a_p95), spread(b_p50, b_p95));
  c.change = a_p50 <= 0              ? "-"
             : c.ratio < 1 - c.noise ? "faster"
             : c.ratio > 1 + c.noise ? "slower"
                                     : "same";
  return c;
}

nlohmann::json compare_data(const std::string& a_dir, const std::string& b_dir) {
  json a = run_data(a_dir), b = run_data(b_dir);
  json settings = json::array();
  for (const char* k : kSetting)
    if (a["header"][k] != b["header"][k]) settings.push_back({k, a["header"][k], b["header"][k]});
  json out = {{"kind", "compare"},
              {"runs", {a, b}},
              {"config_differences", config_differences(file_text(a_dir + "/config.toml"),
                                                        file_text(b_dir + "/config.toml"))},
              {"setting_differences", settings},
              {"layers", layer_changes(a, b)}};
  return out;
}

nlohmann::json study_data(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(dir + " is not a directory (a sweep directory expected)");
  const auto tasks = tasks_in(dir);
  if (tasks.empty())
    throw Error(dir + " holds no sweep tasks (task0/, task1/, ... with a manifest.json each)");
  std::vector<json> runs;
  std::vector<std::map<std::string, std::string>> keys;
  for (const auto& [k, path] : tasks) {
    runs.push_back(run_data(path));
    keys.push_back(toml_keys(file_text(path + "/config.toml")));
  }
  // The swept keys: those whose value is not the same in every task; the threads per rank
  // and ranks too (the grid sets them outside the config).
  std::set<std::string> all;
  for (const auto& m : keys)
    for (const auto& kv : m) all.insert(kv.first);
  std::vector<std::string> swept;
  for (const std::string& k : all) {
    std::set<std::string> values;
    for (const auto& m : keys) values.insert(m.count(k) ? m.at(k) : "");
    if (values.size() > 1 && k != "run.name") swept.push_back(k);
  }
  for (const char* k : {"ranks", "threads_per_rank"}) {
    std::set<std::string> values;
    for (const json& r : runs) values.insert(r["header"][k].dump());
    if (values.size() > 1) swept.push_back(k);
  }
  json rows = json::array();
  for (size_t t = 0; t < runs.size(); ++t) {
    json setting = json::object();
    for (const std::string& k : swept)
      setting[k] = k == "ranks" || k == "threads_per_rank"
                       ? runs[t]["header"][k].dump()
                       : (keys[t].count(k) ? keys[t].at(k) : std::string("(not set)"));
    json layers = json::array();
    if (runs[t].contains("layers"))
      for (const json& r : runs[t]["layers"]["rows"])
        layers.push_back({r["layer"], r["forward"]["mean_ms"], r["backward"]["mean_ms"]});
    rows.push_back(
        {{"task", tasks[t].first},
         {"status", runs[t]["status"]["state"]},
         {"setting", setting},
         {"threads", runs[t]["header"]["threads_per_rank"]},
         {"step_ms", runs[t].contains("steps") ? runs[t]["steps"]["median_ms"] : json()},
         {"samples_per_s", runs[t].contains("steps") ? runs[t]["steps"]["samples_per_s"] : json()},
         {"layers", layers},
         {"missing", runs[t]["missing"]}});
  }
  return {{"kind", "study"},
          {"dir", dir},
          {"swept", swept},
          {"tasks", rows},
          {"header", runs[0]["header"]}};
}

}  // namespace hpdl
