// The network as `hpdl predict` uses it: medians of a calibration (network.json, read
// through the one schema in net/calibration.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/net/calibration.hpp"

namespace hpdl {

// The network as calibrated: inter- and intra-host point-to-point fits, reduction rate, and
// the measured allreduce "default" curves per rank count.
struct NetworkModel {
  double inter_latency_s = 0, inter_bandwidth_Bps = 0;
  double intra_latency_s = 0, intra_bandwidth_Bps = 0;
  double reduce_Bps = 0;
  // The cores a host's ranks got together while all computed (median over hosts; 0 when
  // the calibration predates the measurement): a CPU budget per host shows here.
  double cores_per_host = 0;
  // How long a rank ran between two pauses while all computed (median over ranks; 0 where
  // nothing paused them, or the calibration predates the measurement): under a CPU budget
  // the quota per period, which sets how unevenly the budget falls on single steps.
  double cpu_slice_s = 0;
  // What the calibration saw: its hosts, and whether a link between two of them was measured
  // (without one, the links between hosts are taken to be the measured shared-memory ones).
  int hosts = 0;
  bool inter_host_measured = false;
  // The spread of the calibrated links (the pairs' fits of the kind the forecast leans on:
  // between hosts where measured), apart for latency and for bytes over bandwidth (a pair
  // whose small messages met a budget's pause has many times the others' latency, which
  // says nothing about its bytes): how much slower (>= 1) and faster (<= 1) the
  // latency is at its 90th and 10th percentiles than at its median, and the bandwidth's
  // time, or a bandwidth-bound size's time over its pair's fit, whichever is wider.
  struct Spread {
    double latency = 1, bandwidth = 1;
  };
  Spread slow_links, fast_links;
  struct Curve {
    int ranks = 0;
    std::vector<std::pair<int64_t, double>> samples;  // bytes, seconds
  };
  std::vector<Curve> measured;  // "iallreduce" where calibrated, else "default"
  // The allreduce after bursts of `after_compute_cpu_s` of compute (net/after_compute.hpp;
  // empty where the calibration's ranks never paused, or in older files).
  std::vector<Curve> after_compute;
  double after_compute_cpu_s = 0;
  // The CPU seconds one end spends on one point-to-point transfer, by bytes (the median over
  // the pairs the links are fitted on; empty in older files): on a CPU budget of q < 1 core,
  // every CPU second a rank spends costs it 1/q - 1 seconds of pause on average.
  std::vector<std::pair<int64_t, double>> transfer_cpu;
  // (network.json's RMA curves are not used: under a CPU budget they were not stable from
  // one calibration to the next; the parameter server's transfers take the point-to-point
  // fit, ps_step.cpp.)
};

// From a calibration; error naming `where` when it holds no bandwidth or reduction rate.
NetworkModel network_model(const Calibration& c, const std::string& where);
// The same network with every latency multiplied by f.latency and every time of bytes over
// bandwidth by f.bandwidth; a measured allreduce curve's sizes likewise, each taken as its
// curve's smallest time (the latency) plus the rest (the bytes).
NetworkModel scaled_links(const NetworkModel& n, NetworkModel::Spread f);
// One line when the calibration cannot speak for a forecast of `ranks` ranks at
// `ranks_per_host` a host (more hosts than it measured, or no link between hosts); "" else.
std::string calibration_scope(const NetworkModel& n, int ranks, int ranks_per_host);
// The CPU seconds one end spends on a transfer of `bytes`: transfer_cpu read linearly between
// the two sizes about it (below the smallest, the smallest's; beyond the largest, along the
// line through the two largest); -1 where it was not measured.
double transfer_cpu_s(const NetworkModel& n, int64_t bytes);
// network.json, read and checked: error naming the file and field at fault.
NetworkModel read_network(const std::string& path);

}  // namespace hpdl
