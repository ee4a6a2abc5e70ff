// The network model of `hpdl predict` from a calibration (see the header).
#include "hpdl/predict/network_model.hpp"

#include "hpdl/core/error.hpp"
#include "stats.hpp"

namespace hpdl {

using predict_stats::median;

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
  // The trainer's buckets are MPI_Iallreduce polled with MPI_Test: their curve when
  // calibrated (hpdl calibrate measures it), else the blocking default's.
  bool nonblocking = false;
  for (const AllreduceCurve& a : c.allreduce) nonblocking |= a.name == "iallreduce";
  for (const AllreduceCurve& a : c.allreduce) {
    if (a.name != (nonblocking ? "iallreduce" : "default")) continue;
    NetworkModel::Curve curve;
    curve.ranks = a.ranks;
    for (const Sample& s : a.samples) curve.samples.push_back({s.bytes, s.seconds});
    if (!curve.samples.empty()) n.measured.push_back(std::move(curve));
  }
  if (n.inter_bandwidth_Bps <= 0 && n.intra_bandwidth_Bps <= 0)
    throw Error(path + ": no point-to-point bandwidth (calibrate on at least 2 ranks)");
  if (n.inter_bandwidth_Bps <= 0)
    n.inter_latency_s = n.intra_latency_s, n.inter_bandwidth_Bps = n.intra_bandwidth_Bps;
  if (n.intra_bandwidth_Bps <= 0)
    n.intra_latency_s = n.inter_latency_s, n.intra_bandwidth_Bps = n.inter_bandwidth_Bps;
  if (n.reduce_Bps <= 0) throw Error(path + ": no reduction rate (reduce_Bps_per_core)");
  return n;
}

}  // namespace hpdl
