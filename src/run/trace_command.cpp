// `hpdl trace summary RUN_DIR [--network network.json]`: the per-layer table (layers.csv)
// and the per-step accounting (steps.csv) of a profiled run, as text; with a calibration
// holding compute ceilings (`hpdl calibrate`), each pass's efficiency against their median
// over the calibrated ranks (run/efficiency_table.hpp).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/net/calibration.hpp"
#include "hpdl/profile/trace_csv.hpp"
#include "hpdl/profile/trace_writer.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/efficiency_table.hpp"
#include "hpdl/run/rank_ceilings.hpp"

namespace hpdl {

namespace {

// The median over the calibrated ranks of each compute ceiling in network.json at `path`.
Ceilings calibrated_ceilings(const std::string& path) {
  const Calibration c = read_calibration(path);
  if (c.gemm_flops_per_s.empty())
    throw Error(path + " holds no compute ceilings (calibrate again without --no-compute)");
  return RankCeilings{c.gemm_flops_per_s, c.memory_Bps}.median();
}

}  // namespace

int cmd_trace_summary(const std::string& dir, const std::string& network) {
  try {
    const CsvTable layers(dir + "/layers.csv", kNotProfiledHint);
    const CsvTable steps(dir + "/steps.csv", kNotProfiledHint);
    std::printf("%-16s %11s %9s %9s %12s %9s %9s %8s\n", "layer", "forward us", "p50", "p95",
                "backward us", "p50", "p95", "bwd/fwd");
    double f_sum = 0, b_sum = 0;
    for (size_t r = 0; r < layers.rows(); ++r) {
      const double f = layers.number(r, "forward_mean_us"),
                   b = layers.number(r, "backward_mean_us");
      f_sum += f, b_sum += b;
      std::printf("%-16s %11.1f %9.1f %9.1f %12.1f %9.1f %9.1f %8.2f\n",
                  layers.text(r, "layer").c_str(), f, layers.number(r, "forward_p50_us"),
                  layers.number(r, "forward_p95_us"), b, layers.number(r, "backward_p50_us"),
                  layers.number(r, "backward_p95_us"), f > 0 ? b / f : 0.0);
    }
    std::printf("%-16s %11.1f %19s %12.1f\n", "sum", f_sum, "", b_sum);
    double wall = 0, attributed = 0, worst = 1;
    std::vector<double> parts(kStepParts.size(), 0.0);
    for (size_t r = 0; r < steps.rows(); ++r) {
      const double w = steps.number(r, "wall_us"), a = steps.number(r, "attributed_us");
      wall += w, attributed += a;
      worst = std::min(worst, w > 0 ? a / w : 0.0);
      for (size_t k = 0; k < parts.size(); ++k) parts[k] += steps.number(r, kStepParts[k] + "_us");
    }
    const double n = steps.rows() == 0 ? 1 : double(steps.rows());
    std::printf("\n%zu rank-steps: wall %.1f us per step, attributed %.2f%% (worst step %.2f%%)\n",
                steps.rows(), wall / n, wall > 0 ? 100 * attributed / wall : 0.0, 100 * worst);
    std::printf("per step:");
    for (size_t k = 0; k < parts.size(); ++k)
      std::printf(" %s %.1f us", kStepParts[k].c_str(), parts[k] / n);
    std::printf(", unattributed %.1f us\n", (wall - attributed) / n);
    if (!network.empty()) {
      print_efficiency(passes_of(layers), calibrated_ceilings(network), wall / n / 1e6, stdout);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
