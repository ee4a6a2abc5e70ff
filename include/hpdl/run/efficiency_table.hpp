// Per-layer efficiency against a machine's measured ceilings (run/ceilings.hpp), as
// `hpdl time` prints it: for each layer's forward and backward, the achieved GFLOP/s, the
// share of the GEMM peak, the arithmetic intensity, the bound that applies (compute or
// memory, from the roofline) and the time lost against that roofline, sorted by the time
// lost, so the rows where optimisation would pay come first.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "hpdl/profile/trace_csv.hpp"
#include "hpdl/profile/work.hpp"
#include "hpdl/run/ceilings.hpp"

namespace hpdl {

struct PassTiming {
  std::string layer, pass;  // pass: "forward" | "backward"
  double seconds = 0;       // mean per iteration
  PassWork work;
};

struct PassEfficiency {
  double gflops_per_s = 0, peak_share = 0, roofline_share = 0, lost_s = 0;
  std::string bound = "-";  // "compute", "memory", or "-" (no work counted)
};
PassEfficiency efficiency_of(const PassTiming& t, const Ceilings& c);
// Each layer's forward and backward of a profiled run's layers.csv (mean time, work).
std::vector<PassTiming> passes_of(const CsvTable& layers);

// The table, then one line for the whole iteration (its FLOPs over `iteration_s`).
void print_efficiency(std::vector<PassTiming> passes, const Ceilings& c, double iteration_s,
                      std::FILE* out);
// The same rows as CSV at `path` (written whole or not at all), with the two ceilings on
// every row (the report page's roofline reads a run's efficiency.csv).
void write_efficiency_csv(const std::vector<PassTiming>& passes, const Ceilings& c,
                          const std::string& path);

}  // namespace hpdl
