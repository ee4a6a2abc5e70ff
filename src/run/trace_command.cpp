// `hpdl trace summary RUN_DIR`: the per-layer table (layers.csv) and the per-step
// accounting (steps.csv) of a profiled run, as text.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/run/commands.hpp"

namespace hpdl {
namespace {

// Rows of a CSV file with a header; cells as text.
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(path + " not found (was the run profiled? set profile.enabled = true)");
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace

int cmd_trace_summary(const std::string& dir) {
  try {
    const auto layers = read_csv(dir + "/layers.csv");
    const auto steps = read_csv(dir + "/steps.csv");
    std::printf("%-16s %11s %9s %9s %12s %9s %9s %8s\n", "layer", "forward us", "p50", "p95",
                "backward us", "p50", "p95", "bwd/fwd");
    double f_sum = 0, b_sum = 0;
    for (const auto& r : layers) {
      if (r.size() < 10)
        throw Error(dir + "/layers.csv: a row has " + std::to_string(r.size()) + " cells, not 10");
      const double f = std::stod(r[1]), b = std::stod(r[5]);
      f_sum += f, b_sum += b;
      std::printf("%-16s %11.1f %9.1f %9.1f %12.1f %9.1f %9.1f %8.2f\n", r[0].c_str(), f,
                  std::stod(r[2]), std::stod(r[3]), b, std::stod(r[6]), std::stod(r[7]),
                  f > 0 ? b / f : 0.0);
    }
    std::printf("%-16s %11.1f %19s %12.1f\n", "sum", f_sum, "", b_sum);
    double wall = 0, attributed = 0, worst = 1;
    std::vector<double> parts(6, 0.0);
    for (const auto& r : steps) {
      if (r.size() < 11)
        throw Error(dir + "/steps.csv: a row has " + std::to_string(r.size()) + " cells, not 11");
      const double w = std::stod(r[2]), a = std::stod(r[3]);
      wall += w, attributed += a;
      worst = std::min(worst, w > 0 ? a / w : 0.0);
      for (size_t k = 0; k < parts.size(); ++k) parts[k] += std::stod(r[5 + k]);
    }
    const double n = steps.empty() ? 1 : double(steps.size());
    std::printf("\n%zu rank-steps: wall %.1f us per step, attributed %.2f%% (worst step %.2f%%)\n",
                steps.size(), wall / n, wall > 0 ? 100 * attributed / wall : 0.0, 100 * worst);
    const char* names[] = {"forward", "backward", "data", "loss", "update", "comm"};
    std::printf("per step:");
    for (size_t k = 0; k < parts.size(); ++k) std::printf(" %s %.1f us", names[k], parts[k] / n);
    std::printf(", unattributed %.1f us\n", (wall - attributed) / n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
