// `hpdl compare RUN_A RUN_B`: two profiled runs side by side, per layer and pass: the median
// time of each, B / A, and whether the change stands out of the noise. A run's noise is its
// own spread, (p95 - p50) / p50 of that pass; a ratio counts as a change only when it
// differs from 1 by more than the two spreads combined (report/report_data.hpp's
// pass_change, which the comparison page uses too). With
// the work columns (runs since profile/work.hpp), each side's achieved GFLOP/s as well.
// Layers are matched by name; a layer in one run only is listed as such.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hpdl/profile/trace_csv.hpp"
#include "hpdl/profile/trace_writer.hpp"
#include "hpdl/report/report_data.hpp"
#include "hpdl/run/commands.hpp"

namespace hpdl {
namespace {

std::string run_line(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  nlohmann::json m = nlohmann::json::parse(in, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return dir;
  auto get = [&](const char* k) { return m.contains(k) ? m[k].dump() : std::string("?"); };
  return dir + ": " + get("ranks") + " rank(s) x " + get("threads_per_rank") + " thread(s), " +
         get("mode") + ", backend " + get("backend") + ", git " + get("git_hash");
}

long find_row(const CsvTable& t, const std::string& layer) {
  for (size_t r = 0; r < t.rows(); ++r)
    if (t.text(r, "layer") == layer) return static_cast<long>(r);
  return -1;
}

std::string gflops(const CsvTable& t, size_t r, const std::string& pass) {
  if (!t.has(pass + "_gflop")) return "-";
  const double us = t.number(r, pass + "_p50_us");
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", us > 0 ? t.number(r, pass + "_gflop") / (us * 1e-6) : 0.0);
  return s;
}

double median_step_us(const CsvTable& steps) {
  std::vector<double> wall;
  for (size_t r = 0; r < steps.rows(); ++r) wall.push_back(steps.number(r, "wall_us"));
  return stats_of(wall).p50;
}

}  // namespace

int cmd_compare(const std::string& a_dir, const std::string& b_dir) {
  try {
    const CsvTable a(a_dir + "/layers.csv", kNotProfiledHint);
    const CsvTable b(b_dir + "/layers.csv", kNotProfiledHint);
    std::printf("A %s\nB %s\n", run_line(a_dir).c_str(), run_line(b_dir).c_str());
    std::printf("%-16s %-8s %10s %10s %7s %7s %-8s %9s %9s\n", "layer", "pass", "A p50 ms",
                "B p50 ms", "B/A", "noise", "change", "A GFLOP/s", "B GFLOP/s");
    for (size_t ra = 0; ra < a.rows(); ++ra) {
      const std::string layer = a.text(ra, "layer");
      const long rb = find_row(b, layer);
      if (rb < 0) {
        std::printf("%-16s only in A\n", layer.c_str());
        continue;
      }
      for (const std::string pass : {"forward", "backward"}) {
        const double ta = a.number(ra, pass + "_p50_us"),
                     tb = b.number(size_t(rb), pass + "_p50_us");
        const PassChange c = pass_change(ta, a.number(ra, pass + "_p95_us"), tb,
                                         b.number(size_t(rb), pass + "_p95_us"));
        std::printf("%-16s %-8s %10.3f %10.3f %7.3f %6.1f%% %-8s %9s %9s\n", layer.c_str(),
                    pass.c_str(), ta / 1e3, tb / 1e3, c.ratio, 100 * c.noise, c.change,
                    gflops(a, ra, pass).c_str(), gflops(b, size_t(rb), pass).c_str());
      }
    }
    for (size_t rb = 0; rb < b.rows(); ++rb)
      if (find_row(a, b.text(rb, "layer")) < 0)
        std::printf("%-16s only in B\n", b.text(rb, "layer").c_str());
    const double sa = median_step_us(CsvTable(a_dir + "/steps.csv", kNotProfiledHint));
    const double sb = median_step_us(CsvTable(b_dir + "/steps.csv", kNotProfiledHint));
    std::printf("step (median wall over ranks and steps): A %.3f ms, B %.3f ms, B/A %.3f\n",
                sa / 1e3, sb / 1e3, sa > 0 ? sb / sa : 0.0);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
