#include "hpdl/train/worker_report.hpp"

#include <cstring>
#include <type_traits>

#include "hpdl/core/error.hpp"

namespace hpdl {

static_assert(std::is_trivially_copyable_v<WorkerTotals>);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkerTotals, rank, steps, pulls, pushes, pull_s, push_s,
                                   server_wait_s, max_push_s, work_s, rma_fraction, staleness_mean,
                                   staleness_p95, nonfinite_skipped)

void to_json(nlohmann::json& j, const WorkerReport& r) {
  j = r.totals;
  j["staleness_histogram"] = r.staleness_histogram;
}

std::vector<WorkerReport> gather_worker_reports(const Comm& comm, const WorkerReport& mine) {
  // The totals' bytes, then the histogram's.
  std::string bytes(sizeof(WorkerTotals) + mine.staleness_histogram.size() * sizeof(int64_t), '\0');
  std::memcpy(bytes.data(), &mine.totals, sizeof(WorkerTotals));
  if (!mine.staleness_histogram.empty())
    std::memcpy(bytes.data() + sizeof(WorkerTotals), mine.staleness_histogram.data(),
                mine.staleness_histogram.size() * sizeof(int64_t));
  std::vector<WorkerReport> out;
  const std::vector<std::string> all = comm.allgather(bytes);
  if (comm.rank() != 0) return out;
  for (const std::string& b : all) {
    HPDL_REQUIRE(b.size() >= sizeof(WorkerTotals) &&
                     (b.size() - sizeof(WorkerTotals)) % sizeof(int64_t) == 0,
                 "a worker report of " + std::to_string(b.size()) + " bytes");
    WorkerReport r;
    std::memcpy(&r.totals, b.data(), sizeof(WorkerTotals));
    r.staleness_histogram.resize((b.size() - sizeof(WorkerTotals)) / sizeof(int64_t));
    if (!r.staleness_histogram.empty())
      std::memcpy(r.staleness_histogram.data(), b.data() + sizeof(WorkerTotals),
                  r.staleness_histogram.size() * sizeof(int64_t));
    if (r.is_worker()) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hpdl
