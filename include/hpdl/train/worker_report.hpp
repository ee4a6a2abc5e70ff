// One parameter-server worker's account of its run, gathered to rank 0 as bytes and written
// by the run report (ps_workers.csv, staleness.csv, the manifest's per_worker).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"

namespace hpdl {

struct WorkerTotals {
  int64_t rank = -1;  // -1: no worker (a server's place in the gather)
  int64_t steps = 0, pulls = 0, pushes = 0;
  double pull_s = 0, push_s = 0;  // time in pulls and pushes
  double server_wait_s = 0;       // of it: waiting for the server's replies
  double max_push_s = 0;          // the longest push
  double work_s = 0;              // the worker's training time
  double rma_fraction = 0;        // (pull_s + push_s) / work_s
  double staleness_mean = 0;
  int64_t staleness_p95 = 0;
  int64_t nonfinite_skipped = 0;
};

struct WorkerReport {
  WorkerTotals totals;
  std::vector<int64_t> staleness_histogram;  // pushes per staleness 0, 1, ...
  bool is_worker() const { return totals.rank >= 0; }
};

// Collective: every rank's report (servers pass an empty one); rank 0 gets the workers'
// in rank order, the others an empty list.
std::vector<WorkerReport> gather_worker_reports(const Comm& comm, const WorkerReport& mine);

// The manifest's form: the totals' fields and staleness_histogram.
void to_json(nlohmann::json& j, const WorkerReport& r);

}  // namespace hpdl
