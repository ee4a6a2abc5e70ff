// The run directory outputs/<run>/ and everything written into it. Only rank 0 writes.
// Files are written under a temporary name and renamed, and the manifest says
// "status": "complete" only after everything else is in place, so an interrupted run is
// never mistaken for a finished one and a finished one is never overwritten by accident.
#pragma once
#include <cstdio>
#include <string>

#include "hpdl/config/config.hpp"
#include "hpdl/core/output_file.hpp"

namespace hpdl {

// run.name if set; else SLURM_JOB_ID (with _ARRAY_TASK_ID); else the config file's stem.
std::string resolve_run_name(const Config& cfg);

class RunDir {
 public:
  // Rank 0, first stage (before the config's data and model are checked): creates DIR if
  // needed and takes its lock (DIR/.lock, held until destruction; Error if another hpdl run
  // holds it); refuses (Error) a directory holding a completed run unless `overwrite`.
  // Writes no other file, so a run that fails validation leaves an earlier run intact.
  RunDir(const std::string& dir, bool overwrite, bool resume = false);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // Second stage, once set-up has passed: removes an overwritten run's files, opens the
  // log (appended to with `resume`: an interrupted run continues in its own directory)
  // and metrics.csv.
  void open();

  const std::string& path() const { return dir_; }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  void write_atomically(const std::string& name, const std::string& text) const;

  // open() sets aside a little disk space (.reserve, 64 KiB) that a failing run frees
  // first, so that on a full disk the error line and the "failed" manifest still fit.
  // Removed when the directory is closed, whatever the ending.
  void free_reserve();

  // The log: every line also goes to stdout.
  void log(const std::string& line);
  // metrics.csv: header once, then one row per epoch (flushed).
  void metrics_row(const std::string& header, const std::string& row);

 private:
  std::FILE* open_stream(const std::string& name, OutputMode mode) const;
  // Writes text (whole lines) to f and flushes it. A write the disk cut short leaves part of
  // a line (stdio drops the rest), so after a failed one the next text starts a line of its
  // own: an "error: ..." line stays at a line's start, a metrics row stays a row.
  void put_lines(std::FILE* f, bool& cut, const std::string& text);

  std::string dir_;
  bool overwrite_, resume_;
  int lock_fd_ = -1;
  bool reserved_ = false;
  std::FILE* log_ = nullptr;
  std::FILE* metrics_ = nullptr;
  bool log_cut_ = false, metrics_cut_ = false;  // the last write to it failed (put_lines)
};

}  // namespace hpdl
