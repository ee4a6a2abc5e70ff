// Writing a run's profile (after training). Every rank's events and interval names are
// gathered to rank 0 together with the rank's clock offset against rank 0 (ping-pong with
// the least round trip, Cristian's method; collective), and rank 0 writes into DIR:
//   trace/rank<R>.json  Chrome trace-event JSON of one rank (process = rank, threads =
//                       compute and communication), timestamps on rank 0's clock
//   trace/merged.json   all ranks in one trace
//   layers.csv          per layer: forward and backward mean, p50, p95, stddev over the
//                       recorded steps of all ranks (microseconds), and each pass's work
//                       (`work`, by layer name: GFLOP and MB on one rank's batch)
//   steps.csv           per rank and step: wall, attributed (covered by the rank's
//                       main-thread intervals), unattributed, and the parts by category
// Every JSON file embeds the run manifest under "otherData".
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/profile/work.hpp"

namespace hpdl {

struct TraceSummary {  // filled on rank 0
  int64_t events = 0, steps = 0, dropped = 0, bytes = 0;
  double write_s = 0;
  double attributed_mean = 0, attributed_min = 0;  // attributed / wall over the steps
  // Median wall time of recorded and of unrecorded (skip/warm-up) steps over all ranks, in
  // microseconds, and recorded / unrecorded - 1: the profiler's overhead in this run.
  double recorded_step_us = 0, unrecorded_step_us = 0, overhead = 0;
};

// Mean, median, 95th percentile and standard deviation of a sample.
struct Stats {
  double mean = 0, p50 = 0, p95 = 0, std = 0;
  size_t n = 0;
};
Stats stats_of(std::vector<double> v);

// Collective. offsets_ns: this rank's clock minus rank 0's (estimate), in nanoseconds.
int64_t clock_offset_to_root(const Comm& comm);

// Collective: every rank's events, packed, on rank 0 (`packed`, one string a rank); on every
// rank the total size, by which the others bound their wait while rank 0 writes them.
struct GatheredTraces {
  std::vector<std::string> packed;
  int64_t bytes = 0;
  int32_t step_name = 0;  // the id of the step interval's name (Profiler::step_name)
};
GatheredTraces gather_traces(const Comm& comm, const Profiler& prof);
// A single process's traces in the same form, without MPI (`hpdl time --out`).
GatheredTraces local_traces(const Profiler& prof);

// Rank 0 alone, no wait: writes the gathered traces into DIR (the files above).
TraceSummary write_traces(const GatheredTraces& gathered, const std::string& dir,
                          const nlohmann::json& manifest,
                          const std::map<std::string, LayerWork>& work);

}  // namespace hpdl
