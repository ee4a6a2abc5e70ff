// What `hpdl calibrate` measures across the ranks of an allocation, and the fits a
// predictor needs: one-way point-to-point time per host pair (ping-pong, 8 B up to
// max_bytes; latency and bandwidth, within and between hosts), allreduce time per message
// size, rank count and OpenMPI allreduce algorithm (forced through the coll_tuned MCA
// variables), for the library's own choice, and for MPI_Iallreduce polled with MPI_Test
// (what the trainer's buckets do), RMA get/accumulate time, the reduction throughput of
// one core, and the share of a core each rank gets when all compute at once (a host's CPU
// budget, or cores shared by more ranks than they have). Sizes grow by 8x; a size whose estimated
// time exceeds budget_s is not measured (the fits need only the sizes below it), so a slow link
// stays quick to calibrate. These are the only MPI calls outside comm/ besides the RMA shards:
// measuring the network is what they are for.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"

namespace hpdl {

struct CalibrateOptions {
  int64_t max_bytes = int64_t{64} << 20;
  double budget_s = 1.0;   // the longest one size may take (all its repetitions)
  double target_s = 0.05;  // repetitions of a size: about this long in all
};

// One size: the mean over `reps` repetitions of one operation (the iallreduce curve: the
// median of its passes' means, `reps` counting every pass).
struct Sample {
  int64_t bytes = 0;
  double seconds = 0;
  int64_t reps = 0;
  // Point to point: the CPU seconds one end spends on one transfer (the measuring rank's
  // thread over a round trip, a send and a receive, halved; its waits as training's). 0 where
  // not measured (other curves, older files).
  double cpu_s = 0;
};

// t(bytes) = latency_s + bytes / bandwidth_Bps, from the smallest and the largest samples.
struct LinkFit {
  double latency_s = 0, bandwidth_Bps = 0;
};
LinkFit fit_link(const std::vector<Sample>& samples);

struct HostMap {
  std::vector<std::string> host_of_rank;  // host name per rank
  std::vector<std::string> hosts;         // in order of first rank
  std::vector<int> leader;                // lowest rank on each host
  int host_index(int rank) const;
};
// Collective: every rank's host name.
HostMap map_hosts(const Comm& comm);

struct PairResult {
  int a = 0, b = 0;  // ranks
  bool same_host = false;
  std::vector<Sample> samples;  // one-way time
  LinkFit fit;
  bool slow = false;  // far slower than the median of its kind
};
struct AllreduceCurve {
  // OpenMPI coll_tuned id; 0 = the library's own choice; -1 = "iallreduce": MPI_Iallreduce
  // polled with MPI_Test, as the trainer's gradient buckets (libnbc's algorithm); -2 =
  // kAfterComputeCurve: the same after each burst of compute (net/after_compute.hpp)
  int algorithm = 0;
  std::string name;
  int ranks = 0;
  std::vector<Sample> samples;  // time of the slowest rank
};
inline constexpr const char* kAfterComputeCurve = "iallreduce after compute";
struct RmaCurve {
  std::string op;  // "get" | "accumulate"
  int origin = 0, target = 0;
  std::vector<Sample> samples;  // lock, operation, unlock
  LinkFit fit;
};

struct Calibration {
  HostMap hosts;
  std::vector<PairResult> pairs;
  std::vector<AllreduceCurve> allreduce;
  bool algorithms_forced = false;  // whether coll_tuned's algorithm could be chosen
  std::vector<RmaCurve> rma;
  std::vector<double> reduce_Bps;  // per rank, one core summing floats
  // Per rank: CPU seconds per second while every rank computes (1 = a whole core); of two
  // measurements, at the start and at the end, the one that sums to more (src/net/cpu_share.hpp).
  std::vector<double> cpu_share;
  // Per rank, measured at the same time: how long it ran between two pauses (median; 0
  // where nothing paused it, and in older files). Under a CPU quota, the quota per period
  // as the scheduler grants it (in whole ticks: 4 ms for a 2.5 ms quota at HZ=250).
  std::vector<double> cpu_slice_s;
  // The CPU seconds of compute before each allreduce of the kAfterComputeCurve curves (0
  // where none was measured: no rank paused, or an older file).
  double after_compute_cpu_s = 0;
  // Per rank, measured with every rank at once through the CPU backend (`hpdl calibrate`
  // without --no-compute; empty otherwise and in older files): the GEMM peak (FLOP/s) and
  // the memory bandwidth (bytes/s), the ceilings of run/ceilings.hpp.
  std::vector<double> gemm_flops_per_s, memory_Bps;
  // Per host (hosts.hosts order): the cores its ranks got together.
  std::vector<double> host_cores() const;
  std::vector<std::string> flags;  // slow pairs and hosts, a CPU share that moved: in words
  double seconds = 0;
  // How rank 0 waited while it measured (run.wait's choice with its reason, the comm's idle
  // policy): measurements wait the way training does. "" in older files.
  std::string wait;

  std::string table() const;
  // network.json, the one schema `hpdl calibrate` writes and `hpdl predict` reads
  // (format hpdl-network-1; network_json.cpp). from_json throws Error naming `where` and
  // the field at fault; files written before the CPU-share measurement read with it empty.
  nlohmann::json to_json() const;
  static Calibration from_json(const nlohmann::json& j, const std::string& where);
};

// network.json at `path`, read and checked (from_json): Error naming the file when it cannot
// be read, is not JSON, or a field is at fault.
Calibration read_calibration(const std::string& path);

// Collective over comm; every wait is bounded by the watchdog. Rank 0's result is complete.
Calibration calibrate(const Comm& comm, const CalibrateOptions& opts, Watchdog& watchdog);

// The pairs far slower than the others of their kind (bandwidth under half the median, or
// latency over three times it and 0.5 ms above it), and hosts all of whose pairs are slow;
// fills flags.
void flag_slow(Calibration& c);

}  // namespace hpdl
