// Allreduce costs (see the header).
#include "hpdl/predict/comm_cost.hpp"

#include <algorithm>
#include <cmath>

#include "hpdl/dist/grad_reducer.hpp"

namespace hpdl {

namespace {

// A measured curve's time for `bytes` inside its sizes, log-log between the two around it;
// beyond its largest size (skipped for time), the rate from the largest to the largest at
// most half its size; < 0 below its smallest.
double curve_seconds(const NetworkModel::Curve& curve, int64_t bytes) {
  const auto& s = curve.samples;
  if (s.empty() || bytes < s.front().first) return -1;
  if (bytes > s.back().first) {
    // That rate holds the algorithm's real bytes per rank and link efficiency; a nearer
    // size (the calibration's just below a power of two) may sit across a change of
    // protocol from the largest, a step rather than a rate.
    const auto& [b1, t1] = s.back();
    size_t i = s.size() - 1;
    while (i > 0 && 2 * s[i].first > b1) --i;
    if (2 * s[i].first > b1) return -1;
    const auto& [b0, t0] = s[i];
    const double per_byte = std::max((t1 - t0) / double(b1 - b0), 0.0);
    return t1 + per_byte * double(bytes - b1);
  }
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (bytes > s[i + 1].first) continue;
    const double x0 = std::log(double(s[i].first)), x1 = std::log(double(s[i + 1].first));
    const double y0 = std::log(s[i].second), y1 = std::log(s[i + 1].second);
    const double t = x1 > x0 ? (std::log(double(bytes)) - x0) / (x1 - x0) : 0;
    return std::exp(y0 + t * (y1 - y0));
  }
  return s.back().second;  // one sample, of exactly these bytes
}

const NetworkModel::Curve* curve_for(const std::vector<NetworkModel::Curve>& curves, int ranks) {
  for (const auto& c : curves)
    if (c.ranks == ranks && !c.samples.empty()) return &c;
  return nullptr;
}

}  // namespace

AllreduceCost allreduce_cost(const NetworkModel& net, int64_t bytes, int ranks,
                             int ranks_per_host) {
  AllreduceCost c;
  if (ranks <= 1 || bytes <= 0) return {0, 0, "none"};
  if (const NetworkModel::Curve* curve = curve_for(net.measured, ranks)) {
    const double t = curve_seconds(*curve, bytes);
    if (t >= 0)
      return {t, 2 * (ranks - 1),
              bytes > curve->samples.back().first ? "measured, extrapolated" : "measured"};
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

AllreduceCost node_sum_cost(const NetworkModel& net, int64_t bytes, int ranks) {
  if (ranks <= 1 || bytes <= 0) return {0, 0, "none"};
  const int64_t chunk_bytes = kNodeSumChunkFloats * int64_t{sizeof(float)};
  const int64_t chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
  const double barrier = std::ceil(std::log2(double(ranks))) * net.intra_latency_s;
  // Memory traffic per gradient byte: copy in 2, sum a slice (every rank's 1/N read, the
  // slice written twice) 1 + 2/N, copy the other slices out 2 (N - 1)/N: 5 in all, where the
  // calibrated reduction moves 3 (reads two, writes one).
  const double passes = net.reduce_Bps > 0 ? 5.0 / 3.0 * double(bytes) / net.reduce_Bps : 0;
  return {2.0 * double(chunks) * barrier + passes, static_cast<int>(2 * chunks), "shared memory"};
}

double after_compute_excess_s(const NetworkModel& net, int64_t bytes, int ranks, int ranks_per_host,
                              double compute_cpu_s) {
  const NetworkModel::Curve* curve = curve_for(net.after_compute, ranks);
  if (!curve || ranks <= 1 || bytes <= 0 || net.after_compute_cpu_s <= 0) return 0;
  const int64_t at = std::clamp(bytes, curve->samples.front().first, curve->samples.back().first);
  const double excess =
      curve_seconds(*curve, at) - allreduce_cost(net, at, ranks, ranks_per_host).seconds;
  return std::min(1.0, compute_cpu_s / net.after_compute_cpu_s) * std::max(0.0, excess);
}

}  // namespace hpdl
