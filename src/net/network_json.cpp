// network.json (format hpdl-network-1): Calibration to JSON and back, the one place that
// names its fields.
#include <algorithm>
#include <fstream>

#include "hpdl/core/error.hpp"
#include "hpdl/net/calibration.hpp"

namespace hpdl {
namespace {

constexpr const char* kFormat = "hpdl-network-1";

nlohmann::json samples_json(const std::vector<Sample>& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const Sample& x : s) {
    out.push_back({{"bytes", x.bytes}, {"seconds", x.seconds}, {"reps", x.reps}});
    if (x.cpu_s > 0) out.back()["cpu_s"] = x.cpu_s;
  }
  return out;
}

std::vector<Sample> samples_from(const nlohmann::json& j, const std::string& where) {
  std::vector<Sample> out;
  for (const auto& x : j) {
    out.push_back({x.at("bytes").get<int64_t>(), x.at("seconds").get<double>(),
                   x.value("reps", int64_t{0}), x.value("cpu_s", 0.0)});
    if (!(out.back().cpu_s >= 0 && out.back().cpu_s < 10))
      throw Error(where + ": a sample's cpu_s is " + std::to_string(out.back().cpu_s) +
                  " (CPU seconds per transfer: expected 0 to 10)");
  }
  return out;
}

LinkFit fit_from(const nlohmann::json& j) {
  return {j.at("latency_s").get<double>(), j.at("bandwidth_Bps").get<double>()};
}

}  // namespace

nlohmann::json Calibration::to_json() const {
  nlohmann::json j;
  j["format"] = kFormat;
  j["seconds"] = seconds;
  if (!wait.empty()) j["wait"] = wait;
  j["ranks"] = hosts.host_of_rank.size();
  j["hosts"] = nlohmann::json::array();
  for (size_t h = 0; h < hosts.hosts.size(); ++h) {
    std::vector<int> ranks;
    for (size_t r = 0; r < hosts.host_of_rank.size(); ++r)
      if (hosts.host_of_rank[r] == hosts.hosts[h]) ranks.push_back(static_cast<int>(r));
    j["hosts"].push_back({{"name", hosts.hosts[h]}, {"ranks", ranks}});
  }
  j["point_to_point"] = nlohmann::json::array();
  for (const auto& p : pairs)
    j["point_to_point"].push_back({{"ranks", {p.a, p.b}},
                                   {"hosts", {hosts.host_of_rank[p.a], hosts.host_of_rank[p.b]}},
                                   {"same_host", p.same_host},
                                   {"latency_s", p.fit.latency_s},
                                   {"bandwidth_Bps", p.fit.bandwidth_Bps},
                                   {"slow", p.slow},
                                   {"one_way", samples_json(p.samples)}});
  j["allreduce_algorithms_forced"] = algorithms_forced;
  j["allreduce"] = nlohmann::json::array();
  for (const auto& a : allreduce)
    j["allreduce"].push_back({{"algorithm", a.name},
                              {"coll_tuned_id", a.algorithm},
                              {"ranks", a.ranks},
                              {"samples", samples_json(a.samples)}});
  j["rma"] = nlohmann::json::array();
  for (const auto& r : rma)
    j["rma"].push_back({{"op", r.op},
                        {"origin", r.origin},
                        {"target", r.target},
                        {"latency_s", r.fit.latency_s},
                        {"bandwidth_Bps", r.fit.bandwidth_Bps},
                        {"samples", samples_json(r.samples)}});
  j["reduce_Bps_per_core"] = reduce_Bps;
  j["cpu_share_per_rank"] = cpu_share;
  j["cpu_slice_s_per_rank"] = cpu_slice_s;
  if (after_compute_cpu_s > 0) j["allreduce_after_compute_cpu_s"] = after_compute_cpu_s;
  if (!gemm_flops_per_s.empty())
    j["compute_per_rank"] = {{"gemm_flops_per_s", gemm_flops_per_s}, {"memory_Bps", memory_Bps}};
  j["cores_per_host"] = host_cores();  // derived: for readers of the file
  j["flags"] = flags;
  return j;
}

Calibration Calibration::from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw Error(where + ": not a network.json of hpdl calibrate (format " + kFormat + ")");
  Calibration c;
  try {
    c.seconds = j.value("seconds", 0.0);
    c.wait = j.value("wait", "");
    c.hosts.host_of_rank.resize(j.at("ranks").get<size_t>());
    for (const auto& h : j.at("hosts")) {
      c.hosts.hosts.push_back(h.at("name").get<std::string>());
      const auto ranks = h.at("ranks").get<std::vector<int>>();
      c.hosts.leader.push_back(ranks.empty() ? 0 : *std::min_element(ranks.begin(), ranks.end()));
      for (int r : ranks) c.hosts.host_of_rank.at(static_cast<size_t>(r)) = c.hosts.hosts.back();
    }
    for (size_t r = 0; r < c.hosts.host_of_rank.size(); ++r)
      if (c.hosts.host_of_rank[r].empty())
        throw Error(where + ": rank " + std::to_string(r) + " is on none of \"hosts\"");
    for (const auto& p : j.at("point_to_point")) {
      PairResult r;
      r.a = p.at("ranks").at(0), r.b = p.at("ranks").at(1);
      r.same_host = p.at("same_host").get<bool>();
      r.fit = fit_from(p);
      r.slow = p.value("slow", false);
      r.samples = samples_from(p.value("one_way", nlohmann::json::array()), where);
      c.pairs.push_back(std::move(r));
    }
    c.algorithms_forced = j.value("allreduce_algorithms_forced", false);
    for (const auto& a : j.at("allreduce"))
      c.allreduce.push_back({a.value("coll_tuned_id", 0), a.at("algorithm").get<std::string>(),
                             a.at("ranks").get<int>(), samples_from(a.at("samples"), where)});
    for (const auto& r : j.value("rma", nlohmann::json::array()))
      c.rma.push_back({r.at("op").get<std::string>(), r.value("origin", 0), r.value("target", 0),
                       samples_from(r.at("samples"), where), fit_from(r)});
    c.reduce_Bps = j.at("reduce_Bps_per_core").get<std::vector<double>>();
    c.cpu_share = j.value("cpu_share_per_rank", std::vector<double>{});
    c.cpu_slice_s = j.value("cpu_slice_s_per_rank", std::vector<double>{});
    for (double slice : c.cpu_slice_s)
      if (!(slice >= 0 && slice < 10))
        throw Error(where + ": cpu_slice_s_per_rank holds " + std::to_string(slice) +
                    " (seconds between pauses: expected 0 to 10)");
    c.after_compute_cpu_s = j.value("allreduce_after_compute_cpu_s", 0.0);
    if (!(c.after_compute_cpu_s >= 0 && c.after_compute_cpu_s < 10))
      throw Error(where + ": allreduce_after_compute_cpu_s is " +
                  std::to_string(c.after_compute_cpu_s) +
                  " (seconds of compute: expected 0 to 10)");
    if (j.contains("compute_per_rank")) {
      const auto& k = j.at("compute_per_rank");
      c.gemm_flops_per_s = k.at("gemm_flops_per_s").get<std::vector<double>>();
      c.memory_Bps = k.at("memory_Bps").get<std::vector<double>>();
      bool usable = c.gemm_flops_per_s.size() == c.memory_Bps.size();
      for (size_t r = 0; usable && r < c.memory_Bps.size(); ++r)
        usable = c.gemm_flops_per_s[r] > 0 && c.memory_Bps[r] > 0;
      if (!usable)
        throw Error(where +
                    ": compute_per_rank holds a rate that is not positive, or the two "
                    "lists differ in length");
    }
    c.flags = j.value("flags", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": a field is missing or of the wrong type (" + e.what() + ")");
  } catch (const std::out_of_range&) {
    throw Error(where + ": a host lists a rank beyond \"ranks\"");
  }
  return c;
}

Calibration read_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
  return Calibration::from_json(j, path);
}

}  // namespace hpdl
