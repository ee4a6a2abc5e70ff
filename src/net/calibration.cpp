// Calibration results: fits, host map, slow-link flags and the table (network.json:
// network_json.cpp).
#include "hpdl/net/calibration.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "hpdl/core/sample_stats.hpp"

namespace hpdl {

using sample_stats::median;

namespace {

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1 << 20));
  else if (b >= 1 << 10)
    std::snprintf(buf, sizeof buf, "%.0f KiB", b / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::string human_rate(double bps) {
  char buf[32];
  if (bps >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB/s", bps / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.1f MB/s", bps / 1e6);
  return buf;
}

std::string human_time(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

}  // namespace

LinkFit fit_link(const std::vector<Sample>& samples) {
  LinkFit f;
  if (samples.empty()) return f;
  // Latency: the fastest small message (a scheduling hiccup only ever adds time).
  f.latency_s = samples.front().seconds;
  for (const Sample& s : samples)
    if (s.bytes <= 4096) f.latency_s = std::min(f.latency_s, s.seconds);
  // Bandwidth: the largest message, its latency taken off.
  const Sample& big = samples.back();
  if (samples.size() > 1 && big.seconds > 0)
    f.bandwidth_Bps = double(big.bytes) / std::max(big.seconds - f.latency_s, 0.5 * big.seconds);
  return f;
}

int HostMap::host_index(int rank) const {
  const auto it = std::find(hosts.begin(), hosts.end(), host_of_rank[rank]);
  return static_cast<int>(it - hosts.begin());
}

HostMap map_hosts(const Comm& comm) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  HostMap m;
  m.host_of_rank = comm.allgather(name);
  for (size_t r = 0; r < m.host_of_rank.size(); ++r) {
    if (std::find(m.hosts.begin(), m.hosts.end(), m.host_of_rank[r]) == m.hosts.end()) {
      m.hosts.push_back(m.host_of_rank[r]);
      m.leader.push_back(static_cast<int>(r));
    }
  }
  return m;
}

void flag_slow(Calibration& c) {
  for (bool same : {false, true}) {
    std::vector<double> bw, lat;
    for (const auto& p : c.pairs)
      if (p.same_host == same && p.fit.bandwidth_Bps > 0)
        bw.push_back(p.fit.bandwidth_Bps), lat.push_back(p.fit.latency_s);
    if (bw.size() < 3) continue;  // no majority to compare against
    const double mb = median(bw), ml = median(lat);
    for (auto& p : c.pairs) {
      if (p.same_host != same || p.fit.bandwidth_Bps <= 0) continue;
      // Latency: three times the median and half a millisecond more (a loaded machine alone
      // can triple a 10 us round trip).
      const bool slow_bw = p.fit.bandwidth_Bps<0.5 * mb, slow_lat = p.fit.latency_s> 3 * ml &&
                           p.fit.latency_s > ml + 5e-4;
      if (!slow_bw && !slow_lat) continue;
      p.slow = true;
      char line[256];
      std::snprintf(
          line, sizeof line,
          "slow pair %s (rank %d) - %s (rank %d): %s, %s latency (median of %zu pairs: %s, %s)",
          c.hosts.host_of_rank[p.a].c_str(), p.a, c.hosts.host_of_rank[p.b].c_str(), p.b,
          human_rate(p.fit.bandwidth_Bps).c_str(), human_time(p.fit.latency_s).c_str(), bw.size(),
          human_rate(mb).c_str(), human_time(ml).c_str());
      c.flags.push_back(line);
    }
  }
  // A host all of whose links to other hosts are slow is the slow one.
  for (size_t h = 0; h < c.hosts.hosts.size(); ++h) {
    int links = 0, slow = 0;
    for (const auto& p : c.pairs) {
      if (p.same_host) continue;
      if (c.hosts.host_index(p.a) == int(h) || c.hosts.host_index(p.b) == int(h))
        ++links, slow += p.slow;
    }
    if (links >= 2 && slow == links)
      c.flags.push_back("slow host " + c.hosts.hosts[h] + ": all " + std::to_string(links) +
                        " of its links are slow");
  }
}

std::vector<double> Calibration::host_cores() const {
  std::vector<double> cores(hosts.hosts.size(), 0.0);
  for (size_t r = 0; r < cpu_share.size() && r < hosts.host_of_rank.size(); ++r)
    cores[hosts.host_index(static_cast<int>(r))] += cpu_share[r];
  return cpu_share.empty() ? std::vector<double>{} : cores;
}

std::string Calibration::table() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%zu ranks on %zu hosts, calibrated in %.1f s%s%s\n\n",
                hosts.host_of_rank.size(), hosts.hosts.size(), seconds,
                wait.empty() ? "" : "; waits: ", wait.c_str());
  out += line;
  out += "point to point (one way)                 latency   bandwidth   largest size\n";
  for (const auto& p : pairs) {
    const std::string who = hosts.host_of_rank[p.a] + " (" + std::to_string(p.a) + ") - " +
                            hosts.host_of_rank[p.b] + " (" + std::to_string(p.b) + ")";
    std::snprintf(line, sizeof line, "%-40s %9s %11s %14s%s\n", who.c_str(),
                  human_time(p.fit.latency_s).c_str(), human_rate(p.fit.bandwidth_Bps).c_str(),
                  p.samples.empty() ? "-" : human_bytes(double(p.samples.back().bytes)).c_str(),
                  p.slow ? "  SLOW" : "");
    out += line;
  }
  // Allreduce: one row per (ranks, algorithm), one column per size.
  std::vector<int64_t> cols;
  for (const auto& a : allreduce)
    for (const auto& s : a.samples)
      if (std::find(cols.begin(), cols.end(), s.bytes) == cols.end()) cols.push_back(s.bytes);
  std::sort(cols.begin(), cols.end());
  out += "\nallreduce, slowest rank" +
         std::string(algorithms_forced ? "" : " (algorithms not selectable: default only)") + "\n";
  std::snprintf(line, sizeof line, "%-26s", "algorithm (ranks)");
  out += line;
  for (int64_t b : cols)
    std::snprintf(line, sizeof line, " %9s", human_bytes(double(b)).c_str()), out += line;
  out += "\n";
  for (const auto& a : allreduce) {
    std::snprintf(line, sizeof line, "%-26s",
                  (a.name + " (" + std::to_string(a.ranks) + ")").c_str());
    out += line;
    for (int64_t b : cols) {
      const auto it = std::find_if(a.samples.begin(), a.samples.end(),
                                   [&](const Sample& s) { return s.bytes == b; });
      std::snprintf(line, sizeof line, " %9s",
                    it == a.samples.end() ? "-" : human_time(it->seconds).c_str());
      out += line;
    }
    out += "\n";
  }
  if (!rma.empty()) {
    out += "\nRMA (lock, op, unlock)                   latency   bandwidth\n";
    for (const auto& r : rma) {
      const std::string who =
          r.op + " " + std::to_string(r.origin) + " -> " + std::to_string(r.target);
      std::snprintf(line, sizeof line, "%-40s %9s %11s\n", who.c_str(),
                    human_time(r.fit.latency_s).c_str(), human_rate(r.fit.bandwidth_Bps).c_str());
      out += line;
    }
  }
  if (!reduce_Bps.empty()) {
    const auto [lo, hi] = std::minmax_element(reduce_Bps.begin(), reduce_Bps.end());
    std::snprintf(line, sizeof line, "\nreduction (float sum, one core): %s .. %s per rank\n",
                  human_rate(*lo).c_str(), human_rate(*hi).c_str());
    out += line;
  }
  if (!cpu_share.empty()) {
    const auto [lo, hi] = std::minmax_element(cpu_share.begin(), cpu_share.end());
    const std::vector<double> cores = host_cores();
    const auto [clo, chi] = std::minmax_element(cores.begin(), cores.end());
    std::snprintf(line, sizeof line,
                  "CPU while every rank computes: %.3f .. %.3f of a core per rank, %.3f .. %.3f "
                  "cores per host\n",
                  *lo, *hi, *clo, *chi);
    out += line;
    const double slice = median(cpu_slice_s);
    if (slice > 0) {
      std::snprintf(line, sizeof line,
                    "  in slices of %.2f ms between pauses (median; under a CPU budget, its "
                    "quota per period in scheduler ticks)\n",
                    1e3 * slice);
      out += line;
    }
  }
  if (!gemm_flops_per_s.empty()) {
    const auto [glo, ghi] = std::minmax_element(gemm_flops_per_s.begin(), gemm_flops_per_s.end());
    const auto [mlo, mhi] = std::minmax_element(memory_Bps.begin(), memory_Bps.end());
    std::snprintf(line, sizeof line,
                  "compute while every rank computes: GEMM %.1f .. %.1f GFLOP/s, memory %.1f .. "
                  "%.1f GB/s per rank\n",
                  *glo / 1e9, *ghi / 1e9, *mlo / 1e9, *mhi / 1e9);
    out += line;
  }
  // Slow hosts are flagged only through their slow pairs.
  const bool slow =
      std::any_of(pairs.begin(), pairs.end(), [](const PairResult& p) { return p.slow; });
  out += slow ? "\n" : "\nno slow host or pair\n";
  for (const auto& f : flags) out += "WARNING: " + f + "\n";
  return out;
}

}  // namespace hpdl
