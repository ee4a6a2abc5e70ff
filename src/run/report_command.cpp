// `hpdl report RUN_DIR [RUN_B] [--out FILE]` and `hpdl report --study SWEEP_DIR`: one
// self-contained HTML page (report/page.hpp) of a run, of two runs compared, or of a sweep.
#include <cstdio>
#include <filesystem>

#include "hpdl/report/page.hpp"
#include "hpdl/report/report_data.hpp"
#include "hpdl/run/commands.hpp"

namespace hpdl {

std::string write_run_report(const std::string& run_dir, const std::string& out) {
  const std::string path = out.empty() ? run_dir + "/report.html" : out;
  const nlohmann::json data = run_data(run_dir);
  write_report(data, "hpdl report: " + data["header"]["run"].get<std::string>(), path);
  return path;
}

int cmd_report(const ReportArgs& args) {
  try {
    std::string path;
    if (!args.study.empty() && !args.runs.empty()) {
      std::fprintf(stderr, "hpdl: error: report --study takes a sweep directory alone, not %s\n",
                   args.runs[0].c_str());
      return 1;
    }
    if (!args.study.empty()) {
      path = args.out.empty() ? args.study + "/report.html" : args.out;
      write_report(study_data(args.study),
                   "hpdl study: " + std::filesystem::path(args.study).lexically_normal().string(),
                   path);
    } else if (args.runs.size() == 2) {
      path = args.out.empty() ? args.runs[1] + "/compare.html" : args.out;
      write_report(compare_data(args.runs[0], args.runs[1]),
                   "hpdl compare: " + args.runs[0] + " vs " + args.runs[1], path);
    } else if (args.runs.size() == 1) {
      path = write_run_report(args.runs[0], args.out);
    } else {
      std::fprintf(stderr, "hpdl: error: report takes one run directory, two, or --study DIR\n");
      return 1;
    }
    std::printf("report: %s\n", path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
