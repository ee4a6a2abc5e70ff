// The efficiency table of `hpdl time` (see the header).
#include "hpdl/run/efficiency_table.hpp"

#include <algorithm>
#include <sstream>

#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {

PassEfficiency efficiency_of(const PassTiming& t, const Ceilings& c) {
  PassEfficiency e;
  const PassWork& w = t.work;
  if (w.flops <= 0 && w.bytes <= 0) return e;
  const double attainable = c.attainable(w.intensity());
  e.bound = w.intensity() * c.memory_Bps >= c.gemm_flops_per_s ? "compute" : "memory";
  // The pass at its roofline: its FLOPs at the attainable rate, or (no FLOPs) its bytes at
  // the memory bandwidth.
  const double ideal_s = w.flops > 0 ? w.flops / attainable : w.bytes / c.memory_Bps;
  if (t.seconds > 0) {
    e.gflops_per_s = w.flops / t.seconds / 1e9;
    e.peak_share = w.flops / t.seconds / c.gemm_flops_per_s;
    e.roofline_share = ideal_s / t.seconds;
  }
  e.lost_s = std::max(0.0, t.seconds - ideal_s);
  return e;
}

std::vector<PassTiming> passes_of(const CsvTable& layers) {
  HPDL_REQUIRE(layers.has("forward_gflop"),
               layers.path() + " has no work columns (profiled before they were)");
  std::vector<PassTiming> passes;
  for (size_t r = 0; r < layers.rows(); ++r)
    for (const std::string pass : {"forward", "backward"})
      passes.push_back(
          {layers.text(r, "layer"),
           pass,
           layers.number(r, pass + "_mean_us") / 1e6,
           {layers.number(r, pass + "_gflop") * 1e9, layers.number(r, pass + "_mb") * 1e6}});
  return passes;
}

void print_efficiency(std::vector<PassTiming> passes, const Ceilings& c, double iteration_s,
                      std::FILE* out) {
  std::fprintf(out,
               "\nefficiency against this machine's ceilings: GEMM peak %.1f GFLOP/s, memory "
               "%.1f GB/s (ridge %.1f FLOP/byte); sorted by time lost against the roofline\n",
               c.gemm_flops_per_s / 1e9, c.memory_Bps / 1e9, c.gemm_flops_per_s / c.memory_Bps);
  std::fprintf(out, "%-16s %-8s %9s %9s %9s %7s %8s %-7s %7s %9s\n", "layer", "pass", "ms", "GFLOP",
               "GFLOP/s", "%peak", "FLOP/B", "bound", "%roof", "lost ms");
  std::stable_sort(passes.begin(), passes.end(), [&](const PassTiming& a, const PassTiming& b) {
    return efficiency_of(a, c).lost_s > efficiency_of(b, c).lost_s;
  });
  double flops = 0;
  for (const PassTiming& t : passes) {
    const PassEfficiency e = efficiency_of(t, c);
    flops += t.work.flops;
    std::fprintf(out, "%-16s %-8s %9.3f %9.4f %9.1f %6.1f%% %8.2f %-7s %6.1f%% %9.3f\n",
                 t.layer.c_str(), t.pass.c_str(), 1e3 * t.seconds, t.work.flops / 1e9,
                 e.gflops_per_s, 100 * e.peak_share, t.work.intensity(), e.bound.c_str(),
                 100 * e.roofline_share, 1e3 * e.lost_s);
  }
  if (iteration_s > 0)
    std::fprintf(out,
                 "iteration: %.3f GFLOP in %.3f ms = %.1f GFLOP/s, %.1f%% of the GEMM peak "
                 "(layers' work only; loss and update not counted)\n",
                 flops / 1e9, 1e3 * iteration_s, flops / iteration_s / 1e9,
                 100 * flops / iteration_s / c.gemm_flops_per_s);
}

void write_efficiency_csv(const std::vector<PassTiming>& passes, const Ceilings& c,
                          const std::string& path) {
  std::ostringstream csv;
  csv << "layer,pass,seconds,flops,bytes,gflops_per_s,peak_share,intensity,bound,"
         "roofline_share,lost_s,gemm_flops_per_s,memory_Bps\n";
  for (const PassTiming& t : passes) {
    const PassEfficiency e = efficiency_of(t, c);
    csv << t.layer << "," << t.pass << "," << t.seconds << "," << t.work.flops << ","
        << t.work.bytes << "," << e.gflops_per_s << "," << e.peak_share << "," << t.work.intensity()
        << "," << e.bound << "," << e.roofline_share << "," << e.lost_s << "," << c.gemm_flops_per_s
        << "," << c.memory_Bps << "\n";
  }
  write_file_atomically(path, csv.str());
}

}  // namespace hpdl
