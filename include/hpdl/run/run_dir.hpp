// The run directory outputs/<run>/ and everything written into it. Only rank 0 writes.
// Files are written under a temporary name and renamed, and the manifest says
// "status": "complete" only after everything else is in place, so an interrupted run is
// never mistaken for a finished one and a finished one is never overwritten by accident.
#pragma once
#include <cstdio>
#include <string>

#include "hpdl/config/config.hpp"

namespace hpdl {

// run.name if set; else SLURM_JOB_ID (with _ARRAY_TASK_ID); else the config file's stem.
std::string resolve_run_name(const Config& cfg);

class RunDir {
 public:
  // Rank 0: creates DIR; refuses (Error) a directory holding a completed run unless
  // run.overwrite, in which case the old directory is removed first. With `resume` the
  // log is appended to (an interrupted run continues in its own directory).
  RunDir(const std::string& dir, bool overwrite, bool resume = false);
  ~RunDir();

  const std::string& path() const { return dir_; }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  void write_atomically(const std::string& name, const std::string& text) const;

  // The log: every line also goes to stdout.
  void log(const std::string& line);
  // metrics.csv: header once, then one row per epoch (flushed).
  void metrics_row(const std::string& header, const std::string& row);

 private:
  std::string dir_;
  std::FILE* log_ = nullptr;
  std::FILE* metrics_ = nullptr;
};

}  // namespace hpdl
