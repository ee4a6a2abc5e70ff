// The network model of `hpdl predict` from a calibration (see the header).
#include "hpdl/predict/network_model.hpp"

#include <algorithm>
#include <map>

#include "hpdl/core/error.hpp"
#include "hpdl/core/sample_stats.hpp"

namespace hpdl {

using sample_stats::median;
using sample_stats::quantile;

NetworkModel read_network(const std::string& path) {
  return network_model(read_calibration(path), path);
}

NetworkModel network_model(const Calibration& c, const std::string& path) {
  NetworkModel n;
  std::vector<double> lat_inter, bw_inter, lat_intra, bw_intra;
  for (const PairResult& p : c.pairs) {
    if (p.fit.bandwidth_Bps <= 0) continue;
    (p.same_host ? lat_intra : lat_inter).push_back(p.fit.latency_s);
    (p.same_host ? bw_intra : bw_inter).push_back(p.fit.bandwidth_Bps);
  }
  n.inter_latency_s = median(lat_inter), n.inter_bandwidth_Bps = median(bw_inter);
  n.intra_latency_s = median(lat_intra), n.intra_bandwidth_Bps = median(bw_intra);
  n.reduce_Bps = median(c.reduce_Bps);
  n.cores_per_host = median(c.host_cores());
  n.cpu_slice_s = median(c.cpu_slice_s);
  n.hosts = int(c.hosts.hosts.size());
  n.inter_host_measured = !bw_inter.empty();
  const std::vector<double>& bw = bw_inter.empty() ? bw_intra : bw_inter;
  const std::vector<double>& lat = bw_inter.empty() ? lat_intra : lat_inter;
  if (bw.size() >= 2) {
    const double b50 = median(bw), l50 = median(lat);
    const double b10 = quantile(bw, 0.1), b90 = quantile(bw, 0.9);
    const double l10 = quantile(lat, 0.1), l90 = quantile(lat, 0.9);
    n.slow_links = {std::max(1.0, l50 > 0 ? l90 / l50 : 1.0),
                    std::max(1.0, b10 > 0 ? b50 / b10 : 1.0)};
    n.fast_links = {std::min(1.0, l50 > 0 ? l10 / l50 : 1.0),
                    std::min(1.0, b90 > 0 ? b50 / b90 : 1.0)};
  }
  // And each link's own spread about its fit (one link has no spread between links): the
  // measured over the fitted time of the sizes a gradient bucket or a shard is, those whose
  // bytes over bandwidth outweigh the latency, at their 10th and 90th percentiles.
  std::vector<double> about_fit;
  for (const PairResult& p : c.pairs) {
    if (p.fit.bandwidth_Bps <= 0 || p.same_host != bw_inter.empty()) continue;
    for (const Sample& s : p.samples) {
      const double wire = double(s.bytes) / p.fit.bandwidth_Bps;
      if (wire >= p.fit.latency_s && s.seconds > 0)
        about_fit.push_back(s.seconds / (p.fit.latency_s + wire));
    }
  }
  if (about_fit.size() >= 2) {
    n.slow_links.bandwidth = std::max(n.slow_links.bandwidth, quantile(about_fit, 0.9));
    n.fast_links.bandwidth = std::min(n.fast_links.bandwidth, quantile(about_fit, 0.1));
  }
  std::map<int64_t, std::vector<double>> cpu_by_bytes;
  for (const PairResult& p : c.pairs)
    if (p.fit.bandwidth_Bps > 0 && p.same_host == bw_inter.empty())
      for (const Sample& s : p.samples)
        if (s.cpu_s > 0) cpu_by_bytes[s.bytes].push_back(s.cpu_s);
  for (const auto& [bytes, cpu] : cpu_by_bytes) n.transfer_cpu.push_back({bytes, median(cpu)});
  // The trainer's buckets are MPI_Iallreduce polled with MPI_Test: their curve when
  // calibrated (hpdl calibrate measures it), else the blocking default's.
  // More bytes never take less time: a size timed slower than a larger one met a slow
  // spell of the hosts, and takes the larger size's time.
  const auto monotone = [](const AllreduceCurve& a) {
    NetworkModel::Curve curve;
    curve.ranks = a.ranks;
    for (const Sample& s : a.samples) curve.samples.push_back({s.bytes, s.seconds});
    std::sort(curve.samples.begin(), curve.samples.end());
    for (size_t i = curve.samples.size(); i-- > 1;)
      curve.samples[i - 1].second = std::min(curve.samples[i - 1].second, curve.samples[i].second);
    return curve;
  };
  bool nonblocking = false;
  for (const AllreduceCurve& a : c.allreduce) nonblocking |= a.name == "iallreduce";
  for (const AllreduceCurve& a : c.allreduce) {
    if (a.samples.empty()) continue;
    if (a.name == (nonblocking ? "iallreduce" : "default")) n.measured.push_back(monotone(a));
    if (a.name == kAfterComputeCurve) n.after_compute.push_back(monotone(a));
  }
  n.after_compute_cpu_s = c.after_compute_cpu_s;
  if (n.inter_bandwidth_Bps <= 0 && n.intra_bandwidth_Bps <= 0)
    throw Error(path + ": no point-to-point bandwidth (calibrate on at least 2 ranks)");
  if (n.inter_bandwidth_Bps <= 0)
    n.inter_latency_s = n.intra_latency_s, n.inter_bandwidth_Bps = n.intra_bandwidth_Bps;
  if (n.intra_bandwidth_Bps <= 0)
    n.intra_latency_s = n.inter_latency_s, n.intra_bandwidth_Bps = n.inter_bandwidth_Bps;
  if (n.reduce_Bps <= 0) throw Error(path + ": no reduction rate (reduce_Bps_per_core)");
  return n;
}

double transfer_cpu_s(const NetworkModel& n, int64_t bytes) {
  const auto& c = n.transfer_cpu;  // sorted by bytes (a map's order)
  if (c.empty()) return -1;
  if (c.size() == 1 || bytes <= c.front().first) return c.front().second;
  size_t i = 1;
  while (i + 1 < c.size() && c[i].first < bytes) ++i;
  const auto [b0, t0] = c[i - 1];
  const auto [b1, t1] = c[i];
  return std::max(0.0, t0 + (t1 - t0) * double(bytes - b0) / double(b1 - b0));
}

NetworkModel scaled_links(const NetworkModel& n, NetworkModel::Spread f) {
  NetworkModel s = n;
  s.inter_latency_s *= f.latency, s.intra_latency_s *= f.latency;
  s.inter_bandwidth_Bps /= f.bandwidth, s.intra_bandwidth_Bps /= f.bandwidth;
  for (auto& curve : s.measured) {
    if (curve.samples.empty()) continue;
    const double latency = curve.samples.front().second;  // sorted by bytes, monotone
    for (auto& sample : curve.samples)
      sample.second = latency * f.latency + (sample.second - latency) * f.bandwidth;
  }
  return s;
}

std::string calibration_scope(const NetworkModel& n, int ranks, int ranks_per_host) {
  const int hosts = (ranks + std::max(ranks_per_host, 1) - 1) / std::max(ranks_per_host, 1);
  if (hosts <= 1 || n.hosts == 0) return "";
  const std::string measured = std::to_string(n.hosts) + " host" + (n.hosts == 1 ? "" : "s");
  if (!n.inter_host_measured)
    return "note: the calibration measured " + measured +
           " and no link between hosts: the forecasts for up to " + std::to_string(hosts) +
           " hosts take its shared-memory links for the network (calibrate on the hosts you "
           "will use: mpirun -np " +
           std::to_string(hosts) + " --map-by node hpdl calibrate)";
  if (n.hosts < hosts)
    return "note: the calibration measured " + measured + ", the forecasts reach " +
           std::to_string(hosts) + ": links and allreduce beyond " + measured +
           " are extrapolated from them";
  return "";
}

}  // namespace hpdl
