// The trace CSVs a profiled run writes (layers.csv, steps.csv): their columns, named once,
// and one reader by column name for every program that reads them back (`hpdl trace`,
// `hpdl predict`; profiling/hpdl_csv.py for the scripts).
#pragma once
#include <string>
#include <vector>

namespace hpdl {

// layers.csv: one row per layer, forward order; durations in microseconds over (rank, step);
// then each pass's work on one rank's batch (profile/work.hpp): GFLOP and megabytes moved.
inline const std::vector<std::string> kLayerColumns = {
    "layer",           "forward_mean_us",  "forward_p50_us",  "forward_p95_us",
    "forward_std_us",  "backward_mean_us", "backward_p50_us", "backward_p95_us",
    "backward_std_us", "samples",          "forward_gflop",   "backward_gflop",
    "forward_mb",      "backward_mb"};
// steps.csv: one row per recorded (rank, step): the wall time, the part the profiler
// attributed, what is left, then one column "<part>_us" per part of kStepParts.
inline const std::vector<std::string> kStepParts = {"forward", "backward", "data",
                                                    "loss",    "update",   "comm"};
std::vector<std::string> step_columns();

// A CSV with a header row (hpdl's own: no quoting), cells looked up by column name. Every
// error names the file, and the row or column at fault.
class CsvTable {
 public:
  // A missing file: "PATH not found" and `missing_hint`.
  explicit CsvTable(const std::string& path, const std::string& missing_hint = "");
  const std::string& path() const { return path_; }
  size_t rows() const { return rows_.size(); }
  bool has(const std::string& column) const;
  const std::string& text(size_t row, const std::string& column) const;
  double number(size_t row, const std::string& column) const;

 private:
  size_t index(const std::string& column) const;
  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// The hint for a trace CSV that is not there.
inline const char* kNotProfiledHint = "(was the run profiled? set profile.enabled = true)";

}  // namespace hpdl
